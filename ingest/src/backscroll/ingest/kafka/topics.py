"""Create the session topic and its dead-letter topic when they are missing."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from kafka import KafkaAdminClient
from kafka.errors import AuthorizationError, KafkaError, TopicAlreadyExistsError

from backscroll.ingest.errors import LogAccessDenied
from backscroll.ingest.kafka.errors import translate_kafka_error
from backscroll.ingest.kafka.security import translate
from backscroll.ingest.settings import KafkaSettings
from backscroll.ingest.wire import MAX_RECORD_BYTES

__all__ = ["RETENTION_CONFIGS", "delete_topics", "dlq_topic", "ensure_topics", "topic_retention"]


def dlq_topic(topic: str) -> str:
    return f"{topic}.dlq"


@contextlib.contextmanager
def _admin(settings: KafkaSettings, doing: str) -> Iterator[KafkaAdminClient]:
    """An admin client for ``doing`` something; driver errors leave as our typed errors (our
    own errors raised inside pass through), and the client is closed in every case."""
    try:
        admin = KafkaAdminClient(**settings.client_config())
    except KafkaError as err:
        raise translate(settings, err, "connect") from None
    except OSError as err:
        raise translate_kafka_error(err, f"cannot reach Kafka at {settings.bootstrap_servers}") from err
    try:
        yield admin
    except KafkaError as err:
        raise translate(settings, err, doing) from None
    except OSError as err:
        raise translate_kafka_error(err, f"cannot {doing} on {settings.bootstrap_servers}") from err
    finally:
        with contextlib.suppress(KafkaError, OSError):
            admin.close()


def ensure_topics(settings: KafkaSettings) -> None:
    """Create ``topic`` and ``topic.dlq`` with backscroll's settings; existing topics are left alone.

    Raises :class:`LogUnavailable` (retriable) or :class:`LogRefused` (authorization, invalid topic)."""
    with _admin(settings, "create topics") as admin:
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
                    # no size limit either: the topic is the history a rebuild replays
                    "retention.bytes": "-1",
                },
            }
            for name, parts in wanted.items()
            if name not in existing
        }
        if missing:
            try:
                with contextlib.suppress(TopicAlreadyExistsError):
                    admin.create_topics(missing, wait_for_metadata=True)
            except AuthorizationError as err:
                # least privilege: components may not create topics; they exist if the operator
                # made them (a principal sees only the topics it has an ACL on)
                if settings.topic not in existing:
                    raise LogAccessDenied(
                        f"Kafka {settings.bootstrap_servers}: topic {settings.topic} is missing or not "
                        f"visible to principal {settings.sasl_username!r}, which may not create it "
                        f"({type(err).__name__})"
                    ) from None


#: The topic settings that decide how long records stay (``-1``: no limit).
RETENTION_CONFIGS = ("retention.ms", "retention.bytes")


def topic_retention(settings: KafkaSettings) -> dict[str, str]:
    """The topic's ``retention.ms`` and ``retention.bytes`` as the brokers apply them (its own
    setting or the broker default), by name.

    Raises :class:`LogUnavailable` (retriable) or :class:`LogRefused` (authorization)."""
    from kafka.admin import ConfigResource, ConfigResourceType

    with _admin(settings, "describe the topic's configuration") as admin:
        wanted = ConfigResource(
            ConfigResourceType.TOPIC, settings.topic, configs=dict.fromkeys(RETENTION_CONFIGS)
        )
        found = admin.describe_configs([wanted], config_filter="all")
        configs = found.get("topic", {}).get(settings.topic, {})
        return {name: str(configs[name]["value"]) for name in RETENTION_CONFIGS if name in configs}


def delete_topics(settings: KafkaSettings) -> list[str]:
    """Delete ``topic`` and ``topic.dlq`` where they exist, and name those deleted: for a throwaway
    topic (the demo's, a test's), never a fleet's history.

    Raises :class:`LogUnavailable` (retriable) or :class:`LogRefused` (authorization)."""
    with _admin(settings, "delete topics") as admin:
        existing = set(admin.list_topics())
        doomed = [name for name in (settings.topic, dlq_topic(settings.topic)) if name in existing]
        if doomed:
            admin.delete_topics(doomed)
        return doomed
