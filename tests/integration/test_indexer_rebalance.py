"""What a rebalance that hands a member its own partitions back does to its fetch positions.

kafka-python 3 keeps the fetch position of a partition that stays with a member across a
rebalance; it does not go back to the committed offset. The pipelined runner forgets its batches in
flight inside the revoke callback, so it must rewind the source there, or the records of those
batches are never read again: never committed, their dead letters never parked, and an
``--until-idle`` run never sees the group caught up. The runner's side is in
tests/unit/test_runner_faults.py (a source that keeps positions the same way); this test pins the
behaviour of the real client that the fake copies, and that a rewind inside the callback holds.
"""

from __future__ import annotations

import time

import orjson
from conftest import Pipeline
from kafka import KafkaAdminClient, KafkaProducer
from kafka.admin import NewPartitions
from test_indexer_faults import _event

from backscroll.indexer.kafka.source import KafkaSource

SESSIONS, EVENTS = 12, 600


def _send(pipeline: Pipeline) -> None:
    producer = KafkaProducer(**pipeline.kafka.client_config(), linger_ms=5)
    try:
        for i in range(EVENTS):
            sid = f"r-{i % SESSIONS}"
            producer.send(
                pipeline.kafka.topic, key=sid.encode(), value=orjson.dumps(_event(sid, i // SESSIONS))
            )
        producer.flush(timeout=60)
    finally:
        producer.close()


def _add_partition(pipeline: Pipeline) -> None:
    """A rebalance in which the member keeps every partition it had (and gets the new one)."""
    admin = KafkaAdminClient(**pipeline.kafka.client_config())
    try:
        admin.create_partitions(
            {pipeline.kafka.topic: NewPartitions(total_count=pipeline.kafka.partitions + 1)}
        )
    finally:
        admin.close()


def _read_around_a_kept_rebalance(
    pipeline: Pipeline, *, rewind: bool
) -> tuple[dict[int, int], dict[int, int]]:
    """(position reached per partition before the rebalance, lowest offset read after it)."""
    source = KafkaSource(pipeline.kafka, pipeline.indexer)
    armed, revoked = False, False

    def before_revoke() -> None:  # also called at the first join, with nothing assigned yet
        nonlocal revoked
        if not armed:
            return
        revoked = True
        if rewind:  # what the pipelined runner does with the batches it forgets
            source.rewind({p: 0 for p in range(pipeline.kafka.partitions)})

    source.before_revoke = before_revoke
    try:
        read: dict[int, int] = {}
        deadline = time.monotonic() + 60
        while len(read) < pipeline.kafka.partitions and time.monotonic() < deadline:
            for entry in source.poll(20, 0.2).entries:
                read[entry.raw.partition] = entry.raw.offset + 1
        assert len(read) == pipeline.kafka.partitions, f"records from {sorted(read)} only"
        armed = True
        _add_partition(pipeline)
        after: dict[int, int] = {}
        deadline = time.monotonic() + 60  # the member sees the new partition within metadata_max_age
        quiet_since: float | None = None
        while time.monotonic() < deadline:
            # The callback runs inside a poll, which goes on fetching after the rebalance: its
            # records count as read after it (a record fetched before would only raise the
            # lowest offset, never lower it).
            entries = source.poll(20, 0.2).entries
            for entry in entries:
                partition, offset = entry.raw.partition, entry.raw.offset
                if revoked:
                    after[partition] = min(offset, after.get(partition, offset))
                else:
                    read[partition] = max(offset + 1, read.get(partition, 0))
            if entries or not revoked:
                quiet_since = None
            elif quiet_since is None:
                quiet_since = time.monotonic()
            # Read everything there was to read again. A rewound member reads every partition
            # again once it has rejoined, which on a busy machine can take longer than any fixed
            # quiet time (CI saw 2 s pass before its first fetch): wait for that, up to the deadline.
            elif time.monotonic() - quiet_since > 2.0 and (not rewind or set(after) >= set(read)):
                break
        assert revoked, "no rebalance"
        return read, after
    finally:
        source.close()


def test_a_member_keeps_its_fetch_positions_when_a_rebalance_hands_its_partitions_back(
    pipeline: Pipeline,
) -> None:
    _send(pipeline)
    read, after = _read_around_a_kept_rebalance(pipeline, rewind=False)
    # A client that went back to the committed offsets (none: 0) would deliver everything again.
    assert all(after.get(p, read[p]) >= read[p] for p in read), (read, after)


def test_a_rewind_inside_the_revoke_callback_holds_across_the_rebalance(pipeline: Pipeline) -> None:
    _send(pipeline)
    read, after = _read_around_a_kept_rebalance(pipeline, rewind=True)
    assert all(read[p] > 0 for p in read)
    assert {p: after.get(p) for p in read} == {p: 0 for p in read}, (read, after)


def _read_partitions(
    source: KafkaSource, want: set[int], *, poll_s: float, pause_s: float = 0.0, read: set[int] | None = None
) -> set[int]:
    """The partitions ``source`` delivered records from (added to ``read``), polling ``poll_s`` at
    a time with ``pause_s`` between polls, until they include ``want`` or 60 s have passed."""
    read = set() if read is None else read
    deadline = time.monotonic() + 60
    while not want <= read and time.monotonic() < deadline:
        read.update(entry.raw.partition for entry in source.poll(20, poll_s).entries)
        time.sleep(pause_s)
    return read


def test_a_member_polling_with_short_timeouts_finishes_the_rebalance_that_new_partitions_start(
    pipeline: Pipeline,
) -> None:
    """Polls of 10 ms end inside the leader's JoinGroup/SyncGroup round trip; kafka-python 3.0.12
    alone then forgets the join (backscroll.indexer.kafka.rejoin) and never reads the new partition."""
    _send(pipeline)
    source = KafkaSource(pipeline.kafka, pipeline.indexer)
    every = set(range(pipeline.kafka.partitions))
    try:
        read = _read_partitions(source, every, poll_s=0.2)
        assert read == every, f"records from {sorted(read)} only"
        _add_partition(pipeline)
        new = pipeline.kafka.partitions
        producer = KafkaProducer(**pipeline.kafka.client_config())
        try:
            for i in range(5):
                value = orjson.dumps(_event("r-new", i))
                producer.send(pipeline.kafka.topic, key=b"r-new", value=value, partition=new)
            producer.flush(timeout=60)
        finally:
            producer.close()
        # the leader sees the new partition within metadata_max_age
        _read_partitions(source, {new}, poll_s=0.01, read=read)
        assert new in read, f"nothing read from the new partition {new} in 60 s"
    finally:
        source.close()


def test_a_member_whose_joins_finish_between_its_polls_still_gets_its_partitions(
    pipeline: Pipeline,
) -> None:
    """Polls of 0 ms, 0.3 s apart: every join's answer arrives while no poll waits for it.
    kafka-python 3.0.12 alone drops each one and joins again, and never reads a record."""
    _send(pipeline)
    source = KafkaSource(pipeline.kafka, pipeline.indexer)
    every = set(range(pipeline.kafka.partitions))
    try:
        read = _read_partitions(source, every, poll_s=0.0, pause_s=0.3)
        assert read == every, f"records from {sorted(read)} only"
    finally:
        source.close()
