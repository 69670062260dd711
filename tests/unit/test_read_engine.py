"""The session reads on the read-engine port, without a backend: the flows ask an in-memory engine
for exactly the calls a read needs, and the shared drivers run them synchronously, awaited on an
async engine, or step by step on worker threads (cancellable)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Generator, Sequence
from dataclasses import dataclass, replace
from typing import Any

import pytest
from test_reads import code_of, entry, srec

from backscroll.query import AbortSignal, Scope, SessionQueryError
from backscroll.query.deadline import Deadline
from backscroll.query.driver import OnThread, adrive, drive
from backscroll.query.reads import SessionRecord
from backscroll.query.reads.async_reader import AsyncSessionReader
from backscroll.query.reads.engine import ReadStep, StoredLog
from backscroll.query.reads.reader import ReaderBase


class MemoryEngine:
    """A :class:`~backscroll.query.reads.engine.ReadEngine` over one stored session ``s``; every
    call is recorded (``texts`` lists the seqs asked); logs come without text. ``vanished`` seqs
    have no text any more (an event deleted after the log was read)."""

    def __init__(self, vanished: Sequence[int] = ()) -> None:
        self.record = srec("s")
        self.entries = [entry(seq, text=f"text {seq}") for seq in range(6)]
        self.vanished = set(vanished)
        self.calls: list[tuple[str, Any]] = []
        self.threads: set[int] = set()
        self.closes = 0

    def log(self, session_id: str, with_text: bool, deadline: Deadline) -> StoredLog | None:
        self.calls.append(("log", (session_id, with_text)))
        self.threads.add(threading.get_ident())
        if session_id != "s":
            return None
        entries = self.entries if with_text else [replace(e, text=None) for e in self.entries]
        return StoredLog(self.record, entries)

    def texts(self, session_id: str, seqs: Sequence[int], deadline: Deadline) -> dict[int, str]:
        self.calls.append(("texts", tuple(seqs)))
        self.threads.add(threading.get_ident())
        return {seq: f"text {seq}" for seq in seqs if seq not in self.vanished}

    def listing(self, deadline: Deadline) -> list[SessionRecord]:
        self.calls.append(("listing", None))
        self.threads.add(threading.get_ident())
        return [self.record]

    def close(self) -> None:
        self.closes += 1


class AsyncMemoryEngine:
    """:class:`MemoryEngine`'s calls, awaitable."""

    def __init__(self, engine: MemoryEngine) -> None:
        self.engine = engine
        self.closes = 0

    async def log(self, session_id: str, with_text: bool, deadline: Deadline) -> StoredLog | None:
        return self.engine.log(session_id, with_text, deadline)

    async def texts(self, session_id: str, seqs: Sequence[int], deadline: Deadline) -> dict[int, str]:
        return self.engine.texts(session_id, seqs, deadline)

    async def listing(self, deadline: Deadline) -> list[SessionRecord]:
        return self.engine.listing(deadline)

    async def aclose(self) -> None:
        self.closes += 1


def memory_reader(engine: MemoryEngine, **options: Any) -> ReaderBase:
    return ReaderBase(Scope.workspace("w"), engine, **options)


def test_a_read_asks_the_engine_for_the_log_then_only_the_texts_it_returns() -> None:
    engine = MemoryEngine()
    window = memory_reader(engine).read_event("s", 2, before=1, after=1)
    assert [(e.seq, e.text) for e in window.events] == [(1, "text 1"), (2, "text 2"), (3, "text 3")]
    assert engine.calls == [("log", ("s", False)), ("texts", (1, 2, 3))]


def test_reads_of_every_event_load_the_log_with_text_in_one_call() -> None:
    engine = MemoryEngine()
    reader = memory_reader(engine)
    assert [e.seq for e in reader.list_events("s")] == list(range(6))
    assert [r.header.session_id for r in reader.list_sessions()] == ["s"]
    assert engine.calls == [("log", ("s", True)), ("listing", None)]


def test_a_missing_session_and_a_vanished_text_are_typed() -> None:
    reader = memory_reader(MemoryEngine(vanished=[3]))
    assert code_of(reader.read_event, "nope", 0) == "SESSION_QUERY_SESSION_NOT_FOUND"
    with pytest.raises(SessionQueryError) as err:
        reader.read_event("s", 2, before=1, after=1)
    assert err.value.code == "SESSION_QUERY_PERSISTENCE_FAILED" and err.value.retriable
    assert "[3]" in err.value.message


def test_without_persistence_the_engine_is_never_asked() -> None:
    engine = MemoryEngine()
    reader = memory_reader(engine, persistence=False)
    assert reader.list_sessions() == ()
    assert code_of(reader.read_surface, "s") == "SESSION_QUERY_SESSION_NOT_FOUND"
    assert engine.calls == []


def test_closing_the_reader_closes_its_engine_once() -> None:
    engine = MemoryEngine()
    reader = memory_reader(engine)
    reader.close()
    reader.close()
    assert engine.closes == 1
    assert code_of(reader.list_sessions) == "SESSION_QUERY_PROVIDER_CLOSED"
    assert engine.calls == []


def test_the_async_readers_run_the_same_flows_on_either_kind_of_engine() -> None:
    sync_engine, threaded, native = MemoryEngine(), MemoryEngine(), MemoryEngine()
    expected = memory_reader(sync_engine).read_surface("s")

    async def run() -> tuple[Any, Any, int]:
        loop_thread = threading.get_ident()
        on_threads = AsyncSessionReader(memory_reader(threaded))
        awaited = AsyncSessionReader(memory_reader(native), AsyncMemoryEngine(native))
        results = (await on_threads.aread_surface("s"), await awaited.aread_surface("s"))
        assert threaded.threads and loop_thread not in threaded.threads  # each call on a worker thread
        assert native.threads == {loop_thread}  # awaited on the loop
        await on_threads.aclose()
        await awaited.aclose()
        assert awaited.engine is not None
        return results[0], results[1], getattr(awaited.engine, "closes", 0)

    threaded_result, native_result, async_closes = asyncio.run(run())
    assert threaded_result == native_result == expected
    assert threaded.calls == native.calls == sync_engine.calls
    assert (threaded.closes, native.closes, async_closes) == (1, 1, 1)


# -- the shared drivers ---------------------------------------------------------------------------
@dataclass(frozen=True)
class Double:
    """A step: the port doubles ``value``."""

    value: int

    def call(self, port: Doubler) -> int:
        return port.double(self.value)

    async def acall(self, port: AsyncDoubler) -> int:
        return await port.double(self.value)


class Doubler:
    def __init__(
        self, started: threading.Event | None = None, release: threading.Event | None = None
    ) -> None:
        self.started = started
        self.release = release

    def double(self, value: int) -> int:
        if self.started is not None and self.release is not None:
            self.started.set()
            self.release.wait(timeout=10)
        return 2 * value


class AsyncDoubler:
    async def double(self, value: int) -> int:
        await asyncio.sleep(0)
        return 2 * value


def doubling(*values: int) -> Generator[Double, Any, list[int]]:
    answers: list[int] = []
    for value in values:
        answer: int = yield Double(value)
        answers.append(answer)
    return answers


def test_drive_answers_each_step_in_order() -> None:
    assert drive(doubling(1, 2, 3), Doubler()) == [2, 4, 6]
    assert drive(doubling(), Doubler()) == []


def test_adrive_awaits_an_async_port_or_runs_a_blocking_one_on_threads() -> None:
    async def run() -> tuple[list[int], list[int]]:
        return await adrive(doubling(1, 2), AsyncDoubler()), await adrive(doubling(3), OnThread(Doubler()))

    assert asyncio.run(run()) == ([2, 4], [6])


def test_cancelling_adrive_aborts_its_signal() -> None:
    started, release = threading.Event(), threading.Event()
    signal = AbortSignal()

    async def run() -> None:
        task = asyncio.create_task(adrive(doubling(1), OnThread(Doubler(started, release)), signal))
        while not started.is_set():
            await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert signal.aborted  # before the step in progress has finished
        release.set()

    try:
        asyncio.run(run())
    finally:
        release.set()
    assert signal.aborted and "cancelled" in signal.reason


def test_read_steps_call_the_matching_engine_method() -> None:
    engine = MemoryEngine()
    deadline = Deadline(5.0, "SESSION_QUERY_PERSISTENCE_FAILED")
    answers = [
        ReadStep("log", deadline, "s", with_text=True).call(engine),
        ReadStep("texts", deadline, "s", seqs=(0, 5)).call(engine),
        ReadStep("listing", deadline).call(engine),
    ]
    assert isinstance(answers[0], StoredLog) and answers[1] == {0: "text 0", 5: "text 5"}
    assert answers[2] == [engine.record]
    assert [name for name, _ in engine.calls] == ["log", "texts", "listing"]
