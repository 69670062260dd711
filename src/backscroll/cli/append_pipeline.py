"""The input side of ``backscroll append``: numbered lines in bounded chunks, validated and encoded
in order, in worker processes when the input is big and the machine has a spare CPU.

Validation and encoding (:func:`~backscroll.ingest.bulk.prepare_lines`) cost more than the
append itself on both backends, and they are pure: on a large input they run in ``spawn``-ed
worker processes (never a ``fork`` of a process whose Kafka threads may hold locks) while this
process appends the previous chunk. Results come back in input order, at most a few chunks
ahead, so memory stays bounded and a session's records keep their order. If a worker cannot be
started or dies, the chunk is prepared here instead: a slower run, never a lost record.
"""

from __future__ import annotations

import gc
import logging
import os
import time
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING, Final, Self

if TYPE_CHECKING:
    from concurrent.futures import Future, ProcessPoolExecutor

    from backscroll.ingest.bulk import EncodedRecord, Rejection

# The ingest modules (pydantic models) load when an append runs, not when the CLI starts.

__all__ = [
    "BATCH_BYTES",
    "BATCH_RECORDS",
    "EMBEDDED_BATCH_RECORDS",
    "PARALLEL_MIN_BYTES",
    "Chunk",
    "Preparer",
    "auto_workers",
    "bulk_gc",
    "busy_cpus",
    "iter_chunks",
    "iter_lines",
]

log = logging.getLogger("backscroll.cli.append")

#: Records per chunk (one ``append_encoded`` call; bounded memory).
BATCH_RECORDS: Final = 2000
#: Records per chunk on the embedded backend, where a chunk is one durable SQLite transaction:
#: three times fewer commits appended the 272k load corpus in 4.50 s against 4.89 s on average
#: (three alternating pairs); on Kafka the chunk size made no measurable difference.
EMBEDDED_BATCH_RECORDS: Final = 6000
#: Bytes per chunk, whatever the record count.
BATCH_BYTES: Final = 8 * 1024 * 1024
#: Input read before worker processes start (a small input is done before they would be ready).
PARALLEL_MIN_BYTES: Final = 8 * 1024 * 1024
_MAX_WORKERS: Final = 4
_CHUNK: Final = 1024 * 1024


def iter_lines(stream: IO[bytes], cap: int) -> Iterator[tuple[int, bytes | None, int]]:
    """``(line number, bytes or None, size)`` for every non-blank line; ``None`` when the line is
    longer than ``cap`` bytes (its size is then counted in chunks, never buffered)."""
    limit = cap + 2  # the record plus "\r\n"
    number = 0
    while True:
        line = stream.readline(limit)
        if not line:
            return
        number += 1
        if len(line) == limit and not line.endswith(b"\n"):
            size = len(line)
            while True:
                chunk = stream.readline(_CHUNK)
                size += len(chunk)
                if not chunk or chunk.endswith(b"\n"):
                    break
            yield number, None, size
            continue
        if line.strip():
            yield number, line, len(line)


@dataclass
class Chunk:
    """Consecutive input lines: the candidate records, the lines over the cap (already rejected),
    the number of the last line read and the input bytes read so far."""

    lines: list[tuple[int, bytes]] = field(default_factory=list)
    oversize: list[Rejection] = field(default_factory=list)
    last_line: int = 0
    done_bytes: int = 0


def iter_chunks(stream: IO[bytes], cap: int, records: int = BATCH_RECORDS) -> Iterator[Chunk]:
    """The input in chunks of at most ``records`` lines / :data:`BATCH_BYTES`."""
    from backscroll.ingest.bulk import Rejection

    chunk, size, done = Chunk(), 0, 0
    for number, line, length in iter_lines(stream, cap):
        done += length
        chunk.last_line, chunk.done_bytes = number, done
        if line is None:
            reason = f"record: line is {length} bytes, over the {cap} byte line limit"
            chunk.oversize.append(Rejection(number, "record", reason))
            continue
        chunk.lines.append((number, line))
        size += length
        if len(chunk.lines) >= records or size >= BATCH_BYTES:
            yield chunk
            chunk, size = Chunk(last_line=number, done_bytes=done), 0
    if chunk.lines or chunk.oversize:
        yield chunk


@contextmanager
def bulk_gc() -> Iterator[None]:
    """Garbage collection for a bulk load: the objects that exist when it starts (modules, the
    validators, the clients) are frozen out of every collection, and the collector gets the
    indexer's headroom (:func:`~backscroll.indexer.collector.gc_headroom`). A load allocates a few
    objects per record and frees nearly all of them by reference counting; the default thresholds
    made the collector re-scan every live object over and over, about a sixth of the CPU on the
    Kafka path. Restored on exit (the command may run inside a longer-lived process)."""
    from backscroll.indexer.collector import gc_headroom

    gc.freeze()
    try:
        with gc_headroom():
            yield
    finally:
        gc.unfreeze()


def auto_workers() -> int:
    """Worker processes worth starting: one per idle CPU beyond this process's own, up to 4. On a
    busy machine a worker only adds its start-up and the copying of every record (measured: a
    loaded 2-CPU machine appends faster without one). CPUs in use are measured now (``/proc/stat``
    over 0.1 s); where that cannot be read, the load average stands in, which still counts work
    that ended up to a minute ago (a load after a CPU-heavy step then ran without a worker)."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    busy = busy_cpus()
    if busy is None:
        try:
            busy = os.getloadavg()[0]
        except (AttributeError, OSError):  # no load average on this platform
            busy = 0.0
    return max(0, min(cpus - 1, round(cpus - busy - 1), _MAX_WORKERS))


def _cpu_ticks() -> tuple[int, int] | None:
    """(all, idle) CPU ticks of the machine since boot, or None where ``/proc/stat`` is missing."""
    try:
        with open("/proc/stat", "rb") as stat:
            fields = stat.readline().split()
    except OSError:
        return None
    if len(fields) < 5 or fields[0] != b"cpu":
        return None
    ticks = [int(value) for value in fields[1:9]]  # guest time is counted in user time already
    return sum(ticks), ticks[3] + ticks[4]  # idle and iowait


def busy_cpus(window_s: float = 0.1) -> float | None:
    """How many of the machine's CPUs were busy during the next ``window_s`` seconds (None where
    it cannot be measured)."""
    first = _cpu_ticks()
    if first is None:
        return None
    time.sleep(window_s)
    second = _cpu_ticks()
    if second is None or second[0] <= first[0]:
        return None
    spent, idle = second[0] - first[0], second[1] - first[1]
    return (spent - idle) / spent * (os.cpu_count() or 1)


if TYPE_CHECKING:
    Prepared = tuple[Chunk, list[EncodedRecord], list[Rejection]]


def _merged(chunk: Chunk, records: list[EncodedRecord], rejections: list[Rejection]) -> Prepared:
    if chunk.oversize:
        rejections = sorted([*chunk.oversize, *rejections])
    return chunk, records, rejections


class Preparer:
    """Prepares chunks in input order (:meth:`run`), in ``workers`` worker processes once the
    input passed :data:`PARALLEL_MIN_BYTES` (at once with ``eager``: an input known to be that
    big starts them while the log opens). A context manager: leaving it stops the workers."""

    def __init__(self, workers: int, *, eager: bool = False) -> None:
        self.workers = workers
        self._pool: ProcessPoolExecutor | None = None
        if eager and workers > 0:
            self._pool = _start(workers)
            if self._pool is None:
                self.workers = 0

    def run(self, chunks: Iterator[Chunk]) -> Iterator[Prepared]:
        """Each chunk with its encoded records and its rejections (in line order)."""
        pending: deque[tuple[Chunk, Future[tuple[list[EncodedRecord], list[Rejection]]] | None]] = deque()
        for chunk in chunks:
            if self._pool is None and self.workers > 0 and chunk.done_bytes >= PARALLEL_MIN_BYTES:
                self._pool = _start(self.workers)
                if self._pool is None:
                    self.workers = 0
            future = _submit(self._pool, chunk) if self._pool is not None else None
            if self._pool is not None and future is None:
                self.workers = 0  # the pool is broken: the rest is prepared here
                self.close(wait=False)
            pending.append((chunk, future))
            while pending and (pending[0][1] is None or len(pending) > 2 * self.workers + 1):
                yield _result(*pending.popleft())
        while pending:
            yield _result(*pending.popleft())

    def close(self, *, wait: bool = True) -> None:
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=wait, cancel_futures=True)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _start(workers: int) -> ProcessPoolExecutor | None:
    from concurrent.futures import ProcessPoolExecutor
    from multiprocessing import get_context

    try:
        return ProcessPoolExecutor(workers, mp_context=get_context("spawn"))
    except (OSError, ValueError) as err:  # no processes here (sandbox, limits): validate in-process
        log.warning("cannot start validation workers (%s); validating in this process", err)
        return None


def _submit(
    pool: ProcessPoolExecutor, chunk: Chunk
) -> Future[tuple[list[EncodedRecord], list[Rejection]]] | None:
    from concurrent.futures.process import BrokenProcessPool

    from backscroll.ingest.bulk import prepare_lines

    try:
        return pool.submit(prepare_lines, chunk.lines)
    except (OSError, RuntimeError, BrokenProcessPool) as err:
        log.warning("a validation worker failed (%s); validating in this process", err)
        return None


def _result(chunk: Chunk, future: Future[tuple[list[EncodedRecord], list[Rejection]]] | None) -> Prepared:
    from concurrent.futures.process import BrokenProcessPool

    from backscroll.ingest.bulk import prepare_lines

    if future is not None:
        try:
            return _merged(chunk, *future.result())
        except (OSError, BrokenProcessPool) as err:
            log.warning("a validation worker failed (%s); validating this chunk in this process", err)
    return _merged(chunk, *prepare_lines(chunk.lines))
