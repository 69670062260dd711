"""Validation and normalisation of a search request, shared by every provider. Pure.

Both providers call :func:`plan_request` so that a request is refused the same way (the same
:class:`SessionQueryError` codes and messages) whatever the backend; each backend's engine reads
the resulting :class:`QueryPlan`.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

from backscroll.indexer.document import DEFAULT_KINDS
from backscroll.indexer.textfold import QUERY_TOKEN_RE, fold
from backscroll.query.contract import (
    DEFAULT_EXCERPT_BYTES,
    DEFAULT_LIMIT,
    KIND_RE,
    SessionQueryRequest,
    check_request_fields,
    time_bound,
)
from backscroll.query.errors import SessionQueryError
from backscroll.query.scope import Scope

__all__ = [
    "KIND_RE",
    "MAX_EXCERPT_BYTES",
    "MAX_QUERY_WORDS",
    "MAX_WORD_CHARS",
    "SEARCH_TOOL_NAME",
    "QueryPlan",
    "excerpt_budget",
    "plan_request",
]

MAX_QUERY_WORDS: Final = 32
MAX_WORD_CHARS: Final = 64
MAX_EXCERPT_BYTES: Final = 64 * 1024
_SESSION_ID: Final = re.compile(r"[A-Za-z0-9._:-]{1,128}")
_MAX_EXCLUDED_TOOLS: Final = 32
_MAX_TOOL_NAME: Final = 512
SEARCH_TOOL_NAME: Final = "session_query"


@dataclass(frozen=True, slots=True)
class QueryPlan:
    """The normalised request: scope filter, kinds, and the query words (original and folded)."""

    filters: tuple[dict[str, Any], ...]
    kinds: tuple[str, ...]
    raw_words: tuple[str, ...]
    words: tuple[str, ...]
    phrase: str
    default_kinds: bool
    limit: int = 10
    exclude_tools: tuple[str, ...] = (SEARCH_TOOL_NAME,)
    #: Inclusive bounds on the entry's time (aware datetimes), ``None`` when open.
    since: datetime | None = None
    until: datetime | None = None

    @property
    def browse(self) -> bool:
        return not self.words


def plan_request(
    request: SessionQueryRequest, scope: Scope, max_limit: int, default_limit: int = DEFAULT_LIMIT
) -> tuple[QueryPlan, str | None]:
    """Validate ``request`` against ``scope`` and return the plan and the narrowing session id.

    Raises INVALID_QUERY, INVALID_SCOPE, SESSION_NOT_FOUND (a session the scope cannot admit, told
    apart from a missing one by nothing), INVALID_LIMIT or INVALID_FILTER (a bad kind, tool name or
    time bound, or ``since`` after ``until``)."""
    if not isinstance(request, SessionQueryRequest):
        raise SessionQueryError("SESSION_QUERY_INVALID_QUERY", "expected a SessionQueryRequest")
    # Again: ``model_construct`` and ``model_copy(update=...)`` skip the model's own validation.
    check_request_fields({name: getattr(request, name, None) for name in type(request).model_fields})
    session_id = request.session_id
    if session_id is not None:
        if not session_id.strip():
            raise SessionQueryError("SESSION_QUERY_INVALID_SCOPE", "session_id must not be empty or blank")
        if scope.admits_session_id(session_id) is False or not _SESSION_ID.fullmatch(session_id):
            raise SessionQueryError("SESSION_QUERY_SESSION_NOT_FOUND", f"no session {session_id!r}")
    query = request.query
    if not isinstance(query, str) or "\x00" in query:
        raise SessionQueryError("SESSION_QUERY_INVALID_QUERY", "query must be text without NUL characters")
    limit = default_limit if request.limit is None else request.limit
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= max_limit:
        raise SessionQueryError(
            "SESSION_QUERY_INVALID_LIMIT", f"limit must be an integer in [1, {max_limit}]"
        )
    for kind in request.kinds:
        if not KIND_RE.fullmatch(kind):
            raise SessionQueryError("SESSION_QUERY_INVALID_FILTER", f"unknown kind {kind!r}")
    exclude_tools = request.exclude_tools
    if len(exclude_tools) > _MAX_EXCLUDED_TOOLS or not all(
        isinstance(name, str) and 0 < len(name) <= _MAX_TOOL_NAME for name in exclude_tools
    ):
        raise SessionQueryError(
            "SESSION_QUERY_INVALID_FILTER",
            f"exclude_tools takes at most {_MAX_EXCLUDED_TOOLS} names of 1 to {_MAX_TOOL_NAME} characters",
        )
    raw_words: dict[str, str] = {}
    # NFC: decomposed input (macOS, some IMEs; Hangul typed as jamo) matches composed text.
    for found in QUERY_TOKEN_RE.finditer(unicodedata.normalize("NFC", query)):
        # Identifiers stay whole (``get_type``, ``2.2.1``): the tiers match them as identifiers.
        raw = found.group().lower()[:MAX_WORD_CHARS].rstrip("_.:-/")
        raw_words.setdefault(fold(raw), raw)
    if len(raw_words) > MAX_QUERY_WORDS:
        raise SessionQueryError(
            "SESSION_QUERY_INVALID_QUERY", f"query has {len(raw_words)} words; at most {MAX_QUERY_WORDS}"
        )
    since = None if request.since is None else time_bound("since", request.since)
    until = None if request.until is None else time_bound("until", request.until)
    if since is not None and until is not None and since > until:
        raise SessionQueryError("SESSION_QUERY_INVALID_FILTER", "since is after until")
    filters: list[dict[str, Any]] = [scope.filter()]
    if session_id is not None:
        filters.append({"term": {"session_id": session_id}})
    # Sets, in one canonical order: the same filters in another order sign the same cursor.
    kinds = tuple(sorted(set(request.kinds))) or DEFAULT_KINDS
    plan = QueryPlan(
        filters=tuple(filters),
        kinds=kinds,
        raw_words=tuple(raw_words.values()),
        words=tuple(raw_words),
        phrase=" ".join(raw_words.values()),
        default_kinds=not request.kinds,
        limit=limit,
        exclude_tools=tuple(sorted(set(exclude_tools))),
        since=since,
        until=until,
    )
    return plan, session_id


def excerpt_budget(request: SessionQueryRequest) -> int:
    """The excerpt size in UTF-8 bytes: the default when not positive, at most 64 KiB; a tiny
    budget is honoured (the excerpt is then cut without ellipses or empty, never over budget)."""
    budget = request.excerpt_bytes if request.excerpt_bytes > 0 else DEFAULT_EXCERPT_BYTES
    return min(budget, MAX_EXCERPT_BYTES)
