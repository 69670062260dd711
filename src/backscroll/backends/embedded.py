"""The embedded backend: the log, the projection and the dead letters in one SQLite file.

Providers, readers and the workspace catalog catch the projection up with the log before they read
(``index_on_search``, default on), so nothing has to run in the background.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from backscroll.backends.base import (
    DEAD_LETTERS_SHOWN,
    Backend,
    BackendName,
    BackendSettings,
    settings_from_env,
)
from backscroll.backends.reports import (
    Forgotten,
    Health,
    LogRetention,
    ParkedRecord,
    PartitionLag,
    Rebuilt,
    WorkspaceCount,
    session_not_found,
)

if TYPE_CHECKING:
    from backscroll.backends.base import RebuildProgress
    from backscroll.indexer.ports import DeadLetters
    from backscroll.indexer.runner import Runner
    from backscroll.ingest.export import LogExport
    from backscroll.ingest.records import LogRecord
    from backscroll.ingest.sqlite.log import SQLiteEntryLog
    from backscroll.query import AsyncSearchProvider, Scope, SQLiteProvider, SQLiteSessionReader
    from backscroll.query.reads.async_reader import AsyncSessionReader

__all__ = ["EmbeddedBackend"]


class CatchUp:
    """Runs an embedded runner (opened on first use) until idle; whoever holds it closes it."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._indexer: Runner | None = None
        self._closed = False

    def __call__(self) -> None:
        from backscroll.indexer.sqlite.runner import embedded_runner

        with self._lock:
            if self._closed or not self.path.exists():
                return  # nothing appended yet; a read must not create the file
            if self._indexer is None:
                self._indexer = embedded_runner(self.path)
            self._indexer.catch_up()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            indexer, self._indexer = self._indexer, None
        if indexer is not None:
            indexer.close()


@dataclass(frozen=True, repr=False)
class EmbeddedBackend(Backend):
    """The whole pipeline in the SQLite file at ``sqlite_path``."""

    sqlite_path: Path
    #: Catch the projection up with the log before each search, read and catalog.
    index_on_search: bool = True
    _catalog_catch_up: CatchUp = field(init=False, compare=False, repr=False)

    name: ClassVar[BackendName] = "embedded"
    commits_each_append: ClassVar[bool] = True

    def __post_init__(self) -> None:
        object.__setattr__(self, "sqlite_path", Path(self.sqlite_path).expanduser())
        object.__setattr__(self, "_catalog_catch_up", CatchUp(self.sqlite_path))

    @classmethod
    def from_settings(cls, settings: BackendSettings) -> EmbeddedBackend:
        """The file and the catch-up of ``settings``."""
        return cls(
            settings.sqlite_path, index_on_search=settings.sqlite_index_on_search, **settings.query_options()
        )

    def describe(self) -> str:
        return f"embedded (SQLite {self.sqlite_path})"

    def missing(self) -> str | None:
        if self.sqlite_path.exists():
            return None
        return f"{self.sqlite_path} does not exist: nothing was appended on the embedded backend yet"

    # -- factories --------------------------------------------------------------------------------
    def open_log(self, *, live: bool = True, spool_when_down: bool = False) -> SQLiteEntryLog:
        from backscroll.ingest.sqlite.log import SQLiteEntryLog

        # One local file: there is no server to be down, so nothing to spool.

        return SQLiteEntryLog(self.sqlite_path, live_max_per_session=2_000 if live else 0)

    def open_indexer(self, *, metrics_port: int | None = None) -> Runner:
        from backscroll.indexer.settings import IndexerSettings
        from backscroll.indexer.sqlite.runner import embedded_runner

        idle = settings_from_env(IndexerSettings).idle_timeout_s
        return embedded_runner(
            self.sqlite_path, metrics_port=metrics_port, idle_timeout_s=idle, bulk_catch_up=True
        )

    def open_dead_letters(self) -> DeadLetters:
        from backscroll.indexer.sqlite.deadletters import SQLiteDeadLetters
        from backscroll.indexer.sqlite.runner import open_embedded

        return SQLiteDeadLetters(open_embedded(self.sqlite_path), owns_conn=True)

    def _catching_up(self, kwargs: dict[str, Any]) -> dict[str, Any]:
        kwargs = self._query_options(kwargs)
        if self.index_on_search and "catch_up" not in kwargs:
            kwargs["catch_up"] = CatchUp(self.sqlite_path)  # the provider or reader closes it
        return kwargs

    def open_provider(self, scope: Scope, **kwargs: Any) -> SQLiteProvider:
        from backscroll.query import SQLiteProvider

        return SQLiteProvider(scope, self.sqlite_path, **self._catching_up(kwargs))

    def open_async_provider(self, scope: Scope, **kwargs: Any) -> AsyncSearchProvider:
        from backscroll.query.sqlite.async_provider import AsyncSQLiteProvider

        return AsyncSQLiteProvider(scope, self.sqlite_path, **self._catching_up(kwargs))

    def open_reader(self, scope: Scope, **kwargs: Any) -> SQLiteSessionReader:
        from backscroll.query import SQLiteSessionReader

        if self.index_on_search and "catch_up" not in kwargs:
            kwargs["catch_up"] = CatchUp(self.sqlite_path)
        return SQLiteSessionReader(scope, self.sqlite_path, **kwargs)

    def open_async_reader(self, scope: Scope, **kwargs: Any) -> AsyncSessionReader:
        """The embedded reader on worker threads."""
        from backscroll.query.reads.async_reader import AsyncSessionReader

        return AsyncSessionReader(self.open_reader(scope, **kwargs))

    # -- operator operations ----------------------------------------------------------------------
    def _catch_up(self) -> None:
        if self.index_on_search:
            self._catalog_catch_up()

    def health(self) -> Health:
        from backscroll.indexer.errors import IndexerError
        from backscroll.indexer.sqlite.progress import log_progress

        out = Health(
            backend=self.describe(),
            note="Embedded: one log, projected on demand before every search; "
            "the watermark is the indexed position.",
        )
        if not self.sqlite_path.exists():
            out.partitions.append(PartitionLag(0, 0, 0, 0))
            return out
        try:
            progress = log_progress(self.sqlite_path)
        except IndexerError as err:
            out.problems.append(str(err))
            return out
        position = progress.indexed_offset
        out.partitions.append(
            PartitionLag(0, progress.end_offset, position, progress.lag, watermark_offset=position)
        )
        out.oldest_pending_ms = progress.oldest_pending_ms
        if not progress.lag:
            out.freshness_s = 0.0
        elif progress.oldest_pending_ms is not None:
            out.freshness_s = max(0.0, time.time() - progress.oldest_pending_ms / 1000.0)
        return out

    def workspaces(self) -> list[WorkspaceCount]:
        from backscroll.query.sqlite.catalog import workspace_counts

        self._catch_up()
        return [WorkspaceCount(*row) for row in workspace_counts(self.sqlite_path)]

    def workspace_of(self, session_id: str) -> str | None:
        from backscroll.query.sqlite.catalog import workspace_of

        found = workspace_of(self.sqlite_path, session_id)
        if found is None and self.index_on_search:  # not projected yet? catch up once, as a reader would
            self._catch_up()
            found = workspace_of(self.sqlite_path, session_id)
        return found

    def forget(self, session_id: str) -> Forgotten:
        from backscroll.indexer.sqlite.operations import forget_embedded

        known = self.workspace_of(session_id) is not None
        events = forget_embedded(self.sqlite_path, session_id)
        if not known and not events:
            raise session_not_found(session_id)
        return Forgotten(session_id, events, "the log table keeps its records (a rebuild would restore them)")

    def export(self, job: LogExport) -> Iterator[LogRecord]:
        from backscroll.ingest.sqlite.export import export_sqlite

        return export_sqlite(self.sqlite_path, job)

    def log_retention(self) -> LogRetention:
        """Complete: the log is one file from which nothing is ever deleted by age or size."""
        return LogRetention()

    def rebuild(
        self,
        *,
        keep: bool = False,
        on_batch: RebuildProgress | None = None,
        allow_truncated: bool = False,
    ) -> Rebuilt:
        """The emptied projection of the file, filled again from its whole log (which is always
        complete, so ``allow_truncated`` changes nothing)."""
        from backscroll.indexer.sqlite.operations import rebuild_embedded

        if keep:
            raise ValueError("the embedded backend has no index versions to keep")
        report = rebuild_embedded(self.sqlite_path, on_batch=on_batch)
        summary = f"rebuilt {self.sqlite_path}: {report.stats.indexed} events in {report.seconds:.1f}s"
        return Rebuilt(report, summary)

    def drop(self) -> list[str]:
        """Delete the file (with its write-ahead log and shared-memory files)."""
        self.close()
        dropped = []
        for suffix in ("", "-wal", "-shm"):
            path = Path(f"{self.sqlite_path}{suffix}")
            if path.is_file():
                path.unlink()
                dropped.append(str(path))
        return dropped

    def dead_letters(self, limit: int | None = DEAD_LETTERS_SHOWN) -> list[ParkedRecord]:
        """Parked records, oldest first; a file that never parked anything is only looked at."""
        from backscroll.indexer.sqlite.progress import has_dead_letters

        if not has_dead_letters(self.sqlite_path):
            return []
        return super().dead_letters(limit)

    def close(self) -> None:
        self._catalog_catch_up.close()
        object.__setattr__(self, "_catalog_catch_up", CatchUp(self.sqlite_path))
