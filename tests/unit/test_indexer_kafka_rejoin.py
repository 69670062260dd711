"""count_pending_joins: a join in flight keeps the group's poll driving it (kafka_rejoin's docstring)."""

from __future__ import annotations

from kafka import KafkaConsumer

from sessionlog.indexer.kafka_rejoin import count_pending_joins


class _Coordinator:
    """The two members of kafka-python 3's group coordinator that the rule reads."""

    def __init__(self) -> None:
        self.rejoining = False
        self.snapshot_differs = False

    def need_rejoin(self) -> bool:
        return self.snapshot_differs


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


class _NoFlag:
    class _Inner:
        def need_rejoin(self) -> bool:
            return False

    _coordinator = _Inner()


def test_the_installed_kafka_python_has_the_members_the_rule_reads() -> None:
    """A kafka-python that renamed them would silently lose the rule: this test says so first."""
    consumer = KafkaConsumer(bootstrap_servers="127.0.0.1:1", group_id="g", api_version=(2, 8))
    try:
        assert count_pending_joins(consumer)
    finally:
        consumer.close(autocommit=False)
