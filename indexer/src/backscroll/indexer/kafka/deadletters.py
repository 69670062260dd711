"""The Kafka :class:`~backscroll.indexer.ports.DeadLetters`: the ``<topic>.dlq`` topic.

Parking waits for every letter's acknowledgement (``acks=all``, idempotent producer) so a batch is
committed only once its letters are durable. A replay re-sends the original bytes to the main topic
and commits the replay group's offset, so a second replay re-drives only newer letters.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from typing import Any

from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.structs import OffsetAndMetadata

from backscroll.indexer.deadletter import DeadLetter, decode_envelope, encode_envelope
from backscroll.indexer.errors import (
    DeadLetterUnavailable,
    SourceAccessDenied,
    SourceFailed,
    SourceUnavailable,
)
from backscroll.indexer.kafka.errors import kafka_edge
from backscroll.ingest.kafka.topics import dlq_topic, ensure_topics
from backscroll.ingest.settings import KafkaSettings
from backscroll.ingest.wire import MAX_RECORD_BYTES

__all__ = ["KafkaDeadLetters"]

log = logging.getLogger("backscroll.indexer")


def _drain(consumer: KafkaConsumer, partitions: list[TopicPartition], limit: int | None) -> list[Any]:
    ends = consumer.end_offsets(partitions)
    out: list[Any] = []
    deadline = time.monotonic() + 60
    while any(consumer.position(tp) < ends[tp] for tp in partitions):
        if time.monotonic() > deadline:
            raise SourceUnavailable("dead-letter topic: could not read to its end within 60s")
        for batch in consumer.poll(timeout_ms=500).values():
            out.extend(batch)
        if limit is not None and len(out) >= limit:
            break
    return out if limit is None else out[:limit]


def _partitions(consumer: KafkaConsumer, topic: str, kafka: KafkaSettings) -> list[TopicPartition]:
    """The topic's partitions; none visible means the principal may not describe the topic
    (Kafka hides a topic it refuses), since :func:`ensure_topics` made sure it exists."""
    found = sorted(consumer.partitions_for_topic(topic) or ())
    if not found:
        who = repr(kafka.sasl_username) if kafka.sasl_username else "this client"
        raise SourceAccessDenied(
            f"Kafka {kafka.bootstrap_servers}: {who} may not read the dead-letter topic {topic} "
            "(no DESCRIBE/READ permission: dead letters are the operator's)"
        )
    return [TopicPartition(topic, p) for p in found]


class KafkaDeadLetters:
    """Dead letters of ``kafka.topic`` (the producer is created on first use)."""

    def __init__(
        self,
        kafka: KafkaSettings,
        *,
        replay_group: str = "backscroll-dlq-replay",
        producer: KafkaProducer | None = None,
    ) -> None:
        self.kafka = kafka
        self.replay_group = replay_group
        self._producer: KafkaProducer | None = producer

    @property
    def topic(self) -> str:
        return dlq_topic(self.kafka.topic)

    def _open_producer(self) -> KafkaProducer:
        if self._producer is None:
            self._producer = KafkaProducer(
                **self.kafka.client_config(),
                acks="all",
                enable_idempotence=True,
                max_request_size=2 * MAX_RECORD_BYTES + 1024 * 1024,
            )
        return self._producer

    def park(self, letters: Sequence[DeadLetter]) -> None:
        if not letters:
            return
        with kafka_edge("park dead letters", DeadLetterUnavailable, SourceFailed, kafka=self.kafka):
            producer = self._open_producer()
            futures = [producer.send(self.topic, key=x.key, value=encode_envelope(x)) for x in letters]
            producer.flush(timeout=60)
            for future in futures:
                future.get(timeout=60)  # raises if a letter was not acknowledged: nothing is lost
        for letter in letters:
            log.warning(
                "dead-lettered %s[%d]@%d: %s", letter.topic, letter.partition, letter.offset, letter.reason
            )

    def list(self, limit: int | None = 100) -> list[dict[str, Any]]:
        with kafka_edge("list dead letters", kafka=self.kafka):
            ensure_topics(self.kafka)
            consumer = KafkaConsumer(**self.kafka.client_config(), enable_auto_commit=False)
            try:
                partitions = _partitions(consumer, self.topic, self.kafka)
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

    def replay(self) -> int:
        with kafka_edge("replay dead letters", kafka=self.kafka):
            ensure_topics(self.kafka)
            consumer = KafkaConsumer(
                **self.kafka.client_config(),
                group_id=self.replay_group,
                enable_auto_commit=False,
                auto_offset_reset="earliest",
            )
            producer = self._open_producer()
            try:
                partitions = _partitions(consumer, self.topic, self.kafka)
                consumer.assign(partitions)
                for tp in partitions:
                    offset = consumer.committed(tp)
                    if offset is None:
                        consumer.seek_to_beginning(tp)
                    else:
                        consumer.seek(tp, offset)
                records = _drain(consumer, partitions, None)
                futures = []
                for msg in records:
                    envelope = decode_envelope(msg.value)
                    futures.append(
                        producer.send(envelope["topic"], key=envelope["key"], value=envelope["value"])
                    )
                producer.flush(timeout=60)
                for future in futures:
                    future.get(timeout=60)
                commits = {
                    TopicPartition(msg.topic, msg.partition): OffsetAndMetadata(msg.offset + 1, "", -1)
                    for msg in records
                }
                if commits:
                    consumer.commit(commits)
                return len(records)
            finally:
                consumer.close(autocommit=False)

    def close(self) -> None:
        if self._producer is not None:
            producer, self._producer = self._producer, None
            with kafka_edge("close the dead-letter producer", kafka=self.kafka):
                producer.close(timeout=10)
