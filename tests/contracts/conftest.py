"""One isolated pipeline per backend, behind one small harness, for the contract suites.

Every suite takes ``harness`` (a fresh, empty pipeline) or ``loaded`` (a module-wide pipeline holding
:mod:`tests.contracts.corpus`), parametrized over :data:`BACKENDS`. Both harnesses build their log,
indexer and providers through :class:`backscroll.backends.Backend`, the factories the CLI uses:

* ``embedded`` — a SQLite file in a temporary directory (always runs);
* ``kafka-opensearch`` — a topic, index prefix and consumer group of its own on the servers of
  ``backscroll up`` (``tests/integration/conftest.py``'s ``Pipeline``); skipped when they are not
  reachable, failed instead with ``BACKSCROLL_REQUIRE_STACK=1`` (CI).

What differs by backend stays in the harness: a test that needs a fault (a projection out of reach,
never built or damaged behind the indexer's back) or a backend's knob (paged reads, the settings
that select it) asks the harness, so the test itself is the same on both.
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import sqlite3
import sys
import threading
from collections.abc import Coroutine, Iterator
from contextlib import ExitStack, closing, contextmanager
from pathlib import Path
from types import ModuleType
from typing import Any

import orjson
import pytest

from backscroll.backends import Backend, EmbeddedBackend, KafkaOpenSearchBackend
from backscroll.indexer.ports import SessionView
from backscroll.indexer.sqlite.view import SQLiteView
from backscroll.ingest import EntryLog, Position
from backscroll.ingest.sqlite.log import SQLiteEntryLog
from backscroll.query import Scope

from . import corpus

BACKENDS = ("embedded", "kafka-opensearch")
#: Which query API ``Harness.provider``/``Harness.reader`` hand out: ``sync``, or ``async`` (the
#: asyncio provider and reader behind a synchronous facade, so one suite proves both).
API: dict[str, str] = {"mode": "sync"}
_READS = frozenset(
    (
        "list_sessions",
        "list_events",
        "filter_events",
        "read_surface",
        "read_event",
        "trace_session",
        "trace_event",
    )
)


class _Loop:
    """An event loop on a thread of its own; :meth:`run` waits for a coroutine from any thread."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self._thread.start()

    def run(self, coro: Coroutine[Any, Any, Any]) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout=300)

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=30)
        self.loop.close()


class AsyncProviderFacade:
    """An async provider behind the synchronous ``search``/``close``."""

    def __init__(self, provider: Any, loop: _Loop) -> None:
        self.provider = provider
        self._loop = loop

    def search(self, request: Any, **kwargs: Any) -> Any:
        return self._loop.run(self.provider.asearch(request, **kwargs))

    @property
    def closed(self) -> bool:
        return bool(self.provider.closed)

    def close(self) -> None:
        self._loop.run(self.provider.aclose())


class AsyncReaderFacade:
    """An async reader behind the synchronous read methods."""

    def __init__(self, reader: Any, loop: _Loop) -> None:
        self.areader = reader
        self._loop = loop

    def __getattr__(self, name: str) -> Any:
        if name not in _READS:
            raise AttributeError(name)
        method = getattr(self.areader, f"a{name}")
        return lambda *args, **kwargs: self._loop.run(method(*args, **kwargs))

    @property
    def closed(self) -> bool:
        return bool(self.areader.reader.closed)

    def close(self) -> None:
        self._loop.run(self.areader.aclose())


class _Untouchable:
    """An OpenSearch client that fails the test if a reader uses it at all."""

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"OpenSearch was consulted ({name})")


#: Where nothing listens: an OpenSearch that cannot be reached.
CLOSED_PORT = "http://127.0.0.1:9"

_PARAMS = [
    pytest.param("embedded", id="embedded"),
    pytest.param("kafka-opensearch", id="kafka-opensearch", marks=pytest.mark.integration),
]


def _integration() -> ModuleType:
    """``tests/integration/conftest.py`` as a plain module (its ``Pipeline`` and reachability check);
    loaded under its own name so it never shadows the ``conftest`` the integration tests import."""
    name = "backscroll_tests_integration_pipeline"
    module = sys.modules.get(name)
    if module is None:
        path = Path(__file__).resolve().parents[1] / "integration" / "conftest.py"
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return module


def _require_stack() -> None:
    from backscroll.indexer import OpenSearchSettings
    from backscroll.ingest import KafkaSettings

    reachable = _integration()._reachable
    kafka = KafkaSettings().bootstrap_servers.split(",")[0].rsplit(":", 1)
    os_url = OpenSearchSettings().url.split(",")[0].split("//", 1)[1].rsplit(":", 1)
    missing = [
        name
        for name, (host, port) in (("Kafka", kafka), ("OpenSearch", os_url))
        if not reachable(host, int(port))
    ]
    if missing:
        message = f"{' and '.join(missing)} not reachable: run `backscroll up` first"
        if os.environ.get("BACKSCROLL_REQUIRE_STACK") == "1":
            pytest.fail(message)
        pytest.skip(message)


class Harness:
    """What a contract test may do with a pipeline, whatever the backend."""

    name: str
    backend: Backend

    def __init__(self) -> None:
        self._closables: list[Any] = []
        self._loop: _Loop | None = None

    def _async_loop(self) -> _Loop:
        if self._loop is None:
            self._loop = _Loop()
        return self._loop

    # -- log ------------------------------------------------------------------------------------
    def log(self) -> EntryLog:
        log = self.backend.open_log()
        self._closables.append(log)
        return log

    def append_all(self, records: list[dict[str, Any]]) -> list[Position]:
        with self.backend.open_log() as log:
            handles = [log.append(r) for r in records]
            log.flush(timeout=60)
            return [h.result(timeout=30) for h in handles]

    def send_raw(self, items: list[tuple[bytes | None, bytes | None]]) -> None:
        """Write bytes to the log without validation, as a foreign client could."""
        raise NotImplementedError

    # -- indexer --------------------------------------------------------------------------------
    def index(self) -> Any:
        with self.backend.open_indexer() as indexer:
            return indexer.run(until_idle=True)

    def dead_letters(self) -> list[dict[str, Any]]:
        store = self.backend.open_dead_letters()
        try:
            return store.list(None)
        finally:
            store.close()

    def view(self) -> SessionView:
        raise NotImplementedError

    def settings_env(self) -> dict[str, str]:
        """The ``BACKSCROLL_`` settings that select this pipeline (for the command line)."""
        raise NotImplementedError

    # -- query ----------------------------------------------------------------------------------
    def provider(self, scope: Scope, **kwargs: Any) -> Any:
        provider: Any
        if API["mode"] == "async":
            provider = AsyncProviderFacade(
                self.backend.open_async_provider(scope, **kwargs), self._async_loop()
            )
        else:
            provider = self.backend.open_provider(scope, **kwargs)
        self._closables.append(provider)
        return provider

    def reader(self, scope: Scope, **kwargs: Any) -> Any:
        return self._reader(self.backend, scope, **kwargs)

    def _reader(self, backend: Backend, scope: Scope, **kwargs: Any) -> Any:
        reader: Any
        if API["mode"] == "async":
            reader = AsyncReaderFacade(backend.open_async_reader(scope, **kwargs), self._async_loop())
        else:
            reader = backend.open_reader(scope, **kwargs)
        self._closables.append(reader)
        return reader

    # -- faults: what only a test does to a pipeline ---------------------------------------------
    def unreachable_reader(self, scope: Scope, **kwargs: Any) -> Any:
        """A reader whose projection cannot be reached (nothing listens there; no such file)."""
        raise NotImplementedError

    def untouchable_reader(self, scope: Scope, **kwargs: Any) -> Any:
        """A reader that fails the test if it consults the projection at all."""
        raise NotImplementedError

    def unprojected_reader(self, scope: Scope, **kwargs: Any) -> Any:
        """A reader of a projection that was never built (the servers up; a file holding a log)."""
        raise NotImplementedError

    def paging(self, page_size: int) -> dict[str, Any]:
        """Reader options that load a log in pages of ``page_size`` events, uncached (none on a
        backend that loads a log in one query)."""
        return {}

    def stored_surfaces(self, session_id: str) -> list[tuple[str, int | None]]:
        """Each projected event's surface state and ``replaced_by`` as the indexer stored them."""
        raise NotImplementedError

    def drop_event(self, session_id: str, seq: int) -> None:
        """Delete one projected event behind the indexer's back."""
        raise NotImplementedError

    def damage_event(self, session_id: str, seq: int, **fields: Any) -> None:
        """Overwrite fields of one projected event's stored document behind the indexer's back."""
        raise NotImplementedError

    def close(self) -> None:
        for closable in reversed(self._closables):
            closable.close()
        self._closables.clear()
        if self._loop is not None:
            self._loop.close()
            self._loop = None


class EmbeddedHarness(Harness):
    name = "embedded"

    def __init__(self, directory: Path) -> None:
        super().__init__()
        self.path = directory / "backscroll.db"
        # Catching up on search is the embedded backend's own convenience; the contract indexes
        # explicitly, like the Kafka pipeline has to.
        self.backend = EmbeddedBackend(self.path, index_on_search=False)

    def send_raw(self, items: list[tuple[bytes | None, bytes | None]]) -> None:
        with SQLiteEntryLog(self.path) as log:
            for key, value in items:
                log.append_raw(key, value)

    def view(self) -> SQLiteView:
        view = SQLiteView(self.path)
        view.ensure_schema()
        self._closables.append(view)
        return view

    def settings_env(self) -> dict[str, str]:
        return {"BACKSCROLL_BACKEND": "embedded", "BACKSCROLL_SQLITE_PATH": str(self.path)}

    def unreachable_reader(self, scope: Scope, **kwargs: Any) -> Any:
        nowhere = EmbeddedBackend(self.path.parent / "no-such-file.db", index_on_search=False)
        return self._reader(nowhere, scope, **kwargs)

    def untouchable_reader(self, scope: Scope, **kwargs: Any) -> Any:
        def connect(path: Path, timeout: float) -> sqlite3.Connection:
            raise AssertionError(f"the projection was consulted ({path})")

        return self.reader(scope, connector=connect, **kwargs)

    def unprojected_reader(self, scope: Scope, **kwargs: Any) -> Any:
        unindexed = EmbeddedBackend(self.path.parent / "log-only.db", index_on_search=False)
        with unindexed.open_log() as log:
            header = {"v": 1, "kind": "header", "workspace_id": "w", "session_id": "s",
                      "created_at": "2026-11-01T00:00:00Z"}  # fmt: skip
            log.append(header).result(timeout=30)
        return self._reader(unindexed, scope, **kwargs)

    def stored_surfaces(self, session_id: str) -> list[tuple[str, int | None]]:
        with closing(sqlite3.connect(self.path)) as conn:
            rows = conn.execute(
                "SELECT surface_state, doc FROM events WHERE session_id = ? ORDER BY seq", [session_id]
            ).fetchall()
        return [(state, orjson.loads(doc).get("replaced_by")) for state, doc in rows]

    def drop_event(self, session_id: str, seq: int) -> None:
        with closing(sqlite3.connect(self.path)) as conn, conn:  # closed; committed first
            conn.execute("DELETE FROM events WHERE session_id = ? AND seq = ?", [session_id, seq])

    def damage_event(self, session_id: str, seq: int, **fields: Any) -> None:
        with closing(sqlite3.connect(self.path)) as conn, conn:  # closed; committed first
            where = "WHERE session_id = ? AND seq = ?"
            (doc,) = conn.execute(f"SELECT doc FROM events {where}", [session_id, seq]).fetchone()
            damaged = orjson.dumps({**orjson.loads(doc), **fields})
            conn.execute(f"UPDATE events SET doc = ? {where}", [damaged, session_id, seq])


class StackHarness(Harness):
    name = "kafka-opensearch"

    def __init__(self, pipeline: Any) -> None:
        super().__init__()
        self.pipeline = pipeline
        self.backend = KafkaOpenSearchBackend(pipeline.kafka, pipeline.opensearch, pipeline.indexer)

    def send_raw(self, items: list[tuple[bytes | None, bytes | None]]) -> None:
        from kafka import KafkaProducer

        producer = KafkaProducer(**self.pipeline.kafka.client_config(), max_request_size=8 * 1024 * 1024)
        try:
            for key, value in items:
                producer.send(self.pipeline.kafka.topic, key=key, value=value)
            producer.flush(timeout=60)
        finally:
            producer.close()

    def view(self) -> SessionView:
        view: SessionView = self.pipeline.view()
        view.ensure_schema()
        return view

    def settings_env(self) -> dict[str, str]:
        return {
            "BACKSCROLL_BACKEND": "kafka-opensearch",
            "BACKSCROLL_KAFKA_BOOTSTRAP_SERVERS": self.pipeline.kafka.bootstrap_servers,
            "BACKSCROLL_KAFKA_TOPIC": self.pipeline.kafka.topic,
            "BACKSCROLL_OPENSEARCH_URL": self.pipeline.opensearch.url,
            "BACKSCROLL_OPENSEARCH_INDEX_PREFIX": self.pipeline.opensearch.index_prefix,
            "BACKSCROLL_INDEXER_GROUP_ID": self.pipeline.indexer.group_id,
        }

    def unreachable_reader(self, scope: Scope, **kwargs: Any) -> Any:
        return self.reader(scope, hosts=CLOSED_PORT, **kwargs)

    def untouchable_reader(self, scope: Scope, **kwargs: Any) -> Any:
        clients = {"client": _Untouchable()}
        if API["mode"] == "async":
            clients["async_client"] = _Untouchable()
        return self.reader(scope, **clients, **kwargs)

    def unprojected_reader(self, scope: Scope, **kwargs: Any) -> Any:
        return self.reader(
            scope, index_prefix=f"{self.pipeline.opensearch.index_prefix}-never-built", **kwargs
        )

    def paging(self, page_size: int) -> dict[str, Any]:
        return {"page_size": page_size, "cache": False}

    def _events(self) -> tuple[Any, str]:
        from backscroll.indexer.opensearch.mappings import events_alias

        return self.pipeline.view().client, events_alias(self.pipeline.opensearch.index_prefix)

    def stored_surfaces(self, session_id: str) -> list[tuple[str, int | None]]:
        client, index = self._events()
        body = {"size": 10_000, "query": {"term": {"session_id": session_id}}, "sort": [{"seq": "asc"}]}
        hits = client.search(index=index, routing=session_id, body=body)["hits"]["hits"]
        return [(hit["_source"]["surface_state"], hit["_source"].get("replaced_by")) for hit in hits]

    def drop_event(self, session_id: str, seq: int) -> None:
        client, index = self._events()
        client.delete(index=index, id=f"{session_id}:{seq}", routing=session_id, refresh=True)

    def damage_event(self, session_id: str, seq: int, **fields: Any) -> None:
        client, index = self._events()
        doc_id = f"{session_id}:{seq}"
        source = client.get(index=index, id=doc_id, routing=session_id)["_source"]
        client.index(index=index, id=doc_id, routing=session_id, body={**source, **fields}, refresh=True)


@contextmanager
def make_harness(backend: str, directory: Path) -> Iterator[Harness]:
    with ExitStack() as stack:
        harness: Harness
        if backend == "embedded":
            harness = EmbeddedHarness(directory)
        else:
            _require_stack()
            harness = StackHarness(stack.enter_context(_integration().make_pipeline()))
        stack.callback(harness.close)
        yield harness


@pytest.fixture(params=_PARAMS)
def harness(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Harness]:
    """A fresh, empty pipeline."""
    with make_harness(request.param, tmp_path) as made:
        yield made


@pytest.fixture(scope="module", params=_PARAMS)
def loaded(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Harness]:
    """A pipeline holding the contract corpus, appended and indexed (shared by a module's tests)."""
    with make_harness(request.param, tmp_path_factory.mktemp(request.param)) as made:
        records = corpus.records()
        made.append_all(records)
        stats = made.index()
        assert stats.indexed == corpus.SESSIONS * corpus.EVENTS
        assert stats.dead_lettered == 0
        yield made


@pytest.fixture
def api(request: pytest.FixtureRequest) -> Iterator[str]:
    """The query API of the test's harness (see :func:`pytest_generate_tests`)."""
    API["mode"] = getattr(request, "param", "sync")
    try:
        yield API["mode"]
    finally:
        API["mode"] = "sync"


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """In a module with ``BOTH_APIS = True``, every test on a harness runs with the synchronous
    query API and again with the asyncio one."""
    harnessed = {"harness", "loaded", "reads"} & set(metafunc.fixturenames)
    if getattr(metafunc.module, "BOTH_APIS", False) and harnessed:
        metafunc.fixturenames.append("api")
        metafunc.parametrize("api", ["sync", "async"], indirect=True)
