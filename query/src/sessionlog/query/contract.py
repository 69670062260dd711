"""Request, result and match shapes of the search contract, and the provider protocol."""

from __future__ import annotations

from datetime import datetime
from typing import Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "DEFAULT_EXCERPT_BYTES",
    "DEFAULT_LIMIT",
    "MAX_LIMIT",
    "SELF_TOOL_NAMES",
    "SessionMatch",
    "SessionQuery",
    "SessionQueryRequest",
    "SessionQueryResult",
]

DEFAULT_LIMIT = 10
MAX_LIMIT = 50
DEFAULT_EXCERPT_BYTES = 600
#: The names of sessionlog's own model tools. Their calls and results are not history worth finding
#: (D8): a search leaves them out unless ``kinds`` is given; see ``SessionQueryRequest.exclude_tools``.
SELF_TOOL_NAMES: tuple[str, ...] = (
    "session_query",
    "workspace_query",
    "session_search",
    "session_event_search",
    "session_event_read",
    "session_trace",
    "session_event_trace",
)


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class SessionQueryRequest(_Frozen):
    """One search. ``session_id`` narrows the provider's scope to one session (``None``: all of it);
    ``limit`` ``None`` means the provider's default."""

    session_id: str | None = None
    query: str = ""
    kinds: tuple[str, ...] = ()
    limit: int | None = None
    excerpt_bytes: int = DEFAULT_EXCERPT_BYTES
    cursor: str | None = None
    #: Tool names whose calls and results a default-kinds search leaves out (the searching tools' own
    #: calls, whatever the operator named them). At most 32 names of at most 512 characters.
    exclude_tools: tuple[str, ...] = SELF_TOOL_NAMES


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
