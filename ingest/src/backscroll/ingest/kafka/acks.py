"""The acknowledgement half of the appender's sender: the broker's answers turned into resolved
handles (or one count per bulk batch), spool acknowledgements, live positions, re-sends and
refusals.

:class:`Acknowledgements` is a base class of :class:`~backscroll.ingest.kafka.sender.SenderThread`;
its methods run on the sender thread, except the callbacks (``_on_group_done``, ``_on_ack``,
``_on_error``) which kafka-python calls on its I/O thread and which only note the answer. The
state below is shared with the rest of the appender under ``_lock``.
"""

from __future__ import annotations

import logging
import threading
import weakref
from collections import deque
from typing import TYPE_CHECKING, Any

from backscroll.ingest.bulk import BatchAck
from backscroll.ingest.errors import LogRefused, RecordRejected
from backscroll.ingest.kafka.errors import is_permanent, translate_kafka_error
from backscroll.ingest.kafka.producer import OutgoingEntry, Throttle
from backscroll.ingest.kafka.spool.store import Spool
from backscroll.ingest.live import LiveLog
from backscroll.ingest.records import Position

if TYPE_CHECKING:
    from backscroll.ingest.kafka.producer import Handle
    from backscroll.ingest.records import AppendHandle

__all__ = ["Acknowledgements"]

log = logging.getLogger("backscroll.ingest.kafka.appender")


class Acknowledgements:
    """The acknowledgement methods of the appender's sender (a base class; never used alone)."""

    live: LiveLog
    _lock: threading.Lock
    _work: threading.Condition
    _idle: threading.Condition
    _abort: bool
    _redo: list[OutgoingEntry]
    _orphans: list[OutgoingEntry]
    _inflight: dict[int, OutgoingEntry]
    _inflight_bytes: int
    _mem_done: set[int]
    _spool: Spool | None
    _spilled_handles: weakref.WeakValueDictionary[int, Handle]
    _counts: dict[str, int]
    _throttle: Throttle
    _acks: deque[tuple[OutgoingEntry, Any]]
    _groups: deque[list[tuple[OutgoingEntry, Any]]]
    _ack_signal: bool
    _resolving: set[int]
    _rounds: int

    def _begin_resolving_locked(self) -> int:
        """A token for handles marked done under ``_lock`` but resolved after it is released:
        ``flush`` waits until every token taken before it returns is finished
        (:meth:`_end_resolving`)."""
        self._rounds += 1
        self._resolving.add(self._rounds)
        return self._rounds

    def _end_resolving(self, token: int) -> None:
        with self._lock:
            self._resolving.discard(token)
            self._idle.notify_all()

    def _on_group_done(self, group: list[tuple[OutgoingEntry, Any]], _result: Any) -> None:
        # The last future of a round's partition is done: its predecessors normally are too (a
        # partition's batches complete in order). Instead of two callbacks per record, the sender
        # thread then reads them all at once (_collect_groups); any not done yet gets its own.
        self._groups.append(group)
        if not self._ack_signal:
            with self._lock:
                self._ack_signal = True
                self._work.notify()

    def _collect_groups(self) -> list[tuple[OutgoingEntry, Any]]:
        """The acknowledged entries of the finished groups; failed ones go to :meth:`_on_error`."""
        acked: list[tuple[OutgoingEntry, Any]] = []
        failed: list[tuple[OutgoingEntry, Any]] = []
        groups = self._groups
        while groups:
            for item, future in groups.popleft():
                if not future.is_done:
                    future.add_callback(self._on_ack, item)
                    future.add_errback(self._on_error, item)
                elif future.exception is None:
                    acked.append((item, future.value))
                else:
                    failed.append((item, future.exception))
        for item, err in failed:
            self._on_error(item, err)
        return acked

    def _on_ack(self, item: OutgoingEntry, metadata: Any) -> None:
        # On kafka-python's I/O thread, once per record: only note it. The sender thread applies
        # the acknowledgements of a whole response at once (one lock, one spool update, one wakeup).
        self._acks.append((item, metadata))
        if not self._ack_signal:
            with self._lock:
                self._ack_signal = True
                self._work.notify()

    def _apply_acks(self) -> None:
        acks = self._acks
        batch = self._collect_groups() if self._groups else []
        if not acks and not batch:
            return
        pop = acks.popleft
        while acks:
            batch.append(pop())
        resolved: list[tuple[AppendHandle, Any]] = []
        bulk: dict[BatchAck, int] = {}
        live: list[tuple[str, int, int, int]] = []
        keep_live = self.live.max_per_session > 0 and self.live.max_total > 0
        rids: list[int] = []
        with self._lock:
            inflight, mem_done = self._inflight, self._mem_done
            spilled = self._spilled_handles
            freed = 0
            for item, metadata in batch:
                if inflight.pop(id(item), None) is not None:
                    freed += item.size
                handle = item.handle
                rid = item.rid
                if rid is not None:
                    rids.append(rid)
                    if handle is None:
                        handle = spilled.pop(rid, None)
                else:
                    mem_done.add(item.ticket)
                if handle is not None:
                    # A bulk load's entries share one BatchAck: counted, no Position built.
                    if isinstance(handle, BatchAck):
                        bulk[handle] = bulk.get(handle, 0) + 1
                    else:
                        resolved.append((handle, metadata))
                if keep_live and item.seq is not None:
                    live.append((item.session_id, item.seq, metadata.partition, metadata.offset))
            self._inflight_bytes -= freed
            if self._orphans:  # acknowledged after all while the producer was being stopped
                done = {id(item) for item, _ in batch}
                self._orphans = [it for it in self._orphans if id(it) not in done]
            if rids and self._spool is not None:
                self._spool.ack_many(rids)
            self._counts["acknowledged"] += len(batch)
            token = self._begin_resolving_locked()
            self._idle.notify_all()
        # Outside the lock (a response may hold thousands of handles; appends must not wait).
        try:
            for handle, metadata in resolved:
                handle._resolve(Position(metadata.partition, metadata.offset))
            for ack, count in bulk.items():
                ack._resolve_many(count)
            if live:
                self.live.acknowledged_many(live)
        finally:
            self._end_resolving(token)

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
            token = self._begin_resolving_locked()
            self._idle.notify_all()
        try:
            log.error("%s (kept in the spool's rejected.log when spooled)", error)
            if handle is not None:
                handle._fail(error)
            if item.seq is not None:
                self.live.discard(item.session_id, item.seq)
        finally:
            self._end_resolving(token)
