"""The appender agents embed: validated, sequenced, spooled, asynchronously acknowledged appends.

``append()`` validates on the caller's thread, writes the entry to the local spool (durable mode)
and hands it to a bounded in-memory queue; one background sender thread per appender owns the
KafkaProducer, drains the queue, re-reads the spool after an outage and resolves each entry's
:class:`AppendHandle` with the broker's acknowledgement. See docs/ingest.md for the exact
guarantees; the invariants the code below keeps are:

* every entry gets a *ticket* (process-local order of acceptance) under ``_lock``;
* an entry that is only in memory (no spool record id, ``rid``) is always newer than every
  record in the spool, so the spool followed by memory is the acceptance order;
* the sender reads the spool only when the queue is empty (``_spilling``) and leaves that mode
  under ``_lock`` when it has read everything, so nothing overtakes anything of its session.
"""

from __future__ import annotations

import atexit
import contextlib
import heapq
import logging
import os
import threading
import time
import weakref
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from types import TracebackType
from typing import Any, Self

from kafka import KafkaProducer

from sessionlog.ingest.errors import (
    AppenderClosed,
    BufferFull,
    IngestError,
    LogUnavailable,
    RecordRejected,
    SessionBusy,
    SpoolFull,
)
from sessionlog.ingest.live import LiveEntry, LiveLog
from sessionlog.ingest.producer import (
    AppenderStats,
    OutgoingEntry,
    Throttle,
    producer_config,
)
from sessionlog.ingest.records import AppendHandle, Position
from sessionlog.ingest.sender import SenderThread
from sessionlog.ingest.session import LastSeqLookup, SessionWriter, WriterRegistry
from sessionlog.ingest.settings import AppenderSettings, KafkaSettings
from sessionlog.ingest.spool import Spool, encode_frame, open_slot
from sessionlog.ingest.wire import (
    MAX_RECORD_BYTES,
    EventRecord,
    HeaderRecord,
    decode_record,
    encode_key,
    encode_record,
    parse_record,
)

__all__ = [
    "AppendHandle",
    "Appender",
    "AppenderStats",
    "Position",
    "get_appender",
    "producer_config",
]

log = logging.getLogger("sessionlog.ingest.appender")

_LAST_SEQS_MAX = 100_000


def _default_producer(config: dict[str, Any]) -> Any:
    return KafkaProducer(**config)


class Appender(SenderThread):
    """Thread-safe appender of session headers and events to the Kafka topic.

    ``append`` validates on the caller's thread (a :class:`RecordRejected` names the field) and
    returns a handle without any network round trip; the broker is contacted lazily by the
    sender thread. ``options`` (:class:`AppenderSettings`) choose durable or memory mode, the
    spool, the queue bounds and the timeouts; ``last_seq_lookup`` lets :meth:`session` resume a
    session's seqs from the projection (the query side provides it; ingest never imports it).
    """

    def __init__(
        self,
        settings: KafkaSettings | None = None,
        options: AppenderSettings | None = None,
        *,
        last_seq_lookup: LastSeqLookup | None = None,
        producer_factory: Callable[[dict[str, Any]], Any] | None = None,
    ) -> None:
        self.settings = settings or KafkaSettings()
        self.options = options or AppenderSettings()
        self._lookup = last_seq_lookup
        self._producer_factory = producer_factory or _default_producer
        self._generation = 0
        self._closed = False
        self._init_runtime()
        _LIVE.add(self)
        try:
            with self._lock:
                self._open_spool_locked()
                if self._spool is not None and self._spool.unacked:
                    self._start_sender_locked()
        except BaseException:
            _LIVE.discard(self)
            self._closed = True
            raise

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
        self._spilled_handles: weakref.WeakValueDictionary[int, AppendHandle] = weakref.WeakValueDictionary()
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
        self._counts = dict.fromkeys(
            ("appended", "acknowledged", "spooled", "replayed", "resent", "rejected"), 0
        )
        self.live = LiveLog(self.options.live_max_per_session, self.options.live_max_total)

    # -- state ----------------------------------------------------------------------------------
    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def topic(self) -> str:
        """The Kafka topic this appender writes to."""
        return self.settings.topic

    @property
    def spool_dir(self) -> str | None:
        """The spool slot this appender owns (None without a spool)."""
        spool = self._spool
        return str(spool.directory) if spool is not None else None

    def stats(self) -> AppenderStats:
        with self._lock:
            spool = self._spool
            return AppenderStats(
                **self._counts,
                queued=len(self._queue) + len(self._redo),
                inflight=len(self._inflight),
                spool_unacked=spool.unacked if spool is not None else 0,
                spilling=self._spilling,
                spool_dir=str(spool.directory) if spool is not None else None,
            )

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
                target=self._run, name=f"sessionlog-appender[{self.settings.topic}]", daemon=True
            )
            self._thread.start()

    # -- appending ------------------------------------------------------------------------------
    @staticmethod
    def _coerce(record: HeaderRecord | EventRecord | Mapping[str, Any] | bytes) -> HeaderRecord | EventRecord:
        if isinstance(record, HeaderRecord | EventRecord):
            return record
        if isinstance(record, bytes | bytearray | memoryview):
            return decode_record(bytes(record))
        if isinstance(record, Mapping):
            return parse_record(dict(record))
        raise RecordRejected(
            "record", f"expected a mapping, JSON bytes or a wire record, got {type(record).__name__}"
        )

    def append(self, record: HeaderRecord | EventRecord | Mapping[str, Any] | bytes) -> AppendHandle:
        """Validate and queue one record (event or header); returns a handle without waiting for
        the broker. In durable mode the record is in the spool when this returns.

        Raises :class:`RecordRejected` (naming the field), :class:`SessionBusy` when a
        :class:`SessionWriter` of this process owns the session, :class:`SpoolFull`,
        :class:`BufferFull` (memory mode without spool) or :class:`AppenderClosed`.
        """
        return self._submit(self._coerce(record), writer=None)

    def append_header(self, header: HeaderRecord | Mapping[str, Any]) -> AppendHandle:
        """:meth:`append` for a session header (an event is refused)."""
        parsed = self._coerce(header)
        if not isinstance(parsed, HeaderRecord):
            raise RecordRejected("kind", "append_header needs a header record")
        return self.append(parsed)

    def append_many(
        self, records: Iterable[HeaderRecord | EventRecord | Mapping[str, Any] | bytes]
    ) -> list[AppendHandle]:
        """Validate every record first (one bad record: nothing is queued), then queue them in
        order. Each is acknowledged on its own; a session's records keep their order."""
        parsed = [self._coerce(r) for r in records]
        for record in parsed:
            value = encode_record(record)
            if len(value) > MAX_RECORD_BYTES:
                raise RecordRejected(
                    "record", f"encoded record is {len(value)} bytes, cap is {MAX_RECORD_BYTES}"
                )
        return [self._submit(record, writer=None) for record in parsed]

    def _submit(self, record: HeaderRecord | EventRecord, *, writer: SessionWriter | None) -> AppendHandle:
        value = encode_record(record)
        if len(value) > MAX_RECORD_BYTES:
            raise RecordRejected("record", f"encoded record is {len(value)} bytes, cap is {MAX_RECORD_BYTES}")
        if writer is None and self._writer_registry.owner(record.session_id, self._generation) is not None:
            raise SessionBusy(
                f"session {record.session_id} is owned by a SessionWriter in this process; "
                "append through it (appender.session(...)) or close it first"
            )
        seq = record.seq if isinstance(record, EventRecord) else None
        handle = AppendHandle(record)
        item = OutgoingEntry(-1, encode_key(record), value, seq, handle)
        if isinstance(record, EventRecord):
            self.live.add(record)  # before the broker can acknowledge it
        else:
            self._live_headers[record.session_id] = record
            if len(self._live_headers) > _LAST_SEQS_MAX:
                self._live_headers.pop(next(iter(self._live_headers)), None)
        try:
            self._enqueue(item)
        except BaseException:
            if seq is not None:
                self.live.discard(record.session_id, seq)
            raise
        if seq is not None and seq > self._last_seqs.get(record.session_id, -1):
            self._last_seqs[record.session_id] = seq
            if len(self._last_seqs) > _LAST_SEQS_MAX:
                self._last_seqs.pop(next(iter(self._last_seqs)), None)
        return handle

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
                                "(SESSIONLOG_APPENDER_SPOOL=true) to keep appending through outages"
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
            self._work.notify()

    def _push_locked(self, item: OutgoingEntry) -> None:
        self._queue.append(item)
        self._queue_bytes += item.size

    def _spill_one_locked(self, item: OutgoingEntry) -> None:
        """``item`` is in the spool only; the sender reads it back after the queue."""
        assert item.rid is not None
        if not self._spilling:
            self._spilling = True
            self._throttle.warn("spill", "appender queue is full: entries go to the spool %s", self.spool_dir)
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

    # -- sessions -------------------------------------------------------------------------------
    def session(self, workspace_id: str, session_id: str, *, next_seq: int | None = None) -> SessionWriter:
        """The writer of ``session_id`` for this process; it assigns contiguous seqs.

        The first seq is ``next_seq`` when given, else one past the highest seq known from this
        process, the spool, and ``last_seq_lookup`` (0 when none knows the session). Raises
        :class:`SessionBusy` when the session already has an open writer in this process.
        """
        with self._lock:
            self._check_usable_locked()
        return self._writer_registry.open(self, workspace_id, session_id, next_seq, self._resume_seq)

    def _resume_seq(self, workspace_id: str, session_id: str) -> int:
        known: list[int] = []
        mine = self._last_seqs.get(session_id)
        if mine is not None:
            known.append(mine)
        with self._lock:
            self._open_spool_locked()
            spool = self._spool
        if spool is not None:
            spooled = spool.last_seq(session_id)
            if spooled is not None:
                known.append(spooled)
        if self._lookup is not None:
            try:
                looked_up = self._lookup(workspace_id, session_id)
            except Exception as err:
                raise LogUnavailable(
                    f"last_seq_lookup failed for session {session_id}: {err} "
                    "(pass next_seq= to resume by hand)"
                ) from err
            if looked_up is not None:
                known.append(int(looked_up))
        return max(known) + 1 if known else 0

    def _release_writer(self, writer: SessionWriter) -> None:
        self._writer_registry.release(writer)

    # -- live view ------------------------------------------------------------------------------
    def live_sessions(self) -> list[str]:
        """Sessions with entries this process appended that a watermark has not released yet."""
        return self.live.live_sessions()

    def live_headers(self) -> list[HeaderRecord]:
        """Headers this appender wrote for sessions that still have live (unindexed) events."""
        live = set(self.live.live_sessions())
        return [h for sid, h in list(self._live_headers.items()) if sid in live]

    def live_events(self, session_id: str) -> list[EventRecord]:
        """Those entries of ``session_id`` in seq order (see :class:`LiveLog`)."""
        return self.live.live_events(session_id)

    def live_entries(self, session_id: str) -> list[LiveEntry]:
        """Like :meth:`live_events`, each with its position once the broker acknowledged it."""
        return self.live.live_entries(session_id)

    def release_through(self, partition: int, offset: int) -> int:
        """The searchability watermark of ``partition`` reached ``offset``: drop what it covers."""
        return self.live.release_through(partition, offset)

    def release_session_through(self, session_id: str, seq: int) -> int:
        """The index shows ``session_id`` up to ``seq``: drop those live entries."""
        return self.live.release_session_through(session_id, seq)

    # -- flushing and closing -------------------------------------------------------------------
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
        with self._lock:
            target = self._ticket - 1
            while True:
                low = self._min_unresolved_locked()
                if low is None or low > target:
                    return True
                if self._crashed is not None or self._abort:
                    return False
                if self._thread is None:
                    self._start_sender_locked()
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    return False
                self._idle.wait(0.5 if remaining is None else min(remaining, 0.5))

    def flush(self, timeout: float | None = None) -> None:
        """Wait until every entry appended before the call (and any left in the spool by an earlier
        process) is acknowledged or failed for good. Raises :class:`LogUnavailable` on timeout;
        nothing is dropped then."""
        deadline = None if timeout is None else time.monotonic() + timeout
        if not self._wait_idle(deadline):
            with self._lock:
                pending = self._pending_locked()
                crashed = self._crashed
            if isinstance(crashed, IngestError):
                raise crashed
            if crashed is not None:
                raise LogUnavailable(f"the appender's sender thread failed: {crashed!r}")
            raise LogUnavailable(
                f"flush: {pending} entries not acknowledged within {timeout}s (Kafka at "
                f"{self.settings.bootstrap_servers} unreachable?); they stay queued/spooled"
            )

    def close(self, timeout: float | None = None) -> None:
        """Flush for up to ``timeout`` s (default ``close_timeout_s``), stop the sender thread and
        the producer, and release the spool. Entries still unacknowledged stay in the spool for
        the next appender on it (memory-mode entries too, when there is a spool); their handles
        fail with :class:`LogUnavailable`. Idempotent."""
        budget = self.options.close_timeout_s if timeout is None else timeout
        with self._lock:
            if self._closing or self._closed:
                return
            self._closing = True
            thread = self._thread
            self._room.notify_all()
        deadline = time.monotonic() + budget
        try:
            if thread is not None:
                if not self._wait_idle(deadline):
                    with self._lock:
                        pending = self._pending_locked()
                    log.warning("close: %d entries still unacknowledged after %.1fs", pending, budget)
                with self._lock:
                    self._abort = True
                    self._work.notify_all()
                    self._idle.notify_all()
                self._abort_event.set()
                thread.join(max(0.0, deadline - time.monotonic()) + self.options.connect_timeout_s + 5)
                if thread.is_alive():
                    log.error(
                        "the appender's sender thread did not stop; it is a daemon and dies with the process"
                    )
            self._settle()
        finally:
            with self._lock:
                spool, self._spool = self._spool, None
                self._closed = True
                self._idle.notify_all()
            if spool is not None:
                spool.close()
                with contextlib.suppress(OSError):
                    spool.directory.parent.rmdir()  # the topic's directory, when no slot is left
            _LIVE.discard(self)

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
            failed: list[tuple[AppendHandle, IngestError]] = []
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

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    # -- fork -----------------------------------------------------------------------------------
    def _reset_after_fork(self) -> None:
        """In a forked child: forget the parent's thread, producer, spool, queue and writers (they
        stay the parent's), and start afresh on first use with a new producer and spool slot."""
        spool, producer = self._spool, self._producer
        if spool is not None:
            spool.abandon()
        if producer is not None:
            producer._closed = True  # its I/O thread does not exist here; never flush or close it
            _ABANDONED.append(producer)
        self._init_runtime()

    def __repr__(self) -> str:
        topic, durable = self.settings.topic, self.options.durable
        return f"Appender(topic={topic!r}, durable={durable}, spool={self.spool_dir!r})"


# -- per-process singleton, fork and exit hooks -------------------------------------------------
_LIVE: weakref.WeakSet[Appender] = weakref.WeakSet()
_ABANDONED: list[Any] = []
_singleton: Appender | None = None
_singleton_lock = threading.Lock()


def get_appender(
    settings: KafkaSettings | None = None,
    options: AppenderSettings | None = None,
    *,
    last_seq_lookup: LastSeqLookup | None = None,
) -> Appender:
    """This process's shared appender, created on first use (the arguments count only then).

    A forked child gets a fresh one (new producer, new spool slot); it is flushed and closed at
    exit (``close_timeout_s``)."""
    global _singleton
    with _singleton_lock:
        if _singleton is None or _singleton.closed or _singleton._pid != os.getpid():
            _singleton = Appender(settings, options, last_seq_lookup=last_seq_lookup)
        return _singleton


def _after_fork_in_child() -> None:
    global _singleton, _singleton_lock
    _singleton_lock = threading.Lock()
    _singleton = None
    for appender in list(_LIVE):
        appender._reset_after_fork()


def _close_all_at_exit() -> None:
    pid = os.getpid()
    for appender in list(_LIVE):
        if appender._pid == pid and not appender.closed:
            try:
                appender.close()
            except Exception:
                log.exception("closing %r at exit failed", appender)


os.register_at_fork(after_in_child=_after_fork_in_child)
atexit.register(_close_all_at_exit)
