"""Session and event filters: validation of the clauses and their matching. No I/O."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final, Literal

from backscroll.query.errors import SessionQueryError
from backscroll.query.reads.models import EventRecordView, SessionRecord

__all__ = [
    "EVENT_FILTER_KINDS",
    "SESSION_FILTER_KINDS",
    "EventFilter",
    "SessionFilter",
    "apply_event_filters",
    "apply_session_filters",
    "parse_event_filters",
    "parse_session_filters",
]

_SURFACE_CLASSES: Final[frozenset[str]] = frozenset({"current", "shadowed", "log-only"})
_AVAILABILITY: Final[frozenset[str]] = frozenset({"live", "persisted"})
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
        return _epoch_ms(value)  # an aware time's timestamp needs no UTC copy (which may overflow)
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
    """Filter the event documents (events with non-blank text) in seq order."""
    return [event for event in events if event.text.strip() and all(f.matches(event) for f in filters)]
