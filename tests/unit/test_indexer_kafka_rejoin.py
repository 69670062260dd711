"""kafka_rejoin: a join in flight keeps the poll driving it; a finished one is not dropped."""

from __future__ import annotations

import asyncio
from typing import Any

from kafka import KafkaConsumer

from backscroll.indexer.kafka.rejoin import (
    claim_finished_joins,
    count_pending_joins,
    finish_interrupted_joins,
)


class _Coordinator:
    """The two members of kafka-python 3's group coordinator that the rule reads."""

    def __init__(self) -> None:
        self.rejoining = False
        self.snapshot_differs = False
        self._generation: object = "generation 1"
        self.round_trips = 0
        self.completed: list[object] = []

    def need_rejoin(self) -> bool:
        return self.snapshot_differs

    async def _do_join_and_sync_async(self) -> object:
        self.round_trips += 1
        return f"assignment {self.round_trips}"

    async def _on_join_complete_async(self, *args: Any) -> None:
        self.completed.append(args[-1])


class _Consumer:
    def __init__(self) -> None:
        self._coordinator = _Coordinator()


def test_a_join_in_flight_counts_as_a_rejoin_needed() -> None:
    consumer = _Consumer()
    coordinator = consumer._coordinator
    assert count_pending_joins(consumer)
    assert not coordinator.need_rejoin()
    coordinator.snapshot_differs = True  # the metadata changed: a rebalance to start
    assert coordinator.need_rejoin()
    coordinator.rejoining = True  # the leader refreshed its snapshot mid-join: still to finish
    coordinator.snapshot_differs = False
    assert coordinator.need_rejoin()
    coordinator.rejoining = False  # the join completed
    assert not coordinator.need_rejoin()


def test_applying_the_rule_twice_wraps_once() -> None:
    consumer = _Consumer()
    assert count_pending_joins(consumer) and count_pending_joins(consumer)
    wrapped = consumer._coordinator.need_rejoin
    assert count_pending_joins(consumer)
    assert consumer._coordinator.need_rejoin is wrapped
    consumer._coordinator.rejoining = True
    assert consumer._coordinator.need_rejoin()


def test_a_consumer_of_another_shape_is_left_as_it_is() -> None:
    assert not count_pending_joins(object())
    assert not count_pending_joins(_NoFlag())
    assert not claim_finished_joins(object())
    assert not claim_finished_joins(_NoFlag())
    assert not finish_interrupted_joins(_NoFlag())


def _join(coordinator: _Coordinator) -> object:
    join: Any = coordinator._do_join_and_sync_async
    return asyncio.run(join())


def _complete(coordinator: _Coordinator, assignment: object) -> None:
    complete: Any = coordinator._on_join_complete_async
    asyncio.run(complete(1, "member", "range", assignment))


def test_a_finished_join_no_poll_waited_for_is_handed_to_the_next_attempt() -> None:
    consumer = _Consumer()
    coordinator = consumer._coordinator
    assert claim_finished_joins(consumer) and claim_finished_joins(consumer)
    assert _join(coordinator) == "assignment 1"  # finished between two polls: never completed
    assert _join(coordinator) == "assignment 1"  # the next attempt: no new round trip
    assert coordinator.round_trips == 1
    _complete(coordinator, "assignment 1")
    assert coordinator.completed == ["assignment 1"]
    assert _join(coordinator) == "assignment 2"  # the next rebalance asks the broker again


def test_a_finished_join_of_an_older_generation_is_not_handed_on() -> None:
    consumer = _Consumer()
    coordinator = consumer._coordinator
    assert claim_finished_joins(consumer)
    assert _join(coordinator) == "assignment 1"
    coordinator._generation = "no generation"  # reset by an error meanwhile
    assert _join(coordinator) == "assignment 2"
    assert coordinator.round_trips == 2


class _NoFlag:
    class _Inner:
        def need_rejoin(self) -> bool:
            return False

    _coordinator = _Inner()


def test_the_installed_kafka_python_has_the_members_the_rule_reads() -> None:
    """A kafka-python that renamed them would silently lose the rule: this test says so first."""
    consumer = KafkaConsumer(bootstrap_servers="127.0.0.1:1", group_id="g", api_version=(2, 8))
    try:
        assert finish_interrupted_joins(consumer)
    finally:
        consumer.close(autocommit=False)
