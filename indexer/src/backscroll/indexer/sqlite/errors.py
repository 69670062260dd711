"""The SQLite adapters' edge: sqlite3 exceptions become indexer errors.

Each SQLite adapter wraps its calls into the file in :func:`sqlite_edge`, so nothing but an
:class:`~backscroll.indexer.errors.IndexerError` leaves it.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Final

from backscroll.indexer.errors import IndexerError, ViewFailed, ViewUnavailable, first_line

__all__ = ["sqlite_edge", "sqlite_error"]

#: SQLite primary result codes worth retrying: the file is busy or locked by another connection,
#: or the disk is full (an operator can free space; the batch stays uncommitted meanwhile).
_SQLITE_RETRIABLE: Final = frozenset({5, 6, 13})  # SQLITE_BUSY, SQLITE_LOCKED, SQLITE_FULL


def sqlite_error(
    err: sqlite3.Error,
    what: str,
    unavailable: type[IndexerError] = ViewUnavailable,
    failed: type[IndexerError] = ViewFailed,
) -> IndexerError:
    """The indexer error for a sqlite3 exception: busy/locked/full retriable, the rest final
    (read-only, not a database, missing tables, corruption, a closed connection)."""
    code = getattr(err, "sqlite_errorcode", None)
    message = str(err)
    busy = (code is not None and code & 0xFF in _SQLITE_RETRIABLE) or (
        code is None and ("locked" in message or "busy" in message)
    )
    kind = unavailable if busy else failed
    return kind(f"{what}: {first_line(err)}")


@contextmanager
def sqlite_edge(
    what: str,
    unavailable: type[IndexerError] = ViewUnavailable,
    failed: type[IndexerError] = ViewFailed,
) -> Iterator[None]:
    """Translate sqlite3 exceptions raised inside the block."""
    try:
        yield
    except sqlite3.Error as err:
        raise sqlite_error(err, what, unavailable, failed) from err
