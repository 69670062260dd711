"""The process-wide cache of persisted logs the OpenSearch read engine keeps between reads.

Event documents are append-only (the indexer ``create``\\s them; later updates touch only the
surface state, which reads recompute), so a log's skeleton (everything but text) and its fold can
be kept and extended by the events that follow it. The cache is bounded by the total number of
entries (:data:`LOG_CACHE_ENTRIES`), least recently read logs going first.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from backscroll.indexer.fold import FoldEvent, FoldResult, SurfaceState
from backscroll.query.reads import LogEntry

__all__ = ["LOG_CACHE", "LOG_CACHE_ENTRIES", "CachedLog", "LogCache", "clear_log_cache"]

#: Event skeletons the process-wide log cache keeps, over all sessions (least recently read go first).
LOG_CACHE_ENTRIES: Final = 100_000


@dataclass(frozen=True, slots=True)
class CachedLog:
    """A persisted log without text and its fold. Shared between reads: never mutated."""

    entries: tuple[LogEntry, ...]
    events: tuple[FoldEvent, ...]
    state: SurfaceState
    folded: FoldResult

    @classmethod
    def build(cls, entries: Sequence[LogEntry], base: CachedLog | None = None) -> CachedLog:
        """The log ``base.entries + entries`` (or ``entries``), folded incrementally from ``base``."""
        state = base.state.copy() if base is not None else SurfaceState()
        events = tuple(entry.fold_event() for entry in entries)
        for event in events:
            state.apply(event)
        if base is not None:
            return cls((*base.entries, *entries), (*base.events, *events), state, state.result())
        return cls(tuple(entries), events, state, state.result())


class LogCache:
    """Process-wide LRU of :class:`CachedLog`, bounded by the total number of entries."""

    def __init__(self, max_entries: int) -> None:
        self.max_entries = max_entries
        self._lock = threading.Lock()
        self._logs: OrderedDict[tuple[str, ...], CachedLog] = OrderedDict()
        self._total = 0

    def get(self, key: tuple[str, ...]) -> CachedLog | None:
        with self._lock:
            log = self._logs.get(key)
            if log is not None:
                self._logs.move_to_end(key)
            return log

    def put(self, key: tuple[str, ...], log: CachedLog) -> None:
        with self._lock:
            old = self._logs.pop(key, None)
            if old is not None:
                self._total -= len(old.entries)
            if len(log.entries) > self.max_entries:
                return
            self._logs[key] = log
            self._total += len(log.entries)
            while self._total > self.max_entries:
                _, evicted = self._logs.popitem(last=False)
                self._total -= len(evicted.entries)

    def drop(self, key: tuple[str, ...]) -> None:
        with self._lock:
            old = self._logs.pop(key, None)
            if old is not None:
                self._total -= len(old.entries)

    def clear(self) -> None:
        with self._lock:
            self._logs.clear()
            self._total = 0


LOG_CACHE: Final = LogCache(LOG_CACHE_ENTRIES)


def clear_log_cache() -> None:
    """Forget every cached log skeleton (tests and benchmarks measuring cold reads)."""
    LOG_CACHE.clear()
