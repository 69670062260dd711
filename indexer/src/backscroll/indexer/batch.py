"""Projects one polled batch: fold per session, write, sort out replays, conflicts and dead letters.
The only I/O is through the :class:`~backscroll.indexer.ports.SessionView`."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from backscroll.indexer.deadletter import DeadLetter
from backscroll.indexer.errors import IndexerError
from backscroll.indexer.metrics import IndexerMetrics
from backscroll.indexer.ports import Entry, InvalidEntry, Outcome, RawRecord, SessionView, WriteResult
from backscroll.indexer.projector import Action, SessionProjection
from backscroll.ingest.wire import EventRecord, HeaderRecord

__all__ = ["BatchProcessor", "BatchResult", "PreparedBatch", "letter_for"]

log = logging.getLogger("backscroll.indexer")


@dataclass
class BatchResult:
    """Dead letters to park before committing, and counters for the run's stats."""

    letters: list[DeadLetter] = field(default_factory=list)
    indexed: int = 0
    replays: int = 0
    conflicts: int = 0


@dataclass
class PreparedBatch:
    """A projected batch not written yet: its actions, where each create came from, the sessions
    it changed, and the dead letters and counters found so far."""

    actions: list[Action] = field(default_factory=list)
    origin: dict[int, RawRecord] = field(default_factory=dict)  # id(create action) -> its record
    touched: dict[str, SessionProjection] = field(default_factory=dict)
    result: BatchResult = field(default_factory=BatchResult)
    #: Bytes of the record values projected into creates (counted once per batch).
    value_bytes: int = 0


class BatchProcessor:
    """Holds the per-session projection states of the sessions this runner owns."""

    def __init__(self, view: SessionView, metrics: IndexerMetrics) -> None:
        self.view = view
        self.metrics = metrics
        self.states: dict[str, SessionProjection] = {}
        self.needs_refresh = True

    def forget_states(self) -> None:
        """Drop cached states (after a rebalance or a failed batch); they are restored on demand."""
        self.states.clear()
        self.needs_refresh = True

    def _restore_missing(self, session_ids: set[str]) -> None:
        missing = sorted(sid for sid in session_ids if sid not in self.states)
        if not missing:
            return
        if self.needs_refresh:
            # Restoring reads by search: make everything written before a restart visible first.
            self.view.refresh()
            self.needs_refresh = False
        self.states.update(self.view.restore_sessions(missing))

    def process(self, entries: list[Entry | InvalidEntry]) -> BatchResult:
        """Project and write ``entries``. On any error every state the batch touched is forgotten."""
        prepared = self.prepare(entries)
        return self.finish(prepared, self.write(prepared))

    def prepare(self, entries: list[Entry | InvalidEntry]) -> PreparedBatch:
        """Advance the session states over ``entries`` and collect the actions to write (restoring
        missing states is the only I/O). On an error the states the batch touched are forgotten."""
        prepared = PreparedBatch()
        try:
            self._restore_missing({e.record.session_id for e in entries if isinstance(e, Entry)})
            for entry in entries:
                if isinstance(entry, InvalidEntry):
                    prepared.result.letters.append(
                        letter_for(entry.raw, "invalid_record", entry.reason, field=entry.field)
                    )
                    continue
                letter = self._project(entry, prepared)
                if letter:
                    prepared.result.letters.append(letter)
            prepared.actions.extend(state.session_action() for state in prepared.touched.values())
            self.metrics.bulk_bytes.inc(prepared.value_bytes)
        except IndexerError:
            self.drop(prepared)
            raise
        return prepared

    def write(self, prepared: PreparedBatch) -> list[WriteResult]:
        """Write a prepared batch (safe to run on another thread than :meth:`prepare`)."""
        try:
            return self.view.write(prepared.actions)
        except IndexerError:
            self.drop(prepared)
            raise

    def drop(self, prepared: PreparedBatch) -> None:
        """Forget the states a batch touched (it will be projected again)."""
        for session_id in prepared.touched:
            self.states.pop(session_id, None)

    def finish(self, prepared: PreparedBatch, results: list[WriteResult]) -> BatchResult:
        """Sort the write results into counters and dead letters (replays, conflicts, rejections)."""
        out, origin = prepared.result, prepared.origin
        for result in results:
            action = result.action
            raw = origin.get(id(action))
            if result.outcome is Outcome.CREATED:
                out.indexed += 1
            elif result.outcome is Outcome.REPLAY:
                out.replays += 1
            elif result.outcome is Outcome.CONFLICT:
                out.conflicts += 1
                if raw is not None:
                    out.letters.append(
                        letter_for(
                            raw,
                            "conflict",
                            result.reason or "conflict",
                            field="seq",
                            http_status=409,  # the envelope field keeps its documented meaning
                            existing=result.existing,
                        )
                    )
            elif result.outcome is Outcome.REJECTED:
                self.metrics.errors.labels(error_class="rejected").inc()
                log.error("write failed: %s %s: %s", action.op, action.doc_id, result.reason)
                if raw is not None and action.op == "create":
                    out.letters.append(letter_for(raw, "index_rejected", result.reason or "rejected"))
        return out

    def _project(self, entry: Entry, prepared: PreparedBatch) -> DeadLetter | None:
        record, raw = entry.record, entry.raw
        out, touched = prepared.result, prepared.touched
        state = self.states[record.session_id]
        if isinstance(record, HeaderRecord):
            verdict = state.apply_header(record)
            if verdict == "conflict":
                out.conflicts += 1
                return letter_for(
                    raw,
                    "conflict",
                    "header: differs from the header already recorded",
                    field="header",
                    http_status=409,
                    existing=state.header,
                )
            if verdict == "new":
                touched[record.session_id] = state
            return None
        return self._project_event(raw, record, state, prepared)

    def _project_event(
        self,
        raw: RawRecord,
        record: EventRecord,
        state: SessionProjection,
        prepared: PreparedBatch,
    ) -> DeadLetter | None:
        if state.workspace_id not in (None, record.workspace_id):
            return letter_for(
                raw,
                "invalid_record",
                f"workspace_id: session already belongs to workspace {state.workspace_id}",
                field="workspace_id",
            )
        skipped = record.seq - state.next_seq  # the seqs a new gap leaves out, when positive
        outcome = state.apply_event(record, raw.partition, raw.offset)
        if skipped > 0:
            self.metrics.seq_gaps.inc(skipped)
            log.warning("seq gap in session %r before seq %d", record.session_id, record.seq)
        if outcome.violations and len(state.fold.violations) == len(outcome.violations):
            # Only the first violation of a session is logged; all are in its session document.
            first = outcome.violations[0]
            log.warning("surface violation in %r at seq %d: %s", record.session_id, first.seq, first.code)
        prepared.actions.append(outcome.create)
        prepared.actions.extend(outcome.updates)
        prepared.origin[id(outcome.create)] = raw
        if not outcome.replay:
            prepared.touched[record.session_id] = state
        prepared.value_bytes += len(raw.value or b"")
        return None


def letter_for(raw: RawRecord, error_class: str, reason: str, **extra: Any) -> DeadLetter:
    """A dead letter for a consumed record, keeping its original bytes and coordinates."""
    return DeadLetter(
        topic=raw.topic,
        partition=raw.partition,
        offset=raw.offset,
        key=raw.key,
        value=raw.value,
        error_class=error_class,
        reason=reason,
        **extra,
    )
