"""The keyword options every provider and reader shares, declared once (``**options`` of the
per-backend constructors), and the OpenSearch location options both OpenSearch adapters take."""

from __future__ import annotations

from typing import TYPE_CHECKING, TypedDict

if TYPE_CHECKING:
    import sqlite3
    from collections.abc import Callable
    from pathlib import Path

    from opensearchpy import OpenSearch

__all__ = [
    "OpenSearchProviderOptions",
    "OpenSearchReaderOptions",
    "OpenSearchTarget",
    "ProviderOptions",
    "ReaderOptions",
    "SQLiteProviderOptions",
    "SQLiteReaderOptions",
    "SQLiteTarget",
]


class ProviderOptions(TypedDict, total=False):
    """:class:`~backscroll.query.provider.SearchProvider`'s settings (see its docstring)."""

    default_limit: int
    max_limit: int
    request_timeout_s: float
    cursor_key: bytes | None
    live: object | None
    search_enabled: bool


class ReaderOptions(TypedDict, total=False):
    """:class:`~backscroll.query.reads.reader.ReaderBase`'s settings (see its docstring)."""

    read_window_max: int
    live: object | None
    persistence: bool
    request_timeout_s: float
    persisted_inspect_concurrency: int


class OpenSearchTarget(TypedDict, total=False):
    """Where the projection is, beyond the settings: ``hosts`` (comma-separated URLs) and
    ``index_prefix`` override the settings'; ``client`` is a ready client to use."""

    hosts: str | None
    index_prefix: str | None
    client: OpenSearch | None


class OpenSearchProviderOptions(ProviderOptions, OpenSearchTarget, total=False):
    """``scan_max_rows``: a search of sessions holding at most this many entries ranks them in the
    provider instead of running the fuzzy queries on the server (default
    :data:`~backscroll.query.opensearch.scan.SCAN_MAX_ROWS`; 0: never)."""

    scan_max_rows: int


class OpenSearchReaderOptions(ReaderOptions, OpenSearchTarget, total=False):
    pass


class SQLiteTarget(TypedDict, total=False):
    """How the embedded database is used, beyond its path: ``catch_up`` runs before each search or
    read (bounded by its time, see :mod:`backscroll.query.sqlite.access`; closed with the provider
    or reader if it has ``close``); ``connector`` opens the file (tests inject failing drivers)."""

    catch_up: Callable[[], object] | None
    connector: Callable[[Path, float], sqlite3.Connection]


class SQLiteProviderOptions(ProviderOptions, SQLiteTarget, total=False):
    """``max_expansions``: typo candidates kept per query word (default 10,000, a safety valve);
    ``scan_max_rows``: scopes of at most this many entries are scanned instead of looked up in the
    file-wide indexes (default :data:`~backscroll.query.sqlite.scan.SCAN_MAX_ROWS`; 0: never)."""

    max_expansions: int
    scan_max_rows: int


class SQLiteReaderOptions(ReaderOptions, SQLiteTarget, total=False):
    pass
