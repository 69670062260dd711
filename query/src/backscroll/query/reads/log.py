"""Loaded logs and listings (internal to the read path): entries from the live source and from
projection documents, the live + persisted merge of logs and of session listings,
and the scope test. No I/O."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final, Literal

from backscroll.indexer.fold import FoldEvent
from backscroll.ingest.wire import EventRecord, HeaderRecord, ReplaceOp
from backscroll.query.errors import SessionQueryError
from backscroll.query.reads.models import AttrValue, SessionHeader, SessionRecord, SessionStats
from backscroll.query.scope import Scope

__all__ = [
    "LogEntry",
    "SurfaceMarker",
    "check_compatible",
    "entry_from_record",
    "entry_from_source",
    "header_from_live",
    "header_from_source",
    "merge_listing",
    "merge_logs",
    "preferred_header",
    "record_from_source",
    "scope_admits",
    "sort_sessions",
]

#: Schema version of the projection documents this reader understands (``document.SCHEMA_VERSION``).
_DOC_SCHEMA: Final = 1


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
    """SOURCE_CONFLICT unless the immutable fields agree: workspace, and when both sides
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
    """The corpus listing: persisted records overlaid by every live session that is in
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
