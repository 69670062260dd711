"""Reading and acknowledging the records of a spool's segments (the base of :class:`Spool`)."""

from __future__ import annotations

import bisect
import os
import threading
import zlib
from collections.abc import Iterable
from pathlib import Path
from typing import Final

from backscroll.ingest.errors import SpoolError
from backscroll.ingest.kafka.spool.disk import Segment
from backscroll.ingest.kafka.spool.frames import FRAME, SpoolRecord, decode_payload
from backscroll.ingest.settings import FsyncPolicy

__all__ = ["REJECTED_NAME", "SegmentReader"]

REJECTED_NAME: Final = "rejected.log"


class SegmentReader:
    """Record lookup, reads, acknowledgements and rejections over the segments (never used alone)."""

    directory: Path
    fsync: FsyncPolicy
    _lock: threading.Lock
    _segments: list[Segment]
    _firsts: list[int]
    _unacked: int
    _closed: bool

    def first_unacked(self) -> tuple[int, int] | None:
        """(rid, ticket) of the oldest unacknowledged record, or None."""
        with self._lock:
            for seg in self._segments:
                if seg.low < seg.count:
                    return seg.first_rid + seg.low, seg.tickets[seg.low]
            return None

    def _check_open(self) -> None:
        if self._closed:
            raise SpoolError(f"spool {self.directory} is closed")

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
                    with open(self.directory / REJECTED_NAME, "ab") as out:
                        out.write(frame)
                        out.flush()
                        if self.fsync != "never":
                            os.fsync(out.fileno())
            self._ack_locked(rid)
