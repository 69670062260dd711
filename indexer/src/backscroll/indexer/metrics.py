"""Prometheus metrics of the indexer and the HTTP endpoints that serve them with health checks.

prometheus-client comes with the ``metrics`` extra (``pip install 'backscroll-indexer[metrics]'``;
the ``backscroll`` distribution installs it). Without it the instruments count nothing, so an
embedded search that catches the projection up never loads it, and ``/metrics`` answers 501 with
the extra to install; ``/healthz`` and ``/readyz`` work either way.
"""

from __future__ import annotations

import importlib.util
import logging
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Final, Protocol, Self

__all__ = [
    "PROMETHEUS_INSTALLED",
    "Counting",
    "Gauging",
    "IndexerMetrics",
    "MetricsServer",
    "Observing",
    "Samples",
]

log = logging.getLogger("backscroll.indexer")

#: Whether prometheus-client (the ``metrics`` extra) can be imported.
PROMETHEUS_INSTALLED: Final = importlib.util.find_spec("prometheus_client") is not None
_MISSING_EXTRA: Final = (
    b"prometheus-client is not installed, so this indexer keeps no metrics: "
    b"pip install 'backscroll-indexer[metrics]' (the backscroll distribution includes it)\n"
)


class Counting(Protocol):
    """A counter (prometheus-client's, or an idle one)."""

    def labels(self, *values: Any, **labels: Any) -> Self: ...
    def inc(self, amount: float = 1) -> None: ...


class Gauging(Protocol):
    """A gauge (prometheus-client's, or an idle one)."""

    def labels(self, *values: Any, **labels: Any) -> Self: ...
    def set(self, value: float) -> None: ...
    def clear(self) -> None: ...


class Observing(Protocol):
    """A histogram (prometheus-client's, or an idle one)."""

    def observe(self, amount: float) -> None: ...


class Samples(Protocol):
    """Reads one sample's current value (``CollectorRegistry.get_sample_value``)."""

    def get_sample_value(self, name: str, labels: dict[str, str] | None = None) -> float | None: ...


class _Idle:
    """An instrument and registry that record nothing (prometheus-client is not installed)."""

    def labels(self, *values: Any, **labels: Any) -> Self:
        return self

    def inc(self, amount: float = 1) -> None:
        pass

    def set(self, value: float) -> None:
        pass

    def observe(self, amount: float) -> None:
        pass

    def clear(self) -> None:
        pass

    def get_sample_value(self, name: str, labels: dict[str, str] | None = None) -> float | None:
        return None


class _Kinds:
    """Makes the instruments: prometheus-client's in one registry, or idle ones."""

    def __init__(self, prometheus: bool) -> None:
        self.registry: Any = None
        if prometheus:
            from prometheus_client import CollectorRegistry

            self.registry = CollectorRegistry()

    def counter(self, name: str, doc: str, labels: tuple[str, ...] = ()) -> Counting:
        if self.registry is None:
            return _Idle()
        from prometheus_client import Counter

        made: Counting = Counter(name, doc, labels, registry=self.registry)
        return made

    def gauge(self, name: str, doc: str, labels: tuple[str, ...] = ()) -> Gauging:
        if self.registry is None:
            return _Idle()
        from prometheus_client import Gauge

        made: Gauging = Gauge(name, doc, labels, registry=self.registry)
        return made

    def histogram(self, name: str, doc: str, buckets: tuple[float, ...] | None = None) -> Observing:
        if self.registry is None:
            return _Idle()
        from prometheus_client import Histogram

        if buckets is None:
            made: Observing = Histogram(name, doc, registry=self.registry)
        else:
            made = Histogram(name, doc, buckets=buckets, registry=self.registry)
        return made


class IndexerMetrics:
    """All indexer metrics, in a registry of their own (several workers may live in one process).

    ``prometheus`` defaults to whether prometheus-client is installed; with ``False`` (or without
    it) every instrument is idle and :attr:`registry` answers ``None`` for every sample.
    """

    def __init__(self, *, prometheus: bool = PROMETHEUS_INSTALLED) -> None:
        kinds = _Kinds(prometheus)
        self.prometheus = kinds.registry is not None
        self._registry = kinds.registry
        #: the samples (tests and operators read them by name)
        self.registry: Samples = kinds.registry if kinds.registry is not None else _Idle()
        counter, gauge, histogram = kinds.counter, kinds.gauge, kinds.histogram
        self.consumed = counter("backscroll_indexer_records_consumed", "Records polled from Kafka.")
        self.indexed = counter("backscroll_indexer_events_indexed", "Event documents created.")
        self.first_attempt = counter(
            "backscroll_indexer_bulk_first_attempt_success", "Bulk requests that succeeded at once."
        )
        self.retries = counter("backscroll_indexer_bulk_item_retries", "Bulk items re-sent.")
        self.errors = counter("backscroll_indexer_errors", "Errors by class.", ("error_class",))
        self.dead_lettered = counter(
            "backscroll_indexer_dead_lettered", "Records parked in the DLQ.", ("reason",)
        )
        self.conflicts = counter("backscroll_indexer_conflicts", "Same (session, seq), other content.")
        self.replays = counter("backscroll_indexer_replays", "Identical re-deliveries (no-ops).")
        self.seq_gaps = counter("backscroll_indexer_seq_gaps", "Missing seqs detected per session.")
        self.batch_seconds = histogram(
            "backscroll_indexer_batch_seconds", "Time to project and write one batch."
        )
        self.bulk_bytes = counter("backscroll_indexer_bulk_bytes", "Bytes of record values indexed.")
        self.lag = gauge("backscroll_indexer_lag", "Records behind the log end.", ("partition",))
        self.freshness = histogram(
            "backscroll_indexer_freshness_seconds",
            "Record timestamp to searchable (watermark published).",
            (0.1, 0.25, 0.5, 1, 1.5, 2, 3, 5, 10, 30, 60, 300),
        )
        self.paused = gauge("backscroll_indexer_paused", "1 while waiting for OpenSearch.")
        self.heartbeat = time.monotonic()
        self.ready = False

    def beat(self) -> None:
        self.heartbeat = time.monotonic()

    def render(self) -> bytes:
        """The Prometheus text exposition (empty when prometheus-client is not installed)."""
        if self._registry is None:
            return b""
        from prometheus_client import generate_latest

        return bytes(generate_latest(self._registry))


class MetricsServer:
    """``/metrics`` (Prometheus text), ``/healthz`` (loop alive) and ``/readyz`` (assigned, writing)."""

    def __init__(self, metrics: IndexerMetrics, port: int, host: str = "127.0.0.1", stale_s: float = 120.0):
        self.metrics = metrics
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                if self.path.startswith("/metrics") and not owner.metrics.prometheus:
                    self._send(501, _MISSING_EXTRA)
                elif self.path.startswith("/metrics"):
                    from prometheus_client.exposition import CONTENT_TYPE_LATEST

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
        if not metrics.prometheus:
            log.warning("/metrics on port %s: %s", self.port, _MISSING_EXTRA.decode().strip())
        self._thread = threading.Thread(
            target=self.server.serve_forever, name="backscroll-metrics", daemon=True
        )
        self._thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self._thread.join(timeout=5)
