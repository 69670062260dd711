"""Publishes the searchability watermark from a thread of its own.

A refresh makes everything written before it searchable but takes a few hundred milliseconds on a
busy node; done inline it would stall indexing after every batch. The worker hands over the offsets
it has written; this thread refreshes, then publishes them, at most once per interval.
"""

from __future__ import annotations

import logging
import threading
import time

from sessionlog.indexer.errors import IndexerError
from sessionlog.indexer.metrics import IndexerMetrics
from sessionlog.indexer.ports import SessionView

__all__ = ["WatermarkPublisher"]

log = logging.getLogger("sessionlog.indexer")


class WatermarkPublisher:
    """Background refresh + watermark publication; ``offer`` never blocks on OpenSearch."""

    def __init__(self, view: SessionView, topic: str, metrics: IndexerMetrics, interval_s: float) -> None:
        self.view = view
        self.topic = topic
        self.metrics = metrics
        self.interval_s = interval_s
        self._lock = threading.Condition()
        self._publishing = threading.Lock()
        self._offsets: dict[int, tuple[int, int]] = {}
        self._times: list[float] = []
        self._stop = False
        self._thread = threading.Thread(target=self._run, name="sessionlog-watermark", daemon=True)
        self._thread.start()

    def offer(self, partition: int, offset: int, record_ms: int) -> None:
        with self._lock:
            self._offsets[partition] = (offset, record_ms)
            self._times.append(record_ms / 1000.0)
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

    def _run(self) -> None:
        last = 0.0
        while True:
            with self._lock:
                while not self._offsets and not self._stop:
                    self._lock.wait()
                if self._stop:
                    return
            wait = self.interval_s - (time.monotonic() - last)
            if wait > 0:
                time.sleep(wait)
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
