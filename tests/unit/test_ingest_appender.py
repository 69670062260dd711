"""The appender without a broker: a fake producer stands in for kafka-python.

Covers non-blocking appends through an outage, spilling and replay order, durable restarts,
per-session sequencing, validation at the edge, close/flush, fork safety and the live view.
"""

from __future__ import annotations

import os
import threading
import time
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from kafka.errors import KafkaConnectionError, KafkaTimeoutError
from kafka.future import Future

from backscroll.ingest import (
    Appender,
    AppenderClosed,
    AppenderSettings,
    BufferFull,
    KafkaSettings,
    LogUnavailable,
    RecordRejected,
    SequenceError,
    SessionBusy,
    SpoolFull,
    get_appender,
)
from backscroll.ingest.kafka import appender as appender_module
from backscroll.ingest.wire import MAX_TEXT_BYTES

KAFKA = KafkaSettings(bootstrap_servers="127.0.0.1:1", topic="backscroll.unit")


class _Meta:
    def __init__(self, partition: int, offset: int) -> None:
        self.partition = partition
        self.offset = offset


class FakeBroker:
    """Three partitions; ``up`` toggles an outage; ``hold`` keeps sends unacknowledged."""

    def __init__(self, partitions: int = 3) -> None:
        self.up = True
        self.hold = False
        self.block_s = 0.02  # what a send costs while the broker is down (kafka's max_block_ms)
        self.partitions: dict[int, list[tuple[bytes, bytes]]] = {p: [] for p in range(partitions)}
        self.held: list[tuple[Future, int, bytes, bytes]] = []
        self.producers: list[FakeProducer] = []
        self.lock = threading.Lock()

    def factory(self, config: dict[str, Any]) -> FakeProducer:
        assert config["acks"] == "all" and config["enable_idempotence"] is True
        assert "api_version" not in config
        if not self.up:
            time.sleep(self.block_s)
            raise KafkaConnectionError("no brokers")
        producer = FakeProducer(self)
        self.producers.append(producer)
        return producer

    def partition_of(self, key: bytes) -> int:
        return zlib.crc32(key) % len(self.partitions)

    def write(self, key: bytes, value: bytes) -> int:
        with self.lock:
            log = self.partitions[self.partition_of(key)]
            log.append((key, value))
            return len(log) - 1

    def release(self) -> None:
        held, self.held = self.held, []
        for future, partition, key, value in held:
            offset = self.write(key, value)
            future.success(_Meta(partition, offset))

    def records(self) -> list[dict[str, Any]]:
        return [orjson.loads(v) for log in self.partitions.values() for _, v in log]

    def by_session(self) -> dict[str, list[int]]:
        out: dict[str, list[int]] = {}
        for log in self.partitions.values():
            for _, value in log:
                record = orjson.loads(value)
                if record["kind"] == "event":
                    out.setdefault(record["session_id"], []).append(record["seq"])
        return out


class FakeProducer:
    def __init__(self, broker: FakeBroker) -> None:
        self.broker = broker
        self.closed = False

    def send(self, topic: str, key: bytes, value: bytes) -> Future:
        if self.closed:
            raise RuntimeError("send after close")
        if not self.broker.up:
            time.sleep(self.broker.block_s)
            raise KafkaTimeoutError("Failed to update metadata")
        future = Future()
        partition = self.broker.partition_of(key)
        if self.broker.hold:
            self.broker.held.append((future, partition, key, value))
        else:
            future.success(_Meta(partition, self.broker.write(key, value)))
        return future

    def close(self, timeout: float | None = None) -> None:
        self.closed = True
        for future, *_ in self.broker.held:
            if not future.is_done:
                future.failure(KafkaTimeoutError("closed"))


def options(tmp_path: Path, **changes: Any) -> AppenderSettings:
    base: dict[str, Any] = {
        "spool_dir": tmp_path / "spool",
        "connect_timeout_s": 0.2,
        "close_timeout_s": 2.0,
        "fsync": "never",
    }
    return AppenderSettings(**{**base, **changes})


@pytest.fixture
def broker() -> FakeBroker:
    return FakeBroker()


@pytest.fixture
def make(tmp_path: Path, broker: FakeBroker) -> Iterator[Any]:
    made: list[Appender] = []

    def factory(broker_: FakeBroker | None = None, **changes: Any) -> Appender:
        appender = Appender(KAFKA, options(tmp_path, **changes), producer_factory=(broker_ or broker).factory)
        made.append(appender)
        return appender

    yield factory
    for appender in made:
        appender.close(timeout=1)


def event(session: str = "s-1", seq: int = 0, text: str = "hi", **extra: Any) -> dict[str, Any]:
    return {
        "v": 1,
        "kind": "event",
        "workspace_id": "ws",
        "session_id": session,
        "seq": seq,
        "type": "user/message",
        "role": "user",
        "surface": {"op": "append"},
        "time": "2026-11-30T10:00:00Z",
        "text": text,
        **extra,
    }


# -- the happy path --------------------------------------------------------------------------------
def test_append_resolves_to_position_and_flush_waits(make: Any, broker: FakeBroker) -> None:
    appender = make()
    handles = [appender.append(event(seq=i)) for i in range(50)]
    appender.flush(timeout=10)
    positions = [h.result(timeout=1) for h in handles]
    assert [p.offset for p in positions] == list(range(50))
    assert {p.partition for p in positions} == {broker.partition_of(b"s-1")}
    assert broker.by_session() == {"s-1": list(range(50))}
    stats = appender.stats()
    assert stats.acknowledged == stats.appended == 50 and stats.spool_unacked == 0


def test_appends_accept_records_mappings_and_json_bytes(make: Any, broker: FakeBroker) -> None:
    appender = make()
    appender.append(orjson.dumps(event(seq=0)))
    appender.append_header(
        {
            "v": 1,
            "kind": "header",
            "workspace_id": "ws",
            "session_id": "s-1",
            "created_at": "2026-11-30T10:00:00Z",
        }
    )
    appender.flush(5)
    assert [r["kind"] for r in broker.records()] == ["event", "header"]


# -- validation at the edge ------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("record", "field"),
    [
        (event(seq=-1), "seq"),
        (event(text="x" * (MAX_TEXT_BYTES + 1)), "text"),
        (event(text="bad \ud800 surrogate"), "text"),
        (event(tool_name="\udcff"), "tool_name"),
        (event(workspace_id="has space"), "workspace_id"),
        ({**event(), "surface": None}, "surface"),
        (event(extra_field=1), "extra_field"),
    ],
)
def test_invalid_records_are_rejected_naming_the_field(make: Any, record: dict[str, Any], field: str) -> None:
    appender = make()
    with pytest.raises(RecordRejected) as err:
        appender.append(record)
    assert err.value.field == field
    assert appender.stats().appended == 0


def test_non_utf8_bytes_and_oversized_records_are_rejected(make: Any) -> None:
    appender = make()
    with pytest.raises(RecordRejected) as err:
        appender.append(b'{"v":1,"kind":"event","text":"\xff\xfe"}')
    assert err.value.field == "record"
    big = event(attrs={f"k{i}": "v" * 1024 for i in range(32)}, sources=list(range(10_000)))
    big["text"] = "é" * (MAX_TEXT_BYTES // 2)
    appender.append(big)  # under the caps
    with pytest.raises(RecordRejected):
        appender.append(12)


# -- outages: never block, never lose, keep the order ------------------------------------------------
def test_outage_durable_mode_never_blocks_and_replays_in_order(make: Any, broker: FakeBroker) -> None:
    appender = make(queue_max_records=50)
    for i in range(20):
        appender.append(event(seq=i))
    appender.flush(5)
    broker.up = False
    slowest = 0.0
    for i in range(20, 520):
        started = time.perf_counter()
        appender.append(event(session=f"s-{i % 3}", seq=i))
        slowest = max(slowest, time.perf_counter() - started)
    # The broker stays down: a caller that waited for it would wait until the end of the test (or at
    # least enqueue_timeout_s); the bound leaves room for a busy machine's scheduling.
    assert slowest < 0.5
    stats = appender.stats()
    assert stats.spilling and stats.spooled > 0 and stats.spool_unacked >= 500
    with pytest.raises(LogUnavailable, match="not acknowledged"):
        appender.flush(timeout=0.3)
    broker.up = True
    appender.flush(timeout=10)
    sessions = broker.by_session()
    assert sessions["s-1"][:20] == list(range(20))
    for s in range(3):
        expected = [i for i in range(20, 520) if i % 3 == s]
        got = [seq for seq in sessions[f"s-{s}"] if seq >= 20]
        assert got == expected  # once each, in order
    # The sender leaves spill mode on its next pass after the last acknowledgement, which may come
    # just after flush() returned: wait for that pass rather than race it.
    deadline = time.monotonic() + 10
    while appender.stats().spilling and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not appender.stats().spilling


def test_outage_memory_mode_blocks_at_most_the_timeout_then_spools(make: Any, broker: FakeBroker) -> None:
    appender = make(durable=False, queue_max_records=30, enqueue_timeout_s=0.2)
    broker.up = False
    durations = []
    for i in range(200):
        started = time.perf_counter()
        appender.append(event(seq=i))
        durations.append(time.perf_counter() - started)
    assert max(durations) < 0.2 + 0.8  # bounded by the timeout (plus scheduling on a busy machine)
    assert sum(d >= 0.2 for d in durations) <= 2  # only the append that found the queue full waited
    assert appender.stats().spilling
    broker.up = True
    appender.flush(timeout=10)
    assert broker.by_session()["s-1"] == list(range(200))


def test_memory_mode_without_spool_raises_buffer_full(make: Any, broker: FakeBroker) -> None:
    appender = make(durable=False, spool=False, queue_max_records=5, enqueue_timeout_s=0.05)
    broker.up = False
    with pytest.raises(BufferFull, match="BACKSCROLL_APPENDER_SPOOL"):
        for i in range(100):
            appender.append(event(seq=i))
    assert appender.spool_dir is None


def test_spool_full_is_a_clear_error(make: Any, broker: FakeBroker) -> None:
    appender = make(spool_max_bytes=1024 * 1024, segment_bytes=64 * 1024, queue_max_records=10)
    broker.up = False
    with pytest.raises(SpoolFull, match="cap"):
        for i in range(10_000):
            appender.append(event(seq=i, text="t" * 2000))
    broker.up = True


def test_resent_batches_keep_their_ticket_order(make: Any, broker: FakeBroker) -> None:
    broker.hold = True
    appender = make()
    for i in range(10):
        appender.append(event(seq=i))
    deadline = time.monotonic() + 5
    while len(broker.held) < 10 and time.monotonic() < deadline:
        time.sleep(0.01)
    held, broker.held = broker.held, []
    broker.hold = False
    for future, *_ in held:  # the producer gave up on them (e.g. an epoch bump)
        future.failure(KafkaTimeoutError("expired"))
    appender.flush(timeout=5)
    assert broker.by_session()["s-1"] == list(range(10))
    assert appender.stats().resent == 10


# -- restarts ----------------------------------------------------------------------------------------
def test_close_with_broker_down_keeps_entries_for_the_next_appender(make: Any, broker: FakeBroker) -> None:
    first = make(queue_max_records=20)
    writer = first.session("ws", "s-9")
    handles = [writer.append(type="turn/start") for _ in range(60)]
    broker.up = False
    first.close(timeout=0.3)
    assert all(h.done() for h in handles)
    kept = [h for h in handles if h.exception(timeout=0) is not None]
    assert kept and "spool" in str(kept[0].exception(timeout=0))
    broker.up = True
    second = make()
    assert second.stats().spilling  # replays before anything new
    writer2 = second.session("ws", "s-9")
    assert writer2.next_seq == 60  # resumed from the spool
    writer2.append(type="turn/end")
    second.flush(timeout=10)
    seqs = broker.by_session()["s-9"]
    assert sorted(set(seqs)) == list(range(61))
    assert seqs[-1] == 60
    first_positions = {s: i for i, s in enumerate(seqs)}
    assert all(first_positions[a] < first_positions[a + 1] for a in range(60))


def test_memory_mode_close_with_broker_down_spools_what_is_left(make: Any, broker: FakeBroker) -> None:
    first = make(durable=False)
    broker.up = False
    for i in range(30):
        first.append(event(seq=i))
    first.close(timeout=0.3)
    broker.up = True
    second = make(durable=False)
    second.append(event(seq=30))
    second.flush(timeout=10)
    assert broker.by_session()["s-1"] == list(range(31))


# -- sequencing --------------------------------------------------------------------------------------
def test_session_writer_assigns_contiguous_seqs_and_checks_given_ones(make: Any, broker: FakeBroker) -> None:
    appender = make()
    with appender.session("ws", "s-1") as writer:
        writer.header(title="demo")
        assert writer.next_seq == 0
        writer.append(type="user/message", role="user", text="a", surface={"op": "append"})
        writer.append(
            {"type": "assistant/message", "role": "assistant", "text": "b", "surface": {"op": "append"}}
        )
        writer.append(type="turn/end", seq=2)
        with pytest.raises(SequenceError) as err:
            writer.append(type="turn/end", seq=7)
        assert err.value.field == "seq" and "expects seq 3" in str(err.value)
        with pytest.raises(RecordRejected) as err2:
            writer.append(type="user/message")  # no surface: rejected, no seq consumed
        assert err2.value.field == "surface"
        with pytest.raises(RecordRejected) as err3:
            writer.append(type="turn/end", session_id="other")
        assert err3.value.field == "session_id"
        writer.append(type="turn/start")
        assert writer.next_seq == 4
    appender.flush(5)
    assert broker.by_session()["s-1"] == [0, 1, 2, 3]


def test_second_writer_and_raw_appends_to_an_owned_session_are_refused(make: Any) -> None:
    appender = make()
    writer = appender.session("ws", "s-1")
    with pytest.raises(SessionBusy, match="already has a writer"):
        appender.session("ws", "s-1")
    with pytest.raises(SessionBusy):
        appender.append(event(seq=0))
    appender.session("ws", "s-2").close()  # other sessions are free
    writer.append(type="turn/start")
    writer.close()
    with pytest.raises(AppenderClosed):
        writer.append(type="turn/start")
    again = appender.session("ws", "s-1")
    assert again.next_seq == 1  # resumes from what this process wrote


def test_resume_uses_the_lookup_and_the_highest_known_seq(make: Any) -> None:
    calls: list[tuple[str, str]] = []

    def lookup(workspace_id: str, session_id: str) -> int | None:
        calls.append((workspace_id, session_id))
        return {"s-known": 41}.get(session_id)

    appender = make()
    appender._lookup = lookup
    assert appender.session("ws", "s-known").next_seq == 42
    assert appender.session("ws", "s-new").next_seq == 0
    assert appender.session("ws", "s-given", next_seq=5).next_seq == 5
    assert calls == [("ws", "s-known"), ("ws", "s-new")]

    def failing(workspace_id: str, session_id: str) -> int | None:
        raise ConnectionError("projection down")

    appender._lookup = failing
    with pytest.raises(LogUnavailable, match="next_seq="):
        appender.session("ws", "s-other")
    with pytest.raises(RecordRejected) as err:
        appender.session("bad id", "s")
    assert err.value.field == "workspace_id"


# -- live view ---------------------------------------------------------------------------------------
def test_live_view_until_the_watermark_passes(make: Any) -> None:
    appender = make()
    writer = appender.session("ws", "s-1")
    handles = [writer.append(type="turn/start") for _ in range(10)]
    appender.flush(5)
    assert appender.live_sessions() == ["s-1"]
    assert [e.seq for e in appender.live_events("s-1")] == list(range(10))
    position = handles[5].result()
    assert appender.release_through(position.partition, position.offset) == 6
    assert [e.seq for e in appender.live_events("s-1")] == [6, 7, 8, 9]
    assert appender.release_session_through("s-1", 8) == 3
    assert [e.seq for e in appender.live_events("s-1")] == [9]


# -- fork safety -------------------------------------------------------------------------------------
def test_forked_child_gets_a_fresh_appender(tmp_path: Path, broker: FakeBroker, monkeypatch: Any) -> None:
    monkeypatch.setattr(appender_module, "_default_producer", broker.factory)
    monkeypatch.setattr(appender_module, "_singleton", None)
    parent = get_appender(KAFKA, options(tmp_path))
    try:
        assert get_appender() is parent
        parent.append(event(seq=0))
        parent.flush(5)
        writer = parent.session("ws", "s-p")
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: report through the pipe, never return into pytest
            status = 1
            try:
                child = get_appender(KAFKA, options(tmp_path))
                ok = child is not parent and child._pid == os.getpid()
                ok = ok and parent._thread is None and parent.spool_dir is None
                try:
                    writer.append(type="turn/start")
                    ok = False
                except AppenderClosed:
                    pass
                child.append(event(session="s-child", seq=0))
                child.flush(5)
                ok = ok and child.spool_dir is not None and child.spool_dir.endswith("slot-001")
                ok = ok and len(broker.producers) == 2  # its own producer, not the parent's
                ok = ok and "s-child" in broker.by_session()
                child.close()
                status = 0 if ok else 2
            finally:
                os.write(write, bytes([status]))
                os._exit(0)
        os.close(write)
        reported = os.read(read, 1)
        os.close(read)
        os.waitpid(pid, 0)
        assert reported == b"\x00"
        # the parent's appender, thread and writer are untouched by the fork
        writer.append(type="turn/start")
        parent.flush(5)
        assert parent._thread is not None and parent._thread.is_alive()
        assert "s-child" not in broker.by_session() and len(broker.producers) == 1
    finally:
        parent.close()
        monkeypatch.setattr(appender_module, "_singleton", None)


def test_close_joins_the_sender_thread_and_is_idempotent(make: Any) -> None:
    appender = make()
    appender.append(event(seq=0))
    thread = appender._thread
    assert thread is not None and thread.is_alive()
    appender.close()
    appender.close()
    assert not thread.is_alive()
    with pytest.raises(AppenderClosed):
        appender.append(event(seq=1))
    assert not [t for t in threading.enumerate() if t.name.startswith("backscroll-appender") and t.is_alive()]


# -- batches ----------------------------------------------------------------------------------------
def test_append_many_is_one_spool_write_and_keeps_the_order(make: Any, broker: FakeBroker) -> None:
    appender = make(queue_max_records=40)
    writes: list[int] = []
    spool = appender._spool
    original = spool._write

    def counting(seg: Any, data: bytes) -> None:
        writes.append(len(data))
        original(seg, data)

    spool._write = counting
    records = [event(session=f"s-{i % 3}", seq=i // 3) for i in range(120)]
    handles = appender.append_many(records)
    assert len(writes) == 2  # the segment's magic, then all 120 frames at once
    appender.flush(10)
    assert [h.result(1).partition for h in handles] == [
        broker.partition_of(b"s-%d" % (i % 3)) for i in range(120)
    ]
    assert broker.by_session() == {f"s-{s}": list(range(40)) for s in range(3)}
    stats = appender.stats()
    assert stats.appended == stats.acknowledged == 120 and stats.spool_unacked == 0
    assert [e.partition is not None for e in appender.live_entries("s-1")] == [True] * 40


def test_append_many_during_an_outage_is_spooled_and_replayed_in_order(make: Any, broker: FakeBroker) -> None:
    appender = make(queue_max_records=10)
    broker.up = False
    appender.append_many([event(seq=i) for i in range(50)])
    with pytest.raises(LogUnavailable):
        appender.flush(timeout=0.3)
    broker.up = True
    appender.flush(10)
    assert broker.by_session() == {"s-1": list(range(50))}


def test_partitions_are_the_default_partitioners(make: Any) -> None:
    from kafka.partitioner.default import DefaultPartitioner

    class Cluster:
        def topics(self) -> set[str]:
            return {"t"}

        def partitions_for_topic(self, topic: str) -> set[int]:
            return set(range(7))

        def available_partitions_for_topic(self, topic: str) -> set[int]:
            return set(range(7))

    class Producer:
        def partitions_for(self, topic: str) -> set[int]:
            return set(range(7))

    appender = make()
    partition_of = appender._partitioner(Producer(), "t")
    reference = DefaultPartitioner()
    for i in range(300):
        key = f"session-{i}-é".encode()
        expected = reference.partition("t", None, key, None, None, Cluster())
        assert partition_of(key) == partition_of(key) == expected


def test_append_many_over_the_spool_cap_accepts_nothing(make: Any, broker: FakeBroker) -> None:
    appender = make(spool_max_bytes=1024 * 1024, segment_bytes=64 * 1024)
    broker.up = False
    with pytest.raises(SpoolFull, match="cap"):
        appender.append_many([event(seq=i, text="t" * 2000) for i in range(1000)])
    stats = appender.stats()
    assert stats.appended == 0 and stats.spool_unacked == 0
    assert appender.live_events("s-1") == []
    with appender.session("ws", "s-1") as writer:
        assert writer.next_seq == 0  # no seq was taken by the refused batch
    broker.up = True
