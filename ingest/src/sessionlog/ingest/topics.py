"""Create the session topic and its dead-letter topic when they are missing."""

from __future__ import annotations

import contextlib

from kafka import KafkaAdminClient
from kafka.errors import KafkaError, TopicAlreadyExistsError

from sessionlog.ingest.kafka_errors import translate_kafka_error
from sessionlog.ingest.settings import KafkaSettings
from sessionlog.ingest.wire import MAX_RECORD_BYTES

__all__ = ["dlq_topic", "ensure_topics"]


def dlq_topic(topic: str) -> str:
    return f"{topic}.dlq"


def ensure_topics(settings: KafkaSettings) -> None:
    """Create ``topic`` and ``topic.dlq`` with sessionlog's settings; existing topics are left alone.

    Raises :class:`LogUnavailable` (retriable) or :class:`LogRefused` (authorization, invalid topic)."""
    try:
        admin = KafkaAdminClient(**settings.client_config())
    except (KafkaError, OSError) as err:
        raise translate_kafka_error(err, f"cannot reach Kafka at {settings.bootstrap_servers}") from err
    try:
        existing = set(admin.list_topics())
        wanted = {
            settings.topic: settings.partitions,
            dlq_topic(settings.topic): 1,
        }
        missing = {
            name: {
                "num_partitions": parts,
                "replication_factor": -1,
                "configs": {
                    "max.message.bytes": str(MAX_RECORD_BYTES + 1024 * 1024),
                    "retention.ms": str(settings.retention_ms),
                },
            }
            for name, parts in wanted.items()
            if name not in existing
        }
        if missing:
            with contextlib.suppress(TopicAlreadyExistsError):
                admin.create_topics(missing, wait_for_metadata=True)
    except (KafkaError, OSError) as err:
        raise translate_kafka_error(err, f"cannot create topics on {settings.bootstrap_servers}") from err
    finally:
        with contextlib.suppress(KafkaError, OSError):
            admin.close()
