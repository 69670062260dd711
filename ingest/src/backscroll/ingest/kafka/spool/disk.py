"""The spool's files: segments in memory, the slot lock, recovery of a directory on open."""

from __future__ import annotations

import errno
import fcntl
import logging
import mmap
import os
from array import array
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from backscroll.ingest.errors import SpoolError, SpoolLocked
from backscroll.ingest.kafka.spool.frames import FRAME, MAGIC, Recovery, scan_segment
from backscroll.ingest.settings import FsyncPolicy

__all__ = [
    "LOCK_NAME",
    "SUFFIX",
    "RecoveredSpool",
    "Segment",
    "acquire_lock",
    "fsync_dir",
    "recover",
    "release_map",
]

log = logging.getLogger("backscroll.ingest.kafka.spool.store")

SUFFIX: Final = ".seg"
LOCK_NAME: Final = "LOCK"


class Segment:
    """One segment file: where its records start, their tickets and acknowledgements.

    The active segment of a spool that preallocates is memory-mapped (``map``) over ``capacity``
    bytes; ``size`` is how many of them were written. Every other segment has ``map`` None and a
    file exactly ``size`` bytes long."""

    __slots__ = (
        "acked",
        "acked_count",
        "capacity",
        "fd",
        "first_rid",
        "low",
        "map",
        "offsets",
        "path",
        "sealed",
        "size",
        "tickets",
    )

    def __init__(self, first_rid: int, path: Path, *, sealed: bool) -> None:
        self.first_rid = first_rid
        self.path = path
        self.fd: int | None = None
        self.map: mmap.mmap | None = None
        self.capacity = 0
        self.size = 0
        self.offsets = array("q")
        self.tickets = array("q")
        self.acked = bytearray()
        self.acked_count = 0
        self.low = 0  # index of the first unacknowledged record
        self.sealed = sealed

    @property
    def count(self) -> int:
        return len(self.offsets)

    @property
    def end_rid(self) -> int:
        return self.first_rid + len(self.offsets)

    @property
    def done(self) -> bool:
        return self.acked_count == len(self.offsets)


def release_map(seg: Segment, *, truncate: bool = True) -> None:
    """Unmap a mapped segment and cut its file to the bytes written (``truncate``; not in a forked
    child, whose parent still writes it). A failed truncation only leaves a zero tail, which
    recovery removes, so it is logged rather than raised."""
    if seg.map is None:
        return
    seg.map.close()
    seg.map = None
    if truncate and seg.fd is not None:
        try:
            os.ftruncate(seg.fd, seg.size)
        except OSError as err:
            log.warning(
                "spool %s: cannot cut %s to %d bytes: %s", seg.path.parent, seg.path.name, seg.size, err
            )
    seg.capacity = seg.size


def _unwritten(data: bytes, start: int) -> bool:
    """Whether ``data[start:]`` is the preallocated, never written end of a segment: zeros, at
    least a frame head long. A real frame's head is never 8 zero bytes (its length is at least the
    payload head), so this is no torn write; fewer zeros may be the start of a torn head."""
    tail = len(data) - start
    return tail >= FRAME.size and data.count(0, start) == tail


def fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def acquire_lock(directory: Path) -> int:
    """flock ``directory/LOCK`` (non-blocking); retry when the file was replaced under us."""
    path = directory / LOCK_NAME
    for _ in range(100):
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        except FileNotFoundError:  # the directory was removed by an owner cleaning up an empty slot
            directory.mkdir(parents=True, exist_ok=True)
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as err:
            try:
                holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip() or "?"
            finally:
                os.close(fd)
            if err.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise SpoolLocked(
                    f"spool {directory} is locked by another live appender (pid {holder})"
                ) from None
            raise SpoolError(f"cannot lock spool {directory}: {err}") from err
        try:
            same = os.stat(path).st_ino == os.fstat(fd).st_ino
        except FileNotFoundError:
            same = False
        if not same:
            os.close(fd)
            continue
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)
        return fd
    raise SpoolError(f"cannot lock spool {directory}: its LOCK file keeps being replaced")


@dataclass(slots=True)
class RecoveredSpool:
    """What :func:`recover` found: the valid segments in rid order and the highest seq per session."""

    segments: list[Segment] = field(default_factory=list)
    last_seqs: dict[str, int] = field(default_factory=dict)
    recovery: Recovery = field(default_factory=lambda: Recovery(0, 0, 0, (), ()))


def recover(directory: Path, fsync: FsyncPolicy) -> RecoveredSpool:
    """Scan every segment of ``directory``: truncate torn tails, quarantine foreign files."""
    found = RecoveredSpool()
    segments, last_seqs = found.segments, found.last_seqs
    paths = sorted(
        (p for p in directory.iterdir() if p.suffix == SUFFIX and p.stem.isdigit()),
        key=lambda p: int(p.stem),
    )
    truncated = 0
    torn: list[str] = []
    quarantined: list[str] = []
    records = 0
    for path in paths:
        first = int(path.stem)
        data = path.read_bytes()
        if not data.startswith(MAGIC):
            # crashed while creating the segment (a preallocated one may be zeros): nothing in it
            head = data.rstrip(b"\0")
            if MAGIC.startswith(head):
                path.unlink()
                truncated += len(head)
                continue
            target = path.with_name(path.name + ".damaged")
            path.rename(target)
            quarantined.append(target.name)
            log.error("spool %s: %s is not a spool segment; moved it to %s", directory, path.name, target)
            continue
        offsets, keys, valid = scan_segment(data)
        if valid < len(data) and _unwritten(data, valid):
            # the preallocated, never written end of the segment that was active: not damage
            log.debug("spool %s: %s ends in %d unwritten bytes", directory, path.name, len(data) - valid)
            if offsets:
                _cut(path, valid, fsync)
        elif valid < len(data):
            truncated += len(data) - valid
            torn.append(path.name)
            log.warning(
                "spool %s: %s has a torn or corrupt tail at byte %d; truncating %d bytes",
                directory,
                path.name,
                valid,
                len(data) - valid,
            )
            _cut(path, valid, fsync)
        if not offsets:
            path.unlink()
            continue
        if segments and first < segments[-1].end_rid:
            raise SpoolError(f"spool {directory}: segment {path.name} overlaps the one before it")
        seg = Segment(first, path, sealed=True)
        seg.offsets = array("q", offsets)
        seg.tickets = array("q", [-1]) * len(offsets)
        seg.acked = bytearray(len(offsets))
        seg.size = valid
        segments.append(seg)
        for key, seq in keys:
            if seq is not None:
                session = key.decode("utf-8", "replace")
                if seq > last_seqs.get(session, -1):
                    last_seqs[session] = seq
        records += len(offsets)
    if truncated and fsync != "never":
        fsync_dir(directory)
    found.recovery = Recovery(len(segments), records, truncated, tuple(torn), tuple(quarantined))
    return found


def _cut(path: Path, size: int, fsync: FsyncPolicy) -> None:
    with open(path, "r+b") as file:
        file.truncate(size)
        if fsync != "never":
            os.fsync(file.fileno())
