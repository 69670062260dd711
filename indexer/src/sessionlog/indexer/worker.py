"""The indexer worker: a Kafka consumer-group member projecting the session log into OpenSearch.

Offsets travel with the records and are committed only after every record of the batch is either
in the index or parked in the dead-letter topic (a batch is processed whole, so the committed
offset is always contiguous). When OpenSearch is unavailable the batch is rewound, the partitions
are paused (polling goes on, so the group keeps the worker) and resumed once OpenSearch answers.
After batches become searchable (refresh) the worker publishes a per-partition watermark.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.consumer.subscription_state import ConsumerRebalanceListener
from kafka.errors import AuthorizationError, KafkaError
from kafka.structs import OffsetAndMetadata

from sessionlog.indexer.batch import BatchProcessor
from sessionlog.indexer.deadletter import DeadLetter, encode_envelope
from sessionlog.indexer.errors import SourceUnavailable, ViewUnavailable
from sessionlog.indexer.kafka_access import source_error
from sessionlog.indexer.metrics import IndexerMetrics, MetricsServer
from sessionlog.indexer.opensearch_view import OpenSearchView
from sessionlog.indexer.settings import IndexerSettings, OpenSearchSettings
from sessionlog.indexer.watermark import WatermarkPublisher
from sessionlog.ingest.settings import KafkaSettings
from sessionlog.ingest.topics import dlq_topic, ensure_topics
from sessionlog.ingest.wire import MAX_RECORD_BYTES

__all__ = ["IndexerWorker", "WorkerStats"]

log = logging.getLogger("sessionlog.indexer")


@dataclass
class WorkerStats:
    """Counters of one worker run."""

    consumed: int = 0
    indexed: int = 0
    replays: int = 0
    conflicts: int = 0
    dead_lettered: int = 0
    batches: int = 0
    view_outages: int = 0
    reasons: dict[str, int] = field(default_factory=lambda: defaultdict(int))


class _Rebalance(ConsumerRebalanceListener):  # type: ignore[misc]
    """Offsets are committed synchronously after every batch, so a revoke has nothing pending;
    the cached session states are dropped because another worker may now advance them."""

    def __init__(self, worker: IndexerWorker) -> None:
        self.worker = worker

    def on_partitions_revoked(self, revoked: Any) -> None:
        self.worker.batch.forget_states()
        for tp in revoked:
            with contextlib.suppress(KeyError):
                self.worker.metrics.lag.remove(str(tp.partition))

    def on_partitions_assigned(self, assigned: Any) -> None:
        self.worker.batch.forget_states()


class IndexerWorker:
    """Consumes ``topic`` in group ``group_id`` and keeps the OpenSearch projection current."""

    def __init__(
        self,
        kafka: KafkaSettings | None = None,
        opensearch: OpenSearchSettings | None = None,
        settings: IndexerSettings | None = None,
        *,
        view: OpenSearchView | None = None,
        sleep: Callable[[float], None] = time.sleep,
        watermark_interval_s: float = 1.0,
    ) -> None:
        self.kafka = kafka or KafkaSettings()
        self.settings = settings or IndexerSettings()
        self.view = view or OpenSearchView(
            opensearch or OpenSearchSettings(), retry_budget=self.settings.retry_budget
        )
        self.metrics = IndexerMetrics()
        self.batch = BatchProcessor(self.view, self.metrics)
        self.stats = WorkerStats()
        self._sleep = sleep
        self._watermark_interval_s = watermark_interval_s
        self._publisher: WatermarkPublisher | None = None
        self._last_lag = 0.0
        self._consumer: KafkaConsumer | None = None
        self._dlq: KafkaProducer | None = None
        self._server: MetricsServer | None = None
        self._closed = False

    # -- setup ----------------------------------------------------------------------------------
    def _open(self) -> KafkaConsumer:
        if self._consumer is not None:
            return self._consumer
        ensure_topics(self.kafka)
        self.view.ensure_schema()
        self._publisher = WatermarkPublisher(
            self.view, self.kafka.topic, self.metrics, self._watermark_interval_s
        )
        if self.settings.metrics_port is not None and self._server is None:
            self._server = MetricsServer(
                self.metrics, self.settings.metrics_port, host=self.settings.metrics_host
            )
        try:
            config = self.kafka.client_config()
            # JoinGroup blocks for up to the rebalance timeout; the short client request timeout
            # is for producers and admin calls only.
            config.pop("request_timeout_ms", None)
            consumer = KafkaConsumer(
                **config,
                group_id=self.settings.group_id,
                session_timeout_ms=int(self.settings.session_timeout_s * 1000),
                heartbeat_interval_ms=max(1000, int(self.settings.session_timeout_s * 1000 / 3)),
                enable_auto_commit=False,
                auto_offset_reset="earliest",
                max_poll_records=self.settings.batch_max,
                max_partition_fetch_bytes=MAX_RECORD_BYTES + 1024 * 1024,
            )
            consumer.subscribe([self.kafka.topic], listener=_Rebalance(self))
            self._dlq = KafkaProducer(
                **self.kafka.client_config(),
                acks="all",
                enable_idempotence=True,
                max_request_size=2 * MAX_RECORD_BYTES + 1024 * 1024,
            )
        except KafkaError as err:
            raise source_error(self.kafka, err, "start the indexer's consumer and producer") from None
        self._consumer = consumer
        return consumer

    @property
    def metrics_port(self) -> int | None:
        return self._server.port if self._server else None

    # -- the loop -------------------------------------------------------------------------------
    def run(
        self,
        *,
        until_idle: bool = False,
        stop: threading.Event | None = None,
        assignment_timeout_s: float = 60.0,
        on_batch: Callable[[WorkerStats], None] | None = None,
    ) -> WorkerStats:
        """Poll, project and commit until ``stop`` is set (or, with ``until_idle``, until caught up).

        A stop request lets the batch in hand finish and commit before returning."""
        consumer = self._open()
        stop = stop or threading.Event()
        started = time.monotonic()
        while not stop.is_set():
            self.metrics.beat()
            try:
                polled = consumer.poll(
                    timeout_ms=self.settings.poll_timeout_ms, max_records=self.settings.batch_max
                )
            except AuthorizationError as err:
                raise source_error(self.kafka, err, f"consume {self.kafka.topic} in its group") from None
            records = [r for batch in polled.values() for r in batch]
            if records:
                if not self._handle(consumer, records, stop):
                    break  # stopped while OpenSearch was down: the batch was abandoned, not committed
                self._maybe_lag(consumer)
                if on_batch:
                    on_batch(self.stats)
                continue
            self._maybe_lag(consumer)
            if until_idle:
                assigned = consumer.assignment()
                if assigned and self._caught_up(consumer, assigned):
                    self._publish_now()
                    self.view.refresh()
                    break
                if not assigned and time.monotonic() - started > assignment_timeout_s:
                    raise SourceUnavailable("no partitions were assigned to this worker in time")
        self._publish_now()
        return self.stats

    def _publish_now(self) -> None:
        if self._publisher is not None:
            self._publisher.publish_now()

    def _caught_up(self, consumer: KafkaConsumer, assigned: set[TopicPartition]) -> bool:
        ends = consumer.end_offsets(list(assigned))
        return all(consumer.position(tp) >= ends[tp] for tp in assigned)

    def _maybe_lag(self, consumer: KafkaConsumer) -> None:
        now = time.monotonic()
        if now - self._last_lag < 5.0:
            return
        self._last_lag = now
        assigned = list(consumer.assignment())
        self.metrics.ready = bool(assigned)
        if not assigned:
            return
        try:
            ends = consumer.end_offsets(assigned)
            for tp in assigned:
                self.metrics.lag.labels(partition=str(tp.partition)).set(
                    max(0, ends[tp] - consumer.position(tp))
                )
        except KafkaError as err:
            log.warning("cannot read end offsets for lag: %s", err)

    def _handle(self, consumer: KafkaConsumer, records: list[Any], stop: threading.Event) -> bool:
        """Process and commit one batch; False when a stop request abandoned it (it is re-consumed
        by whoever owns the partitions next, idempotently)."""
        started = time.monotonic()
        first_offsets: dict[TopicPartition, int] = {}
        for msg in records:
            first_offsets.setdefault(TopicPartition(msg.topic, msg.partition), msg.offset)
        attempts_before, retries_before = self.view.attempts, self.view.item_retries
        while True:
            try:
                result = self.batch.process(records)
                break
            except ViewUnavailable as err:
                self.stats.view_outages += 1
                self.metrics.errors.labels(error_class="view_unavailable").inc()
                log.warning("OpenSearch unavailable, pausing partitions: %s", err)
                if not self._wait_for_view(consumer, stop):
                    return False
        if self.view.attempts - attempts_before == 1:
            self.metrics.first_attempt.inc()
        self.metrics.retries.inc(self.view.item_retries - retries_before)
        self._dead_letter(result.letters)
        commits: dict[TopicPartition, OffsetAndMetadata] = {}
        for msg in records:
            tp = TopicPartition(msg.topic, msg.partition)
            commits[tp] = OffsetAndMetadata(
                max(msg.offset + 1, commits[tp].offset if tp in commits else 0), "", -1
            )
        consumer.commit(commits)
        if self._publisher is not None:
            for msg in records:
                self._publisher.offer(msg.partition, msg.offset, msg.timestamp)
        n = len(records)
        self.stats.consumed += n
        self.stats.batches += 1
        self.stats.indexed += result.indexed
        self.stats.replays += result.replays
        self.stats.conflicts += result.conflicts
        self.metrics.consumed.inc(n)
        self.metrics.indexed.inc(result.indexed)
        self.metrics.replays.inc(result.replays)
        self.metrics.conflicts.inc(result.conflicts)
        self.metrics.batch_seconds.observe(time.monotonic() - started)
        return True

    def _wait_for_view(self, consumer: KafkaConsumer, stop: threading.Event) -> bool:
        """Pause the partitions until OpenSearch answers (True) or a stop is requested (False)."""
        self.batch.forget_states()
        assigned = list(consumer.assignment())
        consumer.pause(*assigned)
        self.metrics.paused.set(1)
        try:
            while not stop.is_set():
                consumer.poll(timeout_ms=500)  # keeps the group membership alive
                self.metrics.beat()
                try:
                    if self.view.client.ping():
                        return True
                except Exception:
                    pass
                self._sleep(1.0)
            return False
        finally:
            self.metrics.paused.set(0)
            consumer.resume(*[tp for tp in assigned if tp in consumer.assignment()])

    # -- dead letters ---------------------------------------------------------------------------
    def _dead_letter(self, letters: list[DeadLetter]) -> None:
        if not letters:
            return
        assert self._dlq is not None
        topic = dlq_topic(self.kafka.topic)
        futures = [self._dlq.send(topic, key=letter.key, value=encode_envelope(letter)) for letter in letters]
        self._dlq.flush(timeout=60)
        try:
            for future in futures:
                future.get(timeout=60)  # raises if a dead letter was not acknowledged: nothing is lost
        except AuthorizationError as err:
            raise source_error(self.kafka, err, f"produce to {topic}") from None
        for letter in letters:
            self.stats.dead_lettered += 1
            self.stats.reasons[letter.error_class] += 1
            self.metrics.dead_lettered.labels(reason=letter.error_class).inc()
            log.warning(
                "dead-lettered %s[%d]@%d: %s", letter.topic, letter.partition, letter.offset, letter.reason
            )

    def close(self) -> None:
        """Close the consumer (leaving the group), the dead-letter producer and the metrics server.
        Idempotent."""
        if self._closed:
            return
        self._closed = True
        if self._consumer is not None:
            self._consumer.close(autocommit=False)
        if self._dlq is not None:
            self._dlq.close(timeout=10)
        if self._server is not None:
            self._server.close()
        if self._publisher is not None:
            self._publisher.close()
        self.view.close()

    def __enter__(self) -> IndexerWorker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
