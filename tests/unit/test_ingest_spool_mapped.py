"""The spool's active segment: preallocated, memory-mapped, cut to size when sealed; its zero tail
after a crash; the ``write(2)`` fallback where a filesystem cannot preallocate; a full disk."""

from __future__ import annotations

import errno
import logging
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from backscroll.ingest.errors import SpoolError, SpoolFull
from backscroll.ingest.kafka.spool.frames import scan_segment
from backscroll.ingest.kafka.spool.store import MAGIC, Spool, encode_frame

SEGMENT = 64 * 1024


def _frames(n: int, start: int = 0) -> list[tuple[bytes, int, bytes]]:
    return [
        (b"s-%d" % (i % 3), i, b'{"n":%d,"text":"%s"}' % (i, b"t" * 100)) for i in range(start, start + n)
    ]


def _write(spool: Spool, n: int, start: int = 0) -> bytes:
    """Append ``n`` records (half one by one, half in one batch); the bytes they take on disk."""
    entries = _frames(n, start)
    half = n // 2
    for key, seq, value in entries[:half]:
        spool.append(key, seq, value)
    spool.append_many([(key, seq, value, -1) for key, seq, value in entries[half:]])
    return b"".join(encode_frame(*entry) for entry in entries)


def _segments(directory: Path) -> list[Path]:
    return sorted(directory.glob("*.seg"))


def _spool_warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.name.startswith("backscroll") and r.levelno >= logging.WARNING
    ]


def _crash_copy(source: Path, target: Path) -> None:
    """What the disk holds if the owning process died now: its files, read through the page cache."""
    target.mkdir()
    for path in _segments(source):
        shutil.copyfile(path, target / path.name)


def _crashed(tmp_path: Path, records: int) -> tuple[bytes, Path]:
    """A spool of ``records`` frames as a crash would leave it in ``tmp_path/crashed``: the frames
    written, and its one (preallocated, not cut) segment file."""
    live = Spool(tmp_path / "live", segment_bytes=SEGMENT, fsync="never")
    written = _write(live, records)
    _crash_copy(tmp_path / "live", tmp_path / "crashed")
    live.close()
    [segment] = _segments(tmp_path / "crashed")
    return written, segment


def test_the_active_segment_is_preallocated_and_cut_to_its_records_on_close(tmp_path: Path) -> None:
    spool = Spool(tmp_path, segment_bytes=SEGMENT, fsync="never")
    written = _write(spool, 40)
    [segment] = _segments(tmp_path)
    stat = segment.stat()
    assert stat.st_size == SEGMENT and stat.st_blocks * 512 >= SEGMENT  # reserved, not sparse
    assert spool.size_bytes == len(MAGIC) + len(written)  # the cap counts written bytes only
    assert segment.read_bytes()[: len(MAGIC) + len(written)] == MAGIC + written  # in the page cache
    got = spool.read(0, 1000, 10**9)
    assert [(r.key, r.seq, r.value) for r in got] == _frames(40)
    spool.reject(3)  # rejected.log is copied from the mapped segment
    assert (tmp_path / "rejected.log").read_bytes() == encode_frame(*_frames(1, 3)[0])
    spool.close()
    assert segment.read_bytes() == MAGIC + written
    with Spool(tmp_path) as again:
        assert again.recovery.records == 40 and again.recovery.truncated_bytes == 0
        assert [r.seq for r in again.read(0, 1000, 10**9)] == list(range(40))  # acks live in memory
        again.ack_many(range(40))


def test_a_crash_leaves_a_zero_tail_that_recovery_cuts_without_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    written, segment = _crashed(tmp_path, 30)
    assert segment.stat().st_size == SEGMENT
    caplog.set_level(logging.DEBUG, logger="backscroll")
    with Spool(tmp_path / "crashed") as spool:
        assert spool.recovery.records == 30
        assert spool.recovery.truncated_segments == () and spool.recovery.truncated_bytes == 0
        assert [(r.key, r.seq, r.value) for r in spool.read(0, 1000, 10**9)] == _frames(30)
        assert segment.read_bytes() == MAGIC + written
        assert spool.last_seq("s-2") == 29 and spool.next_rid == 30
        assert spool.append(b"s-0", 30, b"{}") == 30  # appends continue in a new segment
        spool.ack_many(range(31))
    assert _spool_warnings(caplog) == []


def test_a_crash_before_the_first_record_or_the_magic_leaves_nothing_behind(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    (tmp_path / f"{0:020d}.seg").write_bytes(MAGIC + bytes(SEGMENT - len(MAGIC)))  # no record yet
    (tmp_path / f"{1:020d}.seg").write_bytes(bytes(SEGMENT))  # preallocated, magic not written
    (tmp_path / f"{2:020d}.seg").write_bytes(MAGIC[:3] + bytes(SEGMENT - 3))
    with Spool(tmp_path) as spool:
        assert spool.recovery.records == 0 and spool.recovery.quarantined == ()
        assert _segments(tmp_path) == []
    assert _spool_warnings(caplog) == []


_APPEND_AND_WAIT = """
import sys
from backscroll.ingest.kafka.spool.store import Spool
spool = Spool(sys.argv[1], segment_bytes=int(sys.argv[2]), fsync="never")
for i in range(int(sys.argv[3])):
    spool.append(b"s-%d" % (i % 3), i, b'{"n":%d}' % i)
print("appended", flush=True)
sys.stdin.read()
"""


def test_kill_9_of_the_owner_loses_no_record_and_recovery_cuts_the_tail_silently(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    n = 2_000  # about 60 KiB: a sealed segment and a mapped active one
    child = subprocess.Popen(
        [sys.executable, "-c", _APPEND_AND_WAIT, str(tmp_path), str(SEGMENT // 2), str(n)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None and child.stdout.readline() == "appended\n"
        *_, active = _segments(tmp_path)
        assert active.stat().st_size == SEGMENT // 2  # preallocated, still mapped by the child
    finally:
        child.send_signal(signal.SIGKILL)
        child.communicate()
    caplog.set_level(logging.DEBUG, logger="backscroll")
    with Spool(tmp_path) as spool:
        assert spool.recovery.records == n and spool.recovery.truncated_segments == ()
        got = spool.read(0, 10_000, 10**9)
        assert [(r.key, r.seq, r.value) for r in got] == [
            (b"s-%d" % (i % 3), i, b'{"n":%d}' % i) for i in range(n)
        ]
        for path in _segments(tmp_path):
            assert scan_segment(path.read_bytes())[2] == path.stat().st_size
        spool.ack_many(range(n))
    assert _spool_warnings(caplog) == []


@pytest.mark.parametrize("cut", [4, 8, 9, 20])
def test_a_torn_frame_before_the_zero_tail_is_still_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, cut: int
) -> None:
    written, segment = _crashed(tmp_path, 10)
    with open(segment, "r+b") as file:  # died in the middle of copying the next frame
        file.seek(len(MAGIC) + len(written))
        file.write(encode_frame(b"s-1", 10, b'{"n":10}')[:cut])
    with Spool(tmp_path / "crashed") as spool:
        assert spool.recovery.truncated_segments == (segment.name,)
        assert [r.seq for r in spool.read(0, 1000, 10**9)] == list(range(10))
        assert segment.stat().st_size == len(MAGIC) + len(written)
        spool.ack_many(range(10))
    assert any("torn or corrupt tail" in message for message in _spool_warnings(caplog))


def test_a_zero_frame_is_never_valid() -> None:
    frame = encode_frame(b"s", 1, b"{}")
    assert scan_segment(MAGIC + bytes(64)) == ([], [], len(MAGIC))
    offsets, keys, valid = scan_segment(MAGIC + frame + bytes(8) + frame)  # length 0, crc32(b"") == 0
    assert offsets == [len(MAGIC)] and keys == [(b"s", 1)] and valid == len(MAGIC) + len(frame)


def test_segments_roll_over_cut_to_size_and_a_large_record_gets_room(tmp_path: Path) -> None:
    small = 4096
    big = b"B" * (3 * small)  # larger than a whole segment
    with Spool(tmp_path, segment_bytes=small, fsync="never") as spool:
        _write(spool, 100)  # about 14 KiB
        rid = spool.append(b"s-9", 0, big)
        spool.append_many([(b"s-9", 1, big, -1), (b"s-9", 2, b"{}", -1)])
        *sealed, active = _segments(tmp_path)
        assert len(sealed) >= 4
        for path in sealed:  # sealed segments hold exactly their frames
            offsets, _, valid = scan_segment(path.read_bytes())
            assert offsets and valid == path.stat().st_size <= len(MAGIC) + len(encode_frame(b"s-9", 0, big))
        assert active.stat().st_size >= small
        got = spool.read(0, 1000, 10**9)
        assert [r.seq for r in got][:100] == list(range(100))
        assert [(r.rid, r.value) for r in got[100:]] == [(rid, big), (rid + 1, big), (rid + 2, b"{}")]
        assert spool.size_bytes == sum(p.stat().st_size for p in sealed) + len(MAGIC) + len(
            encode_frame(b"s-9", 2, b"{}")
        )
    for path in _segments(tmp_path):
        assert scan_segment(path.read_bytes())[2] == path.stat().st_size
    with Spool(tmp_path) as again:
        assert again.recovery.records == 103 and again.recovery.truncated_bytes == 0
        again.ack_many(range(103))


def test_without_preallocation_the_spool_writes_the_same_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    with Spool(tmp_path / "mapped", segment_bytes=4096, fsync="never") as mapped:
        _write(mapped, 120)

    def unsupported(fd: int, offset: int, length: int) -> None:
        raise OSError(errno.EOPNOTSUPP, os.strerror(errno.EOPNOTSUPP))

    monkeypatch.setattr(os, "posix_fallocate", unsupported)
    caplog.set_level(logging.INFO, logger="backscroll")
    with Spool(tmp_path / "written", segment_bytes=4096, fsync="never") as written:
        _write(written, 60)
        assert _segments(tmp_path / "written")[-1].stat().st_size == written.size_bytes - sum(
            p.stat().st_size for p in _segments(tmp_path / "written")[:-1]
        )  # no preallocated tail
        _write(written, 60, start=60)
        assert len(written.read(0, 1000, 10**9)) == 120
    said = [r for r in caplog.records if "cannot preallocate" in r.getMessage()]
    assert len(said) == 1 and said[0].levelno == logging.INFO  # once per spool
    names = [p.name for p in _segments(tmp_path / "mapped")]
    assert names == [p.name for p in _segments(tmp_path / "written")] and len(names) > 2
    for name in names:
        assert (tmp_path / "mapped" / name).read_bytes() == (tmp_path / "written" / name).read_bytes()


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EIO])
def test_a_failed_preallocation_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, code: int
) -> None:
    spool = Spool(tmp_path, segment_bytes=4096, fsync="never")
    _write(spool, 10)
    before = spool.size_bytes, spool.next_rid, spool.unacked, _segments(tmp_path)
    real = os.posix_fallocate

    def failing(fd: int, offset: int, length: int) -> None:
        raise OSError(code, os.strerror(code))

    monkeypatch.setattr(os, "posix_fallocate", failing)
    with pytest.raises(SpoolError) as err:  # no room left in the active segment: a new one is needed
        spool.append(b"s-1", 10, b"x" * 5000)
    assert isinstance(err.value, SpoolFull) == (code == errno.ENOSPC)
    assert str(tmp_path) in str(err.value) and "\n" not in str(err.value)
    assert (spool.size_bytes, spool.next_rid, spool.unacked, _segments(tmp_path)) == before
    monkeypatch.setattr(os, "posix_fallocate", real)
    assert spool.append(b"s-1", 10, b"{}") == 10  # room again: appends go on
    assert [r.seq for r in spool.read(0, 1000, 10**9)] == list(range(11))
    spool.ack_many(range(11))
    spool.close()


def test_a_forked_child_abandoning_the_spool_leaves_the_active_segment_alone(tmp_path: Path) -> None:
    spool = Spool(tmp_path, segment_bytes=SEGMENT, fsync="never")
    _write(spool, 5)
    [segment] = _segments(tmp_path)
    spool.abandon()  # what a forked child does: no cut of a file its parent still writes
    assert segment.stat().st_size == SEGMENT
    with Spool(tmp_path) as again:  # the lock went with the descriptors; recovery cuts the tail
        assert again.recovery.records == 5 and again.recovery.truncated_bytes == 0
        again.ack_many(range(5))
