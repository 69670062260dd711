"""Garbage-collector settings for a process whose main work is the indexer (``sessionlog index``,
``sessionlog rebuild``).

A batch allocates tens of thousands of short-lived containers (decoded records, documents,
actions) and frees them all when it is committed. With CPython's default thresholds (a young
collection every 700 allocations) the collector ran hundreds of times per batch and, as the
process's long-lived state (session states, the vocabulary cache) grew, its older generations
were traversed again and again: measured, a fifth to a third of the catch-up's decoding time.
The indexer's process collects less often: garbage is still collected, a few batches later at
most, so memory stays bounded.
"""

from __future__ import annotations

import gc
from typing import Final

__all__ = ["INDEXER_GC_THRESHOLDS", "tune_gc_for_indexing"]

#: ``gc.set_threshold`` of an indexing process: a young collection every 50,000 allocations.
INDEXER_GC_THRESHOLDS: Final = (50_000, 20, 10)


def tune_gc_for_indexing() -> None:
    """Freeze what is alive now (modules, settings: never garbage) and collect less often.
    Process-wide: call it from a command that runs the indexer, not from a library."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(*INDEXER_GC_THRESHOLDS)
