"""Projects one polled batch: decode, fold per session, bulk write, sort out replays, conflicts and
dead letters. The only I/O is through the view; Kafka is the worker's business."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sessionlog.indexer.deadletter import DeadLetter
from sessionlog.indexer.errors import ViewUnavailable
from sessionlog.indexer.metrics import IndexerMetrics
from sessionlog.indexer.opensearch_view import OpenSearchView
from sessionlog.indexer.projector import Action, SessionProjection
from sessionlog.ingest.errors import RecordRejected
from sessionlog.ingest.wire import EventRecord, HeaderRecord, decode_record

__all__ = ["BatchProcessor", "BatchResult"]

log = logging.getLogger("sessionlog.indexer")


@dataclass
class BatchResult:
    """Dead letters to park before committing, and counters for the run's stats."""

    letters: list[DeadLetter] = field(default_factory=list)
    indexed: int = 0
    replays: int = 0
    conflicts: int = 0


class BatchProcessor:
    """Holds the per-session projection states of the sessions on this worker's partitions."""

    def __init__(self, view: OpenSearchView, metrics: IndexerMetrics) -> None:
        self.view = view
        self.metrics = metrics
        self.states: dict[str, SessionProjection] = {}
        self.needs_refresh = True

    def forget_states(self) -> None:
        """Drop cached states (after a rebalance or a failed batch); they are restored on demand."""
        self.states.clear()
        self.needs_refresh = True

    def _state(self, session_id: str) -> SessionProjection:
        state = self.states.get(session_id)
        if state is None:
            if self.needs_refresh:
                # Restoring reads by search: make everything written before a restart visible first.
                self.view.refresh()
                self.needs_refresh = False
            state = self.view.restore_session(session_id)
            self.states[session_id] = state
        return state

    def _restore_missing(self, session_ids: set[str]) -> None:
        """Restore, in one round trip where the view allows, the states of sessions not cached."""
        missing = sorted(sid for sid in session_ids if sid not in self.states)
        if not missing:
            return
        if self.needs_refresh:
            self.view.refresh()
            self.needs_refresh = False
        restore_many = getattr(self.view, "restore_sessions", None)
        if restore_many is not None:
            self.states.update(restore_many(missing))
        else:
            for sid in missing:
                self.states[sid] = self.view.restore_session(sid)

    def process(self, records: list[Any]) -> BatchResult:
        """Project ``records`` (kafka-python ConsumerRecords). Raises ViewUnavailable to retry later,
        after forgetting every state the batch touched."""
        out = BatchResult()
        actions: list[Action] = []
        origin: dict[int, Any] = {}  # id(create action) -> the record it came from
        touched: dict[str, SessionProjection] = {}
        try:
            decoded = [self._decode(msg) for msg in records]
            self._restore_missing({r.session_id for r in decoded if not isinstance(r, DeadLetter)})
            for msg, record in zip(records, decoded, strict=True):
                if isinstance(record, DeadLetter):
                    out.letters.append(record)
                    continue
                letter = self._project(msg, record, actions, origin, touched, out)
                if letter:
                    out.letters.append(letter)
            actions.extend(state.session_action() for state in touched.values())
            results = self.view.bulk(actions) if actions else []
            existing = [r.action for r in results if r.exists]
            hashes = self.view.content_hashes(existing)
            conflicting = {
                id(a): self.view.get_event_source(a.doc_id, a.routing)
                for a in existing
                if hashes.get(a.doc_id) != a.body["content_hash"]
            }
        except ViewUnavailable:
            for session_id in touched:
                self.states.pop(session_id, None)
            raise
        for result in results:
            action = result.action
            msg = origin.get(id(action))
            if result.ok:
                if action.op == "create":
                    out.indexed += 1
            elif result.exists and id(action) not in conflicting:
                out.replays += 1
            elif result.exists:
                out.conflicts += 1
                if msg is not None:
                    out.letters.append(
                        letter_for(
                            msg,
                            "conflict",
                            "seq: same (session, seq) with different content",
                            field="seq",
                            http_status=409,
                            existing=conflicting[id(action)],
                        )
                    )
            else:
                self.metrics.errors.labels(error_class=f"http_{result.status}").inc()
                log.error("bulk item failed: %s %s: %s", action.op, action.doc_id, result.error)
                if msg is not None and action.op == "create":
                    out.letters.append(
                        letter_for(
                            msg, "index_rejected", result.error or "rejected", http_status=result.status
                        )
                    )
        return out

    @staticmethod
    def _decode(msg: Any) -> HeaderRecord | EventRecord | DeadLetter:
        if msg.value is None:
            return letter_for(msg, "invalid_record", "record: value is null (tombstone)", field="record")
        try:
            record = decode_record(msg.value)
        except RecordRejected as err:
            return letter_for(msg, "invalid_record", str(err), field=err.field)
        if msg.key is None or msg.key != record.session_id.encode("utf-8"):
            return letter_for(
                msg, "invalid_record", "key: must equal the record's session_id (UTF-8)", field="key"
            )
        return record

    def _project(
        self,
        msg: Any,
        record: HeaderRecord | EventRecord,
        actions: list[Action],
        origin: dict[int, Any],
        touched: dict[str, SessionProjection],
        out: BatchResult,
    ) -> DeadLetter | None:
        state = self._state(record.session_id)
        if isinstance(record, HeaderRecord):
            verdict = state.apply_header(record)
            if verdict == "conflict":
                out.conflicts += 1
                return letter_for(
                    msg,
                    "conflict",
                    "header: differs from the header already recorded",
                    field="header",
                    http_status=409,
                    existing=state.header,
                )
            if verdict == "new":
                touched[record.session_id] = state
            return None
        if state.workspace_id not in (None, record.workspace_id):
            return letter_for(
                msg,
                "invalid_record",
                f"workspace_id: session already belongs to workspace {state.workspace_id}",
                field="workspace_id",
            )
        gaps_before = state.seq_gaps
        outcome = state.apply_event(record, msg.partition, msg.offset)
        if state.seq_gaps > gaps_before:
            self.metrics.seq_gaps.inc(state.seq_gaps - gaps_before)
            log.warning("seq gap in session %s before seq %d", record.session_id, record.seq)
        if outcome.violations and len(state.fold.violations) == len(outcome.violations):
            # Only the first violation of a session is logged; all are in its session document.
            first = outcome.violations[0]
            log.warning("surface violation in %s at seq %d: %s", record.session_id, first.seq, first.code)
        actions.append(outcome.create)
        actions.extend(outcome.updates)
        origin[id(outcome.create)] = msg
        if not outcome.replay:
            touched[record.session_id] = state
        self.metrics.bulk_bytes.inc(len(msg.value))
        return None


def letter_for(msg: Any, error_class: str, reason: str, **extra: Any) -> DeadLetter:
    """A dead letter for a consumed record, keeping its original bytes and coordinates."""
    return DeadLetter(
        topic=msg.topic,
        partition=msg.partition,
        offset=msg.offset,
        key=msg.key,
        value=msg.value,
        error_class=error_class,
        reason=reason,
        **extra,
    )


Sleep = Callable[[float], None]
