"""Publishes the searchability watermark from a thread of its own.

A refresh makes everything written before it searchable but takes a few hundred milliseconds on a
busy node; done inline it would stall indexing after every batch. The worker hands over the offsets
it has written; this thread refreshes, then publishes them, at most once per interval.

While the worker is behind (its batches come back full), publications are spaced further apart:
what a search sees then trails the log by the whole backlog anyway, and every refresh writes a
segment that merging must undo, on the node the catch-up is waiting for.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterable

from backscroll.indexer.errors import IndexerError
from backscroll.indexer.metrics import IndexerMetrics
from backscroll.indexer.ports import SessionView

__all__ = ["WatermarkPublisher"]

log = logging.getLogger("backscroll.indexer")


class WatermarkPublisher:
    """Background refresh + watermark publication; ``offer_many`` never blocks on OpenSearch.

    ``interval_s`` spaces publications while the worker keeps up, ``behind_interval_s`` (never
    shorter) while :meth:`pace` says it is behind."""

    def __init__(
        self,
        view: SessionView,
        topic: str,
        metrics: IndexerMetrics,
        interval_s: float,
        behind_interval_s: float = 0.0,
    ) -> None:
        self.view = view
        self.topic = topic
        self.metrics = metrics
        self.interval_s = interval_s
        self.behind_interval_s = max(interval_s, behind_interval_s)
        self._lock = threading.Condition()
        self._publishing = threading.Lock()
        self._offsets: dict[int, tuple[int, int]] = {}
        self._times: list[float] = []
        self._behind = False
        self._stop = False
        self._thread = threading.Thread(target=self._run, name="backscroll-watermark", daemon=True)
        self._thread.start()

    def offer_many(self, positions: Iterable[tuple[int, int, int]]) -> None:
        """Hand over written records' ``(partition, offset, record_ms)``, in log order (the
        timestamps feed the freshness metric)."""
        with self._lock:
            idle = not self._offsets
            offsets, times = self._offsets, self._times
            for partition, offset, record_ms in positions:
                offsets[partition] = (offset, record_ms)
                times.append(record_ms / 1000.0)
            if idle and offsets:  # the thread waits for the first offer only, not for each
                self._lock.notify()

    def pace(self, behind: bool) -> None:
        """Say whether the worker is behind the log (it has just polled a full batch)."""
        with self._lock:
            if behind != self._behind:
                self._behind = behind
                self._lock.notify()

    def publish_now(self) -> None:
        """Refresh and publish whatever is pending, on the caller's thread, after any publication
        the thread has in flight (so everything offered before this call is published on return)."""
        with self._publishing:
            with self._lock:
                offsets, times = self._offsets, self._times
                self._offsets, self._times = {}, []
            self._publish(offsets, times)

    def _publish(self, offsets: dict[int, tuple[int, int]], times: list[float]) -> None:
        if not offsets:
            return
        try:
            self.view.refresh()
            self.view.publish_watermarks(self.topic, offsets)
        except IndexerError as err:  # retried with the next publication, whatever the cause
            log.warning("watermark not published: %s", err)
            with self._lock:  # keep them; a later publication covers them
                for partition, value in offsets.items():
                    self._offsets.setdefault(partition, value)
                self._times.extend(times)
            return
        now = time.time()
        for ts in times:
            self.metrics.freshness.observe(max(0.0, now - ts))

    def _due(self, last: float) -> bool:
        """Wait (holding the condition) until something is pending and its interval has passed
        since ``last``; False when the publisher is stopping."""
        while not self._stop:
            if not self._offsets:
                self._lock.wait()
                continue
            interval = self.behind_interval_s if self._behind else self.interval_s
            wait = interval - (time.monotonic() - last)
            if wait <= 0:
                return True
            self._lock.wait(wait)  # woken early by stop, or by pace() shortening the interval
        return False

    def _run(self) -> None:
        last = 0.0
        while True:
            with self._lock:
                if not self._due(last):
                    return
            last = time.monotonic()
            with self._publishing:
                with self._lock:
                    offsets, times = self._offsets, self._times
                    self._offsets, self._times = {}, []
                self._publish(offsets, times)

    def close(self) -> None:
        """Stop the thread and publish what is left. Idempotent."""
        with self._lock:
            self._stop = True
            self._lock.notify()
        self._thread.join(timeout=30)
        self.publish_now()
