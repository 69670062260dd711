"""Validation, the fold and the result builders of session reads: windows, session ids,
the read rule, surface classification, event traces and session lineage. No I/O and no clock."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Final

from backscroll.indexer.fold import (
    EventTrace,
    FoldEvent,
    FoldResult,
    SurfaceViolationError,
    fold,
    fold_strict,
    trace,
)
from backscroll.query.errors import SessionQueryError
from backscroll.query.reads.log import LogEntry
from backscroll.query.reads.models import (
    EventRecordView,
    EventTraceResult,
    LineageNode,
    ReadEventResult,
    SessionHeader,
    SessionRecord,
    SessionTrace,
    SurfaceRead,
)

__all__ = [
    "build_read_event",
    "build_surface_read",
    "build_trace_event",
    "check_fold",
    "check_read_window_max",
    "check_session_id",
    "check_window",
    "event_view",
    "fold_log",
    "fold_log_strict",
    "locate_index",
    "trace_session",
    "window_bounds",
]

_ID: Final = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")


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
    """The read rule: the event at index ``seq`` whose seq is ``seq``; ``None`` otherwise
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
    """Lineage of ``session_id`` within one corpus listing, iteratively.

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
