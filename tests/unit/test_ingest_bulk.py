"""Bulk appends (the CLI's bulk paths): records prepared once per batch keep every check and
message of ``append``, land on both logs in order with the same bytes, nothing lost or duplicated,
and are acknowledged per batch (a refused record fails its batch)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import orjson
import pytest
from kafka.errors import MessageSizeTooLargeError
from kafka.future import Future
from tests.unit.test_ingest_appender import KAFKA, FakeBroker, FakeProducer, _Meta, event, options

from backscroll.ingest import Appender, RecordRejected, SessionBusy, SQLiteEntryLog
from backscroll.ingest.bulk import BatchAck, encode_for_log, prepare_lines
from backscroll.ingest.sqlite.log import BULK_CHECKPOINT_PAGES
from backscroll.ingest.wire import decode_record, encode_key, encode_record


def header(session: str = "s-1") -> dict[str, Any]:
    created = "2026-11-30T10:00:00Z"
    return {"v": 1, "kind": "header", "workspace_id": "ws", "session_id": session, "created_at": created}


def line(record: dict[str, Any]) -> bytes:
    return orjson.dumps(record) + b"\n"


# -- prepare_lines: the checks and messages of decode_record, per line ------------------------------
def test_prepare_lines_encodes_like_append_and_keeps_each_rejection_with_its_line() -> None:
    good = [header("s-1"), event("s-1", 0), event("s-2", 0, attrs={"k": 1})]
    bad = {
        2: b"not json\n",
        4: line({**event("s-1", 1), "v": 2}),
        6: line(event("s-1", 2, surface=None)),
        7: line({**event("s-1", 3), "seq": -1}),
    }
    numbered: list[tuple[int, bytes]] = []
    goods = iter(good)
    for number in range(1, 8):
        numbered.append((number, bad.get(number) or line(next(goods))))
    records, rejections = prepare_lines(numbered)
    assert records == [
        (r["session_id"], r["session_id"].encode(), encode_record(decode_record(line(r))), r.get("seq"))
        for r in good
    ]
    assert [r.line for r in rejections] == [2, 4, 6, 7]
    for rejection in rejections:
        with pytest.raises(RecordRejected) as expected:
            decode_record(bad[rejection.line])
        assert (rejection.field, rejection.reason) == (expected.value.field, str(expected.value))


def test_encode_for_log_gives_key_value_and_seq() -> None:
    record = decode_record(line(event("s-9", 4)))
    assert encode_for_log(record) == ("s-9", encode_key(record), encode_record(record), 4)
    assert encode_for_log(decode_record(line(header("s-9"))))[3] is None


# -- SQLite: one transaction per batch, in order, same bytes -------------------------------------------
def test_sqlite_append_encoded_commits_in_order_without_loss_or_duplicates(tmp_path: Path) -> None:
    lines = [(i + 1, line(event(f"s-{i % 3}", i // 3))) for i in range(30)]
    records, rejections = prepare_lines(lines)
    assert not rejections
    with SQLiteEntryLog(tmp_path / "log.db", live_max_per_session=0) as log:
        acks = [log.append_encoded(records[:10]), log.append_encoded(records[10:]), log.append_encoded([])]
        stored = log.read(0, limit=100)
    assert all(ack.settled() and ack.error() is None for ack in acks)
    assert [ack.acknowledged for ack in acks] == [10, 20, 0]
    assert [r.offset for r in stored] == list(range(1, 31))
    assert [(r.key, r.value) for r in stored] == [(key, value) for _, key, value, _ in records]


def test_sqlite_bulk_batches_checkpoint_less_often_and_plain_appends_keep_the_default(tmp_path: Path) -> None:
    records, _ = prepare_lines([(1, line(event("s-1", 0)))])
    with SQLiteEntryLog(tmp_path / "a.db") as plain, SQLiteEntryLog(tmp_path / "b.db") as bulk:
        plain.append(event("s-1", 0))
        bulk.append_encoded(records)
        for log, pages in ((plain, 1000), (bulk, BULK_CHECKPOINT_PAGES)):
            assert log._conn is not None
            assert log._conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == pages


def test_sqlite_append_encoded_refuses_a_session_owned_by_a_writer(tmp_path: Path) -> None:
    records, _ = prepare_lines([(1, line(event("s-2", 0))), (2, line(event("s-1", 0)))])
    with SQLiteEntryLog(tmp_path / "log.db") as log, log.session("ws", "s-1"):
        with pytest.raises(SessionBusy):
            log.append_encoded(records)
        assert log.end_offset() == 0  # all or none


# -- Kafka: one spool write and one BatchAck per batch ---------------------------------------------------
def test_appender_append_encoded_acknowledges_per_batch_in_order(tmp_path: Path) -> None:
    broker = FakeBroker()
    records, _ = prepare_lines([(i, line(event(f"s-{i % 4}", i // 4))) for i in range(200)])
    settings = options(tmp_path, queue_max_records=30, enqueue_timeout_s=30.0)
    with Appender(KAFKA, settings, producer_factory=broker.factory) as appender:
        acks = [appender.append_encoded(records[i : i + 25]) for i in range(0, 200, 25)]
        appender.flush(timeout=10)
        assert all(ack.wait(5) for ack in acks)
        stats = appender.stats()
    assert sum(ack.acknowledged for ack in acks) == 200 and not any(ack.failed for ack in acks)
    assert stats.spooled == 0  # it waited for room instead of spilling to the spool
    assert broker.by_session() == {f"s-{s}": list(range(50)) for s in range(4)}


def test_appender_append_encoded_refuses_a_session_owned_by_a_writer(tmp_path: Path) -> None:
    broker = FakeBroker()
    records, _ = prepare_lines([(1, line(event("s-1", 0)))])
    with Appender(KAFKA, options(tmp_path), producer_factory=broker.factory) as appender:
        with appender.session("ws", "s-1"), pytest.raises(SessionBusy):
            appender.append_encoded(records)
        assert appender.stats().appended == 0


class _Refusing(FakeProducer):
    """Fails the records of one session for good, as a broker refusing a too large record."""

    def send(self, topic: str, key: bytes, value: bytes, partition: int | None = None) -> Future:
        if key == b"bad":
            return Future().failure(MessageSizeTooLargeError("too large"))
        return super().send(topic, key, value)


def test_a_refused_record_fails_its_batch_with_a_typed_error(tmp_path: Path) -> None:
    broker = FakeBroker()
    records, _ = prepare_lines(
        [(1, line(event("ok", 0))), (2, line(event("bad", 0))), (3, line(event("ok", 1)))]
    )
    with Appender(KAFKA, options(tmp_path), producer_factory=lambda config: _Refusing(broker)) as appender:
        ack = appender.append_encoded(records)
        appender.flush(timeout=10)
        assert ack.wait(5)
    assert (ack.acknowledged, ack.failed) == (2, 1)
    assert isinstance(ack.error(), RecordRejected)
    assert broker.by_session() == {"ok": [0, 1]}


def test_entries_acknowledged_out_of_order_are_each_resolved(tmp_path: Path) -> None:
    # The sender watches the last future of each partition per round; earlier ones that are not
    # done yet when it completes get their own callbacks.
    broker = FakeBroker()
    broker.hold = True
    with Appender(KAFKA, options(tmp_path), producer_factory=broker.factory) as appender:
        handles = [appender.append(event("s-1", seq)) for seq in range(5)]
        deadline = time.monotonic() + 10
        while len(broker.held) < 5 and time.monotonic() < deadline:
            time.sleep(0.01)
        held, broker.held = broker.held, []
        for future, partition, key, value in reversed(held):
            future.success(_Meta(partition, broker.write(key, value)))
        appender.flush(timeout=10)
        offsets = [h.result(timeout=5).offset for h in handles]
    assert sorted(offsets) == list(range(5))


def test_batch_ack_settles_once_every_record_is_answered() -> None:
    ack = BatchAck(3)
    assert not ack.settled() and not ack.wait(0)
    ack._resolve_many(2)
    assert not ack.settled()
    ack._fail(RecordRejected("record", "refused"))
    assert ack.settled() and ack.wait(0) and ack.failed == 1 and isinstance(ack.error(), RecordRejected)
    assert BatchAck(0).settled()
