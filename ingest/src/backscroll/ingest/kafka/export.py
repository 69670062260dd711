"""The records of a session or a workspace read back out of the Kafka topic, partition by partition
(see :mod:`backscroll.ingest.export`)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from backscroll.ingest.errors import LogNotFound, LogUnavailable
from backscroll.ingest.export import LogExport
from backscroll.ingest.records import LogRecord

if TYPE_CHECKING:
    from backscroll.ingest.settings import KafkaSettings

__all__ = ["export_kafka"]


def export_kafka(settings: KafkaSettings, export: LogExport, *, poll_ms: int = 500) -> Iterator[LogRecord]:
    """The wanted records of the topic, read from the beginning to the end offsets taken at the
    start. Raises :class:`LogNotFound` when the topic does not exist, :class:`LogUnavailable` when
    a partition makes no progress within the request timeout."""
    from kafka import KafkaConsumer, TopicPartition
    from kafka.errors import KafkaError
    from kafka.partitioner.default import murmur2

    from backscroll.ingest.kafka.errors import translate_kafka_error

    topic = settings.topic
    where = f"Kafka at {settings.bootstrap_servers}"
    try:
        consumer = KafkaConsumer(
            **settings.client_config(), group_id=None, enable_auto_commit=False, auto_offset_reset="earliest"
        )
    except (KafkaError, OSError) as err:
        raise translate_kafka_error(err, f"cannot reach {where}") from err
    try:
        try:
            partitions = consumer.partitions_for_topic(topic)
        except (KafkaError, OSError) as err:
            raise translate_kafka_error(err, f"cannot read the metadata of {topic} from {where}") from err
        if not partitions:
            raise LogNotFound(f"topic {topic} does not exist on {where}; has anything been appended?")
        ordered = sorted(partitions)
        if export.session_id is not None:
            key = export.session_id.encode("utf-8")
            ordered = [ordered[(murmur2(key) & 0x7FFFFFFF) % len(ordered)]]
        for partition in ordered:
            yield from _read_partition(consumer, TopicPartition(topic, partition), export, settings, poll_ms)
    finally:
        consumer.close()


def _read_partition(
    consumer: Any, tp: Any, export: LogExport, settings: KafkaSettings, poll_ms: int
) -> Iterator[LogRecord]:
    from kafka.errors import KafkaError

    from backscroll.ingest.kafka.errors import translate_kafka_error

    what = f"reading {tp.topic}[{tp.partition}] from Kafka at {settings.bootstrap_servers}"
    try:
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        end = int(consumer.end_offsets([tp])[tp])
        position = int(consumer.position(tp))
    except (KafkaError, OSError) as err:
        raise translate_kafka_error(err, what) from err
    stalled_since = time.monotonic()
    while position < end:
        try:
            batches = consumer.poll(timeout_ms=poll_ms)
        except (KafkaError, OSError) as err:
            raise translate_kafka_error(err, what) from err
        got = False
        for message in batches.get(tp, []):
            got = True
            if message.offset >= end:
                break
            record = LogRecord(
                tp.topic,
                tp.partition,
                int(message.offset),
                message.key,
                message.value,
                int(message.timestamp),
            )
            if export.wanted(record):
                yield record
        try:
            position = int(consumer.position(tp))
        except (KafkaError, OSError) as err:
            raise translate_kafka_error(err, what) from err
        if got:
            stalled_since = time.monotonic()
        elif time.monotonic() - stalled_since > settings.request_timeout_s:
            raise LogUnavailable(
                f"{what}: no progress for {settings.request_timeout_s}s at offset {position}"
            )
