"""The asyncio API's own behaviour (the shared contract runs both APIs in tests/contracts): typed
driver errors from the async OpenSearch engine, cancellation, and a loop that never blocks."""

from __future__ import annotations

import asyncio
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from test_query_driver_errors import OPENSEARCH_ERRORS

from backscroll.indexer.opensearch.security import security_failure
from backscroll.indexer.settings import OpenSearchSettings
from backscroll.indexer.sqlite.runner import embedded_runner
from backscroll.ingest.sqlite.log import SQLiteEntryLog
from backscroll.query import AbortSignal, Scope, SessionQueryError, SessionQueryRequest
from backscroll.query.aio import AsyncSearchProvider
from backscroll.query.deadline import Deadline
from backscroll.query.engine import EngineHit, EnginePage, EngineQuery
from backscroll.query.opensearch.async_provider import AsyncOpenSearchProvider
from backscroll.query.reads.async_reader import AsyncSessionReader
from backscroll.query.sqlite.async_provider import AsyncSQLiteProvider
from backscroll.query.sqlite.reader import SQLiteSessionReader

T0 = datetime(2026, 11, 4, tzinfo=UTC)
_HITS: dict[str, Any] = {"hits": {"total": {"value": 0}, "hits": []}}
#: One entry that matches nothing, so a search of several words asks for closest matches.
_COUNT: dict[str, Any] = {
    "hits": {"total": {"value": 1}, "hits": []},
    "aggregations": {"searched": {"doc_count": 1}, "max_offset": {"value": None}},
}


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "aio.db"
    records: list[dict[str, Any]] = [
        {"v": 1, "kind": "header", "workspace_id": "w", "session_id": "a-1", "created_at": T0.isoformat()}
    ]
    records += [
        {"v": 1, "kind": "event", "workspace_id": "w", "session_id": "a-1", "seq": i,
         "type": "user/message", "surface": {"op": "append"},
         "time": (T0 + timedelta(seconds=i)).isoformat(), "text": f"budget line {i}"}
        for i in range(4)
    ]  # fmt: skip
    with SQLiteEntryLog(path) as log:
        log.append_many(records)
    with embedded_runner(path) as indexer:
        indexer.run_until_idle()
    return path


class FakeAsyncOpenSearch:
    def __init__(self, error: Exception | None, failing: set[str]) -> None:
        self.error = error
        self.failing = failing
        self.closed = False

    async def msearch(self, *, body: list[dict[str, Any]], **_: Any) -> dict[str, Any]:
        if "msearch" in self.failing and self.error is not None:
            raise self.error
        return {"responses": [_COUNT] + [_HITS] * (len(body) // 2 - 1)}

    async def search(self, **_: Any) -> dict[str, Any]:
        if "search" in self.failing and self.error is not None:
            raise self.error
        return _HITS

    async def close(self) -> None:
        self.closed = True


@pytest.mark.parametrize("error", OPENSEARCH_ERRORS, ids=lambda e: type(e).__name__)
@pytest.mark.parametrize(("query", "failing"), [("budget", {"msearch"}), ("budget review", {"search"})])
def test_async_opensearch_engine_translates_every_driver_error(
    error: Exception, query: str, failing: set[str]
) -> None:
    client = FakeAsyncOpenSearch(error, failing)

    async def run() -> None:
        async with AsyncOpenSearchProvider(Scope.workspace("w"), async_client=client) as provider:  # type: ignore[arg-type]
            with pytest.raises(SessionQueryError) as err:
                await provider.asearch(SessionQueryRequest(query=query))
            assert err.value.code in ("SESSION_QUERY_INDEX_FAILED", "SESSION_QUERY_INVALID_CONFIG")
            assert (err.value.code == "SESSION_QUERY_INVALID_CONFIG") == (
                security_failure(error, OpenSearchSettings()) is not None
            )
        assert client.closed

    asyncio.run(run())


def test_an_unreachable_opensearch_is_an_error_in_async_too() -> None:
    async def run() -> str:
        async with AsyncOpenSearchProvider(
            Scope.workspace("w"), hosts="http://127.0.0.1:9", request_timeout_s=2
        ) as provider:
            with pytest.raises(SessionQueryError) as err:
                await provider.asearch(SessionQueryRequest(query="x"))
            return err.value.code

    assert asyncio.run(run()) == "SESSION_QUERY_INDEX_FAILED"


class HangingEngine:
    """An engine whose search never answers; it remembers the deadline it was given."""

    log_topic: str | None = None

    def __init__(self) -> None:
        self.deadline: Deadline | None = None
        self.started = asyncio.Event()

    async def search(self, query: EngineQuery, deadline: Deadline) -> EnginePage:
        self.deadline = deadline
        self.started.set()
        await asyncio.Event().wait()
        raise AssertionError("unreachable")

    async def rank(self, query: EngineQuery, deadline: Deadline) -> list[EngineHit]:
        raise AssertionError("unreachable")

    async def aclose(self) -> None:
        pass


def test_cancelling_the_task_cancels_the_search_behind_it() -> None:
    async def run() -> Deadline:
        engine = HangingEngine()
        provider = AsyncSearchProvider(Scope.workspace("w"), engine)
        task = asyncio.create_task(provider.asearch(SessionQueryRequest(query="x")))
        await engine.started.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert engine.deadline is not None
        return engine.deadline

    deadline = asyncio.run(run())
    assert deadline.stopped()  # the work behind the search sees it must stop
    assert deadline.error().code == "SESSION_QUERY_ABORTED"


def test_the_embedded_async_provider_does_not_block_the_loop(db: Path) -> None:
    release = threading.Event()
    order: list[str] = []

    def catch_up() -> None:
        released = release.wait(timeout=60)
        order.append("caught up" if released else "gave up")

    async def run() -> list[int]:
        async with AsyncSQLiteProvider(
            Scope.workspace("w"), db, catch_up=catch_up, request_timeout_s=120
        ) as provider:
            search = asyncio.create_task(provider.asearch(SessionQueryRequest(query="budget", limit=2)))
            await asyncio.sleep(0.05)
            order.append("loop ran")  # only possible while the search waits off the loop
            release.set()
            result = await search
            return [m.seq for m in result.matches]

    assert asyncio.run(run()) == [3, 2]
    assert order == ["loop ran", "caught up"]


def test_async_reads_and_an_aborted_signal(db: Path) -> None:
    async def run() -> None:
        async with AsyncSessionReader(SQLiteSessionReader(Scope.workspace("w"), db)) as reader:
            window = await reader.aread_event("a-1", 2, before=1, after=1)
            assert [e.seq for e in window.events] == [1, 2, 3]
            assert [r.header.session_id for r in await reader.alist_sessions()] == ["a-1"]
            assert (await reader.atrace_session("a-1")).complete
            assert len(await reader.alist_events("a-1")) == 4
            signal = AbortSignal()
            signal.abort()
            with pytest.raises(SessionQueryError) as err:
                await reader.aread_event("a-1", 0, signal=signal)
            assert err.value.code == "SESSION_QUERY_ABORTED"
        assert reader.reader.closed

    asyncio.run(run())


def test_the_embedded_async_reader_does_not_block_the_loop(db: Path) -> None:
    release = threading.Event()
    order: list[str] = []

    def catch_up() -> None:
        released = release.wait(timeout=60)
        order.append("caught up" if released else "gave up")

    async def run() -> list[int]:
        reader = SQLiteSessionReader(Scope.workspace("w"), db, catch_up=catch_up, request_timeout_s=120)
        async with AsyncSessionReader(reader) as areader:
            read = asyncio.create_task(areader.aread_event("a-1", 1, before=1))
            await asyncio.sleep(0.05)
            order.append("loop ran")  # only possible while the read waits off the loop
            release.set()
            return [e.seq for e in (await read).events]

    assert asyncio.run(run()) == [0, 1]
    assert order == ["loop ran", "caught up"]
