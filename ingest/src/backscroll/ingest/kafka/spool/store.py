"""The durable local spool: append-only, checksummed segment files in one directory with one owner.

Layout of a spool directory (a *slot*; see :func:`open_slot`)::

    LOCK                       fcntl.flock'ed by the owning process, holds its pid (diagnostics only)
    00000000000000000000.seg   segments, named by the record id (rid) of their first record
    00000000000000001234.seg
    rejected.log               frames the broker refused for good (never re-sent)

A segment starts with the 8 magic bytes ``SLSPOOL1`` followed by frames::

    u32 length | u32 zlib.crc32(payload) | payload
    payload = i64 seq (-1 for a header record) | u16 key length | key (session id, UTF-8) | value

The active segment (the one appends go to) is preallocated to ``segment_bytes`` and memory-mapped:
an append copies its frame into the page cache without a system call, so the appending thread
keeps the GIL (``spool_map`` says why). Sealing it (rolling over) or closing the spool cuts the file
to the bytes written; the size cap counts only those.

Records get consecutive record ids inside a segment. On open every segment is scanned: a frame
that is cut short, longer than possible or fails its CRC ends the segment, and the file is
truncated there (a *torn tail* from a crash in the middle of a write, logged as a warning). The
zeros after the last frame of a segment that was active when its process died are its
preallocated, never written end: cut off without a warning. Acknowledged records are
tracked in memory; a sealed segment whose records are all acknowledged is deleted.

The spool is thread-safe; it never imports the network side. The format is in ``spool_format``,
the files (segments, lock, recovery) in ``spool_disk``, reads and acknowledgements in
``spool_read``, the fsync policies in ``spool_sync``.
"""

from __future__ import annotations

import contextlib
import errno
import os
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path

from backscroll.ingest.errors import SpoolError, SpoolFull, SpoolLocked
from backscroll.ingest.kafka.spool.disk import (
    LOCK_NAME,
    SUFFIX,
    Segment,
    acquire_lock,
    recover,
    release_map,
)
from backscroll.ingest.kafka.spool.frames import (
    MAGIC,
    Recovery,
    SpoolRecord,
    encode_frame,
    encode_frames,
)
from backscroll.ingest.kafka.spool.mapped import create_segment
from backscroll.ingest.kafka.spool.reading import REJECTED_NAME
from backscroll.ingest.kafka.spool.syncing import SyncingSpool
from backscroll.ingest.settings import FsyncPolicy

__all__ = ["MAGIC", "Recovery", "Spool", "SpoolRecord", "encode_frame", "open_slot"]


class Spool(SyncingSpool):
    """An exclusively owned spool directory. Raises :class:`SpoolLocked` when another owner is live."""

    def __init__(
        self,
        directory: Path | str,
        *,
        fsync: FsyncPolicy = "interval",
        fsync_interval_s: float = 0.2,
        max_bytes: int = 1024**3,
        segment_bytes: int = 8 * 1024**2,
    ) -> None:
        if fsync not in ("always", "interval", "never"):
            raise ValueError(f"fsync: must be always, interval or never, got {fsync!r}")
        self.directory = Path(directory)
        self.fsync: FsyncPolicy = fsync
        self.fsync_interval_s = fsync_interval_s
        self.max_bytes = max_bytes
        self.segment_bytes = segment_bytes
        self._lock = threading.Lock()
        self._segments: list[Segment] = []
        self._firsts: list[int] = []
        self._active: Segment | None = None
        self._bytes = 0
        self._next_rid = 0
        self._unacked = 0
        self._dirty = False
        self._last_sync = time.monotonic()
        self._last_seqs: dict[str, int] = {}
        self._sealed_unsynced: list[int] = []
        self._dir_dirty = False
        self._closed = False
        self._mapped = True  # until the filesystem refuses to preallocate a segment
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise SpoolError(f"cannot create spool directory {self.directory}: {err}") from err
        self._lock_fd: int | None = acquire_lock(self.directory)
        try:
            self.recovery = self._recover()
        except BaseException:
            self._release_lock()
            raise

    # -- recovery -------------------------------------------------------------------------------
    def _recover(self) -> Recovery:
        found = recover(self.directory, self.fsync)
        for seg in found.segments:
            self._append_segment(seg)
        self._last_seqs = found.last_seqs
        self._unacked = found.recovery.records
        self._next_rid = self._segments[-1].end_rid if self._segments else 0
        return found.recovery

    def _append_segment(self, seg: Segment) -> None:
        self._segments.append(seg)
        self._firsts.append(seg.first_rid)
        self._bytes += seg.size

    # -- properties -----------------------------------------------------------------------------
    @property
    def next_rid(self) -> int:
        """The record id the next append gets (every existing record has a smaller one)."""
        return self._next_rid

    @property
    def first_rid(self) -> int:
        """The id of the oldest record on disk (``next_rid`` when there is none)."""
        with self._lock:
            return self._segments[0].first_rid if self._segments else self._next_rid

    @property
    def unacked(self) -> int:
        """Records on disk not yet acknowledged."""
        return self._unacked

    @property
    def size_bytes(self) -> int:
        return self._bytes

    @property
    def closed(self) -> bool:
        return self._closed

    def last_seq(self, session_id: str) -> int | None:
        """The highest seq of ``session_id`` this spool has held since it was opened (or on disk)."""
        with self._lock:
            return self._last_seqs.get(session_id)

    # -- writing --------------------------------------------------------------------------------
    def fits(self, nbytes: int) -> bool:
        """Whether ``nbytes`` of frames can be appended without passing the cap (after reclaiming)."""
        with self._lock:
            if self._bytes + nbytes + len(MAGIC) <= self.max_bytes:
                return True
            self._reclaim_locked(include_active=True)
            return self._bytes + nbytes + len(MAGIC) <= self.max_bytes

    def append(self, key: bytes, seq: int | None, value: bytes, ticket: int = -1) -> int:
        """Write one record; return its rid. The bytes are in the kernel when this returns, and on
        stable storage too with ``fsync="always"``. Raises :class:`SpoolFull` (nothing written)."""
        frame = encode_frame(key, seq, value)
        with self._lock:
            self._check_open()
            seg = self._writable(len(frame))
            assert seg.fd is not None
            self._write(seg, frame)
            rid = seg.end_rid
            seg.offsets.append(seg.size)
            seg.tickets.append(ticket)
            seg.acked.append(0)
            seg.size += len(frame)
            self._bytes += len(frame)
            self._unacked += 1
            self._next_rid = rid + 1
            if seq is not None:
                session = key.decode("utf-8")
                if seq > self._last_seqs.get(session, -1):
                    self._last_seqs[session] = seq
            self._dirty = True
            if self.fsync == "always":
                self._sync_locked()
            return rid

    def append_many(self, entries: Sequence[tuple[bytes, int | None, bytes, int]]) -> int:
        """Write (key, seq, value, ticket) records in order with one copy (or ``write(2)``) per
        segment they land in (and one fsync decision); return the rid of the first. Raises
        :class:`SpoolFull` with nothing written when they would pass the cap; after a write error
        midway the records before it are written (``next_rid`` tells how many)."""
        frames = encode_frames([(key, seq, value) for key, seq, value, _ in entries])
        total = sum(map(len, frames))
        with self._lock:
            self._check_open()
            first = self._next_rid
            if not frames:
                return first
            room = total + len(MAGIC) * (1 + total // self.segment_bytes)
            if self._bytes + room > self.max_bytes:
                self._reclaim_locked(include_active=True)
                if self._bytes + room > self.max_bytes:
                    raise self._full(total)
            last_seqs = self._last_seqs
            i, n = 0, len(frames)
            while i < n:
                seg = self._writable(len(frames[i]))
                j, end = i + 1, seg.size + len(frames[i])
                while j < n and end + len(frames[j]) <= self.segment_bytes:
                    end += len(frames[j])
                    j += 1
                self._write(seg, b"".join(frames[i:j]))
                offsets, tickets, pos = seg.offsets, seg.tickets, seg.size
                for k in range(i, j):
                    key, seq, _, ticket = entries[k]
                    offsets.append(pos)
                    tickets.append(ticket)
                    pos += len(frames[k])
                    if seq is not None:
                        session = key.decode("utf-8")
                        if seq > last_seqs.get(session, -1):
                            last_seqs[session] = seq
                seg.acked.extend(bytes(j - i))
                self._bytes += pos - seg.size
                seg.size = pos
                self._unacked += j - i
                self._next_rid += j - i
                self._dirty = True
                i = j
            if self.fsync == "always":
                self._sync_locked()
            return first

    def _full(self, nbytes: int) -> SpoolFull:
        return SpoolFull(
            f"spool {self.directory} holds {self._bytes} bytes in {self._unacked} unacknowledged "
            f"records; writing {nbytes} more would pass its cap of {self.max_bytes} bytes "
            "(the broker has been unreachable for a while: restore it, or raise "
            "BACKSCROLL_APPENDER_SPOOL_MAX_BYTES)"
        )

    def _writable(self, nbytes: int) -> Segment:
        active = self._active
        if active is not None and (
            (active.count and active.size + nbytes > self.segment_bytes)
            or active.size + nbytes > active.capacity
        ):
            self._seal_locked(active)
            active = None
        if self._bytes + nbytes + (0 if active else len(MAGIC)) > self.max_bytes:
            self._reclaim_locked(include_active=True)
            active = self._active
            if self._bytes + nbytes + (0 if active else len(MAGIC)) > self.max_bytes:
                raise self._full(nbytes)
        if active is None:
            active = self._new_segment(nbytes)
        return active

    def _new_segment(self, nbytes: int) -> Segment:
        """The next active segment, with room for at least ``nbytes`` of frames (one record may be
        larger than ``segment_bytes``)."""
        rid = self._next_rid
        path = self.directory / f"{rid:020d}{SUFFIX}"
        capacity = max(self.segment_bytes, len(MAGIC) + nbytes)
        try:
            fd, mapping = create_segment(path, capacity, mapped=self._mapped)
        except OSError as err:
            raise self._write_error(err) from err
        self._mapped = mapping is not None  # a filesystem that refused once is not asked again
        seg = Segment(rid, path, sealed=False)
        seg.fd = fd
        seg.map = mapping
        seg.capacity = capacity if mapping is not None else sys.maxsize
        try:
            self._write(seg, MAGIC)
        except SpoolError:
            os.close(fd)
            path.unlink(missing_ok=True)
            raise
        seg.size = len(MAGIC)
        self._append_segment(seg)
        self._active = seg
        self._dir_changed()
        return seg

    def _write(self, seg: Segment, data: bytes) -> None:
        if seg.map is not None:  # _writable made room: a copy into the page cache, GIL held
            seg.map[seg.size : seg.size + len(data)] = data
            return
        assert seg.fd is not None
        view = memoryview(data)
        written = 0
        try:
            while written < len(data):
                written += os.write(seg.fd, view[written:])
        except OSError as err:
            with contextlib.suppress(OSError):
                os.ftruncate(seg.fd, seg.size)
            raise self._write_error(err) from err

    def _write_error(self, err: OSError) -> SpoolError:
        if err.errno in (errno.ENOSPC, errno.EDQUOT):
            return SpoolFull(f"spool {self.directory}: the disk is full ({err.strerror})")
        return SpoolError(f"cannot write spool {self.directory}: {err}")

    # -- reclaiming ----------------------------------------------------------------------------
    def reclaim(self) -> int:
        """Delete sealed segments whose records are all acknowledged; return how many."""
        with self._lock:
            if self._closed:
                return 0
            return self._reclaim_locked(include_active=False)

    def _reclaim_locked(self, *, include_active: bool) -> int:
        active = self._active
        if include_active and active is not None and active.count and active.done:
            self._seal_locked(active)
        doomed = [s for s in self._segments if s.sealed and s.done]
        if not doomed:
            return 0
        for seg in doomed:
            if seg.fd is not None:
                os.close(seg.fd)
                seg.fd = None
            seg.path.unlink(missing_ok=True)
            self._bytes -= seg.size
        keep = [s for s in self._segments if not (s.sealed and s.done)]
        self._segments = keep
        self._firsts = [s.first_rid for s in keep]
        self._dir_changed()
        return len(doomed)

    # -- closing --------------------------------------------------------------------------------
    def close(self, *, remove_if_empty: bool = True) -> None:
        """Sync, delete fully acknowledged segments, release the lock. An empty slot directory is
        removed (with ``remove_if_empty``). Idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            if self._active is not None:
                self._seal_locked(self._active)
            self._reclaim_locked(include_active=False)
            if self.fsync == "never":
                self._dir_dirty = False
            self._sync_locked()
            for seg in self._segments:
                if seg.fd is not None:
                    os.close(seg.fd)
                    seg.fd = None
            empty = not self._segments
            if empty and remove_if_empty:
                rejected = self.directory / REJECTED_NAME
                if not rejected.exists():
                    (self.directory / LOCK_NAME).unlink(missing_ok=True)
            self._release_lock()
            if empty and remove_if_empty:
                with contextlib.suppress(OSError):
                    self.directory.rmdir()

    def abandon(self) -> None:
        """In a forked child: drop the inherited file descriptors without touching the lock the
        parent still holds (flock belongs to the shared open file description)."""
        self._closed = True
        for fd in self._sealed_unsynced:
            with contextlib.suppress(OSError):
                os.close(fd)
        self._sealed_unsynced = []
        for seg in self._segments:
            release_map(seg, truncate=False)  # the parent still writes it
            if seg.fd is not None:
                with contextlib.suppress(OSError):
                    os.close(seg.fd)
                seg.fd = None
        if self._lock_fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._lock_fd)
            self._lock_fd = None

    def _release_lock(self) -> None:
        if self._lock_fd is not None:
            os.close(self._lock_fd)  # closing the only descriptor releases the flock
            self._lock_fd = None

    def __enter__(self) -> Spool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Spool({str(self.directory)!r}, unacked={self._unacked}, bytes={self._bytes})"


def open_slot(
    root: Path | str,
    *,
    slots: int = 256,
    fsync: FsyncPolicy = "interval",
    fsync_interval_s: float = 0.2,
    max_bytes: int = 1024**3,
    segment_bytes: int = 8 * 1024**2,
) -> Spool:
    """Claim a free slot ``root/slot-NNN``: first one left with records by a dead process, else the
    lowest free one. Two live processes never share a slot; a restarted process adopts leftovers."""
    root = Path(root)
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise SpoolError(f"cannot create spool root {root}: {err}") from err
    names = [f"slot-{i:03d}" for i in range(slots)]
    with_data = [n for n in names if (root / n).is_dir() and any((root / n).glob(f"*{SUFFIX}"))]
    for name in [*with_data, *(n for n in names if n not in with_data)]:
        try:
            return Spool(
                root / name,
                fsync=fsync,
                fsync_interval_s=fsync_interval_s,
                max_bytes=max_bytes,
                segment_bytes=segment_bytes,
            )
        except SpoolLocked:
            continue
    raise SpoolLocked(f"all {slots} spool slots under {root} are held by live appenders")
