"""Backend selection: the whole pipeline embedded in one SQLite file, or Kafka + OpenSearch.

``BACKSCROLL_BACKEND=embedded|kafka-opensearch`` chooses; when it is unset the embedded backend is
used unless ``BACKSCROLL_KAFKA_BOOTSTRAP_SERVERS`` or ``BACKSCROLL_OPENSEARCH_URL`` is set (servers
configured means servers wanted). The embedded file is ``BACKSCROLL_SQLITE_PATH`` (default
``$XDG_DATA_HOME/backscroll/backscroll.db``, i.e. ``~/.local/share/backscroll/backscroll.db``).

The factories return the same surfaces for both backends:

* :meth:`Backend.open_log` — an entry log (``append`` / ``append_header`` / ``flush`` / ``close``);
* :meth:`Backend.open_indexer` — a :class:`~backscroll.indexer.runner.Runner` (``run(until_idle=...,
  stop=...)`` → stats, ``close``);
* :meth:`Backend.open_dead_letters` — the :class:`~backscroll.indexer.ports.DeadLetters` store;
* :meth:`Backend.open_provider` — a :class:`~backscroll.query.contract.SessionQuery` provider;
* :meth:`Backend.open_reader` — a session reader (``list_sessions``, ``read_event``, ``trace_event``…);
* :meth:`Backend.open_async_provider` / :meth:`Backend.open_async_reader` — the same for asyncio.

On the embedded backend providers and readers also catch the projection up with the log before each
search or read (``BACKSCROLL_SQLITE_INDEX_ON_SEARCH``, default on), so nothing has to run in the
background.
"""

from __future__ import annotations

import dataclasses
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar, get_args

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

if TYPE_CHECKING:
    from backscroll.indexer.ports import DeadLetters
    from backscroll.indexer.runner import Runner
    from backscroll.indexer.settings import IndexerSettings, OpenSearchSettings
    from backscroll.ingest.entry_log import EntryLog
    from backscroll.ingest.settings import KafkaSettings
    from backscroll.query.aio import AsyncSearchProvider, AsyncSessionReader
    from backscroll.query.opensearch.provider import OpenSearchProvider
    from backscroll.query.opensearch.reader import OpenSearchSessionReader
    from backscroll.query.scope import Scope
    from backscroll.query.sqlite.provider import SQLiteProvider
    from backscroll.query.sqlite.reader import SQLiteSessionReader

    Provider = OpenSearchProvider | SQLiteProvider
    Reader = OpenSearchSessionReader | SQLiteSessionReader

__all__ = [
    "BACKENDS",
    "Backend",
    "BackendName",
    "BackendSettings",
    "current_backend",
    "default_sqlite_path",
    "open_indexer",
    "open_log",
    "open_provider",
    "open_reader",
    "settings_from_env",
]

BackendName = Literal["embedded", "kafka-opensearch"]
BACKENDS: tuple[BackendName, ...] = get_args(BackendName)
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
        "(CLI, console, agents) so a cursor from one works in another. Unset: a random key per provider.",
    )
    kafka_bootstrap_servers: str | None = Field(default=None, description="Set: servers are configured.")
    opensearch_url: str | None = Field(default=None, description="Set: servers are configured.")

    def __repr_args__(self) -> Any:
        # repr() and str() of the settings may land in logs: never with a URL's password.
        from backscroll.ingest.redact import redact_secrets

        for name, value in super().__repr_args__():
            yield name, redact_secrets(value) if isinstance(value, str) else value

    def selected(self) -> BackendName:
        if self.backend is not None:
            return self.backend
        if self.kafka_bootstrap_servers or self.opensearch_url:
            return "kafka-opensearch"
        return "embedded"


class _CatchUp:
    """Runs an embedded runner (opened on first use) until idle; the provider closes it."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._indexer: Runner | None = None
        self._closed = False

    def __call__(self) -> None:
        from backscroll.indexer.sqlite.runner import embedded_runner

        with self._lock:
            if self._closed or not self.path.exists():
                return  # nothing appended yet; a read command must not create the file
            if self._indexer is None:
                self._indexer = embedded_runner(self.path)
            self._indexer.catch_up()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            indexer, self._indexer = self._indexer, None
        if indexer is not None:
            indexer.close()


@dataclass(frozen=True)
class Backend:
    """One configured backend; its factories build the log, the indexer and providers."""

    name: BackendName
    sqlite_path: Path
    index_on_search: bool = True
    search_enabled: bool = True
    kafka: KafkaSettings | None = None
    opensearch: OpenSearchSettings | None = None
    indexer: IndexerSettings | None = None
    #: Signs search cursors (``BACKSCROLL_CURSOR_KEY``); ``None``: each provider draws a random key.
    cursor_key: bytes | None = None

    @classmethod
    def from_env(cls, settings: BackendSettings | None = None) -> Backend:
        from dataclasses import replace

        from backscroll.query.cursor import derive_key

        settings = settings or BackendSettings()
        if settings.selected() == "embedded":
            backend = cls.embedded(settings.sqlite_path, index_on_search=settings.sqlite_index_on_search)
        else:
            backend = cls.kafka_opensearch()
        if settings.cursor_key is not None:
            backend = replace(backend, cursor_key=derive_key(settings.cursor_key.get_secret_value()))
        return dataclasses.replace(backend, search_enabled=settings.search_enabled)

    @classmethod
    def embedded(cls, path: str | os.PathLike[str], *, index_on_search: bool = True) -> Backend:
        return cls("embedded", Path(path).expanduser(), index_on_search)

    @classmethod
    def kafka_opensearch(
        cls,
        kafka: KafkaSettings | None = None,
        opensearch: OpenSearchSettings | None = None,
        indexer: IndexerSettings | None = None,
    ) -> Backend:
        from backscroll.indexer.settings import IndexerSettings, OpenSearchSettings
        from backscroll.ingest.settings import KafkaSettings

        return cls(
            "kafka-opensearch",
            BackendSettings().sqlite_path,
            kafka=kafka or KafkaSettings(),
            opensearch=opensearch or settings_from_env(OpenSearchSettings),
            indexer=indexer or settings_from_env(IndexerSettings),
        )

    def __repr__(self) -> str:
        return f"Backend({self.describe()})"

    def describe(self) -> str:
        """One line naming the backend and where its data lives (URL passwords redacted)."""
        from backscroll.ingest.redact import redact_secrets

        if self.name == "embedded":
            return f"embedded (SQLite {self.sqlite_path})"
        assert self.kafka is not None and self.opensearch is not None
        return redact_secrets(
            f"kafka-opensearch (Kafka {self.kafka.bootstrap_servers} topic {self.kafka.topic}, "
            f"OpenSearch {self.opensearch.url} prefix {self.opensearch.index_prefix})"
        )

    # -- factories ------------------------------------------------------------------------------
    def open_log(self, *, live: bool = True) -> EntryLog:
        """The entry log agents append to (the Kafka topic is created if missing). ``live=False``
        keeps no live view of the appended entries: for a process that appends and exits (the
        bulk ``append`` command), whose own searches would never read them."""
        if self.name == "embedded":
            from backscroll.ingest.sqlite.log import SQLiteEntryLog

            return SQLiteEntryLog(self.sqlite_path, live_max_per_session=2_000 if live else 0)
        from backscroll.ingest.kafka.appender import Appender
        from backscroll.ingest.kafka.topics import ensure_topics
        from backscroll.ingest.settings import AppenderSettings

        assert self.kafka is not None
        ensure_topics(self.kafka)
        options = settings_from_env(AppenderSettings)
        if not live:
            options = options.model_copy(update={"live_max_per_session": 0})
        return Appender(self.kafka, options)

    def open_indexer(self, *, metrics_port: int | None = None) -> Runner:
        """The runner that keeps the projection current (``run(until_idle=True)`` to catch up)."""
        if self.name == "embedded":
            from backscroll.indexer.settings import IndexerSettings
            from backscroll.indexer.sqlite.runner import embedded_runner

            idle = settings_from_env(IndexerSettings).idle_timeout_s
            return embedded_runner(
                self.sqlite_path, metrics_port=metrics_port, idle_timeout_s=idle, bulk_catch_up=True
            )
        from backscroll.indexer.kafka.worker import kafka_runner

        assert self.indexer is not None
        settings = self.indexer
        if metrics_port is not None:
            settings = settings.model_copy(update={"metrics_port": metrics_port})
        return kafka_runner(self.kafka, self.opensearch, settings)

    def open_dead_letters(self) -> DeadLetters:
        """Where the indexer parks records it cannot project (DLQ topic, or the file's table)."""
        if self.name == "embedded":
            from backscroll.indexer.sqlite.deadletters import SQLiteDeadLetters
            from backscroll.indexer.sqlite.runner import open_embedded

            return SQLiteDeadLetters(open_embedded(self.sqlite_path), owns_conn=True)
        from backscroll.indexer.kafka.deadletters import KafkaDeadLetters

        assert self.kafka is not None
        return KafkaDeadLetters(self.kafka)

    def open_provider(self, scope: Scope, **kwargs: Any) -> Provider:
        """A search provider pinned to ``scope`` (keyword arguments go to the provider)."""
        kwargs.setdefault("search_enabled", self.search_enabled)
        if self.cursor_key is not None:
            kwargs.setdefault("cursor_key", self.cursor_key)
        if self.name == "embedded":
            from backscroll.query.sqlite.provider import SQLiteProvider

            return SQLiteProvider(scope, self.sqlite_path, **self._embedded(kwargs))
        from backscroll.query.opensearch.provider import OpenSearchProvider

        return OpenSearchProvider(scope, self.opensearch, **kwargs)

    def open_async_provider(self, scope: Scope, **kwargs: Any) -> AsyncSearchProvider:
        """:meth:`open_provider` for asyncio (``await provider.asearch(request)``)."""
        kwargs.setdefault("search_enabled", self.search_enabled)
        if self.cursor_key is not None:
            kwargs.setdefault("cursor_key", self.cursor_key)
        if self.name == "embedded":
            from backscroll.query.aio import AsyncSQLiteProvider

            return AsyncSQLiteProvider(scope, self.sqlite_path, **self._embedded(kwargs))
        from backscroll.query.aio import AsyncOpenSearchProvider

        return AsyncOpenSearchProvider(scope, self.opensearch, **kwargs)

    def open_async_reader(self, scope: Scope, **kwargs: Any) -> AsyncSessionReader:
        """:meth:`open_reader` for asyncio (``await reader.aread_event(...)``): native on
        ``AsyncOpenSearch``; the embedded reader on worker threads."""
        if self.name == "embedded":
            from backscroll.query.aio import AsyncSessionReader

            return AsyncSessionReader(self.open_reader(scope, **kwargs))
        from backscroll.query.aio import AsyncOpenSearchReader

        return AsyncOpenSearchReader(scope, self.opensearch, **kwargs)

    def _embedded(self, kwargs: dict[str, Any]) -> dict[str, Any]:
        if self.index_on_search and "catch_up" not in kwargs:
            kwargs["catch_up"] = _CatchUp(self.sqlite_path)
        return kwargs

    def open_reader(self, scope: Scope, **kwargs: Any) -> Reader:
        """A session reader pinned to ``scope`` (keyword arguments go to the reader)."""
        if self.name == "embedded":
            from backscroll.query.sqlite.reader import SQLiteSessionReader

            return SQLiteSessionReader(scope, self.sqlite_path, **self._embedded(kwargs))
        from backscroll.query.opensearch.reader import OpenSearchSessionReader

        return OpenSearchSessionReader(scope, self.opensearch, **kwargs)


def current_backend() -> Backend:
    """The backend the environment (and ``.env``) selects."""
    return Backend.from_env()


def open_log(backend: Backend | None = None, *, live: bool = True) -> EntryLog:
    return (backend or current_backend()).open_log(live=live)


def open_indexer(backend: Backend | None = None, *, metrics_port: int | None = None) -> Runner:
    return (backend or current_backend()).open_indexer(metrics_port=metrics_port)


def open_provider(scope: Scope, backend: Backend | None = None, **kwargs: Any) -> Provider:
    return (backend or current_backend()).open_provider(scope, **kwargs)


def open_reader(scope: Scope, backend: Backend | None = None, **kwargs: Any) -> Reader:
    return (backend or current_backend()).open_reader(scope, **kwargs)
