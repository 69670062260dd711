"""The caller-side half of the appender: per-process state, the bounded queue, spilling to the
spool, and waiting for acknowledgements.

:class:`Intake` sits between :class:`~backscroll.ingest.kafka.appender.Appender` (the public API,
validation, sessions) and :class:`~backscroll.ingest.kafka.sender.SenderThread` (the background half).
The invariants all three keep are in ``appender.py``'s docstring.
"""

from __future__ import annotations

import heapq
import logging
import os
import threading
import time
import weakref
from collections import deque
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from backscroll.ingest.errors import AppenderClosed, BufferFull, IngestError, LogUnavailable, SpoolFull
from backscroll.ingest.kafka.producer import OutgoingEntry, Throttle
from backscroll.ingest.kafka.sender import SenderThread
from backscroll.ingest.kafka.spool.store import Spool, encode_frame, open_slot
from backscroll.ingest.live import LiveLog
from backscroll.ingest.session import LastSeqLookup, WriterRegistry
from backscroll.ingest.settings import AppenderSettings, KafkaSettings
from backscroll.ingest.wire import HeaderRecord

if TYPE_CHECKING:
    from backscroll.ingest.kafka.producer import Handle

__all__ = ["Intake"]

log = logging.getLogger("backscroll.ingest.kafka.appender")


class Intake(SenderThread):
    """Queueing, spilling, flushing and settling of the appender (a base class; never used alone)."""

    settings: KafkaSettings
    options: AppenderSettings
    _lookup: LastSeqLookup | None
    _producer_factory: Callable[[dict[str, Any]], Any]
    _generation: int
    _closed: bool

    def _init_runtime(self) -> None:
        """(Re)create everything that belongs to one process: locks, queue, thread, producer, spool."""
        self._pid = os.getpid()
        self._generation += 1
        self._lock = threading.Lock()
        self._work = threading.Condition(self._lock)  # the sender waits here
        self._room = threading.Condition(self._lock)  # appenders wait here for queue space
        self._idle = threading.Condition(self._lock)  # flush() waits here
        self._abort_event = threading.Event()
        self._queue: deque[OutgoingEntry] = deque()
        self._queue_bytes = 0
        self._redo: list[OutgoingEntry] = []
        self._orphans: list[OutgoingEntry] = []
        self._inflight: dict[int, OutgoingEntry] = {}
        self._inflight_bytes = 0
        self._mem_heap: list[int] = []
        self._mem_done: set[int] = set()
        self._spilling = False
        self._cursor = 0
        self._spool: Spool | None = None
        self._spilled_handles: weakref.WeakValueDictionary[int, Handle] = weakref.WeakValueDictionary()
        self._ticket = 0
        self._thread: threading.Thread | None = None
        self._producer: Any = None
        self._crashed: BaseException | None = None
        self._closing = self._closed
        self._abort = False
        self._writer_registry = WriterRegistry()
        self._last_seqs: dict[str, int] = {}
        self._live_headers: dict[str, HeaderRecord] = {}
        self._throttle = Throttle(log)
        self._next_housekeeping = 0.0
        self._acks = deque()
        self._groups = deque()
        self._ack_signal = False
        self._resolving: set[int] = set()
        self._rounds = 0
        self._close_deadline: float | None = None
        self._sender_waiting = False
        self._partition_list = None
        self._partition_cache = {}
        self._counts = dict.fromkeys(
            ("appended", "acknowledged", "spooled", "replayed", "resent", "rejected"), 0
        )
        self.live = LiveLog(self.options.live_max_per_session, self.options.live_max_total)

    def _check_usable_locked(self) -> None:
        if self._closing or self._closed:
            raise AppenderClosed("append after close()")
        if isinstance(self._crashed, IngestError):
            raise self._crashed
        if self._crashed is not None:
            raise LogUnavailable(f"the appender's sender thread failed: {self._crashed!r}")

    def _open_spool_locked(self) -> None:
        if self._spool is not None or not self.options.spool:
            return
        opts = self.options
        spool = open_slot(
            opts.spool_dir / self.settings.topic,
            slots=opts.spool_slots,
            fsync=opts.fsync,
            fsync_interval_s=opts.fsync_interval_s,
            max_bytes=opts.spool_max_bytes,
            segment_bytes=opts.segment_bytes,
        )
        self._spool = spool
        if spool.unacked:
            # Left by a crashed (or broker-less) predecessor: send it all before anything new.
            self._spilling = True
            self._cursor = spool.first_rid
            log.warning(
                "spool %s holds %d unacknowledged records from an earlier process; re-sending them first",
                spool.directory,
                spool.unacked,
            )

    def _start_sender_locked(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._run, name=f"backscroll-appender[{self.settings.topic}]", daemon=True
            )
            self._thread.start()

    def _has_room(self, size: int) -> bool:
        if not self._queue:
            return True
        return (
            len(self._queue) < self.options.queue_max_records
            and self._queue_bytes + size <= self.options.queue_max_bytes
        )

    def _enqueue(self, item: OutgoingEntry) -> None:
        durable = self.options.durable
        with self._lock:
            self._check_usable_locked()
            self._open_spool_locked()
            self._start_sender_locked()
            item.ticket = self._ticket
            self._ticket += 1
            spool = self._spool
            if durable:
                assert spool is not None
                item.rid = spool.append(item.key, item.seq, item.value, item.ticket)
                if not self._spilling and self._has_room(item.size):
                    self._push_locked(item)
                else:
                    self._spill_one_locked(item)
            else:
                deadline: float | None = None
                while not self._spilling and not self._has_room(item.size):
                    now = time.monotonic()
                    if deadline is None:
                        deadline = now + self.options.enqueue_timeout_s
                    if now >= deadline:
                        if spool is None:
                            raise BufferFull(
                                f"{len(self._queue)} entries ({self._queue_bytes} bytes) wait for the "
                                "broker and no room freed up within "
                                f"{self.options.enqueue_timeout_s}s; enable the spool "
                                "(BACKSCROLL_APPENDER_SPOOL=true) to keep appending through outages"
                            )
                        self._begin_spill_locked(item.size)
                        break
                    self._room.wait(deadline - now)
                    self._check_usable_locked()
                if self._spilling:
                    assert spool is not None
                    item.rid = spool.append(item.key, item.seq, item.value, item.ticket)
                    self._spill_one_locked(item)
                else:
                    self._push_locked(item)
                    heapq.heappush(self._mem_heap, item.ticket)
            self._counts["appended"] += 1
            if self._sender_waiting:
                self._work.notify()

    def _enqueue_many(self, items: Sequence[OutgoingEntry], *, wait_for_room: bool = False) -> None:
        """:meth:`_enqueue` of several entries in order; in durable mode with one spool write
        (per segment) and one lock section for all of them. ``wait_for_room``: a bulk load waits
        (up to ``enqueue_timeout_s``) for the queue to take the batch rather than spilling it to
        the spool, which the sender would then have to read back."""
        if not self.options.durable:
            for item in items:
                self._enqueue(item)
            return
        with self._lock:
            self._check_usable_locked()
            self._open_spool_locked()
            self._start_sender_locked()
            if wait_for_room:
                self._wait_for_room_locked(len(items), sum(item.size for item in items))
            spool = self._spool
            assert spool is not None
            first_ticket = self._ticket
            for offset, item in enumerate(items):
                item.ticket = first_ticket + offset
            first_rid = spool.next_rid
            try:
                spool.append_many([(it.key, it.seq, it.value, it.ticket) for it in items])
            finally:
                written = spool.next_rid - first_rid  # all of them unless the disk failed midway
                self._ticket = first_ticket + written
                for item in items[written:]:
                    item.ticket = -1  # not accepted: no seq taken, not in the live view
                for offset, item in enumerate(items[:written]):
                    item.rid = first_rid + offset
                    if not self._spilling and self._has_room(item.size):
                        self._push_locked(item)
                    else:
                        self._spill_one_locked(item)
                self._counts["appended"] += written
                if written and self._sender_waiting:
                    self._work.notify()

    def _wait_for_room_locked(self, count: int, size: int) -> None:
        """Wait while the queue cannot take ``count`` entries of ``size`` bytes, unless it is
        spilling (the broker is behind or away: waiting would only slow the spool down)."""
        deadline = time.monotonic() + self.options.enqueue_timeout_s
        opts = self.options
        while self._queue and not self._spilling:
            if (
                len(self._queue) + count <= opts.queue_max_records
                and self._queue_bytes + size <= opts.queue_max_bytes
            ):
                return
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return
            if self._sender_waiting:
                self._work.notify()
            self._room.wait(remaining)
            self._check_usable_locked()

    def _push_locked(self, item: OutgoingEntry) -> None:
        self._queue.append(item)
        self._queue_bytes += item.size

    def _spill_one_locked(self, item: OutgoingEntry) -> None:
        """``item`` is in the spool only; the sender reads it back after the queue."""
        assert item.rid is not None
        if not self._spilling:
            self._spilling = True
            directory = self._spool.directory if self._spool is not None else None
            self._throttle.warn("spill", "appender queue is full: entries go to the spool %s", directory)
        if item.handle is not None:
            self._spilled_handles[item.rid] = item.handle
        self._counts["spooled"] += 1

    def _begin_spill_locked(self, extra: int) -> None:
        """Memory mode, queue full past the timeout: move every memory-only entry to the spool, in
        order, so that the spool alone holds the order from here on. Entries already handed to the
        producer stay there (and are acknowledged in the spool when the broker acknowledges them);
        queued ones are re-read from the spool by the sender."""
        spool = self._spool
        assert spool is not None
        shadows = sorted(
            (it for it in (*self._inflight.values(), *self._redo) if it.rid is None), key=lambda it: it.ticket
        )
        moved = list(self._queue)
        need = extra + sum(
            len(encode_frame(it.key, it.seq, b"")) + len(it.value) for it in (*shadows, *moved)
        )
        if not spool.fits(need):
            raise SpoolFull(
                f"spool {spool.directory} cannot take the {len(shadows) + len(moved) + 1} entries waiting in "
                f"memory ({need} bytes) under its cap of {spool.max_bytes} bytes"
            )
        for it in shadows:
            it.rid = spool.append(it.key, it.seq, it.value, it.ticket)
            self._mem_done.add(it.ticket)
        for it in moved:
            it.rid = spool.append(it.key, it.seq, it.value, it.ticket)
            self._mem_done.add(it.ticket)
            if it.handle is not None:
                self._spilled_handles[it.rid] = it.handle
        self._counts["spooled"] += len(moved)
        self._cursor = moved[0].rid if moved and moved[0].rid is not None else spool.next_rid
        self._queue.clear()
        self._queue_bytes = 0
        self._spilling = True
        self._throttle.warn(
            "spill",
            "appender queue full for %.2fs: entries go to the spool %s",
            self.options.enqueue_timeout_s,
            spool.directory,
        )

    def _min_unresolved_locked(self) -> int | None:
        heap, done = self._mem_heap, self._mem_done
        while heap and heap[0] in done:
            done.discard(heapq.heappop(heap))
        low = heap[0] if heap else None
        if self._spool is not None:
            first = self._spool.first_unacked()
            if first is not None:
                low = first[1] if low is None else min(low, first[1])
        return low

    def _pending_locked(self) -> int:
        spool_left = self._spool.unacked if self._spool is not None else 0
        memory = sum(1 for it in (*self._queue, *self._redo, *self._inflight.values()) if it.rid is None)
        return spool_left + memory

    def _wait_idle(self, deadline: float | None) -> bool:
        """Wait until every entry accepted so far is acknowledged or failed for good and its
        handle resolved (False at ``deadline``, or when the sender stopped first)."""
        with self._lock:
            target = self._ticket - 1
            resolving: set[int] | None = None
            while True:
                if resolving is None:
                    low = self._min_unresolved_locked()
                    if low is None or low > target:
                        # Done in the log, but their handles may still be resolving outside the
                        # lock: each in a round begun by now, so only these rounds are awaited.
                        resolving = set(self._resolving)
                if resolving is not None:
                    resolving &= self._resolving
                    if not resolving:
                        return True
                elif self._crashed is not None or self._abort:
                    return False
                if self._thread is None:
                    self._start_sender_locked()
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    return False
                self._idle.wait(0.5 if remaining is None else min(remaining, 0.5))

    def _settle(self) -> None:
        """After the sender stopped: account for every entry that was not acknowledged."""
        with self._lock:
            spool = self._spool
            leftovers = sorted(
                {
                    id(it): it for it in (*self._orphans, *self._redo, *self._inflight.values(), *self._queue)
                }.values(),
                key=lambda it: it.ticket,
            )
            self._orphans, self._redo, self._inflight = [], [], {}
            self._queue.clear()
            failed: list[tuple[Handle, IngestError]] = []
            lost = 0
            where = (
                f"kept in the spool {spool.directory}; the next appender on it re-sends it" if spool else ""
            )
            for it in leftovers:
                if it.rid is None and spool is not None:
                    try:
                        it.rid = spool.append(it.key, it.seq, it.value, it.ticket)
                    except IngestError as err:
                        log.error(
                            "close: could not spool an unacknowledged entry of %s: %s", it.session_id, err
                        )
                if it.rid is None:
                    lost += 1
                    error: IngestError = LogUnavailable(
                        "appender closed before the broker acknowledged this entry of "
                        f"{it.session_id}; it was lost"
                    )
                else:
                    error = LogUnavailable(f"appender closed before the broker acknowledged it; {where}")
                if it.handle is not None:
                    failed.append((it.handle, error))
            for handle in list(self._spilled_handles.values()):
                failed.append(
                    (handle, LogUnavailable(f"appender closed before the broker acknowledged it; {where}"))
                )
            self._spilled_handles = weakref.WeakValueDictionary()
            unsent_spool = spool.unacked if spool is not None else 0
        for handle, error in failed:
            handle._fail(error)
        if lost:
            log.error("close: %d entries were never acknowledged and are lost (no spool)", lost)
        if unsent_spool:
            log.warning(
                "close: %d entries are unacknowledged; they stay in %s for the next appender",
                unsent_spool,
                spool.directory if spool else "?",
            )
