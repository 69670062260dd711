"""The records of a session or a workspace read back out of the log table of a SQLite file, in
offset order (see :mod:`backscroll.ingest.export`)."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path

from backscroll.ingest.export import LogExport
from backscroll.ingest.records import LogRecord

__all__ = ["export_sqlite"]


def export_sqlite(path: str | os.PathLike[str], export: LogExport) -> Iterator[LogRecord]:
    """The wanted records of the SQLite log at ``path`` in offset order (read-only open)."""
    from backscroll.ingest.sqlite.file import connect, translate_sqlite_error
    from backscroll.ingest.sqlite.log import iter_log

    target = Path(path).expanduser()
    conn = connect(target, create=False)
    try:
        try:
            conn.execute("BEGIN")  # one snapshot: appends made during the export are not half-seen
            for record in iter_log(conn, session_id=export.session_id):
                if export.wanted(record):
                    yield record
            conn.execute("COMMIT")
        except sqlite3.Error as err:
            raise translate_sqlite_error(err, f"cannot read the log in {target}") from err
    finally:
        conn.close()
