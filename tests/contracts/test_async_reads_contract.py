"""The asyncio reader's own contract on every backend (the reads contract already runs each of its
assertions through the asyncio API too): many reads awaited at once answer exactly what the
synchronous reader answers, errors included, and the loop is never blocked — on OpenSearch no
thread is used at all (the default executor refuses work), on the embedded backend each engine call
of every read runs on a worker thread (the default executor sees each one)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import pytest

from backscroll.query import Scope, SessionQueryError
from backscroll.query.reads.async_reader import AsyncSessionReader

from .conftest import _PARAMS, Harness, make_harness
from .test_reads_contract import EVENT_COUNT, RECORDS

#: (scope, read, arguments): every read, on sessions with a compaction, a lineage and bad input.
READS: list[tuple[str, str, tuple[Any, ...]]] = [
    ("ws-r", "list_sessions", ()),
    ("ws-r", "list_sessions", ([{"kind": "id", "values": ["s44", "basic"]}],)),
    ("ws-r", "list_events", ("s44",)),
    ("ws-r", "filter_events", ("s47", [{"kind": "type", "values": ["user/message"]}])),
    ("ws-r", "read_surface", ("s44",)),
    ("ws-r", "read_event", ("s44", 3, 2, 2)),
    ("ws-r", "read_event", ("basic", 9)),
    ("ws-r", "read_event", ("foreign", 0)),
    ("ws-r", "read_event", ("basic", 0, 99)),
    ("ws-r", "trace_event", ("s47", 3)),
    ("ws-lin", "trace_session", ("target",)),
    ("ws-lin", "trace_session", ("nowhere",)),
    ("ws-bad", "read_surface", ("bad-endoff",)),
]


class CountingExecutor(ThreadPoolExecutor):
    """The loop's default executor, counting the work it is given."""

    def __init__(self) -> None:
        super().__init__(max_workers=4)
        self.submitted = 0
        self._lock = threading.Lock()

    def submit(self, *args: Any, **kwargs: Any) -> Future[Any]:
        with self._lock:
            self.submitted += 1
        return super().submit(*args, **kwargs)


class NoThreads(ThreadPoolExecutor):
    """A default executor that refuses work."""

    def submit(self, *args: Any, **kwargs: Any) -> Future[Any]:
        raise AssertionError("the asyncio reader used a worker thread")


@pytest.fixture(scope="module", params=_PARAMS)
def areads(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Harness]:
    with make_harness(request.param, tmp_path_factory.mktemp(f"areads-{request.param}")) as made:
        made.append_all(RECORDS)
        stats = made.index()
        assert (stats.indexed, stats.dead_lettered) == (EVENT_COUNT, 0)
        yield made


def outcome(result: Any) -> Any:
    """A read's result, or its error's code and retriability."""
    if isinstance(result, SessionQueryError):
        return ("error", result.code, result.retriable)
    return result


def test_concurrent_async_reads_answer_what_the_sync_reads_answer(areads: Harness) -> None:
    expected = []
    for scope, name, args in READS:
        with areads.backend.open_reader(Scope.workspace(scope)) as sync:
            try:
                expected.append(outcome(getattr(sync, name)(*args)))
            except SessionQueryError as err:
                expected.append(outcome(err))
    assert ("error", "SESSION_QUERY_EVENT_NOT_FOUND", False) in expected  # the list holds errors too

    async def run() -> tuple[list[Any], int]:
        native = areads.name == "kafka-opensearch"
        executor: ThreadPoolExecutor = NoThreads() if native else CountingExecutor()
        asyncio.get_running_loop().set_default_executor(executor)
        readers: dict[str, AsyncSessionReader] = {
            scope: areads.backend.open_async_reader(Scope.workspace(scope))
            for scope in ("ws-r", "ws-lin", "ws-bad")
        }
        try:
            calls = [getattr(readers[scope], f"a{name}")(*a) for _ in range(3) for scope, name, a in READS]
            results = await asyncio.gather(*calls, return_exceptions=True)
        finally:
            for areader in readers.values():
                if isinstance(executor, NoThreads):
                    await areader.aclose()
                else:
                    areader.reader.close()  # aclose() would count as a worker-thread job below
        submitted = executor.submitted if isinstance(executor, CountingExecutor) else 0
        return [outcome(r) for r in results], submitted

    results, submitted = asyncio.run(run())
    assert results == expected * 3
    if areads.name == "embedded":
        # each engine call of each read ran off the loop, on a worker thread (a read of a window
        # asks for the log, then for the texts it returns: two)
        assert submitted >= 3 * len(READS)
