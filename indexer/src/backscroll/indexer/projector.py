"""Per-session projection state: turns validated records into index actions. Pure (no I/O).

The worker owning a partition is the only writer of its sessions, so it can keep each session's
fold and counters in memory; :class:`SessionProjection` is that state, loaded from the index when a
session is first seen after an assignment and advanced record by record.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from backscroll.indexer.document import event_document, session_document
from backscroll.indexer.fold import FoldEvent, SurfaceState, Violation
from backscroll.indexer.values import value_type
from backscroll.ingest.wire import EventRecord, HeaderRecord

__all__ = ["Action", "EventOutcome", "SessionProjection", "project_records"]

MAX_RECORDED_VIOLATIONS = 50


@value_type
class Action:
    """One bulk action against the projection (``create`` of a new event, ``update`` of an old one,
    ``index`` of a session document)."""

    op: Literal["create", "index", "update"]
    target: Literal["events", "sessions"]
    doc_id: str
    routing: str
    body: dict[str, Any]


@value_type
class EventOutcome:
    """What applying one event produced: its document action and updates to earlier documents."""

    create: Action
    updates: tuple[Action, ...]
    replay: bool
    violations: tuple[Violation, ...]


@dataclass
class SessionProjection:
    """Everything the indexer tracks about one session between records."""

    session_id: str
    workspace_id: str | None = None
    header: dict[str, Any] | None = None
    header_hash: str | None = None
    fold: SurfaceState = field(default_factory=SurfaceState)
    last_activity: str | None = None
    #: Seqs below ``next_seq`` not seen yet, as ``[start, end)`` ranges in order: a late seq that
    #: falls in one fills the gap (a new entry, not a replay).
    missing: list[tuple[int, int]] = field(default_factory=list)
    dirty: bool = False
    #: ``last_activity`` and its instant, so that each event compares without parsing it again.
    _parsed: tuple[str, datetime] | None = field(default=None, repr=False, compare=False)

    @property
    def seq_gaps(self) -> int:
        """How many seqs below the last folded one have not been seen."""
        return sum(end - start for start, end in self.missing)

    @property
    def entry_count(self) -> int:
        """Distinct seqs projected so far."""
        return self.next_seq - self.seq_gaps

    def _fill(self, seq: int) -> bool:
        """Take ``seq`` out of the missing ranges; whether it was missing."""
        for i, (start, end) in enumerate(self.missing):
            if start <= seq < end:
                pieces = [(a, b) for a, b in ((start, seq), (seq + 1, end)) if a < b]
                self.missing[i : i + 1] = pieces
                return True
        return False

    @property
    def next_seq(self) -> int:
        last = self.fold.last_seq
        return 0 if last is None else last + 1

    def apply_header(self, header: HeaderRecord) -> Literal["new", "same", "conflict"]:
        doc = session_document(header)
        digest = repr(sorted((k, v) for k, v in doc.items()))
        if self.header_hash is None:
            self.header, self.header_hash = doc, digest
            self.workspace_id = self.workspace_id or header.workspace_id
            self.dirty = True
            return "new"
        return "same" if digest == self.header_hash else "conflict"

    def apply_event(self, record: EventRecord, partition: int | None, offset: int | None) -> EventOutcome:
        """Fold one event. A seq at or below the last folded one is a replay: its document is re-sent
        as a ``create`` so the store can tell an identical replay from a conflicting one."""
        if self.workspace_id is None:
            self.workspace_id = record.workspace_id
        if record.seq < self.next_seq:
            state = self.fold.classification_of(record.seq)
            doc = event_document(record, surface_state=state, partition=partition, offset=offset)
            filled = self._fill(record.seq)
            if filled:
                self._touch(record)
            return EventOutcome(self._create(record, doc), (), not filled, ())
        if record.seq > self.next_seq:
            self.missing.append((self.next_seq, record.seq))
        step = self.fold.apply(FoldEvent.from_record(record))
        doc = event_document(record, surface_state=step.classification, partition=partition, offset=offset)
        updates = tuple(
            Action(
                "update",
                "events",
                f"{self.session_id}:{seq}",
                self.session_id,
                {"doc": {"surface_state": "shadowed", "replaced_by": record.seq}},
            )
            for seq in step.shadowed
        )
        self._touch(record)
        return EventOutcome(self._create(record, doc), updates, False, step.violations)

    def _last_instant(self) -> datetime | None:
        """``last_activity`` as an instant, parsed once per value (a restore may set the text)."""
        if self.last_activity is None:
            return None
        if self._parsed is None or self._parsed[0] != self.last_activity:
            self._parsed = (self.last_activity, datetime.fromisoformat(self.last_activity))
        return self._parsed[1]

    def _touch(self, record: EventRecord) -> None:
        # Compare instants, not strings: agents may write times with different UTC offsets.
        latest = self._last_instant()
        if latest is None or record.time > latest:
            self.last_activity = record.time.isoformat()
            self._parsed = (self.last_activity, record.time)
        self.dirty = True

    def _create(self, record: EventRecord, doc: dict[str, Any]) -> Action:
        return Action("create", "events", record.doc_id, self.session_id, doc)

    def session_action(self) -> Action:
        """The full session document, rewritten after every batch that changed the session."""
        body: dict[str, Any] = {
            "session_id": self.session_id,
            "workspace_id": self.workspace_id,
            "has_header": False,
            "parent_session_id": None,
        }
        if self.header:
            body.update(self.header)
        last = self.fold.last_seq
        violations = self.fold.violations
        body.update(
            {
                "last_seq": last if last is not None else -1,
                "entry_count": self.entry_count,
                "last_activity": self.last_activity,
                "surface_valid": not violations,
                "violations": [
                    {"seq": v.seq, "code": v.code, "message": v.message}
                    for v in violations[:MAX_RECORDED_VIOLATIONS]
                ],
                "seq_gaps": self.seq_gaps,
            }
        )
        return Action("index", "sessions", self.session_id, self.session_id, body)

    @classmethod
    def restore(
        cls, session_id: str, session_doc: dict[str, Any] | None, events: list[FoldEvent]
    ) -> SessionProjection:
        """Rebuild the state of a session from its indexed documents (events in seq order)."""
        state = cls(session_id=session_id)
        if session_doc:
            state.workspace_id = session_doc.get("workspace_id")
            state.last_activity = session_doc.get("last_activity")
            if session_doc.get("has_header"):
                header: dict[str, Any] = {
                    k: session_doc.get(k)
                    for k in (
                        "workspace_id",
                        "session_id",
                        "created_at",
                        "delegation_depth",
                        "has_header",
                        "parent_session_id",
                        "seed_length",
                        "origin",
                        "agent_preset",
                        "title",
                    )
                    if k in session_doc
                }
                state.header = header
                state.header_hash = repr(sorted(header.items()))
        expected = 0
        for event in events:
            if event.seq > expected:
                state.missing.append((expected, event.seq))
            expected = max(expected, event.seq + 1)
            state.fold.apply(event)
        return state


def project_records(records: Iterable[HeaderRecord | EventRecord]) -> list[Action]:
    """Every action that loads ``records`` into an empty projection (bulk loads, benchmarks):
    event creates and shadow updates in log order, then one document per session."""
    states: dict[str, SessionProjection] = {}
    actions: list[Action] = []
    for record in records:
        state = states.setdefault(record.session_id, SessionProjection(record.session_id))
        if isinstance(record, HeaderRecord):
            state.apply_header(record)
        else:
            outcome = state.apply_event(record, None, None)
            actions.append(outcome.create)
            actions.extend(outcome.updates)
    actions.extend(state.session_action() for state in states.values())
    return actions
