"""Headroom for Python's garbage collector during long bulk work (indexing, bulk appends).

Used by :meth:`~backscroll.indexer.runner.Runner.run` and by the command line's bulk loads
(``backscroll append FILE``), so that the process's collector follows one policy whatever runs.
"""

from __future__ import annotations

import contextlib
import gc
import threading
from collections.abc import Iterator
from typing import Final

__all__ = ["GC_THRESHOLDS", "gc_headroom"]

#: Collector thresholds during bulk work. CPython's defaults (700, 10, 10) collect the young
#: generation every 700 allocations and the whole heap every hundred of those; indexing or loading
#: allocates a few dozen objects per record, most freed by reference counting at once, and holds
#: long-lived state (session states, batches in flight, validators, clients), which every full
#: collection walks again. Measured on 100,000 events: 6.9-7.8 s of indexer CPU with the defaults,
#: 5.2-7.3 s with these; on the embedded index step about a third of the decoding time went to
#: collections.
GC_THRESHOLDS: Final = (100_000, 50, 100)
_lock = threading.Lock()
_users = 0
_saved: tuple[int, int, int] | None = None


@contextlib.contextmanager
def gc_headroom() -> Iterator[None]:
    """Raise the collector's thresholds (never lower them) while the block runs; the process's own
    thresholds come back when the last such block ends (blocks may nest or overlap in threads)."""
    global _users, _saved
    with _lock:
        if _users == 0:
            _saved = gc.get_threshold()
            gc.set_threshold(*(max(a, b) for a, b in zip(_saved, GC_THRESHOLDS, strict=True)))
        _users += 1
    try:
        yield
    finally:
        with _lock:
            _users -= 1
            if _users == 0 and _saved is not None:
                gc.set_threshold(*_saved)
                _saved = None
