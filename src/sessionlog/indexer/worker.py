"""The indexer worker: a Kafka consumer-group member projecting the session log into OpenSearch.

Offsets travel with the records and are committed only after every record of the batch is either
in the index or parked in the dead-letter topic. When OpenSearch is unavailable the batch is
rewound, the partitions are paused (polling continues, so the group keeps the worker) and resumed
once OpenSearch answers again.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.consumer.subscription_state import ConsumerRebalanceListener
from kafka.errors import KafkaError
from kafka.structs import OffsetAndMetadata

from sessionlog.indexer.deadletter import DeadLetter, encode_envelope
from sessionlog.indexer.errors import SourceUnavailable, ViewUnavailable
from sessionlog.indexer.opensearch_view import OpenSearchView
from sessionlog.indexer.projector import Action, SessionProjection
from sessionlog.indexer.settings import IndexerSettings, OpenSearchSettings
from sessionlog.ingest.errors import RecordRejected
from sessionlog.ingest.settings import KafkaSettings
from sessionlog.ingest.topics import dlq_topic, ensure_topics
from sessionlog.ingest.wire import MAX_RECORD_BYTES, HeaderRecord, decode_record

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
    def __init__(self, worker: IndexerWorker) -> None:
        self.worker = worker

    def on_partitions_revoked(self, revoked: Any) -> None:
        # Offsets are committed synchronously after each batch, so nothing is pending here;
        # the session states of revoked partitions may be advanced by another worker.
        self.worker._states.clear()

    def on_partitions_assigned(self, assigned: Any) -> None:
        self.worker._states.clear()
        self.worker._needs_refresh = True


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
    ) -> None:
        self.kafka = kafka or KafkaSettings()
        self.settings = settings or IndexerSettings()
        self.view = view or OpenSearchView(opensearch or OpenSearchSettings(), retry_budget=self.settings.retry_budget)
        self.stats = WorkerStats()
        self._sleep = sleep
        self._states: dict[str, SessionProjection] = {}
        self._needs_refresh = True
        self._consumer: KafkaConsumer | None = None
        self._dlq: KafkaProducer | None = None
        self._closed = False

    # -- setup ----------------------------------------------------------------------------------
    def _open(self) -> KafkaConsumer:
        if self._consumer is not None:
            return self._consumer
        ensure_topics(self.kafka)
        self.view.ensure_schema()
        try:
            consumer = KafkaConsumer(
                **self.kafka.client_config(),
                group_id=self.settings.group_id,
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
            raise SourceUnavailable(f"cannot reach Kafka at {self.kafka.bootstrap_servers}: {err}") from err
        self._consumer = consumer
        return consumer

    # -- the loop -------------------------------------------------------------------------------
    def run(
        self,
        *,
        until_idle: bool = False,
        stop: threading.Event | None = None,
        assignment_timeout_s: float = 60.0,
        on_batch: Callable[[WorkerStats], None] | None = None,
    ) -> WorkerStats:
        """Poll, project and commit until ``stop`` is set (or, with ``until_idle``, until caught up)."""
        consumer = self._open()
        stop = stop or threading.Event()
        started = time.monotonic()
        while not stop.is_set():
            polled = consumer.poll(timeout_ms=self.settings.poll_timeout_ms, max_records=self.settings.batch_max)
            records = [r for batch in polled.values() for r in batch]
            if records:
                self._handle(consumer, records)
                if on_batch:
                    on_batch(self.stats)
                continue
            if until_idle:
                assigned = consumer.assignment()
                if assigned and self._caught_up(consumer, assigned):
                    self.view.refresh()
                    break
                if not assigned and time.monotonic() - started > assignment_timeout_s:
                    raise SourceUnavailable("no partitions were assigned to this worker in time")
        return self.stats

    def _caught_up(self, consumer: KafkaConsumer, assigned: set[TopicPartition]) -> bool:
        ends = consumer.end_offsets(list(assigned))
        return all(consumer.position(tp) >= ends[tp] for tp in assigned)

    def _handle(self, consumer: KafkaConsumer, records: list[Any]) -> None:
        while True:
            try:
                commits = self.process(records)
                break
            except ViewUnavailable as err:
                self.stats.view_outages += 1
                log.warning("OpenSearch unavailable, pausing partitions: %s", err)
                self._wait_for_view(consumer)
        consumer.commit({tp: OffsetAndMetadata(off, "", -1) for tp, off in commits.items()})

    def _wait_for_view(self, consumer: KafkaConsumer) -> None:
        self._states.clear()
        self._needs_refresh = True
        assigned = list(consumer.assignment())
        consumer.pause(*assigned)
        try:
            while True:
                consumer.poll(timeout_ms=500)  # keeps the group membership alive
                try:
                    if self.view.client.ping():
                        return
                except Exception:  # noqa: BLE001 - any failure means "still down"
                    pass
                self._sleep(1.0)
        finally:
            consumer.resume(*[tp for tp in assigned if tp in consumer.assignment()])

    # -- one batch ------------------------------------------------------------------------------
    def _state(self, session_id: str) -> SessionProjection:
        state = self._states.get(session_id)
        if state is None:
            if self._needs_refresh:
                self.view.refresh()
                self._needs_refresh = False
            state = self.view.restore_session(session_id)
            self._states[session_id] = state
        return state

    def process(self, records: list[Any]) -> dict[TopicPartition, int]:
        """Project one polled batch; return the offsets to commit. Raises ViewUnavailable to retry."""
        letters: list[DeadLetter] = []
        actions: list[Action] = []
        origin: dict[str, Any] = {}
        touched: dict[str, SessionProjection] = {}
        try:
            for msg in records:
                self.stats.consumed += 1
                letter = self._project(msg, actions, origin, touched)
                if letter:
                    letters.append(letter)
            actions.extend(state.session_action() for state in touched.values())
            results = self.view.bulk(actions) if actions else []
            existing = [r.action for r in results if r.exists]
            hashes = self.view.content_hashes(existing)
        except ViewUnavailable:
            for session_id in touched:
                self._states.pop(session_id, None)
            raise
        for result in results:
            msg = origin.get(result.action.doc_id) if result.action.target == "events" else None
            if result.ok:
                if result.action.op == "create":
                    self.stats.indexed += 1
                continue
            if result.exists:
                have = hashes.get(result.action.doc_id)
                if have == result.action.body["content_hash"]:
                    self.stats.replays += 1
                    continue
                self.stats.conflicts += 1
                existing_doc = self.view.get_event_source(result.action.doc_id, result.action.routing)
                if msg is not None:
                    letters.append(self._letter(msg, "conflict", "same (session, seq) with different content",
                                                field="seq", http_status=409, existing=existing_doc))
                continue
            log.error("bulk item failed: %s %s: %s", result.action.op, result.action.doc_id, result.error)
            if msg is not None and result.action.op == "create":
                letters.append(self._letter(msg, "index_rejected", result.error or "rejected",
                                            http_status=result.status))
        self._dead_letter(letters)
        self.stats.batches += 1
        commits: dict[TopicPartition, int] = {}
        for msg in records:
            tp = TopicPartition(msg.topic, msg.partition)
            commits[tp] = max(commits.get(tp, 0), msg.offset + 1)
        return commits

    def _project(
        self,
        msg: Any,
        actions: list[Action],
        origin: dict[str, Any],
        touched: dict[str, SessionProjection],
    ) -> DeadLetter | None:
        if msg.value is None:
            return self._letter(msg, "invalid_record", "record: value is null (tombstone)", field="record")
        try:
            record = decode_record(msg.value)
        except RecordRejected as err:
            return self._letter(msg, "invalid_record", str(err), field=err.field)
        if msg.key is None or msg.key != record.session_id.encode("utf-8"):
            return self._letter(msg, "invalid_record", "key: must equal the session_id (UTF-8)", field="key")
        state = self._state(record.session_id)
        if isinstance(record, HeaderRecord):
            verdict = state.apply_header(record)
            if verdict == "conflict":
                self.stats.conflicts += 1
                return self._letter(msg, "conflict", "header differs from the one already recorded",
                                    field="header", http_status=409, existing=state.header)
            touched[record.session_id] = state
            return None
        if state.workspace_id not in (None, record.workspace_id):
            return self._letter(msg, "invalid_record",
                                f"workspace_id: session belongs to {state.workspace_id}", field="workspace_id")
        outcome = state.apply_event(record, msg.partition, msg.offset)
        for violation in outcome.violations:
            log.warning("surface violation in %s at seq %d: %s", record.session_id, violation.seq, violation.code)
        actions.append(outcome.create)
        actions.extend(outcome.updates)
        origin[outcome.create.doc_id] = msg
        if not outcome.replay:
            touched[record.session_id] = state
        return None

    def _letter(self, msg: Any, error_class: str, reason: str, **extra: Any) -> DeadLetter:
        self.stats.dead_lettered += 1
        self.stats.reasons[error_class] += 1
        return DeadLetter(
            topic=msg.topic,
            partition=msg.partition,
            offset=msg.offset,
            key=msg.key,
            value=msg.value,
            error_class=error_class,
            reason=reason,
            **extra,
        )

    def _dead_letter(self, letters: list[DeadLetter]) -> None:
        if not letters:
            return
        assert self._dlq is not None
        topic = dlq_topic(self.kafka.topic)
        futures = [self._dlq.send(topic, key=letter.key, value=encode_envelope(letter)) for letter in letters]
        self._dlq.flush(timeout=60)
        for future in futures:
            future.get(timeout=60)  # raises if the dead letter was not acknowledged: nothing is lost
        for letter in letters:
            log.warning("dead-lettered %s[%d]@%d: %s", letter.topic, letter.partition, letter.offset, letter.reason)

    def close(self) -> None:
        """Close the consumer (leaving the group) and the dead-letter producer. Idempotent."""
        if self._closed:
            return
        self._closed = True
        if self._consumer is not None:
            self._consumer.close(autocommit=False)
        if self._dlq is not None:
            self._dlq.close(timeout=10)
        self.view.close()

    def __enter__(self) -> IndexerWorker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
