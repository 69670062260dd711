"""The backend interface and the settings that select one.

A :class:`Backend` is everything a command or a console page needs from where the history lives:
the factories (log, indexer, dead letters, providers and readers, sync and async) and the operator
operations (health, workspaces and their sessions, forget, export, rebuild, dead letters). Callers
never ask which backend they hold: what differs is a method or a describing attribute.
"""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal, TypeVar, get_args

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from backscroll.backends.reports import (
    Forgotten,
    Health,
    LogRetention,
    ParkedRecord,
    Rebuilt,
    WorkspaceCount,
)

if TYPE_CHECKING:
    from backscroll.indexer.ports import DeadLetters
    from backscroll.indexer.runner import Runner, RunStats
    from backscroll.ingest.entry_log import EntryLog
    from backscroll.ingest.export import LogExport
    from backscroll.ingest.records import LogRecord
    from backscroll.query import (
        AsyncSearchProvider,
        OpenSearchProvider,
        OpenSearchSessionReader,
        Scope,
        SessionRecord,
        SQLiteProvider,
        SQLiteSessionReader,
    )
    from backscroll.query.reads.async_reader import AsyncSessionReader

    Provider = OpenSearchProvider | SQLiteProvider
    Reader = OpenSearchSessionReader | SQLiteSessionReader

__all__ = [
    "BACKENDS",
    "DEAD_LETTERS_SHOWN",
    "Backend",
    "BackendName",
    "BackendSettings",
    "RebuildProgress",
    "default_sqlite_path",
    "settings_from_env",
]

BackendName = Literal["embedded", "kafka-opensearch"]
BACKENDS: tuple[BackendName, ...] = get_args(BackendName)
#: Parked records listed when no limit is given.
DEAD_LETTERS_SHOWN = 200
#: Called after every batch of a rebuild with the run's stats and the records still to project.
RebuildProgress = Callable[["RunStats", int], None]
_S = TypeVar("_S", bound=BaseSettings)


def settings_from_env(model: type[_S]) -> _S:
    """``model()``: a settings model read from the environment and ``.env`` (every field has a
    default), typed through ``BaseSettings`` so the type checker does not ask for each field."""
    return model()


def default_sqlite_path() -> Path:
    """``$XDG_DATA_HOME/backscroll/backscroll.db`` (``~/.local/share/backscroll/backscroll.db``)."""
    data = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(data) / "backscroll" / "backscroll.db"


class BackendSettings(BaseSettings):
    """Which backend (env prefix ``BACKSCROLL_``)."""

    model_config = SettingsConfigDict(env_prefix="BACKSCROLL_", env_file=".env", extra="ignore")

    backend: BackendName | None = Field(
        default=None,
        description="embedded or kafka-opensearch; unset: embedded unless servers are configured.",
    )
    sqlite_path: Path = Field(default_factory=default_sqlite_path, description="The embedded backend's file.")
    sqlite_index_on_search: bool = Field(
        default=True, description="Embedded: catch the projection up with the log before each search."
    )
    search_enabled: bool = Field(
        default=True,
        description="False: every search fails with SESSION_QUERY_SEARCH_DISABLED (reads still work).",
    )
    cursor_key: SecretStr | None = Field(
        default=None,
        description="Secret (16+ characters) that signs search cursors; set the same value in every process "
        "(CLI, console, agents) so a cursor from one works in another. Unset: the per-user key in "
        "$XDG_DATA_HOME/backscroll/cursor.key (created on first use, mode 600).",
    )
    kafka_bootstrap_servers: str | None = Field(default=None, description="Set: servers are configured.")
    opensearch_url: str | None = Field(default=None, description="Set: servers are configured.")

    @field_validator("sqlite_path")
    @classmethod
    def _a_file_not_a_directory(cls, value: Path) -> Path:
        if value.expanduser().is_dir():
            example = value / "backscroll.db"
            raise ValueError(f"{value} is a directory; name the database file in it, e.g. {example}")
        return value

    def __repr_args__(self) -> Any:
        # repr() and str() of the settings may land in logs: never with a URL's password.
        from backscroll.ingest.redact import redact_secrets

        for name, value in super().__repr_args__():
            yield name, redact_secrets(value) if isinstance(value, str) else value

    def selected(self) -> BackendName:
        """The chosen backend: ``backend`` when set, else kafka-opensearch when servers are
        configured, else embedded."""
        if self.backend is not None:
            return self.backend
        if self.kafka_bootstrap_servers or self.opensearch_url:
            return "kafka-opensearch"
        return "embedded"

    def query_options(self) -> dict[str, Any]:
        """The options every backend's providers share: ``search_enabled`` and ``cursor_key`` (or,
        unset, the per-user ``cursor_key_file``)."""
        from backscroll.backends.cursor_key import KEY_FILE_NAME

        if self.cursor_key is not None:
            from backscroll.query.cursor import derive_key

            key = derive_key(self.cursor_key.get_secret_value())
            return {"search_enabled": self.search_enabled, "cursor_key": key}
        key_file = default_sqlite_path().parent / KEY_FILE_NAME
        return {"search_enabled": self.search_enabled, "cursor_key_file": key_file}


@dataclass(frozen=True, kw_only=True, repr=False)
class Backend(ABC):
    """One configured backend: where the history lives, and everything done with it.

    Instances are immutable values (``dataclasses.replace`` makes a variant); :meth:`close`
    releases what the operations keep open between calls and may be called more than once.
    """

    #: ``False``: every search fails with ``SESSION_QUERY_SEARCH_DISABLED`` (reads still work).
    search_enabled: bool = True
    #: Signs search cursors (``BACKSCROLL_CURSOR_KEY``); ``None``: the key of ``cursor_key_file``.
    cursor_key: bytes | None = None
    #: Where the per-user cursor key is kept (created on first use); ``None`` with no
    #: ``cursor_key`` either: each provider draws a random key.
    cursor_key_file: Path | None = None

    #: The backend's value of ``BACKSCROLL_BACKEND``.
    name: ClassVar[BackendName]
    #: Whether a rebuild can keep the previous projection (index versions).
    keeps_index_versions: ClassVar[bool] = False
    #: Whether each ``append_encoded`` call is one durable commit (bulk appends then send larger
    #: chunks, as fewer commits are faster).
    commits_each_append: ClassVar[bool] = False

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.describe()})"

    @abstractmethod
    def describe(self) -> str:
        """One line naming the backend and where its data lives (URL passwords redacted)."""

    def missing(self) -> str | None:
        """Why the operator operations have nothing to work on yet (``None``: they may)."""
        return None

    # -- factories --------------------------------------------------------------------------------
    @abstractmethod
    def open_log(self, *, live: bool = True, spool_when_down: bool = False) -> EntryLog:
        """The entry log agents append to. ``live=False`` keeps no live view of the appended
        entries: for a process that appends and exits, whose own searches would never read them.
        ``spool_when_down``: a log with a local spool opens even when its servers are out of reach
        (the entries wait in the spool); otherwise that is :class:`LogUnavailable`."""

    @abstractmethod
    def open_indexer(self, *, metrics_port: int | None = None) -> Runner:
        """The runner that keeps the projection current (``run(until_idle=True)`` to catch up)."""

    @abstractmethod
    def open_dead_letters(self) -> DeadLetters:
        """Where the indexer parks records it cannot project."""

    @abstractmethod
    def open_provider(self, scope: Scope, **kwargs: Any) -> Provider:
        """A search provider pinned to ``scope`` (keyword arguments go to the provider)."""

    @abstractmethod
    def open_async_provider(self, scope: Scope, **kwargs: Any) -> AsyncSearchProvider:
        """:meth:`open_provider` for asyncio (``await provider.asearch(request)``)."""

    @abstractmethod
    def open_reader(self, scope: Scope, **kwargs: Any) -> Reader:
        """A session reader pinned to ``scope`` (keyword arguments go to the reader)."""

    @abstractmethod
    def open_async_reader(self, scope: Scope, **kwargs: Any) -> AsyncSessionReader:
        """:meth:`open_reader` for asyncio (``await reader.aread_event(...)``)."""

    def _query_options(self, kwargs: dict[str, Any]) -> dict[str, Any]:
        from backscroll.backends.cursor_key import load_or_create_key

        kwargs.setdefault("search_enabled", self.search_enabled)
        if self.cursor_key is not None:
            kwargs.setdefault("cursor_key", self.cursor_key)
        elif self.cursor_key_file is not None and "cursor_key" not in kwargs:
            kwargs["cursor_key"] = load_or_create_key(self.cursor_key_file)
        return kwargs

    # -- operator operations ----------------------------------------------------------------------
    @abstractmethod
    def health(self) -> Health:
        """Lag per partition, watermark and freshness; what cannot be read is in ``problems``."""

    @abstractmethod
    def workspaces(self) -> list[WorkspaceCount]:
        """Every workspace in the projection, by id, with its session and event counts."""

    @abstractmethod
    def workspace_of(self, session_id: str) -> str | None:
        """The workspace of a projected session (``None``: not in the projection)."""

    def sessions(self, workspace_id: str) -> tuple[SessionRecord, ...]:
        """The sessions of one workspace (its reader's ``list_sessions``)."""
        from backscroll.query import Scope

        with self.open_reader(Scope.workspace(workspace_id)) as reader:
            return tuple(reader.list_sessions())

    @abstractmethod
    def forget(self, session_id: str) -> Forgotten:
        """Delete one session's documents from the projection (the log keeps its records)."""

    @abstractmethod
    def export(self, job: LogExport) -> Iterator[LogRecord]:
        """The original records ``job`` asks for, read from the log in the order they were appended
        (counted on ``job`` as they are read)."""

    @abstractmethod
    def log_retention(self) -> LogRetention:
        """Whether the log still holds every record appended to it (a rebuild restores the whole
        history only then) and which of its retention settings are finite."""

    @abstractmethod
    def rebuild(
        self,
        *,
        keep: bool = False,
        on_batch: RebuildProgress | None = None,
        allow_truncated: bool = False,
    ) -> Rebuilt:
        """Project the whole log again. ``keep`` keeps the previous projection (only when
        :attr:`keeps_index_versions`; else :class:`ValueError`). A log that is not complete
        (:meth:`log_retention`) is :class:`~backscroll.indexer.errors.LogTruncated` unless
        ``allow_truncated``: then only what remains is projected."""

    @abstractmethod
    def drop(self) -> list[str]:
        """Delete everything this backend holds (the log, the projection, the dead letters) and
        name what was deleted: for a throwaway backend such as the demo's, never the configured
        history (no command drops that)."""

    def dead_letters(self, limit: int | None = DEAD_LETTERS_SHOWN) -> list[ParkedRecord]:
        """Parked records, oldest first."""
        store = self.open_dead_letters()
        try:
            return [ParkedRecord.from_envelope(letter) for letter in store.list(limit)]
        finally:
            store.close()

    def replay_dead_letters(self) -> int:
        """Re-send the dead letters not replayed before to the log; how many were sent."""
        store = self.open_dead_letters()
        try:
            return store.replay()
        finally:
            store.close()

    def close(self) -> None:  # noqa: B027 - most backends keep nothing open between calls
        """Release what the operations keep open between calls (idempotent)."""
