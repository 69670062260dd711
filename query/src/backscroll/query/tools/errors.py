"""Tool-boundary errors: every failure becomes a :class:`ToolError` with a code and a fixed,
model-safe message. Provider and reader diagnostics are logged, never shown."""

from __future__ import annotations

import logging
from typing import Final, Literal, get_args

from backscroll.query.errors import ERROR_CODES, SessionQueryError

__all__ = [
    "TOOL_ERROR_CODES",
    "ToolError",
    "ToolErrorCode",
    "invalid_arguments",
    "service_error",
    "unexpected_error",
]

_log = logging.getLogger("backscroll.query.tools")

ToolErrorCode = Literal[
    "SESSION_QUERY_TOOL_INVALID_ARGUMENTS",
    "SESSION_QUERY_TOOL_NOT_CONFIGURED",
    "SESSION_QUERY_TOOL_UNKNOWN",
    "SESSION_QUERY_TOOL_FAILED",
]
#: Codes a :class:`ToolError` may carry: the tool's own and the service codes passed through.
TOOL_ERROR_CODES: Final[frozenset[str]] = frozenset(get_args(ToolErrorCode)) | ERROR_CODES

#: The fixed text per service code. Codes that only mean "the operator's setup is wrong" (config,
#: source conflict, filters the tool never sends) become SESSION_QUERY_TOOL_FAILED.
_SAFE: Final[dict[str, str]] = {
    "SESSION_QUERY_SESSION_NOT_FOUND": "no session with that id is available to you",
    "SESSION_QUERY_EVENT_NOT_FOUND": "that session has no event with that seq",
    "SESSION_QUERY_INVALID_WINDOW": "before and after must be whole numbers from 0 to {window_max}",
    "SESSION_QUERY_INVALID_QUERY": (
        "the query is not usable: use at most 32 distinct words and no NUL characters"
    ),
    "SESSION_QUERY_INVALID_LIMIT": "limit must be a whole number",
    "SESSION_QUERY_INVALID_LINEAGE": "this session's lineage has a parent cycle, so it cannot be traced",
    "SESSION_QUERY_INVALID_SURFACE": (
        "this session's log breaks a surface rule, so it cannot be classified; read its events "
        "with session_event_read instead"
    ),
    "SESSION_QUERY_CORRUPT_SESSION": "this session's stored history is damaged",
    "SESSION_QUERY_INDEX_FAILED": (
        "the history index is unavailable right now; this is not an empty result, try again shortly"
    ),
    "SESSION_QUERY_PERSISTENCE_FAILED": (
        "the stored history is unavailable right now; this is not an empty result, try again shortly"
    ),
    "SESSION_QUERY_INVALID_CURSOR": "the history changed while searching; search again",
    "SESSION_QUERY_STALE_CURSOR": "the history changed while searching; search again",
    "SESSION_QUERY_SEARCH_DISABLED": "searching is disabled by the operator",
    "SESSION_QUERY_ABORTED": "the search was cancelled or timed out; try a narrower query",
    "SESSION_QUERY_PROVIDER_CLOSED": "the history service has been shut down",
}
_FAILED: Final = "the tool failed; this is not an empty result"
#: A malformed or out-of-scope id is answered exactly like a missing one (no existence leak).
_AS_NOT_FOUND: Final = frozenset({"SESSION_QUERY_INVALID_SCOPE"})


class ToolError(Exception):
    """A failed tool call. ``str(err)`` is the text to hand back to the model: it names the tool and
    keeps the ``code``, and it never carries a stack trace, a server address or another scope's id."""

    def __init__(self, code: str, message: str, *, tool: str | None = None) -> None:
        if code not in TOOL_ERROR_CODES:  # pragma: no cover - guarded by the callers
            raise ValueError(f"unknown tool error code {code}")
        if code == "SESSION_QUERY_TOOL_INVALID_ARGUMENTS":
            text = f"invalid arguments ({code}): {message}"
        else:
            text = f"{tool or 'tool'} failed ({code}): {message}"
        super().__init__(text)
        self.code = code
        self.message = message
        self.tool = tool

    def to_json(self) -> dict[str, str]:
        return {"code": self.code, "message": self.message}


def invalid_arguments(message: str) -> ToolError:
    return ToolError("SESSION_QUERY_TOOL_INVALID_ARGUMENTS", message)


def service_error(err: SessionQueryError, *, tool: str, window_max: int | None = None) -> ToolError:
    """The model-safe :class:`ToolError` for a provider or reader error (the details are logged)."""
    code = "SESSION_QUERY_SESSION_NOT_FOUND" if err.code in _AS_NOT_FOUND else err.code
    template = _SAFE.get(code)
    _log.info("tool %s: %s", tool, err, extra={"code": err.code})
    if template is None:
        _log.warning("tool %s failed: %s", tool, err)
        return ToolError("SESSION_QUERY_TOOL_FAILED", _FAILED, tool=tool)
    limit = "the operator's maximum" if window_max is None else str(window_max)
    return ToolError(code, template.format(window_max=limit), tool=tool)


def unexpected_error(err: BaseException, *, tool: str) -> ToolError:
    """Anything else a provider raised (a custom provider's bug): logged with its trace."""
    _log.error("tool %s failed unexpectedly", tool, exc_info=err)
    return ToolError("SESSION_QUERY_TOOL_FAILED", _FAILED, tool=tool)
