"""The live view: positions, watermark release, per-session and total caps."""

from __future__ import annotations

import gc

from backscroll.ingest.live import LiveLog
from backscroll.ingest.wire import EventRecord, encode_record, parse_record


def ev(session: str, seq: int) -> EventRecord:
    record = parse_record(
        {
            "v": 1,
            "kind": "event",
            "workspace_id": "ws",
            "session_id": session,
            "seq": seq,
            "type": "turn/start",
            "time": "2026-11-30T10:00:00Z",
        }
    )
    assert isinstance(record, EventRecord)
    return record


def test_release_through_needs_the_acknowledged_position() -> None:
    live = LiveLog()
    for seq in range(4):
        live.add(ev("a", seq))
    live.add(ev("b", 0))
    live.acknowledged("a", 0, 1, 10)
    live.acknowledged("a", 1, 1, 11)
    live.acknowledged("b", 0, 2, 5)
    assert live.release_through(1, 10) == 1
    assert [e.seq for e in live.live_events("a")] == [1, 2, 3]  # seq 2, 3: not acknowledged yet
    assert live.release_through(1, 99) == 1
    assert live.release_through(0, 99) == 0
    assert live.live_entries("a")[0].partition is None
    assert live.live_sessions() == ["a", "b"]
    assert live.release_through(2, 5) == 1
    assert live.live_sessions() == ["a"]
    assert live.release_session_through("a", 3) == 2
    assert live.live_sessions() == [] and len(live) == 0


def test_caps_drop_the_oldest_and_say_so() -> None:
    live = LiveLog(max_per_session=3, max_total=5)
    for seq in range(5):
        live.add(ev("a", seq))
    assert [e.seq for e in live.live_events("a")] == [2, 3, 4]
    assert live.truncated("a") and not live.truncated("b")
    for seq in range(3):
        live.add(ev("b", seq))
    assert len(live) == 5
    assert [e.seq for e in live.live_events("a")] == [3, 4]  # the least recently appended session lost one
    assert [e.seq for e in live.live_events("b")] == [0, 1, 2]
    live.discard("b", 1)
    assert [e.seq for e in live.live_events("b")] == [0, 2]
    live.acknowledged("zzz", 0, 0, 0)  # unknown entries are ignored
    live.clear()
    assert live.live_sessions() == []


def test_disabled_live_log_keeps_nothing() -> None:
    live = LiveLog(max_per_session=0)
    live.add(ev("a", 0))
    assert live.live_sessions() == []
    live.acknowledged_many([("a", 0, 0, 1)])
    assert len(live) == 0 and live.release_through(0, 10) == 0


def test_the_oldest_is_the_lowest_seq_whatever_the_order_of_appends() -> None:
    live = LiveLog(max_per_session=3)
    for seq in (5, 6, 7, 8):  # in order: the first kept is the lowest
        live.add(ev("a", seq))
    assert [e.seq for e in live.live_events("a")] == [6, 7, 8]
    live.add(ev("a", 7))  # a replacement keeps the order
    live.add(ev("a", 9))
    assert [e.seq for e in live.live_events("a")] == [7, 8, 9]
    for seq in (20, 2, 15):  # out of order: the lowest still goes first
        live.add(ev("b", seq))
    live.add(ev("b", 10))
    assert [e.seq for e in live.live_events("b")] == [10, 15, 20]
    live.add(ev("b", 1))
    assert [e.seq for e in live.live_events("b")] == [10, 15, 20]  # the new one was the oldest


def test_kept_events_are_bytes_the_garbage_collector_does_not_track() -> None:
    """An appending process that nobody searches holds ``max_total`` events: as models they made
    every full collection walk three to seven objects each; kept encoded, they add nothing to walk."""
    live = LiveLog(max_per_session=10_000)
    live.add(ev("a", 0))
    gc.collect()
    before = len(gc.get_objects())
    for seq in range(1, 4_000):
        live.add(ev("a", seq))
    live.acknowledged_many(("a", seq, 0, seq) for seq in range(4_000))
    gc.collect()
    assert len(gc.get_objects()) - before < 100  # as models: 12,000 (3 per event of this kind)
    assert len(live) == 4_000


def test_reading_decodes_each_event_once_and_keeps_its_position() -> None:
    live = LiveLog()
    records = [ev("a", seq) for seq in range(3)]
    for record in records:
        live.add(record, encode_record(record))
    live.acknowledged("a", 1, 3, 41)
    first = live.live_events("a")
    assert first == records
    again = live.live_events("a")
    assert all(a is b for a, b in zip(first, again, strict=True))  # decoded once, then kept
    entries = live.live_entries("a")
    assert [(e.record, e.partition, e.offset) for e in entries] == [
        (records[0], None, None),
        (records[1], 3, 41),
        (records[2], None, None),
    ]
    live.acknowledged("a", 2, 3, 42)  # after a read: the decoded record stays, the position moves
    assert live.live_entries("a")[2].offset == 42 and live.live_events("a")[2] is first[2]
    assert live.release_through(3, 42) == 2
    assert live.live_events("a") == records[:1]
