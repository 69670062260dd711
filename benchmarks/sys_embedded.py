"""backscroll's embedded backend: the SQLite projection, queried through ``SQLiteProvider``.

The same projection code as the OpenSearch system (``SessionProjection`` → documents), written by
``SQLiteView.write_records`` into one SQLite file (FTS5 ``unicode61`` words and ``trigram``
substrings over accent-folded text, plus the vocabulary used for typo candidates), and searched
with the embedded provider: candidate generation from those indexes, exact re-ranking with the
Python tiers of ``backscroll.query.scoring``. No server; the file lives in a temporary directory.

``write_records`` keeps per-session state only within one call, so batches are cut at session
boundaries (the corpus emits sessions contiguously), exactly as ``sys_backscroll`` does.
"""

from __future__ import annotations

import shutil
import sqlite3
import tempfile
from collections import OrderedDict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from benchmarks.base import SystemUnavailable

__all__ = ["EmbeddedSearches", "EmbeddedSystem", "unavailable_reason"]

try:
    from backscroll.indexer.sqlite.view import SQLiteView
    from backscroll.ingest.wire import parse_record
    from backscroll.query import Scope, SessionQueryRequest
    from backscroll.query.sqlite.provider import SQLiteProvider
except ImportError as err:  # the embedded backend is not installed in this checkout
    _IMPORT_ERROR: ImportError | None = err
else:
    _IMPORT_ERROR = None

_BATCH = 5000  # records per write_records call, cut at the next session boundary
_MAX_PROVIDERS = 256


def unavailable_reason() -> str | None:
    """Why the embedded system cannot run here, or ``None`` when it can."""
    if _IMPORT_ERROR is not None:
        return f"backscroll embedded backend not importable ({_IMPORT_ERROR})"
    if sqlite3.sqlite_version_info < (3, 35, 0):
        return f"SQLite {sqlite3.sqlite_version} is too old (needs 3.35: FTS5 trigram, RETURNING)"
    return None


class EmbeddedSearches:
    """Searches of one embedded file, a provider per scope kept as an application keeps them:
    the :data:`_MAX_PROVIDERS` most recently used, the others closed."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._providers: OrderedDict[tuple[str, str], Any] = OrderedDict()

    def _provider(self, scope_kind: str, scope_id: str) -> Any:
        key = (scope_kind, scope_id)
        provider = self._providers.get(key)
        if provider is None:
            scope = Scope.session(scope_id) if scope_kind == "session" else Scope.workspace(scope_id)
            provider = SQLiteProvider(scope, self.path, request_timeout_s=30.0)
            self._providers[key] = provider
            if len(self._providers) > _MAX_PROVIDERS:
                _, evicted = self._providers.popitem(last=False)
                evicted.close()
        else:
            self._providers.move_to_end(key)
        return provider

    def search(self, scope_kind: str, scope_id: str, query: str, limit: int = 10) -> list[str]:
        """``session:seq`` of the matches, best first."""
        provider = self._provider(scope_kind, scope_id)
        request = SessionQueryRequest(
            session_id=scope_id if scope_kind == "session" else None, query=query, limit=limit
        )
        return [f"{m.session_id}:{m.seq}" for m in provider.search(request).matches]

    def close(self) -> None:
        while self._providers:
            _, provider = self._providers.popitem()
            provider.close()


class EmbeddedSystem:
    name = "backscroll_embedded"

    def __init__(self, directory: str | Path | None = None) -> None:
        reason = unavailable_reason()
        if reason:
            raise SystemUnavailable(reason)
        self._own_dir = directory is None
        self.dir = (
            Path(directory)
            if directory is not None
            else Path(tempfile.mkdtemp(prefix="backscroll-bench-emb-"))
        )
        self.path = self.dir / "backscroll.db"
        for suffix in ("", "-wal", "-shm"):
            Path(f"{self.path}{suffix}").unlink(missing_ok=True)
        self.searches = EmbeddedSearches(self.path)

    @property
    def server_version(self) -> str:
        return f"SQLite {sqlite3.sqlite_version}"

    def load(self, entries: Iterable[dict[str, Any]]) -> None:
        with SQLiteView(self.path) as view:
            view.ensure_schema()
            batch: list[Any] = []
            for entry in entries:
                if entry["kind"] == "header" and len(batch) >= _BATCH:
                    view.write_records(batch)
                    batch = []
                batch.append(parse_record(entry))
            if batch:
                view.write_records(batch)
            view.compact()  # what `backscroll rebuild` and `index --until-idle --compact` do
            view.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def search(self, scope_kind: str, scope_id: str, query: str, limit: int = 10) -> list[str]:
        return self.searches.search(scope_kind, scope_id, query, limit)

    def index_bytes(self) -> int:
        return sum(
            Path(f"{self.path}{suffix}").stat().st_size
            for suffix in ("", "-wal")
            if Path(f"{self.path}{suffix}").exists()
        )

    def close(self) -> None:
        self.searches.close()
        if self._own_dir:
            shutil.rmtree(self.dir, ignore_errors=True)
