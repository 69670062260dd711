"""Operator actions: list and re-drive dead letters, rebuild the projection, forget a session."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.structs import OffsetAndMetadata
from opensearchpy.exceptions import OpenSearchException

from sessionlog.indexer.deadletter import decode_envelope
from sessionlog.indexer.errors import ViewUnavailable
from sessionlog.indexer.opensearch_view import OpenSearchView
from sessionlog.indexer.os_security import deny
from sessionlog.indexer.settings import IndexerSettings, OpenSearchSettings
from sessionlog.indexer.worker import IndexerWorker, WorkerStats
from sessionlog.ingest.settings import KafkaSettings
from sessionlog.ingest.topics import dlq_topic, ensure_topics

__all__ = ["RebuildReport", "dlq_list", "dlq_replay", "forget_session", "rebuild"]


def _drain(consumer: KafkaConsumer, partitions: list[TopicPartition], limit: int | None) -> list[Any]:
    ends = consumer.end_offsets(partitions)
    out: list[Any] = []
    deadline = time.monotonic() + 60
    while any(consumer.position(tp) < ends[tp] for tp in partitions) and time.monotonic() < deadline:
        for batch in consumer.poll(timeout_ms=500).values():
            out.extend(batch)
        if limit is not None and len(out) >= limit:
            break
    return out if limit is None else out[:limit]


def dlq_list(kafka: KafkaSettings, limit: int | None = 100) -> list[dict[str, Any]]:
    """The dead letters, oldest first (decoded envelopes, original bytes under ``key``/``value``)."""
    ensure_topics(kafka)
    consumer = KafkaConsumer(**kafka.client_config(), enable_auto_commit=False)
    try:
        topic = dlq_topic(kafka.topic)
        partitions = [TopicPartition(topic, p) for p in sorted(consumer.partitions_for_topic(topic) or ())]
        consumer.assign(partitions)
        consumer.seek_to_beginning(*partitions)
        letters = []
        for msg in _drain(consumer, partitions, limit):
            envelope = decode_envelope(msg.value)
            envelope["dlq_offset"] = msg.offset
            letters.append(envelope)
        return letters
    finally:
        consumer.close()


def dlq_replay(kafka: KafkaSettings, group_id: str = "sessionlog-dlq-replay") -> int:
    """Re-send every dead letter not yet replayed by ``group_id`` to the main topic (after a fix).

    The replay group's committed offset makes a second run re-drive only newer letters, and the
    indexer treats an identical (session, seq) as a no-op, so replaying is idempotent."""
    ensure_topics(kafka)
    topic = dlq_topic(kafka.topic)
    consumer = KafkaConsumer(
        **kafka.client_config(), group_id=group_id, enable_auto_commit=False, auto_offset_reset="earliest"
    )
    producer = KafkaProducer(**kafka.client_config(), acks="all", enable_idempotence=True)
    try:
        partitions = [TopicPartition(topic, p) for p in sorted(consumer.partitions_for_topic(topic) or ())]
        consumer.assign(partitions)
        committed = {tp: consumer.committed(tp) for tp in partitions}
        for tp, offset in committed.items():
            if offset is None:
                consumer.seek_to_beginning(tp)
            else:
                consumer.seek(tp, offset)
        records = _drain(consumer, partitions, None)
        futures = []
        for msg in records:
            envelope = decode_envelope(msg.value)
            futures.append(producer.send(envelope["topic"], key=envelope["key"], value=envelope["value"]))
        producer.flush(timeout=60)
        for future in futures:
            future.get(timeout=60)
        commits = {}
        for msg in records:
            tp = TopicPartition(msg.topic, msg.partition)
            commits[tp] = OffsetAndMetadata(msg.offset + 1, "", -1)
        if commits:
            consumer.commit(commits)
        return len(records)
    finally:
        producer.close(timeout=10)
        consumer.close(autocommit=False)


@dataclass(frozen=True)
class RebuildReport:
    """What a rebuild did."""

    old_version: int
    new_version: int
    stats: WorkerStats
    seconds: float
    kept_old: bool


def rebuild(
    kafka: KafkaSettings,
    opensearch: OpenSearchSettings,
    settings: IndexerSettings,
    *,
    keep: bool = False,
    on_batch: Callable[[WorkerStats, dict[TopicPartition, int]], None] | None = None,
) -> RebuildReport:
    """Replay the topic from the beginning into a new index version while the current one keeps
    serving; move the read aliases atomically once caught up, then catch up once more."""
    started = time.monotonic()
    admin_view = OpenSearchView(opensearch)
    try:
        admin_view.ensure_schema()
        old = admin_view.current_version()
        new = old + 1
        admin_view.create_version(new)
        group = settings.model_copy(
            update={"group_id": f"{settings.group_id}-rebuild-v{new}-{int(time.time())}"}
        )
        target = OpenSearchView(opensearch, pinned_version=new, retry_budget=settings.retry_budget)
        with IndexerWorker(kafka, opensearch, group, view=target) as worker:
            ends: dict[TopicPartition, int] = {}

            def progress(stats: WorkerStats) -> None:
                if on_batch is not None:
                    consumer = worker._consumer
                    if consumer is not None and not ends:
                        ends.update(consumer.end_offsets(list(consumer.assignment())))
                    on_batch(stats, ends)

            worker.run(until_idle=True, on_batch=progress)
            admin_view.switch_aliases(old, new)
            stats = worker.run(until_idle=True, on_batch=progress)
        if not keep:
            admin_view.delete_version(old)
        return RebuildReport(old, new, stats, time.monotonic() - started, keep)
    finally:
        admin_view.close()


def forget_session(opensearch: OpenSearchSettings, session_id: str) -> int:
    """Delete a session's documents from the projection; returns how many events were deleted.

    The Kafka topic still holds the records until retention removes them (or, on a compacted
    topic, until tombstones for every key are compacted); a rebuild would bring them back until then."""
    view = OpenSearchView(opensearch)
    try:
        return view.forget_session(session_id)
    except OpenSearchException as err:
        deny(err, opensearch)  # a principal without delete rights says so in one line
        raise ViewUnavailable(f"forget failed at {opensearch.url}: {type(err).__name__}: {err}") from None
    finally:
        view.close()
