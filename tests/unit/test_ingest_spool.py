"""The durable spool: framing, CRC, torn tails, the size cap, the lock, replay order, fsync policy."""

from __future__ import annotations

import os
import struct
import subprocess
import sys
import time
import zlib
from pathlib import Path

import pytest

from backscroll.ingest.errors import SpoolFull, SpoolLocked
from backscroll.ingest.kafka.spool.store import MAGIC, Spool, encode_frame, open_slot


def _fill(spool: Spool, n: int, session: str = "s-1", start: int = 0) -> list[int]:
    return [spool.append(session.encode(), start + i, f'{{"n":{start + i}}}'.encode()) for i in range(n)]


def _segments(directory: Path) -> list[Path]:
    return sorted(directory.glob("*.seg"))


def test_frame_layout_is_length_crc32_payload(tmp_path: Path) -> None:
    frame = encode_frame(b"s-1", 7, b'{"x":1}')
    length, crc = struct.unpack(">II", frame[:8])
    payload = frame[8:]
    assert length == len(payload)
    assert crc == zlib.crc32(payload)
    assert payload == struct.pack(">qH", 7, 3) + b"s-1" + b'{"x":1}'
    assert struct.unpack(">q", encode_frame(b"s", None, b"{}")[8:16]) == (-1,)  # header records

    with Spool(tmp_path) as spool:
        rid = spool.append(b"s-1", 7, b'{"x":1}')
        assert rid == 0
    [segment] = _segments(tmp_path)
    assert segment.read_bytes() == MAGIC + frame


def test_records_read_back_in_order_across_segments_and_reopen(tmp_path: Path) -> None:
    with Spool(tmp_path, segment_bytes=64 * 1024, fsync="never") as spool:
        value = b"x" * 1000
        rids = [spool.append(b"s-%d" % (i % 3), i, value + str(i).encode()) for i in range(300)]
        assert rids == list(range(300))
        assert len(_segments(tmp_path)) >= 4
        got = spool.read(0, max_records=10_000, max_bytes=10**9)
        assert [r.rid for r in got] == rids
        assert got[42].key == b"s-0" and got[42].seq == 42 and got[42].value.endswith(b"42")
        # bounded reads resume where asked
        first = spool.read(0, max_records=7)
        assert [r.rid for r in first] == list(range(7))
        assert [r.rid for r in spool.read(150, max_records=3)] == [150, 151, 152]
    with Spool(tmp_path) as again:
        assert again.recovery.records == 300 and again.recovery.truncated_bytes == 0
        assert [r.rid for r in again.read(0, 10_000, 10**9)] == rids
        assert again.last_seq("s-2") == 299
        assert again.next_rid == 300
        again.ack_many(range(300))  # everything acknowledged: close deletes it all


def test_acknowledged_segments_are_deleted_and_not_replayed(tmp_path: Path) -> None:
    with Spool(tmp_path, segment_bytes=64 * 1024) as spool:
        rids = [spool.append(b"s", i, b"y" * 2000) for i in range(100)]
        before = len(_segments(tmp_path))
        spool.ack_many(rids[:60])
        assert spool.reclaim() >= 1
        assert len(_segments(tmp_path)) < before
        assert spool.unacked == 40
        assert spool.first_unacked() == (60, -1)
        assert [r.rid for r in spool.read(0, 1000, 10**9)] == rids[60:]
        spool.ack(rids[70])
        assert 70 not in [r.rid for r in spool.read(0, 1000, 10**9)]
    with Spool(tmp_path) as again:  # unacknowledged records survive; acknowledged ones may be re-sent
        replay = [r.rid for r in again.read(0, 1000, 10**9)]
        assert set(rids[60:]) <= set(replay)
        assert replay == sorted(replay)
        again.ack_many(replay)
    assert not tmp_path.exists() or not _segments(tmp_path)


@pytest.mark.parametrize("cut", [1, 4, 8, 9, 20])
def test_torn_tail_is_truncated_on_recovery(tmp_path: Path, cut: int) -> None:
    with Spool(tmp_path) as spool:
        _fill(spool, 5)
    [segment] = _segments(tmp_path)
    whole = segment.read_bytes()
    torn = encode_frame(b"s-1", 5, b'{"n":5}')[:cut]
    segment.write_bytes(whole + torn)
    with Spool(tmp_path) as spool:
        assert spool.recovery.truncated_bytes == cut
        assert spool.recovery.truncated_segments == (segment.name,)
        assert [r.seq for r in spool.read(0)] == [0, 1, 2, 3, 4]
        assert segment.stat().st_size == len(whole)
        assert spool.last_seq("s-1") == 4
        assert spool.append(b"s-1", 5, b"{}") == 5  # appends continue after the good records
        spool.ack_many(range(6))


def test_crc_mismatch_ends_the_segment(tmp_path: Path) -> None:
    with Spool(tmp_path) as spool:
        _fill(spool, 10)
    [segment] = _segments(tmp_path)
    data = bytearray(segment.read_bytes())
    frame_len = len(encode_frame(b"s-1", 0, b'{"n":0}'))
    data[len(MAGIC) + 6 * frame_len + 12] ^= 0xFF  # flip one payload byte of the 7th record
    segment.write_bytes(bytes(data))
    with Spool(tmp_path) as spool:
        assert [r.seq for r in spool.read(0)] == [0, 1, 2, 3, 4, 5]
        assert spool.recovery.truncated_bytes == 4 * frame_len
        spool.ack_many(range(6))


def test_impossible_length_and_partial_magic(tmp_path: Path) -> None:
    with Spool(tmp_path) as spool:
        _fill(spool, 2)
    [segment] = _segments(tmp_path)
    segment.write_bytes(segment.read_bytes() + struct.pack(">II", 2**31, 0) + b"junk")
    (tmp_path / f"{99:020d}.seg").write_bytes(MAGIC[:5])  # crashed while creating a segment
    (tmp_path / f"{200:020d}.seg").write_bytes(b"not a spool segment at all")
    with Spool(tmp_path) as spool:
        assert [r.seq for r in spool.read(0)] == [0, 1]
        assert spool.recovery.quarantined == (f"{200:020d}.seg.damaged",)
        assert not (tmp_path / f"{99:020d}.seg").exists()
        spool.ack_many(range(2))


def test_size_cap_raises_spool_full_and_writes_nothing(tmp_path: Path) -> None:
    cap = 64 * 1024
    with Spool(tmp_path, max_bytes=cap, segment_bytes=16 * 1024) as spool:
        rids: list[int] = []
        with pytest.raises(SpoolFull) as err:
            while True:
                rids.append(spool.append(b"s", len(rids), b"z" * 1000))
        assert "cap" in str(err.value) and str(tmp_path) in str(err.value)
        assert spool.size_bytes <= cap
        count = spool.unacked
        assert count == len(rids)
        assert spool.read(rids[-1])[0].rid == rids[-1]  # the failed append left no trace
        assert spool.next_rid == rids[-1] + 1
        spool.ack_many(rids)  # acknowledged segments are reclaimed when room is needed
        assert spool.append(b"s", 0, b"z" * 1000) == rids[-1] + 1
        spool.ack(rids[-1] + 1)


def test_lock_refuses_a_second_owner_in_this_and_another_process(tmp_path: Path) -> None:
    with Spool(tmp_path):
        with pytest.raises(SpoolLocked) as err:
            Spool(tmp_path)
        assert f"pid {os.getpid()}" in str(err.value)
        code = (
            "import sys\nfrom backscroll.ingest.kafka.spool.store import Spool\n"
            "from backscroll.ingest.errors import SpoolLocked\n"
            "try:\n    Spool(sys.argv[1])\nexcept SpoolLocked:\n    sys.exit(7)\nsys.exit(0)\n"
        )
        done = subprocess.run([sys.executable, "-c", code, str(tmp_path)], timeout=60, check=False)
        assert done.returncode == 7
    # released on close: another process may take it now
    done = subprocess.run([sys.executable, "-c", code, str(tmp_path)], timeout=60, check=False)
    assert done.returncode == 0


def test_slots_give_each_owner_its_own_directory_and_adopt_leftovers(tmp_path: Path) -> None:
    first = open_slot(tmp_path, slots=4)
    second = open_slot(tmp_path, slots=4)
    try:
        assert first.directory.name == "slot-000" and second.directory.name == "slot-001"
        second.append(b"s", 0, b"{}")  # left behind unacknowledged
    finally:
        second.close()
        first.close()
    assert not (tmp_path / "slot-000").exists()  # empty slots are removed
    adopted = open_slot(tmp_path, slots=4)
    try:
        assert adopted.directory.name == "slot-001"
        assert adopted.unacked == 1
        adopted.ack(0)
    finally:
        adopted.close()
    held = [open_slot(tmp_path, slots=2) for _ in range(2)]
    try:
        with pytest.raises(SpoolLocked, match="all 2 spool slots"):
            open_slot(tmp_path, slots=2)
    finally:
        for spool in held:
            spool.close()


@pytest.mark.parametrize(("policy", "expected"), [("always", 20), ("never", 0)])
def test_fsync_policy_always_and_never(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, policy: str, expected: int
) -> None:
    calls: list[int] = []
    real = os.fdatasync

    def counting(fd: int) -> None:
        calls.append(fd)
        real(fd)

    monkeypatch.setattr(os, "fdatasync", counting)
    with Spool(tmp_path, fsync=policy) as spool:  # type: ignore[arg-type]
        calls.clear()
        rids = _fill(spool, 20)
        assert len(calls) == expected
        spool.ack_many(rids)


def test_fsync_policy_interval(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    clock = [1000.0]
    monkeypatch.setattr(os, "fdatasync", calls.append)
    monkeypatch.setattr(time, "monotonic", lambda: clock[0])
    with Spool(tmp_path, fsync="interval", fsync_interval_s=0.5) as spool:
        calls.clear()
        rids = _fill(spool, 10)
        assert calls == []  # within the interval: no sync
        spool.sync_if_due()
        assert calls == []
        clock[0] += 0.6
        spool.sync_if_due()  # the sender thread's tick syncs data older than the interval
        assert len(calls) == 1
        spool.sync_if_due()
        assert len(calls) == 1  # nothing new to sync
        rids += _fill(spool, 1, start=10)
        clock[0] += 0.6
        rids += _fill(spool, 1, start=11)  # appends never sync on the caller's thread
        assert len(calls) == 1
        spool.sync_if_due()
        assert len(calls) == 2
        spool.ack_many(rids)


def test_reject_keeps_the_frame_in_rejected_log(tmp_path: Path) -> None:
    with Spool(tmp_path) as spool:
        rid = spool.append(b"s-1", 3, b'{"bad":true}')
        spool.reject(rid)
        assert spool.unacked == 0
    assert (tmp_path / "rejected.log").read_bytes() == encode_frame(b"s-1", 3, b'{"bad":true}')


def test_append_many_writes_the_same_frames_as_append_across_segments(tmp_path: Path) -> None:
    entries = [
        (b"s-%d" % (i % 3), i if i % 7 else None, b"v" * (i % 50) + str(i).encode(), i) for i in range(200)
    ]
    with Spool(tmp_path / "one", segment_bytes=2048, fsync="never") as one:
        rids = [one.append(key, seq, value, ticket) for key, seq, value, ticket in entries]
    with Spool(tmp_path / "many", segment_bytes=2048, fsync="never") as many:
        assert many.append_many(entries[:1]) == 0
        assert many.append_many(entries[1:120]) == 1
        assert many.append_many([]) == 120
        assert many.append_many(entries[120:]) == 120
        assert many.next_rid == 200 and many.unacked == 200
        assert many.last_seq("s-1") == max(i for i in range(200) if i % 3 == 1 and i % 7)
        assert many.first_unacked() == (0, 0)
        got = many.read(0, 10_000, 10**9)
        assert [(r.rid, r.key, r.seq, r.value, r.ticket) for r in got] == [
            (rid, *entry) for rid, entry in zip(rids, entries, strict=True)
        ]
    # byte-identical segments (same names, same content), read back alike after a reopen
    assert [p.name for p in _segments(tmp_path / "one")] == [p.name for p in _segments(tmp_path / "many")]
    for a, b in zip(_segments(tmp_path / "one"), _segments(tmp_path / "many"), strict=True):
        assert a.read_bytes() == b.read_bytes()
    with Spool(tmp_path / "many") as many:
        assert many.recovery.records == 200 and many.recovery.truncated_bytes == 0


def test_append_many_over_the_cap_writes_nothing(tmp_path: Path) -> None:
    with Spool(tmp_path, max_bytes=4096, fsync="never") as spool:
        _fill(spool, 3)
        before = spool.size_bytes
        with pytest.raises(SpoolFull):
            spool.append_many([(b"s-1", 10 + i, b"x" * 200, -1) for i in range(30)])
        assert spool.size_bytes == before and spool.next_rid == 3
        assert spool.append_many([(b"s-1", 3, b"fits", -1)]) == 3
