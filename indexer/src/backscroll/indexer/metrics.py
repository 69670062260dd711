"""Prometheus metrics of the indexer and the HTTP endpoints that serve them with health checks."""

from __future__ import annotations

import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

__all__ = ["IndexerMetrics", "MetricsServer"]


class IndexerMetrics:
    """All indexer metrics, in a registry of their own (several workers may live in one process)."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.consumed = Counter(
            "backscroll_indexer_records_consumed", "Records polled from Kafka.", registry=r
        )
        self.indexed = Counter("backscroll_indexer_events_indexed", "Event documents created.", registry=r)
        self.first_attempt = Counter(
            "backscroll_indexer_bulk_first_attempt_success",
            "Bulk requests that succeeded at once.",
            registry=r,
        )
        self.retries = Counter("backscroll_indexer_bulk_item_retries", "Bulk items re-sent.", registry=r)
        self.errors = Counter("backscroll_indexer_errors", "Errors by class.", ["error_class"], registry=r)
        self.dead_lettered = Counter(
            "backscroll_indexer_dead_lettered", "Records parked in the DLQ.", ["reason"], registry=r
        )
        self.conflicts = Counter(
            "backscroll_indexer_conflicts", "Same (session, seq), other content.", registry=r
        )
        self.replays = Counter("backscroll_indexer_replays", "Identical re-deliveries (no-ops).", registry=r)
        self.seq_gaps = Counter(
            "backscroll_indexer_seq_gaps", "Missing seqs detected per session.", registry=r
        )
        self.batch_seconds = Histogram(
            "backscroll_indexer_batch_seconds", "Time to project and write one batch.", registry=r
        )
        self.bulk_bytes = Counter(
            "backscroll_indexer_bulk_bytes", "Bytes of record values indexed.", registry=r
        )
        self.lag = Gauge("backscroll_indexer_lag", "Records behind the log end.", ["partition"], registry=r)
        self.freshness = Histogram(
            "backscroll_indexer_freshness_seconds",
            "Record timestamp to searchable (watermark published).",
            buckets=(0.1, 0.25, 0.5, 1, 1.5, 2, 3, 5, 10, 30, 60, 300),
            registry=r,
        )
        self.paused = Gauge("backscroll_indexer_paused", "1 while waiting for OpenSearch.", registry=r)
        self.heartbeat = time.monotonic()
        self.ready = False

    def beat(self) -> None:
        self.heartbeat = time.monotonic()

    def render(self) -> bytes:
        return bytes(generate_latest(self.registry))


class MetricsServer:
    """``/metrics`` (Prometheus text), ``/healthz`` (loop alive) and ``/readyz`` (assigned, writing)."""

    def __init__(self, metrics: IndexerMetrics, port: int, host: str = "127.0.0.1", stale_s: float = 120.0):
        self.metrics = metrics
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                if self.path.startswith("/metrics"):
                    self._send(200, owner.metrics.render(), CONTENT_TYPE_LATEST)
                elif self.path.startswith("/healthz"):
                    alive = time.monotonic() - owner.metrics.heartbeat < stale_s
                    self._send(200 if alive else 503, b"ok\n" if alive else b"stalled\n")
                elif self.path.startswith("/readyz"):
                    ready = owner.metrics.ready
                    self._send(200 if ready else 503, b"ready\n" if ready else b"not ready\n")
                else:
                    self._send(404, b"not found\n")

            def _send(self, status: int, body: bytes, ctype: str = "text/plain; charset=utf-8") -> None:
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer((host, port), Handler)
        self.port = self.server.server_address[1]
        self._thread = threading.Thread(
            target=self.server.serve_forever, name="backscroll-metrics", daemon=True
        )
        self._thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self._thread.join(timeout=5)
