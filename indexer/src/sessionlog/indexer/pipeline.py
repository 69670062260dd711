"""Pipelined batches: the next batch is polled and projected while the current one is written.

Used by :class:`~sessionlog.indexer.runner.Runner` when built with ``pipeline=True`` (views whose
writes are thread-safe and need no per-batch transaction: OpenSearch). The contract is the serial
one: a batch is committed only after its writes are acknowledged, never after the next one, and a
batch that fails takes the next one (already polled) with it.
"""

from __future__ import annotations

import contextlib
import logging
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

from sessionlog.indexer.batch import BatchProcessor, PreparedBatch
from sessionlog.indexer.metrics import IndexerMetrics
from sessionlog.indexer.ports import (
    Entry,
    EntrySource,
    InvalidEntry,
    SessionView,
    WriteResult,
    through_and_first,
)

__all__ = ["Batch", "PipelinedSteps", "earliest"]

log = logging.getLogger("sessionlog.indexer")


@dataclass
class Batch:
    """A polled batch between its projection and its commit."""

    entries: list[Entry | InvalidEntry]
    prepared: PreparedBatch
    through: dict[int, int]
    first: dict[int, int]
    started: float
    future: Future[list[WriteResult]] | None = None


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
    _inflight: Batch | None
    _pool: ThreadPoolExecutor | None

    def _complete(self, batch: Batch, results: list[WriteResult], rewind_to: dict[int, int]) -> int:
        raise NotImplementedError

    def _abandon(self, first: dict[int, int]) -> None:
        raise NotImplementedError

    def _step_pipelined(self) -> int:
        """Poll and project batch N+1 while the write of batch N is in flight, then commit N and
        send N+1. N is finished before anything resets the session states (a new assignment, an
        idle log); on Kafka its write completes before the partitions are revoked (it is then left
        uncommitted, see :meth:`_before_revoke`). If N fails, N+1 is dropped too and both are
        polled again. Returns how many records moved forward (0: none)."""
        try:
            poll = self.source.poll(self.batch_max, self.poll_timeout_s)
        except BaseException:
            self._drop_inflight({})
            raise
        held = through_and_first(poll.entries)[1]
        done = 0
        if poll.assignment_changed:
            committed, done = self._drain(held)
            self.processor.forget_states()
            self.metrics.lag.clear()
            if not committed:
                return 0
        if not poll.entries:
            return self._drain({})[1] + done
        started = time.monotonic()
        through, first = through_and_first(poll.entries)
        try:
            prepared = self.processor.prepare(poll.entries)
        except BaseException:
            self._drop_inflight(first)
            raise
        committed, drained = self._drain(first)
        if not committed:
            return 0
        assert self._pool is not None
        batch = Batch(poll.entries, prepared, through, first, started)
        # The writer thread only writes: it must not touch the session states, which this thread
        # is advancing over the next batch meanwhile (a failed write is forgotten here, in _drain).
        batch.future = self._pool.submit(self.view.write, prepared.actions)
        self._inflight = batch
        return done + drained + len(poll.entries)

    def _drain(self, held: dict[int, int]) -> tuple[bool, int]:
        """Wait for the in-flight write and commit its batch. ``held``: first offsets of records
        polled after it and not written yet, rewound with it if it fails. Returns (whether the
        in-flight batch, if any, is committed; how many records it committed)."""
        batch, self._inflight = self._inflight, None
        if batch is None:
            return True, 0
        rewind_to = earliest(batch.first, held)
        assert batch.future is not None
        try:
            results = batch.future.result()
        except BaseException:
            self._abandon(rewind_to)
            raise
        done = self._complete(batch, results, rewind_to)
        return done > 0, done

    def _drop_inflight(self, held: dict[int, int]) -> None:
        """Forget the in-flight batch (after its write has finished, whatever its outcome) and the
        records polled after it."""
        batch, self._inflight = self._inflight, None
        if batch is None:
            if held:
                self._abandon(held)
            return
        assert batch.future is not None
        with contextlib.suppress(BaseException):
            batch.future.result()
        self._abandon(earliest(batch.first, held))

    def _before_revoke(self) -> None:
        """Called by the source inside a poll, before its partitions are revoked (on kafka-python's
        network thread, where no blocking Kafka call is allowed). Waits until the in-flight write
        has finished, so the partitions' next owner restores states from a view this worker no
        longer writes to, then forgets the batch uncommitted: the next owner (maybe this worker)
        projects it again from the committed offsets, as replays."""
        batch, self._inflight = self._inflight, None
        if batch is None:
            return
        assert batch.future is not None
        with contextlib.suppress(BaseException):
            batch.future.result()
        self.processor.forget_states()
        self.view.settle(False)
        log.info("rebalance: the batch in flight is left uncommitted for the partitions' next owner")
