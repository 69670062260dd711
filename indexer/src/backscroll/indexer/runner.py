"""The one indexer loop: ``Runner(source, view, dead_letters)`` for every backend.

One batch: poll → project (restore states, write) → park dead letters → commit. Nothing is committed
before every record of the batch is either in the view or parked, so the committed position is
always contiguous. Writes are idempotent, so any batch may be projected again.

Faults: every adapter raises only :class:`~backscroll.indexer.errors.IndexerError`. A retriable one
in any phase abandons the batch (rewind, drop cached states), waits (a view outage: the source is
held so the group keeps the member; anything else: capped backoff) and carries on. A commit refused
because the group rebalanced is a value (:attr:`Commit.ASSIGNMENT_LOST`): the batch's states are
dropped and polling goes on. A non-retriable error stops :meth:`Runner.run` by raising it.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections import defaultdict, deque
from collections.abc import Callable
from dataclasses import dataclass, field

from backscroll.indexer.batch import BatchProcessor
from backscroll.indexer.collector import gc_headroom
from backscroll.indexer.errors import IndexerError, NotCaughtUp, ViewUnavailable
from backscroll.indexer.metrics import IndexerMetrics, MetricsServer
from backscroll.indexer.pipeline import Batch, PipelinedSteps, WriteLane, earliest
from backscroll.indexer.ports import (
    BulkCatchUp,
    Commit,
    DeadLetters,
    EntrySource,
    RevokeAware,
    SessionView,
    WriteResult,
    through_and_first,
)
from backscroll.indexer.watermark import WatermarkPublisher

__all__ = ["RunStats", "Runner"]

log = logging.getLogger("backscroll.indexer")


@dataclass
class RunStats:
    """Counters of one runner (both backends)."""

    consumed: int = 0
    indexed: int = 0
    replays: int = 0
    conflicts: int = 0
    dead_lettered: int = 0
    batches: int = 0
    view_outages: int = 0
    source_outages: int = 0
    rebalances: int = 0
    reasons: dict[str, int] = field(default_factory=lambda: defaultdict(int))


class Runner(PipelinedSteps):
    """Keeps ``view`` current with ``source``, parking what cannot be projected in ``dead_letters``.

    The runner owns the three adapters: :meth:`close` closes them."""

    def __init__(
        self,
        source: EntrySource,
        view: SessionView,
        dead_letters: DeadLetters,
        *,
        batch_max: int = 2000,
        poll_timeout_s: float = 0.5,
        idle_timeout_s: float = 300.0,
        backoff_max_s: float = 5.0,
        watermark_interval_s: float = 1.0,
        behind_watermark_interval_s: float = 5.0,
        metrics_port: int | None = None,
        metrics_host: str = "127.0.0.1",
        pipeline: bool = False,
        write_lanes: int = 2,
        bulk: BulkCatchUp | None = None,
    ) -> None:
        """``pipeline``: project the next batches while the view writes the earlier ones, on
        ``write_lanes`` per-session lanes (a view whose writes are thread-safe and need no per-batch
        transaction, i.e. OpenSearch). ``bulk``: the backend's catch-up, run at the start of
        :meth:`run` before the loop."""
        if batch_max < 1:
            raise ValueError("batch_max must be at least 1")
        self.source = source
        self.view = view
        self.dead_letters = dead_letters
        self.batch_max = batch_max
        self.poll_timeout_s = poll_timeout_s
        self.idle_timeout_s = idle_timeout_s
        self.backoff_max_s = backoff_max_s
        self.metrics = IndexerMetrics()
        self.processor = BatchProcessor(view, self.metrics)
        self.stats = RunStats()
        self._watermark_intervals = (watermark_interval_s, behind_watermark_interval_s)
        self._publisher: WatermarkPublisher | None = None
        self._server = (
            MetricsServer(self.metrics, metrics_port, host=metrics_host) if metrics_port is not None else None
        )
        self._ready = False
        self._worked = False  # a step has completed: the source and the view were reached
        self._last_lag = 0.0
        #: Records not yet committed, summed over the assigned partitions, as last read (every 5 s).
        self.last_lag: int | None = None
        self._lock = threading.Lock()
        self._closed = False
        self.bulk = bulk
        self._inflight: deque[Batch] = deque()
        self._lanes = [WriteLane(i) for i in range(max(1, write_lanes))] if pipeline else []
        if pipeline and isinstance(source, RevokeAware):
            source.before_revoke = self._before_revoke

    @property
    def metrics_port(self) -> int | None:
        return self._server.port if self._server else None

    def _prepare(self) -> None:
        if self._ready:
            return
        self.source.open()  # the log first: a wrong log address is reported before any view work
        self.view.ensure_schema()
        if self.view.publishes_watermarks and self._publisher is None:
            self._publisher = WatermarkPublisher(
                self.view, self.source.topic, self.metrics, *self._watermark_intervals
            )
        self._ready = True

    # -- one batch ------------------------------------------------------------------------------
    def step(self) -> int:
        """Poll, project and commit one batch; the number of records committed (0: none, or the
        commit was refused by a rebalance). Raises indexer errors without retrying."""
        with self._lock:
            if self._closed:
                raise ViewUnavailable("the runner was closed")
            self._prepare()
            consumed = self._step()
            self._worked = True
            return consumed

    def _advance(self) -> int:
        """One step of :meth:`run`: pipelined when the runner was built with ``pipeline``."""
        if not self._lanes:
            return self.step()
        with self._lock:
            if self._closed:
                raise ViewUnavailable("the runner was closed")
            self._prepare()
            moved = self._step_pipelined()
            self._worked = True
            return moved

    def _finish_inflight(self) -> None:
        """Commit the batches in flight when the loop ends (a retriable failure just drops them)."""
        with self._lock:
            try:
                self._drain({}, keep=0)
            except IndexerError as err:
                if not err.retriable:
                    raise
                log.warning("batches in flight dropped at stop: %s", err)

    def _step(self) -> int:
        poll = self.source.poll(self.batch_max, self.poll_timeout_s)
        if poll.assignment_changed:
            self.processor.forget_states()
            self.metrics.lag.clear()
        if not poll.entries:
            return 0
        started = time.monotonic()
        through, first = through_and_first(poll.entries)
        try:
            prepared = self.processor.prepare(poll.entries)
            results = self.processor.write(prepared)
        except BaseException:
            self._abandon(first)
            raise
        return self._complete(Batch(poll.entries, prepared, through, first, started), results, first)

    def _complete(self, batch: Batch, results: list[WriteResult], rewind_to: dict[int, int]) -> int:
        """Park the batch's dead letters and commit it; on any failure forget it (rewinding to
        ``rewind_to``) and re-raise. The number of records committed (0: the group rebalanced)."""
        try:
            result = self.processor.finish(batch.prepared, results)
            self.dead_letters.park(result.letters)
            outcome = self.source.commit(batch.through)
        except BaseException:
            self._abandon(rewind_to)
            raise
        if outcome is Commit.ASSIGNMENT_LOST:
            self._abandon(rewind_to)
            self.stats.rebalances += 1
            self.metrics.errors.labels(error_class="assignment_lost").inc()
            return 0
        self.view.settle(True)
        if self._publisher is not None:
            positions = ((e.raw.partition, e.raw.offset, e.raw.timestamp_ms) for e in batch.entries)
            self._publisher.offer_many(positions)
            self._publisher.pace(len(batch.entries) >= self.batch_max)
        self._count(
            len(batch.entries),
            result.indexed,
            result.replays,
            result.conflicts,
            time.monotonic() - batch.started,
        )
        for letter in result.letters:
            self.stats.dead_lettered += 1
            self.stats.reasons[letter.error_class] += 1
            self.metrics.dead_lettered.labels(reason=letter.error_class).inc()
        return len(batch.entries)

    def _abandon(self, first: dict[int, int]) -> None:
        """Forget an uncommitted batch, and every later one still in flight (once their writes have
        finished): they are polled again (by us or the partition's new owner)."""
        first = earliest(first, self._forget_inflight())
        self.processor.forget_states()
        self.view.settle(False)
        try:
            self.source.rewind(first)
        except IndexerError as err:  # the next poll re-reads from the committed position anyway
            log.warning("rewind failed: %s", err)

    def _count(self, consumed: int, indexed: int, replays: int, conflicts: int, seconds: float) -> None:
        stats, metrics = self.stats, self.metrics
        stats.consumed += consumed
        stats.batches += 1
        stats.indexed += indexed
        stats.replays += replays
        stats.conflicts += conflicts
        metrics.consumed.inc(consumed)
        metrics.indexed.inc(indexed)
        metrics.replays.inc(replays)
        metrics.conflicts.inc(conflicts)
        metrics.first_attempt.inc()
        metrics.batch_seconds.observe(seconds)

    # -- the loop -------------------------------------------------------------------------------
    def run(
        self,
        *,
        until_idle: bool = False,
        stop: threading.Event | None = None,
        on_batch: Callable[[RunStats], None] | None = None,
    ) -> RunStats:
        """Project batches until ``stop`` is set or, with ``until_idle``, until the group's committed
        position reaches the end of the whole log. Retriable faults are survived; a non-retriable
        one is raised. ``until_idle`` raises :class:`NotCaughtUp` after ``idle_timeout_s`` without
        progress (e.g. a partition held by a member that never comes back); before its first
        successful batch a retriable fault also stops an ``until_idle`` run (unreachable servers).
        The run has more headroom for the garbage collector
        (:func:`~backscroll.indexer.collector.gc_headroom`)."""
        with gc_headroom():
            return self._run(until_idle=until_idle, stop=stop, on_batch=on_batch)

    def _run(
        self,
        *,
        until_idle: bool = False,
        stop: threading.Event | None = None,
        on_batch: Callable[[RunStats], None] | None = None,
    ) -> RunStats:
        """The loop of :meth:`run`."""
        stop = stop or threading.Event()
        if self.bulk is not None:
            self._bulk_catch_up(self.bulk, stop, on_batch)
        backoff = 0.0
        deadline: float | None = None
        last_error: IndexerError | None = None
        while not stop.is_set():
            self.metrics.beat()
            try:
                consumed = self._advance()
                self._maybe_lag()
                backoff, last_error = 0.0, None
                if consumed:
                    deadline = None
                    if on_batch:
                        on_batch(self.stats)
                    continue
                if until_idle:
                    if self.source.caught_up():
                        self._publish_now()
                        self.view.refresh()
                        break
                    deadline = deadline or time.monotonic() + self.idle_timeout_s
            except IndexerError as err:
                # A one-shot catch-up that has never reached its servers reports at once: a wrong
                # address must fail in seconds, not after the idle timeout. Once it has worked,
                # an outage is waited out like in a long-running indexer.
                if not err.retriable or (until_idle and not self._worked):
                    raise
                last_error = err
                backoff = self._survive(err, stop, backoff)
                if until_idle:
                    deadline = deadline or time.monotonic() + self.idle_timeout_s
            if until_idle and deadline is not None and time.monotonic() > deadline:
                why = f"last error: {last_error}" if last_error else self._describe_lag()
                raise NotCaughtUp(f"not caught up after {self.idle_timeout_s:.0f}s without progress ({why})")
        self._finish_inflight()
        self._publish_now()
        return self.stats

    def _bulk_catch_up(
        self, bulk: BulkCatchUp, stop: threading.Event, on_batch: Callable[[RunStats], None] | None
    ) -> None:
        def progress(consumed: int, indexed: int, seconds: float) -> None:
            self._count(consumed, indexed, 0, 0, seconds)
            if on_batch:
                on_batch(self.stats)

        with self._lock:
            try:
                self._prepare()  # the schema exists before the catch-up writes
            except IndexerError:
                return  # the loop meets it again and deals with it as with any fault
            bulk.run(stop, progress)
            self.processor.forget_states()  # the loop restores them from what the catch-up wrote
            self.view.refresh()

    def catch_up(self) -> int:
        """Project what the log holds now, batch by batch, and return the records committed.

        Unlike :meth:`run`, it never waits on an idle poll (a source's empty poll sleeps its poll
        interval): readers that index on search call it before every read, and an idle log must
        cost them a position check, not a poll interval. Raises indexer errors without retrying."""
        moved = 0
        while not self.source.caught_up():
            consumed = self.step()
            if not consumed:
                break
            moved += consumed
        return moved

    def run_until_idle(self) -> RunStats:
        """Project everything written so far, then return the run's counters."""
        return self.run(until_idle=True)

    def _describe_lag(self) -> str:
        try:
            return self.source.describe_lag()
        except IndexerError as err:
            return str(err)

    def _survive(self, err: IndexerError, stop: threading.Event, backoff: float) -> float:
        self.metrics.errors.labels(error_class=type(err).__name__).inc()
        if isinstance(err, ViewUnavailable):
            self.stats.view_outages += 1
            log.warning("view unavailable, holding the source: %s", err)
            self._wait_for_view(stop)
        else:
            self.stats.source_outages += 1
            log.warning("retrying after a retriable fault: %s", err)
        backoff = min(self.backoff_max_s, max(0.2, backoff * 2))
        stop.wait(backoff)
        return backoff

    def _wait_for_view(self, stop: threading.Event) -> None:
        self.metrics.paused.set(1)
        try:
            while not stop.is_set():
                self.metrics.beat()
                try:
                    self.source.hold(1.0)
                except IndexerError as err:
                    if not err.retriable:
                        raise
                    stop.wait(1.0)
                if self.view.available():
                    return
        finally:
            self.metrics.paused.set(0)

    def _publish_now(self) -> None:
        if self._publisher is not None:
            self._publisher.publish_now()

    def _maybe_lag(self) -> None:
        now = time.monotonic()
        if now - self._last_lag < 5.0:
            return
        self._last_lag = now
        try:
            lag = self.source.lag()
        except IndexerError as err:
            log.warning("cannot read the lag: %s", err)
            return
        self.metrics.ready = bool(lag)
        self.last_lag = sum(lag.values())
        for partition, behind in lag.items():
            self.metrics.lag.labels(partition=str(partition)).set(behind)

    # -- lifecycle ------------------------------------------------------------------------------
    def close(self) -> None:
        """Publish pending watermarks, then close the source (leaving the group), the dead letters,
        the view and the metrics server. Idempotent; errors while closing are logged."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        for closer in (
            self._publisher.close if self._publisher else None,
            self.source.close,
            self.dead_letters.close,
            *(lane.close for lane in self._lanes),
            self.view.close,
            self._server.close if self._server else None,
        ):
            if closer is None:
                continue
            with contextlib.suppress(IndexerError):
                closer()

    def __enter__(self) -> Runner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
