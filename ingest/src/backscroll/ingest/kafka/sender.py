"""The appender's sender thread: drains the queue and the spool into the KafkaProducer; the
broker's answers become resolved handles, spool acknowledgements and live positions in its base
class (``acks.py``).

:class:`SenderThread` is the half of :class:`~backscroll.ingest.kafka.appender.Appender` that runs on
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
from typing import TYPE_CHECKING, Any

from kafka.errors import KafkaError, KafkaTimeoutError
from kafka.partitioner.default import murmur2

from backscroll.ingest.errors import IngestError
from backscroll.ingest.kafka.acks import Acknowledgements
from backscroll.ingest.kafka.errors import is_permanent, translate_kafka_error
from backscroll.ingest.kafka.producer import (
    BATCH_BYTES,
    BATCH_RECORDS,
    OutgoingEntry,
    Throttle,
    producer_config,
)
from backscroll.ingest.kafka.spool.store import Spool
from backscroll.ingest.live import LiveLog
from backscroll.ingest.settings import AppenderSettings, KafkaSettings

if TYPE_CHECKING:
    from backscroll.ingest.kafka.producer import Handle

__all__ = ["SenderThread"]

#: What :meth:`SenderThread._take_work` returns besides a batch: acknowledgements to apply, or
#: the housekeeping tick (spool sync and reclaim). Both are empty, so ``if batch:`` skips them.
_ACKS: list[OutgoingEntry] = []
_TICK: list[OutgoingEntry] = []
_PARTITION_CACHE_MAX = 100_000

log = logging.getLogger("backscroll.ingest.kafka.appender")


class SenderThread(Acknowledgements):
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
    _spilled_handles: weakref.WeakValueDictionary[int, Handle]
    _producer: Any
    _producer_factory: Callable[[dict[str, Any]], Any]
    _crashed: BaseException | None
    _counts: dict[str, int]
    _throttle: Throttle
    _next_housekeeping: float
    _acks: deque[tuple[OutgoingEntry, Any]]
    _groups: deque[list[tuple[OutgoingEntry, Any]]]
    _ack_signal: bool
    _sender_waiting: bool
    _partition_list: list[int] | None
    _partition_cache: dict[bytes, int]
    _close_deadline: float | None
    _closed: bool

    def _run(self) -> None:
        # After a small batch the sender rests for up to linger_ms (the producer lingers that long
        # anyway): the caller's appends then pile up without waking this thread once per record,
        # and the next round takes them all under one lock. Under one GIL, every wakeup is a
        # thread switch the caller pays for.
        rest = min(self.options.linger_ms, 5) / 1000
        try:
            while True:
                batch = self._take_work()
                if batch is None:
                    break
                if self._acks or self._groups:
                    self._apply_acks()
                if batch:
                    self._send(batch)
                    if rest and len(batch) < BATCH_RECORDS // 2:
                        self._pause(rest)
                elif batch is _TICK:
                    self._housekeeping()
        except BaseException as err:  # a refusal or a bug: make it visible instead of hanging appenders
            if self._abort and self._closed:
                # close() stopped waiting for this thread and released the spool under it.
                log.debug("the appender's sender thread stopped after close: %r", err)
            elif isinstance(err, IngestError):
                log.error("the appender stopped sending: %s", err)
            else:
                log.exception("the appender's sender thread failed")
            with self._lock:
                self._crashed = err
                self._idle.notify_all()
                self._room.notify_all()
        finally:
            self._stop_producer()
            self._apply_acks()  # what the producer acknowledged while closing

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
                if self._ack_signal:
                    self._ack_signal = False
                    return _ACKS
                now = time.monotonic()
                if now >= self._next_housekeeping:
                    self._next_housekeeping = now + tick
                    return _TICK
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
                self._sender_waiting = True
                self._work.wait(tick)
                self._sender_waiting = False
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
                if self._abort:
                    return None  # closed meanwhile: no retry, nothing to report
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
            if self._abort:
                # close() gave up waiting while the producer connected: nothing to send with it.
                self._producer = producer
                self._stop_producer()
                return None
            self._producer = producer
        return self._producer

    def _send(self, items: list[OutgoingEntry]) -> None:
        producer = self._producer
        if producer is None:
            # Connect with nothing in hand: creating a producer can block for the whole connect
            # timeout, and close() may stop waiting for this thread meanwhile; the entries then
            # are where close() settles them.
            with self._lock:
                self._redo = sorted([*items, *self._redo], key=lambda it: it.ticket)
            self._ensure_producer()
            return
        topic = self.settings.topic
        inflight = self._inflight
        with self._lock:
            for item in items:
                inflight[id(item)] = item
            self._inflight_bytes += sum(item.size for item in items)
        try:
            partition_of = self._partitioner(producer, topic)
        except (KafkaError, OSError) as err:
            if not is_permanent(err):
                self._retry_later(items, err)
                return
            partition_of = None  # send() raises it again for each entry, which then fails for good
        send = producer.send
        # The round's futures by partition; one callback on the last of each (_on_group_done).
        groups: dict[int, list[tuple[OutgoingEntry, Any]]] = {}
        try:
            for index, item in enumerate(items):
                try:
                    if partition_of is None:
                        partition = -1
                        future = send(topic, key=item.key, value=item.value)
                    else:
                        partition = partition_of(item.key)
                        future = send(topic, key=item.key, value=item.value, partition=partition)
                except Exception as err:
                    if is_permanent(err) or not isinstance(err, KafkaError | OSError):
                        self._forget_inflight(items[index : index + 1])
                        self._fail_item(item, err)
                        continue
                    self._retry_later(items[index:], err)
                    return
                group = groups.get(partition)
                if group is None:
                    group = groups[partition] = []
                group.append((item, future))
        finally:
            for group in groups.values():
                group[-1][1].add_both(self._on_group_done, group)

    def _retry_later(self, rest: list[OutgoingEntry], err: BaseException) -> None:
        self._forget_inflight(rest)
        with self._lock:
            self._redo = sorted([*rest, *self._redo], key=lambda it: it.ticket)
        self._throttle.warn(
            "send",
            "Kafka at %s not ready (%s); entries are queued/spooled, retrying",
            self.settings.bootstrap_servers,
            err,
        )
        self._pause(0.5)

    def _partitioner(self, producer: Any, topic: str) -> Callable[[bytes], int] | None:
        """The partition of a key exactly as kafka-python's default partitioner picks it (murmur2
        of the key over the sorted partitions), computed once per session instead of once per
        record: the pure-Python hash was a fifth of ``send()``. None when the producer cannot
        tell its partitions (then ``send()`` picks, as before)."""
        lookup = getattr(producer, "partitions_for", None)
        if lookup is None:
            return None
        known = lookup(topic)
        if not known:
            return None
        partitions = sorted(known)
        if partitions != self._partition_list or len(self._partition_cache) > _PARTITION_CACHE_MAX:
            self._partition_list, self._partition_cache = partitions, {}
        cache, count = self._partition_cache, len(partitions)

        def partition_of(key: bytes) -> int:
            partition = cache.get(key)
            if partition is None:
                partition = cache[key] = partitions[(murmur2(key) & 0x7FFFFFFF) % count]
            return partition

        return partition_of

    def _forget_inflight(self, items: list[OutgoingEntry]) -> None:
        with self._lock:
            for item in items:
                if self._inflight.pop(id(item), None) is not None:
                    self._inflight_bytes -= item.size

    def _stop_budget(self) -> float:
        """Seconds left for stopping the producer: what remains of close()'s deadline, else (the
        sender stopped on its own) one connect timeout."""
        deadline = self._close_deadline
        if deadline is None:
            return self.options.connect_timeout_s
        return max(0.0, deadline - time.monotonic())

    def _stop_producer(self) -> None:
        self._apply_acks()
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
                    io_thread.join(self._stop_budget())
            producer.close(timeout=self._stop_budget())
        except KafkaTimeoutError:
            # Out of time to wait for it: its I/O thread, told to stop, fails what it holds and
            # closes its connections on its own.
            log.debug("the Kafka producer did not close within close()'s timeout")
        except Exception:
            log.exception("closing the Kafka producer failed")
