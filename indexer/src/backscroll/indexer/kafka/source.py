"""The Kafka :class:`~backscroll.indexer.ports.EntrySource`: one member of the indexer's consumer group.

Offsets are committed explicitly after a batch is projected. A commit the group refuses because it
rebalanced (``CommitFailedError``, unknown member, illegal generation, rebalance in progress) comes
back as :attr:`Commit.ASSIGNMENT_LOST`; every other kafka-python error leaves as an indexer error.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any, Final

from kafka import KafkaConsumer, TopicPartition
from kafka.consumer.subscription_state import ConsumerRebalanceListener
from kafka.errors import KafkaError
from kafka.structs import OffsetAndMetadata

from backscroll.indexer.decode import decode_entry
from backscroll.indexer.kafka.errors import kafka_edge
from backscroll.indexer.kafka.rejoin import finish_interrupted_joins
from backscroll.indexer.ports import Commit, Entry, InvalidEntry, Poll, RawRecord
from backscroll.indexer.settings import IndexerSettings
from backscroll.ingest.kafka.topics import ensure_topics
from backscroll.ingest.settings import KafkaSettings
from backscroll.ingest.wire import MAX_RECORD_BYTES

__all__ = ["KafkaSource"]

log = logging.getLogger("backscroll.indexer")

#: Errors of a commit that mean "the group moved on without you"; matched by name so that every
#: kafka-python version's spelling is covered.
_LOST: Final = frozenset(
    {
        "CommitFailedError",
        "UnknownMemberIdError",
        "IllegalGenerationError",
        "RebalanceInProgressError",
        "FencedInstanceIdError",
    }
)


def _lost(err: BaseException) -> bool:
    return any(cls.__name__ in _LOST for cls in type(err).__mro__)


class _Listener(ConsumerRebalanceListener):  # type: ignore[misc]
    def __init__(self, source: KafkaSource) -> None:
        self.source = source

    def on_partitions_revoked(self, revoked: Any) -> None:
        hook = self.source.before_revoke
        if hook is not None:
            try:
                hook()
            except Exception as err:  # kafka-python would swallow it; the runner already rewound
                log.warning("before-revoke hook failed: %s", err)
        self.source.changed = True

    def on_partitions_assigned(self, assigned: Any) -> None:
        self.source.changed = True


class KafkaSource:
    """Consumes ``kafka.topic`` in group ``settings.group_id`` (created lazily on first poll)."""

    def __init__(
        self, kafka: KafkaSettings, settings: IndexerSettings, *, consumer: KafkaConsumer | None = None
    ) -> None:
        self.kafka = kafka
        self.settings = settings
        self._consumer = consumer
        self.changed = True
        self._closed = False
        #: Called inside a poll before partitions are revoked (a pipelined runner commits there).
        self.before_revoke: Callable[[], None] | None = None

    @property
    def topic(self) -> str:
        return self.kafka.topic

    def _open(self) -> KafkaConsumer:
        if self._consumer is not None:
            return self._consumer
        with kafka_edge(f"cannot join group at {self.kafka.bootstrap_servers}", kafka=self.kafka):
            ensure_topics(self.kafka)
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
                # A leader that joined while the broker restarted may assign without knowing the
                # topic's partitions; the group rejoins when fresh metadata shows them, so fetch it
                # every few seconds instead of kafka-python's five minutes.
                metadata_max_age_ms=10_000,
            )
            finish_interrupted_joins(consumer)
            consumer.subscribe([self.kafka.topic], listener=_Listener(self))
        self._consumer = consumer
        return consumer

    def open(self) -> None:
        self._open()

    def poll(self, max_records: int, timeout_s: float) -> Poll:
        consumer = self._open()
        with kafka_edge("poll", kafka=self.kafka):
            polled = consumer.poll(timeout_ms=int(timeout_s * 1000), max_records=max_records)
        entries: list[Entry | InvalidEntry] = []
        for records in polled.values():
            for msg in records:
                raw = RawRecord(msg.topic, msg.partition, msg.offset, msg.key, msg.value, int(msg.timestamp))
                entries.append(decode_entry(raw))
        changed, self.changed = self.changed, False
        return Poll(entries, changed)

    def commit(self, through: Mapping[int, int]) -> Commit:
        consumer = self._open()
        offsets = {
            TopicPartition(self.topic, partition): OffsetAndMetadata(offset + 1, "", -1)
            for partition, offset in through.items()
        }
        try:
            with kafka_edge("commit", kafka=self.kafka):
                consumer.commit(offsets)
        except Exception as err:
            if _lost(err) or _lost(err.__cause__ or err):
                log.warning("commit refused, the group rebalanced: %s", type(err.__cause__ or err).__name__)
                self.changed = True
                return Commit.ASSIGNMENT_LOST
            raise
        return Commit.COMMITTED

    def rewind(self, to: Mapping[int, int]) -> None:
        consumer = self._open()
        with kafka_edge("rewind", kafka=self.kafka):
            assigned = consumer.assignment()
            for partition, offset in to.items():
                tp = TopicPartition(self.topic, partition)
                if tp in assigned:
                    consumer.seek(tp, offset)

    def hold(self, seconds: float) -> None:
        consumer = self._open()
        with kafka_edge("hold", kafka=self.kafka):
            assigned = list(consumer.assignment())
            consumer.pause(*assigned)
            try:
                polled = consumer.poll(timeout_ms=int(seconds * 1000))  # keeps the membership alive
                # Partitions assigned during that poll (the first join, a rebalance) were not
                # paused, so it may have fetched records: put the position back so that none is
                # skipped.
                for tp, records in polled.items():
                    if records:
                        consumer.seek(tp, records[0].offset)
            finally:
                consumer.resume(*[tp for tp in assigned if tp in consumer.assignment()])

    def _progress(self) -> list[tuple[int, int, int]]:
        """(partition, committed, end) of every partition of the topic, for the whole group."""
        consumer = self._open()
        with kafka_edge("read the group's offsets", kafka=self.kafka):
            partitions = sorted(consumer.partitions_for_topic(self.topic) or ())
            tps = [TopicPartition(self.topic, p) for p in partitions]
            if not tps:
                return []
            ends = consumer.end_offsets(tps)
            begins = consumer.beginning_offsets(tps)
            out = []
            for tp in tps:
                committed = consumer.committed(tp)
                out.append((tp.partition, max(committed or 0, begins[tp]), ends[tp]))
        return out

    def caught_up(self) -> bool:
        progress = self._progress()
        return bool(progress) and all(committed >= end for _, committed, end in progress)

    def describe_lag(self) -> str:
        try:
            behind = [f"{p}: {c}/{e}" for p, c, e in self._progress() if c < e]
        except KafkaError as err:  # pragma: no cover - only for the message
            return f"offsets unreadable ({type(err).__name__})"
        return "partitions behind (committed/end): " + ", ".join(behind) if behind else "no partition behind"

    def lag(self) -> dict[int, int]:
        consumer = self._open()
        with kafka_edge("lag", kafka=self.kafka):
            assigned = list(consumer.assignment())
            if not assigned:
                return {}
            ends = consumer.end_offsets(assigned)
            return {tp.partition: max(0, ends[tp] - consumer.position(tp)) for tp in assigned}

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._consumer is not None:
            with kafka_edge("close", kafka=self.kafka):
                self._consumer.close(autocommit=False)
