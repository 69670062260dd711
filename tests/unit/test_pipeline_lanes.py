"""The pipelined runner's write lanes: several batches in flight, commits in order, a failed batch
taking every later one with it, a revoke finishing everything in flight, one session's writes never
overtaking each other. The order is forced with a gate on the view's writes (no sleeps, no timing)."""

from __future__ import annotations

import gc
import threading
from collections.abc import Sequence
from pathlib import Path

import orjson
from tests.unit.test_runner_faults import (
    Faults,
    FaultyView,
    MemoryDeadLetters,
    MemorySource,
    _assert_exact,
    _records,
)

from backscroll.indexer.collector import GC_THRESHOLDS, gc_headroom
from backscroll.indexer.errors import ViewUnavailable
from backscroll.indexer.pipeline import lane_of
from backscroll.indexer.ports import WriteResult
from backscroll.indexer.projector import Action
from backscroll.indexer.runner import Runner
from backscroll.indexer.sqlite.view import SQLiteView

_GATE_TIMEOUT_S = 30.0  # only a hang guard: the order is set by the gate, never by time


class GatedView(FaultyView):
    """A :class:`FaultyView` whose writes wait for ``gate`` (outside the view's lock, so queued
    writes of both lanes wait together), record what they wrote, and can fail the first write that
    holds a given session."""

    def __init__(self, faults: Faults, inner: SQLiteView) -> None:
        super().__init__(faults, inner)
        self.gate = threading.Event()
        self.gate.set()
        self.fail_session: str | None = None
        #: Per session, in the order the view applied them: ("events", seq) and ("session", last_seq).
        self.applied: dict[str, list[tuple[str, int]]] = {}

    def write(self, actions: Sequence[Action]) -> list[WriteResult]:
        assert self.gate.wait(_GATE_TIMEOUT_S), "the test never opened the gate"
        with self.lock:
            if self.fail_session is not None and any(a.routing == self.fail_session for a in actions):
                self.fail_session = None
                raise ViewUnavailable("bulk failed")
            results = super().write(actions)
            for action in actions:
                if action.op == "create":
                    self.applied.setdefault(action.routing, []).append(("events", int(action.body["seq"])))
                elif action.target == "sessions":
                    last = int(action.body["last_seq"])
                    self.applied.setdefault(action.routing, []).append(("session", last))
            return results

    def stored(self) -> set[tuple[str, int]]:
        with self.lock:
            rows = self.inner.conn.execute("SELECT session_id, seq FROM events").fetchall()
        return {(str(sid), int(seq)) for sid, seq in rows}


def _runner(tmp_path: Path, *, batch_max: int = 16) -> tuple[Runner, MemorySource, GatedView]:
    faults = Faults()
    source = MemorySource(faults, _records())
    view = GatedView(faults, SQLiteView(tmp_path / "view.db"))
    runner = Runner(
        source, view, MemoryDeadLetters(faults), batch_max=batch_max, poll_timeout_s=0.0, pipeline=True
    )
    return runner, source, view


def _two_in_flight(tmp_path: Path) -> tuple[Runner, MemorySource, GatedView, dict[int, int]]:
    """A runner with two batches written and held at the view's gate, and the offsets committed
    before them. The first step restores every session's state (serially), so nothing after it
    reads the view."""
    runner, source, view = _runner(tmp_path)
    runner.step()
    committed = dict(source.committed)
    view.gate.clear()
    assert runner._advance() > 0 and runner._advance() > 0
    return runner, source, view, committed


def _polled_seqs(runner: Runner, index: int) -> set[tuple[str, int]]:
    batch = runner._inflight[index]
    return {
        (str(a.body["session_id"]), int(a.body["seq"]))
        for a in batch.prepared.actions
        if a.target == "events" and a.op == "create"
    }


def test_two_batches_in_flight_commit_in_order(tmp_path: Path) -> None:
    runner, source, view, committed = _two_in_flight(tmp_path)
    assert len(runner._inflight) == 2 and source.committed == committed  # written, not acknowledged
    view.gate.set()
    runner._finish_inflight()
    assert not runner._inflight and sum(source.committed.values()) == sum(committed.values()) + 32
    runner.run(until_idle=True)
    _assert_exact(tmp_path, runner)


def test_a_failed_batch_takes_the_later_batch_in_flight_with_it(tmp_path: Path) -> None:
    runner, source, view, committed = _two_in_flight(tmp_path)
    first, second = _polled_seqs(runner, 0), _polled_seqs(runner, 1)
    before = view.stored()
    view.fail_session = "s-0"  # the earlier batch's write on the lane of s-0 fails
    view.gate.set()
    try:
        runner._finish_inflight()  # a retriable failure drops everything in flight
    finally:
        view.gate.set()
    assert not runner._inflight and runner.processor.states == {}
    assert source.committed == committed and source.position == committed  # rewound to the first
    failed_lane = lane_of("s-0", 2)
    stored = view.stored() - before
    # Nothing queued after the failure on its lane was sent: per session, a prefix of the writes.
    assert not {(sid, seq) for sid, seq in second if lane_of(sid, 2) == failed_lane} & stored
    assert not {(sid, seq) for sid, seq in first if lane_of(sid, 2) == failed_lane} & stored
    # The other lane's writes of both batches went through: they come back as replays.
    assert {(sid, seq) for sid, seq in first | second if lane_of(sid, 2) != failed_lane} <= stored
    runner.run(until_idle=True)
    assert runner.stats.replays > 0
    _assert_exact(tmp_path, runner)


def test_a_failure_surfaces_at_the_step_that_waits_for_it(tmp_path: Path) -> None:
    runner, source, view, committed = _two_in_flight(tmp_path)
    view.fail_session = "s-1"
    view.gate.set()
    try:
        runner._advance()  # a third batch: the oldest must finish first, and it failed
    except ViewUnavailable:
        pass
    else:
        raise AssertionError("the failed batch was committed")
    assert not runner._inflight and source.position == committed and source.committed == committed
    runner.run(until_idle=True)
    _assert_exact(tmp_path, runner)


def test_a_revoke_finishes_every_batch_in_flight_and_commits_none(tmp_path: Path) -> None:
    runner, source, view, committed = _two_in_flight(tmp_path)
    writes = [future for batch in runner._inflight for _, future in batch.writes]
    seen: list[bool] = []
    assert source.before_revoke is not None
    hook = source.before_revoke

    def checked() -> None:
        view.gate.set()  # the revoke waits for the writes: let them finish
        hook()
        seen.append(all(f.done() for f in writes) and not runner._inflight)

    source.before_revoke = checked
    source.rebalance_at = {source.polls + 1}
    runner._advance()
    assert seen == [True]
    # Nothing of the revoked batches was committed; the step re-polled from the committed offsets.
    assert source.committed == committed
    (again,) = runner._inflight
    assert again.first == committed
    runner.run(until_idle=True)
    assert runner.stats.replays > 1
    _assert_exact(tmp_path, runner)


def test_one_sessions_writes_never_overtake_each_other(tmp_path: Path) -> None:
    runner, _, view = _runner(tmp_path, batch_max=4)
    runner.max_inflight = 4
    runner.run(until_idle=True)
    logged: dict[str, list[int]] = {}
    for key, value in _records():
        if value.startswith(b'{"'):
            logged.setdefault(key.decode(), []).append(int(orjson.loads(value)["seq"]))
    assert set(view.applied) == set(logged)
    for session, applied in view.applied.items():
        # Every event create reached the view in log order (no fault: each was sent once) ...
        assert [mark for kind, mark in applied if kind == "events"] == logged[session]
        # ... and no session document was overwritten by an older one.
        marks = [mark for kind, mark in applied if kind == "session"]
        assert marks and marks == sorted(marks), f"{session}: session documents out of order: {marks}"
    _assert_exact(tmp_path, runner)


def test_lanes_split_sessions_stably() -> None:
    sessions = [f"s-{i}" for i in range(64)]
    assert {lane_of(s, 2) for s in sessions} == {0, 1}
    assert [lane_of(s, 2) for s in sessions] == [lane_of(s, 2) for s in sessions]
    assert {lane_of(s, 1) for s in sessions} == {0}


def test_the_collectors_headroom_is_raised_while_running_and_given_back() -> None:
    saved = gc.get_threshold()
    try:
        gc.set_threshold(700, 10, 10)
        with gc_headroom():
            assert gc.get_threshold() == GC_THRESHOLDS
            with gc_headroom():  # a second runner in the same process
                assert gc.get_threshold() == GC_THRESHOLDS
            assert gc.get_threshold() == GC_THRESHOLDS
        assert gc.get_threshold() == (700, 10, 10)
        gc.set_threshold(500_000, 10, 10)  # never lowered
        with gc_headroom():
            assert gc.get_threshold() == (500_000, 50, 100)
        assert gc.get_threshold() == (500_000, 10, 10)
    finally:
        gc.set_threshold(*saved)
