"""How far a consumer group is through the topic, read without joining the group.

A consumer that names the indexer's group but never subscribes reads the group's committed offsets
without a rebalance of the running workers. Kafka errors become the indexer's typed errors at
:func:`~backscroll.indexer.kafka.errors.kafka_edge`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from backscroll.indexer.kafka.errors import kafka_edge

if TYPE_CHECKING:
    from backscroll.ingest.settings import KafkaSettings

__all__ = ["PartitionProgress", "delete_group", "earliest_offsets", "group_progress"]


@dataclass(frozen=True, slots=True)
class PartitionProgress:
    """One partition: its end offset and the group's committed offset (``None``: none yet)."""

    partition: int
    end_offset: int
    committed: int | None


def group_progress(kafka: KafkaSettings, group_id: str) -> list[PartitionProgress]:
    """Every partition of the topic, in order, with the end offset and ``group_id``'s commit."""
    from kafka import KafkaConsumer, TopicPartition

    topic = kafka.topic
    with kafka_edge(f"Kafka {kafka.bootstrap_servers} did not answer", kafka=kafka):
        consumer = KafkaConsumer(**kafka.client_config(), group_id=group_id, enable_auto_commit=False)
        try:
            partitions = [
                TopicPartition(topic, p) for p in sorted(consumer.partitions_for_topic(topic) or ())
            ]
            ends = consumer.end_offsets(partitions)
            found = []
            for tp in partitions:
                offset = consumer.committed(tp)
                committed = None if offset is None or offset < 0 else int(offset)
                found.append(PartitionProgress(tp.partition, int(ends[tp]), committed))
            return found
        finally:
            consumer.close(autocommit=False)


def earliest_offsets(kafka: KafkaSettings) -> dict[int, int]:
    """Every partition of the topic with its first retained offset (above 0 once retention or a
    deletion has removed records from its start)."""
    from kafka import KafkaConsumer, TopicPartition

    topic = kafka.topic
    with kafka_edge(f"Kafka {kafka.bootstrap_servers} did not answer", kafka=kafka):
        consumer = KafkaConsumer(**kafka.client_config(), enable_auto_commit=False)
        try:
            partitions = [
                TopicPartition(topic, p) for p in sorted(consumer.partitions_for_topic(topic) or ())
            ]
            firsts = consumer.beginning_offsets(partitions)
            return {tp.partition: int(firsts[tp]) for tp in partitions}
        finally:
            consumer.close(autocommit=False)


def delete_group(kafka: KafkaSettings, group_id: str) -> bool:
    """Delete the consumer group ``group_id`` (its members must have left) and say whether it
    existed: for a throwaway group (the demo's, a test's), never a fleet's indexers."""
    from kafka import KafkaAdminClient
    from kafka.errors import KafkaError

    with kafka_edge(f"Kafka {kafka.bootstrap_servers} did not delete group {group_id}", kafka=kafka):
        admin = KafkaAdminClient(**kafka.client_config())
        try:
            # {group: "OK" or the name of the error class}
            outcome = dict(admin.delete_groups([group_id])).get(group_id, "OK")
        finally:
            admin.close()
        if outcome == "GroupIdNotFoundError":
            return False
        if outcome != "OK":
            raise KafkaError(f"{outcome} deleting group {group_id}")
        return True
