"""The Runner survives a retriable fault in every phase and stops on a non-retriable one.

Fakes that truly implement the interfaces: an in-memory partitioned log (``MemorySource``), a view
that wraps a real :class:`SQLiteView` and raises scripted faults first (``FaultyView``), and an
in-memory dead-letter store that can fail. No servers.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson
import pytest

from backscroll.indexer.deadletter import DeadLetter
from backscroll.indexer.decode import decode_entry
from backscroll.indexer.errors import (
    DeadLetterUnavailable,
    IndexerError,
    SourceFailed,
    SourceUnavailable,
    ViewFailed,
    ViewUnavailable,
)
from backscroll.indexer.ports import Commit, Entry, InvalidEntry, Poll, RawRecord, WriteResult
from backscroll.indexer.projector import Action, SessionProjection
from backscroll.indexer.runner import Runner
from backscroll.indexer.sqlite.view import SQLiteView
from backscroll.indexer.view_writes import ViewWrites

_T0 = datetime(2026, 11, 2, tzinfo=UTC)


def _event(sid: str, seq: int, text: str | None = None) -> bytes:
    return orjson.dumps(
        {
            "v": 1,
            "kind": "event",
            "workspace_id": "ws-r",
            "session_id": sid,
            "seq": seq,
            "type": "user/message",
            "role": "user",
            "surface": {"op": "append"},
            "time": (_T0 + timedelta(seconds=seq)).isoformat(),
            "text": text or f"entry {seq} of {sid}",
        }
    )


class Faults:
    """Scripted faults: ``arm(phase, error, times)``; ``hit(phase)`` raises while armed."""

    def __init__(self) -> None:
        self.armed: dict[str, list[BaseException]] = {}
        self.hits: dict[str, int] = {}

    def arm(self, phase: str, error: BaseException, times: int = 1) -> None:
        self.armed.setdefault(phase, []).extend([error] * times)

    def hit(self, phase: str) -> None:
        pending = self.armed.get(phase)
        if pending:
            self.hits[phase] = self.hits.get(phase, 0) + 1
            raise pending.pop(0)


class MemorySource:
    """A two-partition log in memory with per-partition committed offsets."""

    def __init__(self, faults: Faults, records: list[tuple[bytes, bytes]]) -> None:
        self.faults = faults
        self.partitions: dict[int, list[RawRecord]] = {0: [], 1: []}
        for key, value in records:
            p = sum(key) % 2
            self.partitions[p].append(RawRecord("t", p, len(self.partitions[p]), key, value, 1000))
        self.committed = {0: 0, 1: 0}
        self.position = dict(self.committed)
        self.lose_next_commit = False
        self.changed = True
        self.before_revoke: Callable[[], None] | None = None
        #: Polls (counted from 1) during which the group rebalances: the revoke hook runs, then
        #: every partition is handed back from its committed offset (Kafka's eager protocol).
        self.rebalance_at: set[int] = set()
        #: kafka-python 3 hands a partition back to the same member at its fetch position, not at
        #: its committed offset: only a rewind by the runner reads the forgotten records again.
        self.rebalance_keeps_positions = False
        self.polls = 0

    @property
    def topic(self) -> str:
        return "t"

    def open(self) -> None:
        pass

    def poll(self, max_records: int, timeout_s: float) -> Poll:
        self.faults.hit("poll")
        self.polls += 1
        if self.polls in self.rebalance_at:
            if self.before_revoke is not None:
                self.before_revoke()
            if not self.rebalance_keeps_positions:
                self.position = dict(self.committed)
            self.changed = True
        entries: list[Entry | InvalidEntry] = []
        for p, records in self.partitions.items():
            take = records[self.position[p] : self.position[p] + max_records // 2 or 1]
            entries.extend(decode_entry(r) for r in take)
            self.position[p] += len(take)
        changed, self.changed = self.changed, False
        return Poll(entries, changed)

    def commit(self, through: Mapping[int, int]) -> Commit:
        self.faults.hit("commit")
        if self.lose_next_commit:
            self.lose_next_commit = False
            self.position = dict(self.committed)  # the group hands the partitions out again
            self.changed = True
            return Commit.ASSIGNMENT_LOST
        for p, offset in through.items():
            self.committed[p] = offset + 1
        return Commit.COMMITTED

    def rewind(self, to: Mapping[int, int]) -> None:
        for p, offset in to.items():
            self.position[p] = offset

    def hold(self, seconds: float) -> None:
        self.faults.hit("hold")

    def caught_up(self) -> bool:
        return all(self.committed[p] >= len(r) for p, r in self.partitions.items())

    def describe_lag(self) -> str:
        return f"committed {self.committed}"

    def lag(self) -> dict[int, int]:
        return {p: len(r) - self.committed[p] for p, r in self.partitions.items()}

    def close(self) -> None:
        pass


class FaultyView(ViewWrites):
    """A real SQLite view behind scripted faults on each phase. Its calls are serialised, so a
    pipelined runner may write from its writer thread while it projects the next batch."""

    def __init__(self, faults: Faults, inner: SQLiteView) -> None:
        self.faults = faults
        self.inner = inner
        self.watermarks: dict[int, tuple[int, int]] = {}
        self.lock = threading.RLock()

    def write(self, actions: Sequence[Action]) -> list[WriteResult]:
        with self.lock:
            return super().write(actions)

    def ensure_schema(self) -> None:
        self.faults.hit("schema")
        self.inner.ensure_schema()

    def available(self) -> bool:
        return True  # the probe answers; the retried batch meets the next armed fault, if any

    def refresh(self) -> None:
        self.faults.hit("refresh")

    def restore_sessions(self, session_ids: Sequence[str]) -> dict[str, SessionProjection]:
        self.faults.hit("restore")
        with self.lock:
            return self.inner.restore_sessions(session_ids)

    def _apply(self, actions: Sequence[Action]) -> list[WriteResult]:
        self.faults.hit("bulk")
        return self.inner._apply(actions)

    def content_hashes(self, actions: Any) -> dict[str, str | None]:
        self.faults.hit("read-back")
        return self.inner.content_hashes(actions)

    def get_event_source(self, doc_id: str, routing: str) -> dict[str, Any] | None:
        self.faults.hit("read-back")
        return self.inner.get_event_source(doc_id, routing)

    def settle(self, committed: bool) -> None:
        with self.lock:
            self.inner.settle(committed)

    @property
    def publishes_watermarks(self) -> bool:
        return True

    def publish_watermarks(self, topic: str, through: dict[int, tuple[int, int]]) -> None:
        self.faults.hit("watermark")
        self.watermarks.update(through)

    def forget_session(self, session_id: str) -> int:
        return self.inner.forget_session(session_id)

    def compact(self) -> None:
        self.inner.compact()

    def close(self) -> None:
        self.inner.close()


class MemoryDeadLetters:
    def __init__(self, faults: Faults) -> None:
        self.faults = faults
        self.letters: list[DeadLetter] = []

    def park(self, letters: Sequence[DeadLetter]) -> None:
        if letters:
            self.faults.hit("park")
        self.letters.extend(letters)

    def list(self, limit: int | None = 100) -> list[dict[str, Any]]:
        return [{"offset": x.offset, "error_class": x.error_class} for x in self.letters][:limit]

    def replay(self) -> int:
        return 0

    def close(self) -> None:
        pass


def _records() -> list[tuple[bytes, bytes]]:
    out = [(f"s-{s}".encode(), _event(f"s-{s}", q)) for q in range(30) for s in range(4)]
    out.insert(17, (b"s-0", b"{broken"))  # a dead letter
    out.insert(40, (b"s-1", _event("s-1", 0)))  # an identical re-delivery: a replay (read-back)
    out.insert(60, (b"s-2", _event("s-2", 1, "different")))  # a conflict (read-back + dead letter)
    return out


def _run(
    tmp_path: Path,
    faults: Faults,
    *,
    lose_commit: bool = False,
    pipeline: bool = False,
    rebalance_at: frozenset[int] = frozenset(),
    rebalance_keeps_positions: bool = False,
) -> tuple[Runner, MemorySource]:
    source = MemorySource(faults, _records())
    source.lose_next_commit = lose_commit
    source.rebalance_at = set(rebalance_at)
    source.rebalance_keeps_positions = rebalance_keeps_positions
    view = FaultyView(faults, SQLiteView(tmp_path / "view.db"))
    runner = Runner(
        source,
        view,
        MemoryDeadLetters(faults),
        batch_max=16,
        poll_timeout_s=0.0,
        backoff_max_s=0.01,
        watermark_interval_s=0.01,
        idle_timeout_s=60,
        pipeline=pipeline,
    )
    # A long-running indexer (not ``until_idle``, which fails fast before its first batch).
    stop = threading.Event()
    failure: list[BaseException] = []

    def work() -> None:
        try:
            runner.run(stop=stop)
        except BaseException as err:  # re-raised below
            failure.append(err)

    thread = threading.Thread(target=work)
    thread.start()
    deadline = time.monotonic() + 60
    while thread.is_alive() and not source.caught_up() and time.monotonic() < deadline:
        time.sleep(0.01)
    stop.set()
    thread.join(timeout=30)
    if failure:
        raise failure[0]
    assert source.caught_up(), "the runner did not finish"
    return runner, source


def _assert_exact(tmp_path: Path, runner: Runner) -> None:
    runner.close()
    with SQLiteView(tmp_path / "view.db") as view:
        rows = view.conn.execute("SELECT session_id, seq FROM events ORDER BY session_id, seq").fetchall()
    assert rows == [(f"s-{s}", q) for s in range(4) for q in range(30)]
    # A batch abandoned after its writes is written again: those writes come back as replays.
    stats = runner.stats
    assert stats.indexed + stats.replays >= 121 and stats.indexed <= 120 and stats.conflicts >= 1
    parked = {letter.error_class for letter in runner.dead_letters.letters}  # type: ignore[attr-defined]
    assert parked == {"conflict", "invalid_record"}


RETRIABLE: list[tuple[str, IndexerError]] = [
    ("poll", SourceUnavailable("broker restarting")),
    ("schema", ViewUnavailable("node starting")),
    ("restore", ViewUnavailable("search failed")),
    ("refresh", ViewUnavailable("refresh failed")),
    ("bulk", ViewUnavailable("bulk failed")),
    ("read-back", ViewUnavailable("mget failed")),
    ("park", DeadLetterUnavailable("dlq not acknowledged")),
    ("commit", SourceUnavailable("coordinator moving")),
    ("hold", SourceUnavailable("broker restarting while holding")),
    ("watermark", ViewUnavailable("watermark bulk failed")),
]


PIPELINE = pytest.mark.parametrize("pipeline", [False, True], ids=["serial", "pipelined"])


@PIPELINE
@pytest.mark.parametrize(("phase", "error"), RETRIABLE, ids=[p for p, _ in RETRIABLE])
def test_a_retriable_fault_in_any_phase_is_survived_exactly(
    tmp_path: Path, phase: str, error: IndexerError, pipeline: bool
) -> None:
    faults = Faults()
    faults.arm(phase, error, times=3)
    if phase == "hold":  # hold only happens during a view outage
        faults.arm("bulk", ViewUnavailable("bulk failed"))
    runner, _ = _run(tmp_path, faults, pipeline=pipeline)
    assert faults.hits.get(phase, 0) >= 1, f"the {phase} fault was never reached"
    _assert_exact(tmp_path, runner)


@PIPELINE
def test_a_commit_lost_to_a_rebalance_drops_the_batch_and_carries_on(tmp_path: Path, pipeline: bool) -> None:
    runner, _ = _run(tmp_path, Faults(), lose_commit=True, pipeline=pipeline)
    assert runner.stats.rebalances == 1
    _assert_exact(tmp_path, runner)


@PIPELINE
def test_a_rebalance_during_a_poll_finishes_the_write_in_flight_first(tmp_path: Path, pipeline: bool) -> None:
    faults = Faults()
    runner, source = _run(tmp_path, faults, pipeline=pipeline, rebalance_at=frozenset({3, 4, 7}))
    _assert_exact(tmp_path, runner)
    if pipeline:  # the batches in flight were written, left uncommitted and projected again
        assert source.before_revoke is not None and runner.stats.replays > 1


def test_a_rebalance_that_hands_the_same_partitions_back_reads_the_forgotten_batches_again(
    tmp_path: Path,
) -> None:
    """kafka-python 3 keeps the fetch position of a partition handed back to the same member: the
    batches forgotten at the revoke are read again because the runner rewinds, so their commits
    and dead letters still come (``_assert_exact`` checks both dead-letter classes)."""
    faults = Faults()
    runner, source = _run(
        tmp_path, faults, pipeline=True, rebalance_at=frozenset({3, 4, 7}), rebalance_keeps_positions=True
    )
    assert source.caught_up()
    _assert_exact(tmp_path, runner)
    assert runner.stats.replays > 1  # the forgotten batches were written, then read and written again


def test_a_pipelined_runner_overlaps_the_next_projection_with_the_write(tmp_path: Path) -> None:
    faults = Faults()
    source = MemorySource(faults, _records())
    view = FaultyView(faults, SQLiteView(tmp_path / "view.db"))
    runner = Runner(source, view, MemoryDeadLetters(faults), batch_max=16, poll_timeout_s=0.0, pipeline=True)
    assert runner._advance() > 0  # polled and projected; its write is in flight, nothing committed
    assert source.committed == {0: 0, 1: 0}
    assert runner._advance() > 0  # the second batch is sent while the first one may still be written
    assert len(runner._inflight) <= 2
    assert runner._advance() > 0  # at most two in flight: the first batch is committed by now
    assert sum(source.committed.values()) >= 16
    runner.run(until_idle=True)
    _assert_exact(tmp_path, runner)


NON_RETRIABLE: list[tuple[str, IndexerError]] = [
    ("poll", SourceFailed("not authorised")),
    ("bulk", ViewFailed("read-only file")),
    ("restore", ViewFailed("no such table")),
    ("commit", SourceFailed("not authorised")),
    ("park", SourceFailed("dlq topic not authorised")),
]


@PIPELINE
@pytest.mark.parametrize(("phase", "error"), NON_RETRIABLE, ids=[p for p, _ in NON_RETRIABLE])
def test_a_non_retriable_fault_stops_the_runner(
    tmp_path: Path, phase: str, error: IndexerError, pipeline: bool
) -> None:
    faults = Faults()
    faults.arm(phase, error)
    with pytest.raises(type(error)):
        _run(tmp_path, faults, pipeline=pipeline)
    assert faults.hits[phase] == 1  # not retried


def test_until_idle_fails_at_once_when_it_never_reached_its_servers(tmp_path: Path) -> None:
    faults = Faults()
    faults.arm("poll", SourceUnavailable("cannot join group at kafka.invalid:9092"))
    source = MemorySource(faults, _records())
    runner = Runner(source, FaultyView(faults, SQLiteView(tmp_path / "v.db")), MemoryDeadLetters(faults))
    with pytest.raises(SourceUnavailable):
        runner.run(until_idle=True)
    runner.close()
    assert faults.hits["poll"] == 1


def test_until_idle_waits_out_an_outage_once_it_has_worked(tmp_path: Path) -> None:
    faults = Faults()
    source = MemorySource(faults, _records())
    runner = Runner(
        source,
        FaultyView(faults, SQLiteView(tmp_path / "v.db")),
        MemoryDeadLetters(faults),
        batch_max=16,
        backoff_max_s=0.01,
    )
    assert runner.step() > 0
    faults.arm("bulk", ViewUnavailable("node restarting"), times=3)
    runner.run(until_idle=True)
    assert faults.hits["bulk"] == 3 and source.caught_up()
    runner.close()


def test_a_failed_pipelined_write_leaves_the_states_to_the_projecting_thread(tmp_path: Path) -> None:
    faults = Faults()
    source = MemorySource(faults, _records())
    view = FaultyView(faults, SQLiteView(tmp_path / "view.db"))
    runner = Runner(source, view, MemoryDeadLetters(faults), batch_max=16, poll_timeout_s=0.0, pipeline=True)
    runner.step()  # a first batch committed (serially): its sessions have states
    faults.arm("bulk", ViewUnavailable("bulk failed"))
    assert runner._advance() > 0  # the next batch is projected; its write fails on a lane's thread
    (inflight,) = runner._inflight
    with pytest.raises(ViewUnavailable):
        inflight.results()
    # The lane threads did not touch the states: the projecting thread is advancing them meanwhile.
    assert set(inflight.prepared.touched) <= set(runner.processor.states)
    committed = dict(source.committed)
    runner.max_inflight = 1  # the next step waits for the failed batch
    with pytest.raises(ViewUnavailable):
        runner._advance()  # the failure surfaces here: both batches dropped, the source rewound
    assert runner.processor.states == {} and not runner._inflight
    assert source.position == committed
    runner.run(until_idle=True)
    _assert_exact(tmp_path, runner)
