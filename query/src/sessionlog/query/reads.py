"""Session reads: the result models and the pure logic behind :class:`SessionReader` (spec 3.2–3.9).

No I/O and no clock. :mod:`sessionlog.query.session_reader` loads headers and logs (from the
OpenSearch projection and the process's own live entries) and calls into this module for everything
else: window and filter validation, the live + persisted merge and its conflict rule (spec 3.5, D9),
surface classification through the fold, event and session traces.

Every result is a frozen pydantic model built fresh for each call (a detached copy: nothing a caller
does to one result reaches the store or a later read) and serialises to JSON with
``model_dump_json()``. A lineage's descendants are a flat pre-order list of :class:`LineageNode`
(depth plus child ids) rather than nested objects, so a 3,000-deep chain stays serialisable.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final, Literal, Protocol, TypeAlias, runtime_checkable

from pydantic import BaseModel, ConfigDict

from sessionlog.indexer.fold import (
    EventTrace,
    FoldEvent,
    FoldResult,
    SurfaceViolationError,
    fold,
    fold_strict,
    trace,
)
from sessionlog.ingest.wire import EventRecord, HeaderRecord, ReplaceOp
from sessionlog.query.errors import SessionQueryError
from sessionlog.query.scope import Scope

__all__ = [
    "DEFAULT_READ_WINDOW_MAX",
    "EVENT_FILTER_KINDS",
    "SESSION_FILTER_KINDS",
    "Availability",
    "EventFilter",
    "EventRecordView",
    "EventTraceResult",
    "LineageNode",
    "LiveSource",
    "LogEntry",
    "ReadEventResult",
    "SessionFilter",
    "SessionHeader",
    "SessionRecord",
    "SessionStats",
    "SessionTrace",
    "SurfaceClass",
    "SurfaceMarker",
    "SurfaceRead",
    "apply_event_filters",
    "apply_session_filters",
    "build_read_event",
    "build_surface_read",
    "build_trace_event",
    "check_compatible",
    "check_fold",
    "check_read_window_max",
    "check_session_id",
    "check_window",
    "entry_from_record",
    "entry_from_source",
    "event_view",
    "fold_log",
    "fold_log_strict",
    "header_from_live",
    "header_from_source",
    "locate_index",
    "merge_listing",
    "merge_logs",
    "parse_event_filters",
    "parse_session_filters",
    "preferred_header",
    "record_from_source",
    "scope_admits",
    "sort_sessions",
    "trace_session",
    "window_bounds",
]

DEFAULT_READ_WINDOW_MAX: Final = 50
SurfaceClass: TypeAlias = Literal["current", "shadowed", "log-only"]
Availability: TypeAlias = Literal["live", "persisted"]
AttrValue: TypeAlias = str | int | float | bool | None

_SURFACE_CLASSES: Final[frozenset[str]] = frozenset({"current", "shadowed", "log-only"})
_AVAILABILITY: Final[frozenset[str]] = frozenset({"live", "persisted"})
_ID: Final = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")
#: Schema version of the projection documents this reader understands (``document.SCHEMA_VERSION``).
_DOC_SCHEMA: Final = 1


# -- result models --------------------------------------------------------------------------------
class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class SessionHeader(_Frozen):
    """The immutable facts of a session. ``workspace_id`` is sessionlog's ``cwd`` (the workspace
    identity); ``has_header`` is false for a session known only from its events (no header record
    yet), which then has no ``created_at``."""

    session_id: str
    workspace_id: str | None = None
    created_at: datetime | None = None
    parent_session_id: str | None = None
    seed_length: int | None = None
    delegation_depth: int = 0
    origin: str | None = None
    agent_preset: str | None = None
    title: str | None = None
    has_header: bool = True


class SessionStats(_Frozen):
    """The projection's counters for a persisted session (not a header field; may lag the log)."""

    last_seq: int | None
    entry_count: int
    last_activity: datetime | None
    surface_valid: bool
    seq_gaps: int


class SessionRecord(_Frozen):
    """One session of a listing: the header (live-preferred) and where the session is available.
    ``stats`` comes from the projection, so it is ``None`` for a session that is only live."""

    header: SessionHeader
    live: bool
    persisted: bool
    stats: SessionStats | None = None


class EventRecordView(_Frozen):
    """One event of a session's log with its surface classification (``current``: on the model's
    surface now; ``shadowed``: removed by a later replace, see ``replaced_by``; ``log-only``: never
    on the surface). ``live`` is true when the entry came from this process's live entries."""

    session_id: str
    seq: int
    type: str
    time: datetime
    turn: int | None = None
    role: str | None = None
    tool_name: str | None = None
    text: str = ""
    surface: SurfaceClass
    surface_op: Literal["append", "replace"] | None = None
    replace_start: int | None = None
    replace_end: int | None = None
    sources: tuple[int, ...] | None = None
    replaced_by: int | None = None
    attrs: dict[str, AttrValue] | None = None
    live: bool = False


class ReadEventResult(_Frozen):
    """``read_event``: the target and the window ``start_seq``..``end_seq`` around it (inclusive)."""

    header: SessionHeader
    target: EventRecordView
    events: tuple[EventRecordView, ...]
    start_seq: int
    end_seq: int


class SurfaceRead(_Frozen):
    """``read_surface``: the current surface in model-history order, captured through the last raw
    seq (``None`` for an empty log)."""

    header: SessionHeader
    captured_through_seq: int | None
    events: tuple[EventRecordView, ...]


class LineageNode(_Frozen):
    """One descendant in a :class:`SessionTrace`: ``depth`` 1 is a child of the target; ``children``
    are the ids of its own children, sorted by creation time then id."""

    session_id: str
    depth: int
    children: tuple[str, ...]
    session: SessionRecord


class SessionTrace(_Frozen):
    """``trace_session``: ancestors from the immediate parent outward; ``complete`` is false when the
    walk stopped at a parent that is missing or outside the scope (``unresolved_parent_id``);
    ``root`` is the last ancestor (the target itself without a parent), ``None`` when incomplete.
    ``descendants`` is the forest below the target, flattened depth-first in sibling order."""

    target: SessionRecord
    ancestors: tuple[SessionRecord, ...]
    complete: bool
    unresolved_parent_id: str | None
    root: SessionRecord | None
    descendants: tuple[LineageNode, ...]

    def children(self, session_id: str | None = None) -> tuple[LineageNode, ...]:
        """The sorted children of a descendant (of the target when ``session_id`` is ``None``)."""
        if session_id is None or session_id == self.target.header.session_id:
            return tuple(node for node in self.descendants if node.depth == 1)
        nodes = {node.session_id: node for node in self.descendants}
        parent = nodes.get(session_id)
        return () if parent is None else tuple(nodes[child] for child in parent.children)

    @property
    def depth(self) -> int:
        """How deep the descendant forest nests (0 without descendants)."""
        return max((node.depth for node in self.descendants), default=0)


class EventTraceResult(_Frozen):
    """``trace_event``: positional replacement (``replaced_by``, the ``replacement_chain`` to the
    final replacement, the ``replaced_event_seqs`` the target itself removed) and citation edges
    (the target's ``source_event_seqs`` as recorded, later events citing it directly in
    ``derived_event_seqs``), kept apart on purpose; citations are not transitive."""

    header: SessionHeader
    target: EventRecordView
    replaced_by: int | None
    replacement_chain: tuple[int, ...]
    replaced_event_seqs: tuple[int, ...]
    source_event_seqs: tuple[int, ...]
    derived_event_seqs: tuple[int, ...]


# -- the live source ------------------------------------------------------------------------------
@runtime_checkable
class LiveSource(Protocol):
    """Entries this process appended that a reader serves without the projection (spec 3.5, D9).

    ``sessions()`` lists the live sessions (wire headers or :class:`SessionHeader`). ``events(id)``
    returns that session's live entries in seq order, or ``None`` when the session is not live.
    Entries that start at seq 0 are the complete log: the reader then never consults OpenSearch for
    that session. Entries that start later, or none at all (a store such as ``ingest.live.LiveLog``
    releases entries once the index shows them), are a tail: the projection supplies the rest, and a
    live entry wins over a persisted one with the same seq. With no projection mounted the live
    entries are all there is.
    """

    def sessions(self) -> Sequence[HeaderRecord | SessionHeader]: ...

    def events(self, session_id: str) -> Sequence[EventRecord] | None: ...


# -- log entries (internal to the read path) ------------------------------------------------------
@dataclass(frozen=True, slots=True)
class SurfaceMarker:
    """A surface operation in the shape the fold reads (``op``, and ``start``/``end`` for replace)."""

    op: Literal["append", "replace"]
    start: int = 0
    end: int = 0


@dataclass(slots=True)
class LogEntry:
    """One event of a loaded log. ``text`` is ``None`` until it is loaded (reads fetch message text
    only for the events they return); ``live`` marks an entry from the live source."""

    seq: int
    type: str
    time: datetime
    workspace_id: str | None = None
    turn: int | None = None
    role: str | None = None
    tool_name: str | None = None
    text: str | None = None
    surface: SurfaceMarker | None = None
    sources: tuple[int, ...] | None = None
    attrs: dict[str, AttrValue] | None = None
    live: bool = False

    def fold_event(self) -> FoldEvent:
        return FoldEvent.from_record(self)


def entry_from_record(record: EventRecord) -> LogEntry:
    """A live entry from a wire record (a detached copy: sources and attrs are copied)."""
    surface: SurfaceMarker | None = None
    if isinstance(record.surface, ReplaceOp):
        surface = SurfaceMarker("replace", record.surface.start, record.surface.end)
    elif record.surface is not None:
        surface = SurfaceMarker("append")
    return LogEntry(
        seq=record.seq,
        type=record.type,
        time=record.time,
        workspace_id=record.workspace_id,
        turn=record.turn,
        role=record.role,
        tool_name=record.tool_name,
        text=record.text or "",
        surface=surface,
        sources=None if record.sources is None else tuple(record.sources),
        attrs=None if record.attrs is None else dict(record.attrs),
        live=True,
    )


def _corrupt(session_id: str, what: str) -> SessionQueryError:
    return SessionQueryError("SESSION_QUERY_CORRUPT_SESSION", f"session {session_id!r}: {what}")


def _opt_int(source: Mapping[str, Any], key: str) -> int | None:
    value = source.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{key} must be an integer")
    result: int = value
    return result


def _opt_str(source: Mapping[str, Any], key: str) -> str | None:
    value = source.get(key)
    if value is not None and not isinstance(value, str):
        raise ValueError(f"{key} must be a string")
    return value


def _time(value: Any, key: str) -> datetime:
    if not isinstance(value, str):
        raise ValueError(f"{key} must be an RFC 3339 timestamp")
    parsed = datetime.fromisoformat(value)
    if parsed.tzinfo is None:
        raise ValueError(f"{key} has no UTC offset")
    return parsed


def entry_from_source(session_id: str, source: Mapping[str, Any], *, with_text: bool) -> LogEntry:
    """A persisted entry from an event document's ``_source``; CORRUPT_SESSION if it is malformed.

    ``with_text`` says whether the document was fetched with its text (``text``, or ``args`` for a
    ``tool/call``); without it the entry's text stays unloaded (``None``).
    """
    try:
        if source.get("schema") != _DOC_SCHEMA:
            raise ValueError(f"unsupported document schema {source.get('schema')!r}")
        if source.get("session_id") != session_id:
            raise ValueError(f"document belongs to {source.get('session_id')!r}")
        seq = _opt_int(source, "seq")
        kind = _opt_str(source, "type")
        if seq is None or seq < 0 or not kind:
            raise ValueError("document lacks a seq or a type")
        op = source.get("surface_op")
        surface: SurfaceMarker | None = None
        if op == "append":
            surface = SurfaceMarker("append")
        elif op == "replace":
            start, end = _opt_int(source, "replace_start"), _opt_int(source, "replace_end")
            if start is None or end is None:
                raise ValueError("replace without start and end")
            surface = SurfaceMarker("replace", start, end)
        elif op is not None:
            raise ValueError(f"unknown surface op {op!r}")
        raw_sources = source.get("sources")
        sources: tuple[int, ...] | None = None
        if raw_sources is not None:
            if isinstance(raw_sources, int) and not isinstance(raw_sources, bool):
                raw_sources = [raw_sources]  # OpenSearch returns what was stored; be lenient on shape
            if not isinstance(raw_sources, list) or not all(
                isinstance(s, int) and not isinstance(s, bool) for s in raw_sources
            ):
                raise ValueError("sources must be a list of integers")
            sources = tuple(raw_sources)
        attrs = source.get("attrs")
        if attrs is not None and not isinstance(attrs, dict):
            raise ValueError("attrs must be an object")
        text: str | None = None
        if with_text:
            text = _opt_str(source, "args" if kind == "tool/call" else "text") or ""
        return LogEntry(
            seq=seq,
            type=kind,
            time=_time(source.get("time"), "time"),
            workspace_id=_opt_str(source, "workspace_id"),
            turn=_opt_int(source, "turn"),
            role=_opt_str(source, "role"),
            tool_name=_opt_str(source, "tool_name"),
            text=text,
            surface=surface,
            sources=sources,
            attrs=None if attrs is None else dict(attrs),
        )
    except (ValueError, TypeError) as err:
        raise _corrupt(session_id, f"event document {source.get('seq')!r} is malformed: {err}") from err


def merge_logs(persisted: Iterable[LogEntry], live: Iterable[LogEntry]) -> list[LogEntry]:
    """One log in seq order: every persisted entry, each replaced by a live one of the same seq."""
    by_seq = {entry.seq: entry for entry in persisted}
    for entry in live:
        by_seq[entry.seq] = entry
    return [by_seq[seq] for seq in sorted(by_seq)]


# -- headers, listings and the merge rule ---------------------------------------------------------
def header_from_live(item: HeaderRecord | SessionHeader) -> SessionHeader:
    """A :class:`SessionHeader` from what a :class:`LiveSource` lists."""
    if isinstance(item, SessionHeader):
        return item
    if isinstance(item, HeaderRecord):
        return SessionHeader(
            session_id=item.session_id,
            workspace_id=item.workspace_id,
            created_at=item.created_at,
            parent_session_id=item.parent_session_id,
            seed_length=item.seed_length,
            delegation_depth=item.delegation_depth,
            origin=item.origin,
            agent_preset=item.agent_preset,
            title=item.title,
        )
    raise TypeError(f"a live source listed {type(item).__name__}, not a header")


def header_from_source(source: Mapping[str, Any]) -> SessionHeader:
    """A header from a session document; CORRUPT_SESSION if it is malformed."""
    session_id = source.get("session_id")
    if not isinstance(session_id, str):
        raise _corrupt(str(session_id), "session document has no session_id")
    try:
        has_header = bool(source.get("has_header"))
        created = source.get("created_at")
        return SessionHeader(
            session_id=session_id,
            workspace_id=_opt_str(source, "workspace_id"),
            created_at=None if created is None else _time(created, "created_at"),
            parent_session_id=_opt_str(source, "parent_session_id"),
            seed_length=_opt_int(source, "seed_length"),
            delegation_depth=_opt_int(source, "delegation_depth") or 0,
            origin=_opt_str(source, "origin"),
            agent_preset=_opt_str(source, "agent_preset"),
            title=_opt_str(source, "title"),
            has_header=has_header,
        )
    except (ValueError, TypeError) as err:
        raise _corrupt(session_id, f"session document is malformed: {err}") from err


def record_from_source(source: Mapping[str, Any]) -> SessionRecord:
    """A persisted listing record (header plus the projection's counters) from a session document."""
    header = header_from_source(source)
    try:
        last = _opt_int(source, "last_seq")
        activity = source.get("last_activity")
        stats = SessionStats(
            last_seq=None if last is None or last < 0 else last,
            entry_count=_opt_int(source, "entry_count") or 0,
            last_activity=None if activity is None else _time(activity, "last_activity"),
            surface_valid=bool(source.get("surface_valid", True)),
            seq_gaps=_opt_int(source, "seq_gaps") or 0,
        )
    except (ValueError, TypeError) as err:
        raise _corrupt(header.session_id, f"session document is malformed: {err}") from err
    return SessionRecord(header=header, live=False, persisted=True, stats=stats)


def scope_admits(scope: Scope, header: SessionHeader) -> bool:
    """Whether a session with this header is inside the scope (by id, or by its workspace)."""
    if scope.kind == "sessions":
        return header.session_id in scope.ids
    return header.workspace_id in scope.ids


def check_compatible(live: SessionHeader, persisted: SessionHeader) -> None:
    """SOURCE_CONFLICT unless the immutable fields agree (spec 3.2): workspace, and when both sides
    have a header record, created_at, parent, seed_length and delegation_depth (absent = 0).
    origin, agent_preset and title never conflict."""
    fields: list[tuple[str, object, object]] = [("workspace_id", live.workspace_id, persisted.workspace_id)]
    if live.has_header and persisted.has_header:
        fields += [
            ("created_at", live.created_at, persisted.created_at),
            ("parent_session_id", live.parent_session_id, persisted.parent_session_id),
            ("seed_length", live.seed_length or 0, persisted.seed_length or 0),
            ("delegation_depth", live.delegation_depth or 0, persisted.delegation_depth or 0),
        ]
    differ = [f"{name} (live {a!r}, persisted {b!r})" for name, a, b in fields if a != b]
    if differ:
        raise SessionQueryError(
            "SESSION_QUERY_SOURCE_CONFLICT",
            f"session {live.session_id!r}: live and persisted headers disagree on {', '.join(differ)}",
        )


def _newest_first(record: SessionRecord) -> tuple[bool, float, str]:
    created = record.header.created_at
    return (created is None, -created.timestamp() if created else 0.0, record.header.session_id)


def sort_sessions(records: Iterable[SessionRecord]) -> list[SessionRecord]:
    """Newest first (created_at descending, sessions without a header last), then id ascending."""
    return sorted(records, key=_newest_first)


def merge_listing(
    persisted: Sequence[SessionRecord], live: Sequence[SessionHeader], scope: Scope
) -> list[SessionRecord]:
    """The corpus listing of spec 3.5: persisted records overlaid by every live session that is in
    scope (by its header, or because the in-scope projection lists its id). A live session that is
    also persisted must have a compatible header (SOURCE_CONFLICT) and takes the live header."""
    by_id = {record.header.session_id: record for record in persisted}
    for header in live:
        listed = by_id.get(header.session_id)
        if listed is None:
            if scope_admits(scope, header):
                by_id[header.session_id] = SessionRecord(header=header, live=True, persisted=False)
            continue
        check_compatible(header, listed.header)
        by_id[header.session_id] = SessionRecord(
            header=preferred_header(header, listed.header), live=True, persisted=True, stats=listed.stats
        )
    return sort_sessions(by_id.values())


def preferred_header(live: SessionHeader, persisted: SessionHeader) -> SessionHeader:
    """The live header, unless it is only a placeholder (no header record) and the persisted one is
    not: a live store that keeps events but no headers must not hide ``created_at`` and the rest."""
    return persisted if persisted.has_header and not live.has_header else live


# -- validation -----------------------------------------------------------------------------------
def check_read_window_max(value: object) -> int:
    """INVALID_CONFIG unless a non-negative integer (0 allows only zero windows)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise SessionQueryError(
            "SESSION_QUERY_INVALID_CONFIG", f"read_window_max must be a non-negative integer, got {value!r}"
        )
    return value


def check_window(before: object, after: object, maximum: int) -> tuple[int, int]:
    """INVALID_WINDOW unless each of ``before``/``after`` is an integer in [0, maximum]; ``None``
    means 0. Booleans are not integers."""
    out: list[int] = []
    for name, value in (("before", before), ("after", after)):
        if value is None:
            value = 0
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= maximum:
            raise SessionQueryError(
                "SESSION_QUERY_INVALID_WINDOW", f"{name} must be an integer in [0, {maximum}], got {value!r}"
            )
        out.append(value)
    return out[0], out[1]


def check_session_id(session_id: object) -> str:
    """INVALID_SCOPE for an empty, blank or non-text id (never "all sessions"); SESSION_NOT_FOUND for
    text that cannot be a session id."""
    if not isinstance(session_id, str) or not session_id.strip():
        raise SessionQueryError("SESSION_QUERY_INVALID_SCOPE", "session_id must be a non-blank string")
    if not _ID.fullmatch(session_id):
        raise SessionQueryError("SESSION_QUERY_SESSION_NOT_FOUND", f"no session {session_id!r}")
    return session_id


def window_bounds(length: int, index: int, before: int, after: int) -> tuple[int, int]:
    """Inclusive list indices of the window around ``index``, clamped silently at the log's edges."""
    return max(0, index - before), min(length - 1, index + after)


def locate_index(entries: Sequence[LogEntry], seq: object) -> int | None:
    """The read rule (spec 3.6): the event at index ``seq`` whose seq is ``seq``; ``None`` otherwise
    (negative, fractional, non-integer, out of range, or a gap moved it)."""
    if isinstance(seq, bool) or not isinstance(seq, int):
        return None
    if 0 <= seq < len(entries) and entries[seq].seq == seq:
        return seq
    return None


# -- the fold and views ---------------------------------------------------------------------------
def fold_log(entries: Sequence[LogEntry]) -> FoldResult:
    """The fold of a log; never raises (violations are in the result)."""
    return fold([entry.fold_event() for entry in entries])


def fold_log_strict(session_id: str, entries: Sequence[LogEntry]) -> FoldResult:
    """The fold of a log for a read that needs it; INVALID_SURFACE on any violation."""
    try:
        return fold_strict([entry.fold_event() for entry in entries])
    except SurfaceViolationError as err:
        raise SessionQueryError("SESSION_QUERY_INVALID_SURFACE", f"session {session_id!r}: {err}") from err


def check_fold(session_id: str, folded: FoldResult) -> FoldResult:
    """``folded`` if it has no violation; INVALID_SURFACE (as :func:`fold_log_strict`) otherwise."""
    if folded.violations:
        err = SurfaceViolationError(folded.violations)
        raise SessionQueryError("SESSION_QUERY_INVALID_SURFACE", f"session {session_id!r}: {err}") from err
    return folded


def event_view(session_id: str, entry: LogEntry, folded: FoldResult) -> EventRecordView:
    """The public view of one entry, classified by ``folded`` (a detached copy)."""
    surface = entry.surface
    return EventRecordView(
        session_id=session_id,
        seq=entry.seq,
        type=entry.type,
        time=entry.time,
        turn=entry.turn,
        role=entry.role,
        tool_name=entry.tool_name,
        text=entry.text or "",
        surface=folded.classification.get(entry.seq, "log-only"),
        surface_op=None if surface is None else surface.op,
        replace_start=surface.start if surface is not None and surface.op == "replace" else None,
        replace_end=surface.end if surface is not None and surface.op == "replace" else None,
        sources=entry.sources,
        replaced_by=folded.replaced_by.get(entry.seq),
        attrs=None if entry.attrs is None else dict(entry.attrs),
        live=entry.live,
    )


def build_read_event(
    header: SessionHeader,
    entries: Sequence[LogEntry],
    folded: FoldResult,
    index: int,
    bounds: tuple[int, int],
) -> ReadEventResult:
    """``read_event`` from a located target ``index`` and its window ``bounds`` (list indices)."""
    sid = header.session_id
    lo, hi = bounds
    events = tuple(event_view(sid, entry, folded) for entry in entries[lo : hi + 1])
    return ReadEventResult(
        header=header,
        target=events[index - lo],
        events=events,
        start_seq=entries[lo].seq,
        end_seq=entries[hi].seq,
    )


def build_surface_read(header: SessionHeader, entries: Sequence[LogEntry], folded: FoldResult) -> SurfaceRead:
    """``read_surface`` from a valid fold: the current nodes in model-history order."""
    by_seq = {entry.seq: entry for entry in entries}
    events = tuple(event_view(header.session_id, by_seq[seq], folded) for seq in folded.nodes)
    return SurfaceRead(header=header, captured_through_seq=folded.last_seq, events=events)


def build_trace_event(
    header: SessionHeader,
    entries: Sequence[LogEntry],
    folded: FoldResult,
    seq: int,
    events: Sequence[FoldEvent] | None = None,
) -> EventTraceResult:
    """``trace_event`` for a located ``seq`` in a valid fold (the caller checked both, in that order).
    ``events`` are the entries' fold events when already built."""
    if events is None:
        events = [entry.fold_event() for entry in entries]
    try:
        found: EventTrace = trace(folded, events, seq)
    except KeyError:  # pragma: no cover - the caller located it first
        raise SessionQueryError(
            "SESSION_QUERY_EVENT_NOT_FOUND", f"no event {seq} in {header.session_id!r}"
        ) from None
    return EventTraceResult(
        header=header,
        target=event_view(header.session_id, entries[seq], folded),
        replaced_by=found.replaced_by,
        replacement_chain=found.replacement_chain,
        replaced_event_seqs=found.replaced_event_seqs,
        source_event_seqs=found.source_event_seqs,
        derived_event_seqs=found.derived_event_seqs,
    )


# -- lineage --------------------------------------------------------------------------------------
def _oldest_first(record: SessionRecord) -> tuple[bool, float, str]:
    created = record.header.created_at
    return (created is None, created.timestamp() if created else 0.0, record.header.session_id)


def trace_session(session_id: str, listing: Sequence[SessionRecord]) -> SessionTrace:
    """Lineage of ``session_id`` within one corpus listing (spec 3.6), iteratively.

    SESSION_NOT_FOUND if the target is not listed; INVALID_LINEAGE if the ancestor walk meets an id
    it has already seen (the target included: a cycle through, or reachable from, the target).
    """
    corpus = {record.header.session_id: record for record in listing}
    target = corpus.get(session_id)
    if target is None:
        raise SessionQueryError("SESSION_QUERY_SESSION_NOT_FOUND", f"no session {session_id!r}")
    ancestors: list[SessionRecord] = []
    seen = {session_id}
    unresolved: str | None = None
    parent = target.header.parent_session_id
    while parent is not None:
        if parent in seen:
            message = f"parent cycle at {parent!r} in the lineage of {session_id!r}"
            raise SessionQueryError("SESSION_QUERY_INVALID_LINEAGE", message)
        found = corpus.get(parent)
        if found is None:
            unresolved = parent
            break
        seen.add(parent)
        ancestors.append(found)
        parent = found.header.parent_session_id
    complete = unresolved is None
    root = (ancestors[-1] if ancestors else target) if complete else None

    children: dict[str, list[SessionRecord]] = {}
    for record in listing:
        parent_id = record.header.parent_session_id
        if parent_id is not None and parent_id != record.header.session_id:
            children.setdefault(parent_id, []).append(record)
    ordered = {parent_id: sorted(kids, key=_oldest_first) for parent_id, kids in children.items()}
    nodes: list[LineageNode] = []
    visited = {session_id}
    stack = [(kid, 1) for kid in reversed(ordered.get(session_id, []))]
    while stack:
        record, depth = stack.pop()
        sid = record.header.session_id
        if sid in visited:  # pragma: no cover - impossible once the ancestor walk found no cycle
            continue
        visited.add(sid)
        kids = ordered.get(sid, [])
        nodes.append(
            LineageNode(
                session_id=sid,
                depth=depth,
                children=tuple(kid.header.session_id for kid in kids),
                session=record,
            )
        )
        stack.extend((kid, depth + 1) for kid in reversed(kids))
    return SessionTrace(
        target=target,
        ancestors=tuple(ancestors),
        complete=complete,
        unresolved_parent_id=unresolved,
        root=root,
        descendants=tuple(nodes),
    )


# -- filters (spec 3.7) ---------------------------------------------------------------------------
SESSION_FILTER_KINDS: Final = ("id", "workspace", "created-at", "parent", "availability")
EVENT_FILTER_KINDS: Final = ("seq", "time", "type", "surface", "text")


@dataclass(frozen=True, slots=True)
class SessionFilter:
    """One validated session clause: ``values`` for id/workspace/parent/availability, or an
    inclusive epoch-millisecond range for created-at."""

    kind: Literal["id", "workspace", "created-at", "parent", "availability"]
    values: frozenset[str | None] = frozenset()
    low: float | None = None
    high: float | None = None

    def matches(self, record: SessionRecord) -> bool:
        header = record.header
        if self.kind == "id":
            return header.session_id in self.values
        if self.kind == "workspace":
            return header.workspace_id in self.values
        if self.kind == "parent":
            return header.parent_session_id in self.values
        if self.kind == "availability":
            live, persisted = "live" in self.values, "persisted" in self.values
            return (live and record.live) or (persisted and record.persisted)
        if header.created_at is None:
            return False
        return _in_range(_epoch_ms(header.created_at), self.low, self.high)


@dataclass(frozen=True, slots=True)
class EventFilter:
    """One validated event clause: a seq or time range, type or surface values, or a text pattern."""

    kind: Literal["seq", "time", "type", "surface", "text"]
    values: frozenset[str] = frozenset()
    low: float | None = None
    high: float | None = None
    pattern: re.Pattern[str] | None = None

    def matches(self, event: EventRecordView) -> bool:
        if self.kind == "seq":
            return _in_range(event.seq, self.low, self.high)
        if self.kind == "time":
            return _in_range(_epoch_ms(event.time), self.low, self.high)
        if self.kind == "type":
            return event.type in self.values
        if self.kind == "surface":
            return event.surface in self.values
        assert self.pattern is not None
        return self.pattern.search(event.text) is not None


def _in_range(value: float, low: float | None, high: float | None) -> bool:
    return (low is None or value >= low) and (high is None or value <= high)


def _epoch_ms(value: datetime) -> float:
    return value.timestamp() * 1000.0


def _invalid(message: str) -> SessionQueryError:
    return SessionQueryError("SESSION_QUERY_INVALID_FILTER", message)


def _clauses(raw: object, what: str) -> list[Mapping[str, Any]]:
    if isinstance(raw, str | bytes | Mapping) or not isinstance(raw, Sequence):
        raise _invalid(f"{what} filters must be a list of clauses, got {type(raw).__name__}")
    out: list[Mapping[str, Any]] = []
    for clause in raw:
        if not isinstance(clause, Mapping):
            raise _invalid(f"a {what} filter clause must be an object, got {type(clause).__name__}")
        kind = clause.get("kind")
        if not isinstance(kind, str):
            raise _invalid(f"a {what} filter clause needs a kind")
        out.append(dict(clause))
    return out


def _keys(clause: Mapping[str, Any], allowed: set[str]) -> None:
    extra = set(clause) - allowed - {"kind"}
    if extra:
        raise _invalid(f"{clause['kind']} clause: unknown field(s) {sorted(extra)}")


def _values(clause: Mapping[str, Any], *, allow_null: bool, closed: frozenset[str] | None) -> frozenset[Any]:
    _keys(clause, {"values"})
    values = clause.get("values")
    if isinstance(values, str | bytes | Mapping) or not isinstance(values, Sequence):
        raise _invalid(f"{clause['kind']} clause: values must be a list")
    for value in values:
        if value is None and allow_null:
            continue
        if not isinstance(value, str):
            raise _invalid(f"{clause['kind']} clause: {value!r} is not a string")
        if closed is not None and value not in closed:
            raise _invalid(f"{clause['kind']} clause: unknown value {value!r} (one of {sorted(closed)})")
    return frozenset(values)


def _number_bound(value: object, name: str, kind: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _invalid(f"{kind} clause: {name} must be a number, got {value!r}")
    if not math.isfinite(value):
        raise _invalid(f"{kind} clause: {name} must be finite")
    return float(value)


def _time_bound(value: object, name: str, kind: str) -> float | None:
    """A time bound: an aware datetime, an RFC 3339 string with an offset, or epoch milliseconds."""
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value)
        except ValueError:
            raise _invalid(f"{kind} clause: {name} {value!r} is not an RFC 3339 timestamp") from None
    if isinstance(value, datetime):
        if value.tzinfo is None:
            raise _invalid(f"{kind} clause: {name} needs a UTC offset")
        return _epoch_ms(value.astimezone(UTC))
    return _number_bound(value, name, kind)


def _range(clause: Mapping[str, Any], *, time: bool) -> tuple[float | None, float | None]:
    _keys(clause, {"from", "to"})
    kind = str(clause["kind"])
    bound = _time_bound if time else _number_bound
    low, high = bound(clause.get("from"), "from", kind), bound(clause.get("to"), "to", kind)
    if low is not None and high is not None and low > high:
        raise _invalid(f"{kind} clause: from is after to")
    return low, high


def _text_pattern(clause: Mapping[str, Any]) -> re.Pattern[str]:
    _keys(clause, {"text"})
    text = clause.get("text")
    if not isinstance(text, str):
        raise _invalid("text clause: text must be a string")
    words = text.split()
    if not words:
        raise _invalid("text clause: text is blank")
    # A literal scan, not full-text search: metacharacters are escaped, a whitespace run matches one
    # or more whitespace characters; case-insensitive (Unicode), accents significant.
    return re.compile(r"\s+".join(re.escape(word) for word in words), re.IGNORECASE)


def parse_session_filters(raw: object) -> tuple[SessionFilter, ...]:
    """Validate and copy session filters (clauses ANDed, values ORed); INVALID_FILTER if malformed.

    Clauses: ``{"kind": "id"|"workspace"|"parent", "values": [...]}`` (``None`` in workspace/parent
    matches an absent value), ``{"kind": "availability", "values": ["live", "persisted"]}``,
    ``{"kind": "created-at", "from": ..., "to": ...}`` (inclusive; aware datetime, RFC 3339 text or
    epoch ms). An empty value list matches nothing.
    """
    if raw is None:
        return ()
    out: list[SessionFilter] = []
    for clause in _clauses(raw, "session"):
        kind = clause["kind"]
        if kind == "id":
            out.append(SessionFilter("id", _values(clause, allow_null=False, closed=None)))
        elif kind == "workspace":
            out.append(SessionFilter("workspace", _values(clause, allow_null=True, closed=None)))
        elif kind == "parent":
            out.append(SessionFilter("parent", _values(clause, allow_null=True, closed=None)))
        elif kind == "availability":
            out.append(SessionFilter("availability", _values(clause, allow_null=False, closed=_AVAILABILITY)))
        elif kind == "created-at":
            low, high = _range(clause, time=True)
            out.append(SessionFilter("created-at", low=low, high=high))
        else:
            raise _invalid(f"unknown session filter kind {kind!r} (one of {', '.join(SESSION_FILTER_KINDS)})")
    return tuple(out)


def parse_event_filters(raw: object) -> tuple[EventFilter, ...]:
    """Validate and copy event filters (clauses ANDed, values ORed); INVALID_FILTER if malformed.

    Clauses: ``{"kind": "seq"|"time", "from": ..., "to": ...}`` (inclusive), ``{"kind": "type",
    "values": [...]}``, ``{"kind": "surface", "values": ["current"|"shadowed"|"log-only"]}``,
    ``{"kind": "text", "text": "..."}`` (a literal scan of the event text).
    """
    out: list[EventFilter] = []
    for clause in _clauses(raw, "event"):
        kind = clause["kind"]
        if kind == "seq":
            low, high = _range(clause, time=False)
            out.append(EventFilter("seq", low=low, high=high))
        elif kind == "time":
            low, high = _range(clause, time=True)
            out.append(EventFilter("time", low=low, high=high))
        elif kind == "type":
            out.append(EventFilter("type", _values(clause, allow_null=False, closed=None)))
        elif kind == "surface":
            out.append(EventFilter("surface", _values(clause, allow_null=False, closed=_SURFACE_CLASSES)))
        elif kind == "text":
            out.append(EventFilter("text", pattern=_text_pattern(clause)))
        else:
            raise _invalid(f"unknown event filter kind {kind!r} (one of {', '.join(EVENT_FILTER_KINDS)})")
    return tuple(out)


def apply_session_filters(
    records: Iterable[SessionRecord], filters: Sequence[SessionFilter]
) -> list[SessionRecord]:
    return [record for record in records if all(f.matches(record) for f in filters)]


def apply_event_filters(
    events: Iterable[EventRecordView], filters: Sequence[EventFilter]
) -> list[EventRecordView]:
    """Filter the event documents (events with non-blank text, spec 3.4) in seq order."""
    return [event for event in events if event.text.strip() and all(f.matches(event) for f in filters)]
