"""Keeps a kafka-python 3 consumer from forgetting a rebalance that a poll's timeout interrupted.

kafka-python 3.0 (3.0.12 at least) decides whether a poll drives the group's join with
``coordinator.need_rejoin()``. A rebalance that the leader starts because the topic's partitions
changed (partitions added, or a topic whose metadata arrived after the first join) is signalled
only by the leader's assignment snapshot differing from the metadata; the leader refreshes that
snapshot while it computes the new assignment, in the middle of the JoinGroup/SyncGroup round
trip. When the poll's timeout ends inside that round trip, the next poll finds ``need_rejoin()``
false and never finishes the join: the member keeps its heartbeats disabled and owns no
partition, the coordinator evicts it after ``session_timeout``, and it reads nothing, forever.
(Seen in CI: a member stuck from its second generation on; reproduced here in one run of
tests/integration/test_indexer_rebalance.py out of one.)

The Java client counts a join in flight as a reason to poll the group (``rejoinNeededOrPending``);
:func:`count_pending_joins` gives kafka-python's coordinator the same rule, through its public
``rejoining`` flag (true from the revoke callback until the join completes).
"""

from __future__ import annotations

import logging
from typing import Any

__all__ = ["count_pending_joins"]

log = logging.getLogger("sessionlog.indexer")


def count_pending_joins(consumer: Any) -> bool:
    """Make ``consumer``'s group coordinator report a join in flight as a rejoin still needed.

    Returns whether the consumer was changed (False for a consumer without a group coordinator of
    the expected shape: a fake in tests, or a kafka-python that no longer has the attributes).
    """
    coordinator = getattr(consumer, "_coordinator", None)
    need_rejoin = getattr(coordinator, "need_rejoin", None)
    if coordinator is None or not callable(need_rejoin) or not hasattr(coordinator, "rejoining"):
        log.debug("kafka-python's coordinator has no need_rejoin/rejoining; left as it is")
        return False
    if getattr(need_rejoin, "counts_pending_joins", False):
        return True

    def need_rejoin_or_pending() -> bool:
        return bool(coordinator.rejoining) or bool(need_rejoin())

    need_rejoin_or_pending.counts_pending_joins = True  # type: ignore[attr-defined]
    coordinator.need_rejoin = need_rejoin_or_pending
    return True
