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
import logging
import os
import threading
import time
import weakref
from collections.abc import Callable, Iterable, Mapping, Sequence
from types import TracebackType
from typing import Any, Self

from kafka import KafkaProducer

from backscroll.ingest.bulk import BatchAck, EncodedRecord
from backscroll.ingest.errors import IngestError, LogUnavailable, RecordRejected
from backscroll.ingest.kafka.intake import Intake
from backscroll.ingest.kafka.producer import AppenderStats, OutgoingEntry, producer_config
from backscroll.ingest.live import LiveTail
from backscroll.ingest.records import AppendHandle, Position
from backscroll.ingest.session import LastSeqLookup, SessionWriter, resume_seq
from backscroll.ingest.settings import AppenderSettings, KafkaSettings
from backscroll.ingest.wire import (
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

log = logging.getLogger("backscroll.ingest.kafka.appender")

_LAST_SEQS_MAX = 100_000


def _default_producer(config: dict[str, Any]) -> Any:
    return KafkaProducer(**config)


class Appender(LiveTail, Intake):
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
        """Validate and encode every record first (one bad record: nothing is queued), then queue
        them in order; in durable mode with one spool write for the batch. Each is acknowledged
        on its own; a session's records keep their order."""
        items = [self._prepare(self._coerce(r), writer=None) for r in records]
        for item in items:
            self._admit(item)
        try:
            self._enqueue_many(items)
        finally:
            for item in items:
                if item.ticket < 0 and item.seq is not None:
                    self.live.discard(item.session_id, item.seq)  # never written nor queued
        for item in items:
            self._note_seq(item)
        return [item.handle for item in items if isinstance(item.handle, AppendHandle)]

    def append_encoded(self, records: Sequence[EncodedRecord]) -> BatchAck:
        """Bulk load: queue records already validated and encoded
        (:func:`~backscroll.ingest.bulk.prepare_lines`), in order, with one spool write in durable
        mode. While the broker keeps up, this waits for room in the queue (up to
        ``enqueue_timeout_s``) rather than spilling to the spool. The returned :class:`BatchAck`
        settles when every record is acknowledged or failed for good (after :meth:`flush`).
        The records do not enter the live view (a loader's own searches never read them).

        Raises :class:`SessionBusy`, :class:`SpoolFull`, :class:`AppenderClosed`, like ``append``."""
        ack = BatchAck(len(records))
        self._writer_registry.refuse_owned((r[0] for r in records), self._generation, "appender")
        items = [OutgoingEntry(-1, key, value, seq, ack, session_id=sid) for sid, key, value, seq in records]
        self._enqueue_many(items, wait_for_room=True)
        last = self._last_seqs
        for sid, _, _, seq in records:
            if seq is not None and seq > last.get(sid, -1):
                last[sid] = seq
        while len(last) > _LAST_SEQS_MAX:
            last.pop(next(iter(last)), None)
        return ack

    def _submit(self, record: HeaderRecord | EventRecord, *, writer: SessionWriter | None) -> AppendHandle:
        item = self._prepare(record, writer=writer)
        self._admit(item)
        try:
            self._enqueue(item)
        except BaseException:
            if item.seq is not None:
                self.live.discard(item.session_id, item.seq)
            raise
        self._note_seq(item)
        assert isinstance(item.handle, AppendHandle)
        return item.handle

    def _prepare(self, record: HeaderRecord | EventRecord, *, writer: SessionWriter | None) -> OutgoingEntry:
        """Encode ``record`` and check what can be checked before anything is written."""
        value = encode_record(record)
        if len(value) > MAX_RECORD_BYTES:
            raise RecordRejected("record", f"encoded record is {len(value)} bytes, cap is {MAX_RECORD_BYTES}")
        session_id = record.session_id
        if writer is None:
            self._writer_registry.refuse_owned((session_id,), self._generation, "appender")
        seq = record.seq if isinstance(record, EventRecord) else None
        return OutgoingEntry(-1, encode_key(record), value, seq, AppendHandle(record), session_id=session_id)

    def _admit(self, item: OutgoingEntry) -> None:
        """Into the live view before the broker can acknowledge it (headers: the header map)."""
        assert isinstance(item.handle, AppendHandle)
        record = item.handle.record
        if isinstance(record, EventRecord):
            self.live.add(record, item.value)
        else:
            self._remember_header(record)

    def _note_seq(self, item: OutgoingEntry) -> None:
        seq, session_id = item.seq, item.session_id
        if seq is not None and item.ticket >= 0 and seq > self._last_seqs.get(session_id, -1):
            self._last_seqs[session_id] = seq
            if len(self._last_seqs) > _LAST_SEQS_MAX:
                self._last_seqs.pop(next(iter(self._last_seqs)), None)

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
        with self._lock:
            self._open_spool_locked()
            spool = self._spool
        spooled = spool.last_seq(session_id) if spool is not None else None
        return resume_seq([self._last_seqs.get(session_id), spooled], self._lookup, workspace_id, session_id)

    def _release_writer(self, writer: SessionWriter) -> None:
        self._writer_registry.release(writer)

    # -- flushing and closing -------------------------------------------------------------------
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
        """Flush, stop the sender thread and the producer, and release the spool, all within
        ``timeout`` s (default ``close_timeout_s``) in all. Entries still unacknowledged stay in
        the spool for the next appender on it (memory-mode entries too, when there is a spool);
        their handles fail with :class:`LogUnavailable`. A sender thread still blocked in the Kafka
        client at the deadline is left to finish on its own (a daemon; it sends nothing more).
        Idempotent."""
        budget = self.options.close_timeout_s if timeout is None else timeout
        deadline = time.monotonic() + budget
        with self._lock:
            if self._closing or self._closed:
                return
            self._closing = True
            self._close_deadline = deadline
            thread = self._thread
            self._room.notify_all()
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
                thread.join(max(0.0, deadline - time.monotonic()))
                if thread.is_alive():
                    log.warning(
                        "close: the appender's sender thread did not stop within %.1fs (blocked in the "
                        "Kafka client?); it sends nothing more and stops on its own (a daemon thread)",
                        budget,
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
