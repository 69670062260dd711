"""Request, result and match shapes of the search contract, and the provider protocol."""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, Final, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, model_validator

from backscroll.ingest.wire import MAX_OFFSET
from backscroll.query.errors import SessionQueryError

__all__ = [
    "DEFAULT_EXCERPT_BYTES",
    "DEFAULT_LIMIT",
    "KIND_RE",
    "MAX_LIMIT",
    "SELF_TOOL_NAMES",
    "SessionMatch",
    "SessionQuery",
    "SessionQueryRequest",
    "SessionQueryResult",
    "check_request_fields",
    "parse_time",
    "time_bound",
]

DEFAULT_LIMIT = 10
MAX_LIMIT = 50
DEFAULT_EXCERPT_BYTES = 600
#: The names of backscroll's own model tools. Their calls and results are not history worth finding:
#: a search leaves them out unless ``kinds`` is given; see ``SessionQueryRequest.exclude_tools``.
SELF_TOOL_NAMES: tuple[str, ...] = (
    "session_query",
    "workspace_query",
    "session_search",
    "session_event_search",
    "session_event_read",
    "session_trace",
    "session_event_trace",
)
#: An entry kind: one to four ``/``-separated parts of lowercase letters, digits, ``_.-``.
KIND_RE: Final = re.compile(r"[a-z0-9_.-]{1,48}(/[a-z0-9_.-]{1,48}){0,3}")
_FIELDS: Final = frozenset(
    {"session_id", "query", "kinds", "limit", "excerpt_bytes", "cursor", "exclude_tools", "since", "until"}
)


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def check_request_fields(data: Mapping[str, Any]) -> None:
    """Strict types of a request's fields, each failure with its code: ``session_id`` text
    (INVALID_SCOPE), ``query`` text without NUL (INVALID_QUERY), ``kinds`` a list or tuple of kinds that match
    :data:`KIND_RE` in full (INVALID_FILTER), ``limit`` and ``excerpt_bytes`` integers, never
    booleans, floats or numeric text (INVALID_LIMIT), ``cursor`` text (INVALID_CURSOR),
    ``exclude_tools`` a list or tuple of names (INVALID_FILTER), ``since`` and ``until`` times with a
    time zone, as ``datetime`` or RFC 3339 text (INVALID_FILTER), no other field (INVALID_QUERY).
    Ranges are checked by :func:`~backscroll.query.plan.plan_request`."""
    unknown = sorted(str(key) for key in data if key not in _FIELDS)
    if unknown:
        raise SessionQueryError("SESSION_QUERY_INVALID_QUERY", f"unknown request field {unknown[0]!r}")
    session_id = data.get("session_id")
    if session_id is not None and not isinstance(session_id, str):
        raise SessionQueryError("SESSION_QUERY_INVALID_SCOPE", "session_id must be text or None")
    query = data.get("query", "")
    if not isinstance(query, str):
        raise SessionQueryError("SESSION_QUERY_INVALID_QUERY", "query must be text")
    if "\x00" in query:
        raise SessionQueryError("SESSION_QUERY_INVALID_QUERY", "query must be text without NUL characters")
    kinds = data.get("kinds", ())
    if not isinstance(kinds, list | tuple):
        raise SessionQueryError("SESSION_QUERY_INVALID_FILTER", "kinds must be a list of kinds")
    for kind in kinds:
        if not isinstance(kind, str) or not KIND_RE.fullmatch(kind):
            raise SessionQueryError("SESSION_QUERY_INVALID_FILTER", f"unknown kind {kind!r}")
    limit = data.get("limit")
    if limit is not None and not _is_int(limit):
        raise SessionQueryError("SESSION_QUERY_INVALID_LIMIT", f"limit must be an integer, got {limit!r}")
    excerpt_bytes = data.get("excerpt_bytes", DEFAULT_EXCERPT_BYTES)
    if not _is_int(excerpt_bytes):
        raise SessionQueryError(
            "SESSION_QUERY_INVALID_LIMIT", f"excerpt_bytes must be an integer, got {excerpt_bytes!r}"
        )
    cursor = data.get("cursor")
    if cursor is not None and not isinstance(cursor, str):
        raise SessionQueryError("SESSION_QUERY_INVALID_CURSOR", "cursor must be text or None")
    exclude_tools = data.get("exclude_tools", ())
    if not isinstance(exclude_tools, list | tuple) or not all(isinstance(n, str) for n in exclude_tools):
        raise SessionQueryError("SESSION_QUERY_INVALID_FILTER", "exclude_tools must be a list of tool names")
    for name in ("since", "until"):
        bound = data.get(name)
        if bound is not None:
            time_bound(name, bound)


def time_bound(name: str, value: object) -> datetime:
    """A ``since``/``until`` bound as an aware ``datetime``: a ``datetime`` with a time zone or RFC
    3339 text with an offset (``Z`` allowed); anything else is INVALID_FILTER."""
    moment: datetime | None = None
    if isinstance(value, datetime):
        moment = value
    elif isinstance(value, str) and len(value) <= 64:
        try:
            moment = datetime.fromisoformat(value.strip().replace("Z", "+00:00").replace("z", "+00:00"))
        except ValueError:
            moment = None
    if moment is None or moment.tzinfo is None or moment.utcoffset() is None:
        raise SessionQueryError(
            "SESSION_QUERY_INVALID_FILTER",
            f"{name} must be a time with a time zone, such as 2026-11-30T10:00:00Z",
        )
    if not _storable(moment):
        raise SessionQueryError(
            "SESSION_QUERY_INVALID_FILTER",
            f"{name} must lie within years 0001 to 9999 in UTC, with an offset within -18:00 to +18:00",
        )
    return moment


def _storable(moment: datetime) -> bool:
    """Whether a time is one a record may hold (see the wire format's time range)."""
    offset = moment.utcoffset()
    if offset is None or abs(offset) > MAX_OFFSET:
        return False
    try:
        moment.astimezone(UTC)
    except OverflowError:
        return False
    return True


def parse_time(value: str | None, *, end: bool = False) -> datetime | None:
    """A time bound as people type it (CLI flags, console forms): ``YYYY-MM-DD``,
    ``YYYY-MM-DDTHH:MM[:SS]`` (UTC when it has no offset) or RFC 3339. A bare date as the ``end``
    bound means the end of that day. ``None`` for empty text; ValueError if malformed or if its UTC
    instant falls outside years 0001 to 9999."""
    if value is None or not value.strip():
        return None
    text = value.strip()
    parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    if len(text) == 10 and end:
        parsed = parsed.replace(hour=23, minute=59, second=59, microsecond=999999)
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    try:
        return parsed.astimezone(UTC)
    except OverflowError:
        raise ValueError(f"{text!r} has no UTC instant within years 0001 to 9999") from None


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class SessionQueryRequest(_Frozen):
    """One search. ``session_id`` narrows the provider's scope to one session (``None``: all of it);
    ``limit`` ``None`` means the provider's default.

    Types are strict: a field of the wrong type raises :class:`SessionQueryError` with the field's
    code (see :func:`check_request_fields`), never a pydantic ``ValidationError``."""

    session_id: str | None = None
    query: str = ""
    kinds: tuple[str, ...] = ()
    limit: int | None = None
    excerpt_bytes: int = DEFAULT_EXCERPT_BYTES
    cursor: str | None = None
    #: Tool names whose calls and results a default-kinds search leaves out (the searching tools' own
    #: calls, whatever the operator named them). At most 32 names of at most 512 characters.
    exclude_tools: tuple[str, ...] = SELF_TOOL_NAMES
    #: Only entries written at or after this time (inclusive; needs a time zone).
    since: datetime | None = None
    #: Only entries written at or before this time (inclusive; needs a time zone).
    until: datetime | None = None

    @model_validator(mode="before")
    @classmethod
    def _strict(cls, data: Any) -> Any:
        if isinstance(data, Mapping):
            check_request_fields(data)
        elif not isinstance(data, SessionQueryRequest):
            raise SessionQueryError("SESSION_QUERY_INVALID_QUERY", "a request must be an object of fields")
        return data


class SessionMatch(_Frozen):
    """One hit: where it is (session, seq), what it is, and an excerpt centred on the match."""

    session_id: str
    entry_id: str
    seq: int
    kind: str
    turn: int | None = None
    role: str | None = None
    excerpt: str
    created_at: datetime | None = None
    score: float = 0.0


class SessionQueryResult(_Frozen):
    """A page of matches; ``searched`` counts in-scope entries considered (empty log vs no match)."""

    matches: tuple[SessionMatch, ...] = ()
    searched: int = 0
    next_cursor: str | None = None
    partial: bool = Field(False, description="True when these are closest matches, not full matches.")
    source: str = Field("persisted", description="persisted, or persisted+live when live entries merged.")


@runtime_checkable
class SessionQuery(Protocol):
    """The retrieval seam: anything that can answer a :class:`SessionQueryRequest`."""

    def search(self, request: SessionQueryRequest) -> SessionQueryResult: ...
