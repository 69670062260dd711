"""The appender's sender thread: drains the queue and the spool into the KafkaProducer and turns
the broker's answers into resolved handles, spool acknowledgements and live positions.

:class:`SenderThread` is the half of :class:`~sessionlog.ingest.appender.Appender` that runs on
its one background thread; the caller-side half (validation, queue, spool, flush, close) is in
``appender.py``. Both share the state below under ``_lock``. kafka-python errors stop here: a
permanent refusal fails the entry (``RecordRejected``) or stops the sender (``LogRefused``);
anything else is retried (``kafka_errors``).
"""

from __future__ import annotations

import logging
import threading
import time
import weakref
from collections import deque
from collections.abc import Callable
from typing import Any

from kafka.errors import KafkaError

from sessionlog.ingest.errors import IngestError, LogRefused, RecordRejected
from sessionlog.ingest.kafka_errors import is_permanent, translate_kafka_error
from sessionlog.ingest.live import LiveLog
from sessionlog.ingest.producer import BATCH_BYTES, BATCH_RECORDS, OutgoingEntry, Throttle, producer_config
from sessionlog.ingest.records import AppendHandle, Position
from sessionlog.ingest.settings import AppenderSettings, KafkaSettings
from sessionlog.ingest.spool import Spool

__all__ = ["SenderThread"]

log = logging.getLogger("sessionlog.ingest.appender")


class SenderThread:
    """The sender-thread methods of the appender (a base class; never used alone)."""

    settings: KafkaSettings
    options: AppenderSettings
    live: LiveLog
    _lock: threading.Lock
    _work: threading.Condition
    _room: threading.Condition
    _idle: threading.Condition
    _abort: bool
    _abort_event: threading.Event
    _queue: deque[OutgoingEntry]
    _queue_bytes: int
    _redo: list[OutgoingEntry]
    _orphans: list[OutgoingEntry]
    _inflight: dict[int, OutgoingEntry]
    _inflight_bytes: int
    _mem_done: set[int]
    _spilling: bool
    _cursor: int
    _spool: Spool | None
    _spilled_handles: weakref.WeakValueDictionary[int, AppendHandle]
    _producer: Any
    _producer_factory: Callable[[dict[str, Any]], Any]
    _crashed: BaseException | None
    _counts: dict[str, int]
    _throttle: Throttle
    _next_housekeeping: float

    def _run(self) -> None:
        try:
            while True:
                batch = self._take_work()
                if batch is None:
                    break
                if batch:
                    self._send(batch)
                else:
                    self._housekeeping()
        except BaseException as err:  # a refusal or a bug: make it visible instead of hanging appenders
            if isinstance(err, IngestError):
                log.error("the appender stopped sending: %s", err)
            else:
                log.exception("the appender's sender thread failed")
            with self._lock:
                self._crashed = err
                self._idle.notify_all()
                self._room.notify_all()
        finally:
            self._stop_producer()

    def _housekeeping(self) -> None:
        spool = self._spool
        if spool is not None and not spool.closed:
            spool.sync_if_due()
            spool.reclaim()

    def _take_work(self) -> list[OutgoingEntry] | None:
        tick = min(self.options.fsync_interval_s, 0.5)
        with self._lock:
            while True:
                if self._abort:
                    return None
                now = time.monotonic()
                if now >= self._next_housekeeping:
                    self._next_housekeeping = now + tick
                    return []
                if self._inflight_bytes < self.options.inflight_max_bytes:
                    if self._redo:
                        items, self._redo = self._redo, []
                        return items
                    if self._queue:
                        return self._pop_queue_locked()
                    if self._spilling:
                        spool = self._spool
                        assert spool is not None
                        if self._cursor < spool.next_rid:
                            start, upto = self._cursor, spool.next_rid
                            break
                        self._spilling = False  # caught up: new entries may use the queue again
                        self._room.notify_all()
                        continue
                self._work.wait(tick)
        return self._read_spool(spool, start, upto)

    def _pop_queue_locked(self) -> list[OutgoingEntry]:
        items: list[OutgoingEntry] = []
        size = 0
        queue = self._queue
        while queue and len(items) < BATCH_RECORDS and size < BATCH_BYTES:
            item = queue.popleft()
            items.append(item)
            size += item.size
            if item.rid is not None and item.rid >= self._cursor:
                self._cursor = item.rid + 1
        self._queue_bytes -= size
        self._room.notify_all()
        return items

    def _read_spool(self, spool: Spool, start: int, upto: int) -> list[OutgoingEntry]:
        records = spool.read(start, BATCH_RECORDS, BATCH_BYTES)
        records = [r for r in records if r.rid < upto]
        with self._lock:
            self._cursor = records[-1].rid + 1 if records else max(self._cursor, upto)
            items = [
                OutgoingEntry(
                    r.ticket, r.key, r.value, r.seq, self._spilled_handles.pop(r.rid, None), rid=r.rid
                )
                for r in records
            ]
            self._counts["replayed"] += len(items)
        return items

    def _pause(self, seconds: float) -> None:
        self._abort_event.wait(seconds)

    def _ensure_producer(self) -> Any:
        delay = 0.2
        while self._producer is None:
            if self._abort:
                return None
            try:
                producer = self._producer_factory(producer_config(self.settings, self.options))
            except (KafkaError, OSError) as err:
                if is_permanent(err):
                    # Wrong credentials or settings: appends fail with this error from now on.
                    raise translate_kafka_error(
                        err, f"Kafka at {self.settings.bootstrap_servers} refused the producer"
                    ) from err
                self._throttle.warn(
                    "connect",
                    "Kafka at %s unreachable (%s); entries are queued/spooled, retrying",
                    self.settings.bootstrap_servers,
                    err,
                )
                self._pause(delay)
                delay = min(delay * 2, 5.0)
                continue
            unregister = getattr(producer, "_unregister_cleanup", None)
            if callable(unregister):
                unregister()  # our atexit hook flushes and closes it, in that order
            self._producer = producer
        return self._producer

    def _send(self, items: list[OutgoingEntry]) -> None:
        producer = self._ensure_producer()
        if producer is None:
            with self._lock:
                self._redo = sorted([*items, *self._redo], key=lambda it: it.ticket)
            return
        topic = self.settings.topic
        for index, item in enumerate(items):
            with self._lock:
                self._inflight[id(item)] = item
                self._inflight_bytes += item.size
            try:
                future = producer.send(topic, key=item.key, value=item.value)
            except Exception as err:
                with self._lock:
                    if self._inflight.pop(id(item), None) is not None:
                        self._inflight_bytes -= item.size
                if is_permanent(err) or not isinstance(err, KafkaError | OSError):
                    self._fail_item(item, err)
                    continue
                with self._lock:
                    self._redo = sorted([*items[index:], *self._redo], key=lambda it: it.ticket)
                self._throttle.warn(
                    "send",
                    "Kafka at %s not ready (%s); entries are queued/spooled, retrying",
                    self.settings.bootstrap_servers,
                    err,
                )
                self._pause(0.5)
                return
            future.add_callback(self._on_ack, item)
            future.add_errback(self._on_error, item)

    def _on_ack(self, item: OutgoingEntry, metadata: Any) -> None:
        position = Position(metadata.partition, metadata.offset)
        with self._lock:
            if self._inflight.pop(id(item), None) is not None:
                self._inflight_bytes -= item.size
            handle = item.handle
            if item.rid is not None:
                if self._spool is not None:
                    self._spool.ack(item.rid)
                if handle is None:
                    handle = self._spilled_handles.pop(item.rid, None)
            else:
                self._mem_done.add(item.ticket)
            self._counts["acknowledged"] += 1
            self._idle.notify_all()
            self._work.notify()
        if handle is not None:
            handle._resolve(position)
        if item.seq is not None:
            self.live.acknowledged(item.session_id, item.seq, position.partition, position.offset)

    def _on_error(self, item: OutgoingEntry, err: Exception) -> None:
        with self._lock:
            if self._inflight.pop(id(item), None) is None:
                return
            self._inflight_bytes -= item.size
            if self._abort:
                self._orphans.append(item)
                return
            if not is_permanent(err):
                # The producer gave up on a batch (e.g. its epoch was bumped): send it again.
                self._redo.append(item)
                self._redo.sort(key=lambda it: it.ticket)
                self._counts["resent"] += 1
                self._work.notify()
        if not is_permanent(err):
            self._throttle.warn(
                "resend",
                "re-sending entries of %s after a delivery failure (%r); "
                "their partition may see them after later entries",
                item.session_id,
                err,
            )
            return
        self._fail_item(item, err)

    def _fail_item(self, item: OutgoingEntry, err: BaseException) -> None:
        error = translate_kafka_error(err, f"the broker refused this entry of {item.session_id} for good")
        if not isinstance(error, RecordRejected | LogRefused):
            error = RecordRejected("record", f"this entry of {item.session_id} cannot be sent: {err!r}")
        with self._lock:
            handle = item.handle
            if item.rid is not None:
                if self._spool is not None:
                    self._spool.reject(item.rid)
                if handle is None:
                    handle = self._spilled_handles.pop(item.rid, None)
            else:
                self._mem_done.add(item.ticket)
            self._counts["rejected"] += 1
            self._idle.notify_all()
        log.error("%s (kept in the spool's rejected.log when spooled)", error)
        if handle is not None:
            handle._fail(error)
        if item.seq is not None:
            self.live.discard(item.session_id, item.seq)

    def _stop_producer(self) -> None:
        producer, self._producer = self._producer, None
        if producer is None:
            return
        with self._lock:
            if self._inflight:
                # Out of time: fail what the producer still holds; _settle() spools it.
                self._orphans.extend(self._inflight.values())
                self._inflight.clear()
                self._inflight_bytes = 0
                forced = True
            else:
                forced = False
        try:
            if forced:
                io_thread = getattr(producer, "_sender", None)
                if io_thread is not None:
                    io_thread.force_close()
                    io_thread.join(self.options.connect_timeout_s)
            producer.close(timeout=self.options.connect_timeout_s)
        except Exception:
            log.exception("closing the Kafka producer failed")
