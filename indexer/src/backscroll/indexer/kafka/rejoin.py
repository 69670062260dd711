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

A second gap of the same code: a join whose round trip finished while no poll was waiting for it
(between two polls) is dropped, and the next poll sends a new JoinGroup, which starts one more
rebalance of the whole group. A caller whose polls are short next to the time between them never
gets a partition at all (polls of 0 ms 0.3 s apart: nothing in 40 s). :func:`claim_finished_joins`
keeps the answer of such a join and hands it to the next attempt while the member's generation is
still the one it was given in (the Java client also completes a finished join on the next poll).
"""

from __future__ import annotations

import inspect
import logging
from typing import Any

__all__ = ["claim_finished_joins", "count_pending_joins", "finish_interrupted_joins"]

log = logging.getLogger("backscroll.indexer")


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


def claim_finished_joins(consumer: Any) -> bool:
    """Hand a join's finished answer that no poll waited for to the next join attempt.

    Returns whether the consumer was changed (False for a consumer of another shape)."""
    coordinator: Any = getattr(consumer, "_coordinator", None)
    join = getattr(coordinator, "_do_join_and_sync_async", None)
    complete = getattr(coordinator, "_on_join_complete_async", None)
    if not (
        inspect.iscoroutinefunction(join)
        and inspect.iscoroutinefunction(complete)
        and hasattr(coordinator, "_generation")
    ):
        log.debug("kafka-python's coordinator has no join round trip of the known shape; left as it is")
        return False
    if getattr(join, "claims_finished_joins", False):
        return True
    unclaimed: list[tuple[Any, Any]] = []  # (generation, assignment) of a join no poll completed

    async def join_and_sync() -> Any:
        if unclaimed:
            generation, assignment = unclaimed.pop()
            if generation == coordinator._generation:
                return assignment
        assignment = await join()
        unclaimed[:] = [(coordinator._generation, assignment)]
        return assignment

    async def on_join_complete(*args: Any, **kwargs: Any) -> Any:
        unclaimed.clear()
        return await complete(*args, **kwargs)

    join_and_sync.claims_finished_joins = True  # type: ignore[attr-defined]
    coordinator._do_join_and_sync_async = join_and_sync
    coordinator._on_join_complete_async = on_join_complete
    return True


def finish_interrupted_joins(consumer: Any) -> bool:
    """Both rules above; returns whether both could be installed."""
    pending = count_pending_joins(consumer)
    finished = claim_finished_joins(consumer)
    return pending and finished
