"""What the operator actions of both backends share: the report of a rebuild, its progress callback,
and the compaction that ends it.

The actions themselves live with their backend: :mod:`backscroll.indexer.sqlite.operations` (the
embedded file) and :mod:`backscroll.indexer.opensearch.operations` (index versions replayed from
Kafka). Dead letters are listed and replayed through :class:`~backscroll.indexer.ports.DeadLetters`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from backscroll.indexer.errors import IndexerError
from backscroll.indexer.ports import SessionView
from backscroll.indexer.runner import RunStats

__all__ = ["Progress", "RebuildReport", "compact_quietly"]

log = logging.getLogger("backscroll.indexer")

#: Called after every batch with the run's stats and the records still to project (as last read:
#: the runner reads the lag every few seconds, not per batch).
Progress = Callable[[RunStats, int], None]


def compact_quietly(view: SessionView) -> None:
    """Compact a replayed view; a failure (a role without the force-merge permission, a merge that
    outlasts its timeout) is logged, not raised: the view is complete without it."""
    try:
        view.compact()
    except IndexerError as err:
        log.warning("the rebuilt projection was not compacted (searches work, maybe slower): %s", err)


@dataclass(frozen=True)
class RebuildReport:
    """What a rebuild did (versions are 0 on the embedded backend, which has none)."""

    old_version: int
    new_version: int
    stats: RunStats
    seconds: float
    kept_old: bool
