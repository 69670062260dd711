"""The durable local spool: append-only, checksummed segment files in one directory with one owner.

Layout of a spool directory (a *slot*; see :func:`open_slot`)::

    LOCK                       fcntl.flock'ed by the owning process, holds its pid (diagnostics only)
    00000000000000000000.seg   segments, named by the record id (rid) of their first record
    00000000000000001234.seg
    rejected.log               frames the broker refused for good (never re-sent)

A segment starts with the 8 magic bytes ``SLSPOOL1`` followed by frames::

    u32 length | u32 zlib.crc32(payload) | payload
    payload = i64 seq (-1 for a header record) | u16 key length | key (session id, UTF-8) | value

Records get consecutive record ids inside a segment. On open every segment is scanned: a frame
that is cut short, longer than possible or fails its CRC ends the segment, and the file is
truncated there (a *torn tail* from a crash in the middle of a write). Acknowledged records are
tracked in memory; a sealed segment whose records are all acknowledged is deleted.

The spool is thread-safe; it never imports the network side. The format is in ``spool_format``,
the files (segments, lock, recovery) in ``spool_disk``.
"""

from __future__ import annotations

import bisect
import contextlib
import errno
import os
import threading
import time
import zlib
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Final

from sessionlog.ingest.errors import SpoolError, SpoolFull, SpoolLocked
from sessionlog.ingest.settings import FsyncPolicy
from sessionlog.ingest.spool_disk import (
    LOCK_NAME,
    SUFFIX,
    Segment,
    acquire_lock,
    fsync_dir,
    log,
    recover,
)
from sessionlog.ingest.spool_format import (
    FRAME,
    MAGIC,
    Recovery,
    SpoolRecord,
    decode_payload,
    encode_frame,
    encode_frames,
)

__all__ = ["MAGIC", "Recovery", "Spool", "SpoolRecord", "encode_frame", "open_slot"]

_REJECTED_NAME: Final = "rejected.log"


class Spool:
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

    def first_unacked(self) -> tuple[int, int] | None:
        """(rid, ticket) of the oldest unacknowledged record, or None."""
        with self._lock:
            for seg in self._segments:
                if seg.low < seg.count:
                    return seg.first_rid + seg.low, seg.tickets[seg.low]
            return None

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
        """Write (key, seq, value, ticket) records in order with one ``write(2)`` per segment they
        land in (and one fsync decision); return the rid of the first. Raises :class:`SpoolFull`
        with nothing written when they would pass the cap; after a write error midway the records
        before it are written (``next_rid`` tells how many)."""
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
            "SESSIONLOG_APPENDER_SPOOL_MAX_BYTES)"
        )

    def _check_open(self) -> None:
        if self._closed:
            raise SpoolError(f"spool {self.directory} is closed")

    def _writable(self, nbytes: int) -> Segment:
        active = self._active
        if active is not None and active.count and active.size + nbytes > self.segment_bytes:
            self._seal_locked(active)
            active = None
        if self._bytes + nbytes + (0 if active else len(MAGIC)) > self.max_bytes:
            self._reclaim_locked(include_active=True)
            active = self._active
            if self._bytes + nbytes + (0 if active else len(MAGIC)) > self.max_bytes:
                raise self._full(nbytes)
        if active is None:
            active = self._new_segment()
        return active

    def _new_segment(self) -> Segment:
        rid = self._next_rid
        path = self.directory / f"{rid:020d}{SUFFIX}"
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o644)
        except OSError as err:
            raise self._write_error(err) from err
        seg = Segment(rid, path, sealed=False)
        seg.fd = fd
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

    def _seal_locked(self, seg: Segment) -> None:
        if seg.fd is not None and self._dirty and self._active is seg:
            if self.fsync == "always":
                os.fdatasync(seg.fd)
                self._last_sync = time.monotonic()
            elif self.fsync == "interval":
                self._sealed_unsynced.append(os.dup(seg.fd))  # synced by sync_if_due, off the lock
            self._dirty = False
        seg.sealed = True
        if self._active is seg:
            self._active = None

    def _dir_changed(self) -> None:
        if self.fsync == "always":
            fsync_dir(self.directory)
        elif self.fsync == "interval":
            self._dir_dirty = True

    # -- syncing --------------------------------------------------------------------------------
    def sync(self) -> None:
        """fdatasync the active segment (whatever the policy)."""
        with self._lock:
            if not self._closed:
                self._sync_locked()

    def sync_if_due(self) -> None:
        """With ``fsync="interval"``: sync what is older than the interval (the active segment,
        segments sealed since, the directory). Called by the sender thread; the syncs run outside
        the spool's lock, so appends never wait for the disk."""
        if self.fsync != "interval" or not (self._dirty or self._sealed_unsynced or self._dir_dirty):
            return
        with self._lock:
            if self._closed or time.monotonic() - self._last_sync < self.fsync_interval_s:
                return
            active = self._active
            fds = self._sealed_unsynced
            self._sealed_unsynced = []
            if self._dirty and active is not None and active.fd is not None:
                fds.append(os.dup(active.fd))  # rolling or reclaiming cannot close it under us
            self._dirty = False
            sync_dir, self._dir_dirty = self._dir_dirty, False
            started = time.monotonic()
        try:
            for fd in fds:
                os.fdatasync(fd)
            if sync_dir:
                fsync_dir(self.directory)
        except OSError as err:
            log.error("spool %s: fdatasync failed: %s", self.directory, err)
            self._dirty = True
        finally:
            for fd in fds:
                os.close(fd)
            self._last_sync = started

    def _sync_locked(self) -> None:
        if self._dirty and self._active is not None and self._active.fd is not None:
            os.fdatasync(self._active.fd)
        for fd in self._sealed_unsynced:
            os.fdatasync(fd)
            os.close(fd)
        self._sealed_unsynced = []
        if self._dir_dirty:
            fsync_dir(self.directory)
            self._dir_dirty = False
        self._dirty = False
        self._last_sync = time.monotonic()

    # -- reading --------------------------------------------------------------------------------
    def _segment_of(self, rid: int) -> int:
        """Index of the segment holding ``rid`` or the first one after it (len() when none)."""
        i = bisect.bisect_right(self._firsts, rid) - 1
        if i >= 0 and rid < self._segments[i].end_rid:
            return i
        return i + 1

    def _fd(self, seg: Segment) -> int:
        if seg.fd is None:
            seg.fd = os.open(seg.path, os.O_RDWR | os.O_APPEND)
        return seg.fd

    def read(self, from_rid: int, max_records: int = 512, max_bytes: int = 4 * 1024**2) -> list[SpoolRecord]:
        """Unacknowledged records with rid >= ``from_rid``, in rid order (at least one when any)."""
        out: list[SpoolRecord] = []
        total = 0
        with self._lock:
            self._check_open()
            index = self._segment_of(from_rid)
            while index < len(self._segments) and len(out) < max_records and total < max_bytes:
                seg = self._segments[index]
                i = max(0, from_rid - seg.first_rid)
                j = i
                while j < seg.count and len(out) + (j - i) < max_records:
                    end = seg.offsets[j + 1] if j + 1 < seg.count else seg.size
                    if j > i and total + end - seg.offsets[i] > max_bytes:
                        break
                    j += 1
                span = (seg.offsets[j] if j < seg.count else seg.size) - seg.offsets[i] if j > i else 0
                if j > i:
                    blob = os.pread(self._fd(seg), span, seg.offsets[i])
                    base = seg.offsets[i]
                    for k in range(i, j):
                        if seg.acked[k]:
                            continue
                        at = seg.offsets[k] - base
                        length, crc = FRAME.unpack_from(blob, at)
                        payload = blob[at + FRAME.size : at + FRAME.size + length]
                        decoded = decode_payload(payload) if zlib.crc32(payload) == crc else None
                        if decoded is None:
                            raise SpoolError(f"spool {seg.path}: record {seg.first_rid + k} changed on disk")
                        key, seq, value = decoded
                        out.append(SpoolRecord(seg.first_rid + k, key, seq, value, seg.tickets[k]))
                    total += span
                if j < seg.count:
                    break
                index += 1
        return out

    # -- acknowledging --------------------------------------------------------------------------
    def ack(self, rid: int) -> None:
        """Mark ``rid`` acknowledged; idempotent. Fully acknowledged sealed segments are deleted by
        :meth:`reclaim`."""
        with self._lock:
            self._ack_locked(rid)

    def ack_many(self, rids: Iterable[int]) -> None:
        with self._lock:
            for rid in rids:
                self._ack_locked(rid)

    def _ack_locked(self, rid: int) -> None:
        index = self._segment_of(rid)
        if index >= len(self._segments):
            return
        seg = self._segments[index]
        k = rid - seg.first_rid
        if k < 0 or seg.acked[k]:
            return
        seg.acked[k] = 1
        seg.acked_count += 1
        self._unacked -= 1
        while seg.low < seg.count and seg.acked[seg.low]:
            seg.low += 1

    def reject(self, rid: int) -> None:
        """Copy the record to ``rejected.log`` (it will never be re-sent) and acknowledge it."""
        with self._lock:
            index = self._segment_of(rid)
            if index < len(self._segments):
                seg = self._segments[index]
                k = rid - seg.first_rid
                if 0 <= k < seg.count and not seg.acked[k]:
                    end = seg.offsets[k + 1] if k + 1 < seg.count else seg.size
                    frame = os.pread(self._fd(seg), end - seg.offsets[k], seg.offsets[k])
                    with open(self.directory / _REJECTED_NAME, "ab") as out:
                        out.write(frame)
                        out.flush()
                        if self.fsync != "never":
                            os.fsync(out.fileno())
            self._ack_locked(rid)

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
                rejected = self.directory / _REJECTED_NAME
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
