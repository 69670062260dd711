"""Pipelined batches: batches are polled and projected while earlier ones are being written.

Used by :class:`~backscroll.indexer.runner.Runner` when built with ``pipeline=True`` (views whose
writes are thread-safe and need no per-batch transaction: OpenSearch). A batch's actions are split
into per-session **write lanes** (a session always maps to the same lane; each lane is one thread
writing its requests in submission order), so batch N+1's requests start on a lane as soon as that
lane is done with batch N, while N's slower lane finishes: the view never idles between batches.

The contract is the serial one:

- a batch is committed only after every write of it is acknowledged, and batches are committed
  strictly in order;
- the writes of one session never overtake each other (one lane, FIFO), and once a lane's write
  fails, the later writes queued on that lane are not sent: per session, what reached the view is
  always a prefix of what was projected;
- a batch that fails takes every later batch in flight (and the records polled after them) with
  it: all of them are waited for, forgotten and polled again from the earliest first offset;
- before partitions are revoked, every batch in flight finishes and is left uncommitted, and the
  source is rewound to its first offsets.
"""

from __future__ import annotations

import logging
import time
import zlib
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field

from backscroll.indexer.batch import BatchProcessor, PreparedBatch
from backscroll.indexer.errors import ViewUnavailable
from backscroll.indexer.metrics import IndexerMetrics
from backscroll.indexer.ports import (
    Entry,
    EntrySource,
    InvalidEntry,
    SessionView,
    WriteResult,
    through_and_first,
)
from backscroll.indexer.projector import Action

__all__ = ["Batch", "PipelinedSteps", "WriteLane", "earliest", "lane_of"]

log = logging.getLogger("backscroll.indexer")


def lane_of(routing: str, lanes: int) -> int:
    """The write lane of a session (its routing key): stable across batches and processes."""
    return zlib.crc32(routing.encode()) % lanes if lanes > 1 else 0


class WriteLane:
    """One thread writing one share of the sessions, in submission order."""

    def __init__(self, index: int) -> None:
        self.index = index
        self.pool = ThreadPoolExecutor(1, thread_name_prefix=f"backscroll-write-{index}")
        #: Set by a failed write on this lane's thread; the writes queued after it are not sent.
        #: Cleared only once nothing is in flight any more.
        self.failed = False

    def close(self) -> None:
        self.pool.shutdown(wait=True)


@dataclass
class Batch:
    """A polled batch between its projection and its commit."""

    entries: list[Entry | InvalidEntry]
    prepared: PreparedBatch
    through: dict[int, int]
    first: dict[int, int]
    started: float
    #: The batch's lane writes: (positions in ``prepared.actions``, the write).
    writes: list[tuple[list[int], Future[list[WriteResult]]]] = field(default_factory=list)

    def written(self) -> bool:
        """Whether every write of the batch has finished (acknowledged or failed)."""
        return all(future.done() for _, future in self.writes)

    def wait(self) -> None:
        """Wait until every write of the batch has finished, whatever its outcome."""
        wait([future for _, future in self.writes])

    def results(self) -> list[WriteResult]:
        """The write results in action order; raises the first lane's failure (after waiting for
        every lane, so that nothing of the batch is still being written when this raises)."""
        self.wait()
        parts = [(positions, future.result()) for positions, future in self.writes]
        if any(len(positions) != len(results) for positions, results in parts):
            return [result for _, results in parts for result in results]
        merged: list[WriteResult | None] = [None] * len(self.prepared.actions)
        for positions, results in parts:
            for position, result in zip(positions, results, strict=True):
                merged[position] = result
        return [result for result in merged if result is not None]


def earliest(a: dict[int, int], b: dict[int, int]) -> dict[int, int]:
    """Per partition, the lower of two first offsets."""
    out = dict(a)
    for partition, offset in b.items():
        out[partition] = min(offset, out.get(partition, offset))
    return out


class PipelinedSteps:
    """The pipelined step of the runner (a mixin: the runner provides the attributes and the
    serial building blocks declared here)."""

    source: EntrySource
    view: SessionView
    processor: BatchProcessor
    metrics: IndexerMetrics
    batch_max: int
    poll_timeout_s: float
    _inflight: deque[Batch]
    _lanes: list[WriteLane]
    #: Batches written at once at most: while the oldest finishes its slower lane, the next one's
    #: requests already run on the lanes that are free.
    max_inflight: int = 2

    def _complete(self, batch: Batch, results: list[WriteResult], rewind_to: dict[int, int]) -> int:
        raise NotImplementedError

    def _abandon(self, first: dict[int, int]) -> None:
        raise NotImplementedError

    def _step_pipelined(self) -> int:
        """Poll and project a batch while the earlier ones are written, commit those whose writes
        are done (in order, waiting for the oldest while ``max_inflight`` are in flight), then send
        the new one. Everything in flight is finished before anything resets the session states (a
        new assignment, an idle log); on Kafka it completes before the partitions are revoked (and
        is left uncommitted, see :meth:`_before_revoke`). If a batch fails, every later one is
        dropped too and all of them are polled again. Returns how many records moved forward."""
        try:
            poll = self.source.poll(self.batch_max, self.poll_timeout_s)
        except BaseException:
            self._drop_inflight({})
            raise
        held = through_and_first(poll.entries)[1]
        done = 0
        if poll.assignment_changed:
            committed, done = self._drain(held, keep=0)
            self.processor.forget_states()
            self.metrics.lag.clear()
            if not committed:
                return 0
        if not poll.entries:
            return self._drain({}, keep=0)[1] + done
        started = time.monotonic()
        through, first = through_and_first(poll.entries)
        try:
            prepared = self.processor.prepare(poll.entries)
        except BaseException:
            self._drop_inflight(first)
            raise
        committed, drained = self._drain(first, keep=self.max_inflight - 1)
        if not committed:
            return 0
        self._submit(Batch(poll.entries, prepared, through, first, started))
        return done + drained + len(poll.entries)

    def _submit(self, batch: Batch) -> None:
        """Queue the batch's actions on the lanes of their sessions (in action order per lane)."""
        actions = batch.prepared.actions
        positions: list[list[int]] = [[] for _ in self._lanes]
        lanes: dict[str, int] = {}
        for position, action in enumerate(actions):
            index = lanes.get(action.routing)
            if index is None:
                index = lanes[action.routing] = lane_of(action.routing, len(self._lanes))
            positions[index].append(position)
        for lane, mine in zip(self._lanes, positions, strict=True):
            if mine:
                part = [actions[p] for p in mine]
                batch.writes.append((mine, lane.pool.submit(self._write_lane, lane, part)))
        self._inflight.append(batch)

    def _write_lane(self, lane: WriteLane, actions: list[Action]) -> list[WriteResult]:
        # On the lane's thread: it only writes. It must not touch the session states, which the
        # projecting thread is advancing meanwhile (a failed batch is forgotten there, in _drain).
        if lane.failed:
            raise ViewUnavailable(f"not written: an earlier write on lane {lane.index} failed")
        try:
            return self.view.write(actions)
        except BaseException:
            lane.failed = True
            raise

    def _drain(self, held: dict[int, int], *, keep: int) -> tuple[bool, int]:
        """Commit, oldest first, the batches in flight whose writes are done, waiting for the oldest
        while more than ``keep`` are in flight. ``held``: first offsets of records polled after them
        and not sent yet, rewound with them if one fails. Returns (whether every batch taken was
        committed; how many records were committed)."""
        done = 0
        while self._inflight and (len(self._inflight) > keep or self._inflight[0].written()):
            batch = self._inflight.popleft()
            rewind_to = earliest(batch.first, held)
            try:
                results = batch.results()
            except BaseException:
                self._abandon(rewind_to)  # takes the later batches in flight with it
                raise
            moved = self._complete(batch, results, rewind_to)
            if not moved:
                return False, done
            done += moved
        return True, done

    def _drop_inflight(self, held: dict[int, int]) -> None:
        """Forget every batch in flight (after their writes have finished, whatever their outcome)
        and the records polled after them."""
        if self._inflight or held:
            self._abandon(held)

    def _forget_inflight(self) -> dict[int, int]:
        """Wait for every batch in flight to finish writing and forget them uncommitted; their
        earliest first offsets (the runner's abandon rewinds there). Nothing is in flight after."""
        first: dict[int, int] = {}
        while self._inflight:
            batch = self._inflight.popleft()
            batch.wait()
            first = earliest(first, batch.first)
        for lane in self._lanes:  # every write has finished: the lanes may send again
            lane.failed = False
        return first

    def _before_revoke(self) -> None:
        """Called by the source inside a poll, before its partitions are revoked (on kafka-python's
        network thread, where no blocking Kafka call is allowed). Waits until every write in flight
        has finished, so the partitions' next owner restores states from a view this worker no
        longer writes to, then forgets those batches uncommitted: the next owner (maybe this worker)
        projects them again from the committed offsets, as replays.

        The source is rewound to the forgotten batches' first offsets as well: kafka-python (3.x)
        keeps the fetch position of a partition handed back to the same member, so without the
        rewind this worker would go on after them, and the commits, dead letters and the group's
        "caught up" of those records would never come."""
        if not self._inflight:
            return
        self._abandon({})  # its rewind is a local seek on Kafka: allowed inside the poll
        log.info("rebalance: the batches in flight are left uncommitted and will be read again")
