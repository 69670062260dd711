"""The model-facing ``session_query`` tool and ready-made definitions for common LLM APIs.

The model supplies only ``query`` and ``limit``; the scope comes from the provider the operator
built (spec D10), and excerpt size and kinds are fixed here. Unknown arguments are ignored, so a
model-written ``session_id`` cannot widen anything.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import orjson

from sessionlog.query.contract import (
    DEFAULT_EXCERPT_BYTES,
    DEFAULT_LIMIT,
    MAX_LIMIT,
    SessionQuery,
    SessionQueryRequest,
)
from sessionlog.query.errors import SessionQueryError
from sessionlog.query.render import render_result

__all__ = ["TOOL_NAME", "SessionQueryTool", "ToolError", "session_query_tool"]

TOOL_NAME: Final = "session_query"

_DESCRIPTION = (
    "Search this session's own durable history, including parts that context compaction has "
    "summarised away. Use it to recover a detail that is no longer in context (an earlier tool "
    "result, a number, an identifier, a decision) instead of re-running the tool that produced it. "
    "Every query word must match; matching ignores case and accents and tolerates small typos, and "
    "words of 3+ characters also match inside longer words. Omit `query` to list the most recent "
    "entries. Each match shows its seq, turn and role, and an excerpt around the match."
)
_WORKSPACE_DESCRIPTION = (
    "Search the durable history of every session in this workspace (other agents' sessions "
    "included), with the same matching rules as session_query. Omit `query` to list the most "
    "recent entries across the workspace."
)


class ToolError(Exception):
    """The tool call failed; the message is safe to show to the model (it never leaks a trace)."""


class SessionQueryTool:
    """One tool bound to one provider; ``run`` is thread-safe (parallel tool calls are fine)."""

    parallel_safe: Final = True
    self_gated: Final = True

    def __init__(
        self,
        provider: SessionQuery,
        *,
        session_id: str | None = None,
        name: str = TOOL_NAME,
        description: str = _DESCRIPTION,
        default_limit: int | None = None,
        max_limit: int | None = None,
        excerpt_bytes: int = DEFAULT_EXCERPT_BYTES,
    ) -> None:
        # The provider's own limits bound the tool unless the operator narrows them further.
        provider_max = int(getattr(provider, "max_limit", MAX_LIMIT))
        max_limit = provider_max if max_limit is None else min(max_limit, provider_max)
        if default_limit is None:
            default_limit = min(int(getattr(provider, "default_limit", DEFAULT_LIMIT)), max_limit)
        if not 1 <= default_limit <= max_limit:
            raise SessionQueryError("SESSION_QUERY_INVALID_CONFIG", "need 1 <= default_limit <= max_limit")
        self.provider = provider
        self.session_id = session_id
        self.name = name
        self.description = description
        self.default_limit = default_limit
        self.max_limit = max_limit
        self.excerpt_bytes = excerpt_bytes

    @property
    def parameters(self) -> dict[str, Any]:
        """JSON Schema of the arguments: ``query`` and ``limit``, both optional."""
        return {
            "type": "object",
            "properties": {
                "query": {
                    "type": "string",
                    "description": "Words that must all appear (typos and accents tolerated); omit to browse "
                    "recent entries.",
                },
                "limit": {
                    "type": "integer",
                    "description": (
                        f"Maximum matches (default {self.default_limit}, at most {self.max_limit})."
                    ),
                },
            },
        }

    # -- definitions for LLM APIs -------------------------------------------------------------------
    def openai_tool(self) -> dict[str, Any]:
        """OpenAI-style function tool (chat completions / responses)."""
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": self.parameters},
        }

    def anthropic_tool(self) -> dict[str, Any]:
        """Anthropic-style tool definition."""
        return {"name": self.name, "description": self.description, "input_schema": self.parameters}

    def mcp_tool(self) -> dict[str, Any]:
        """MCP ``tools/list`` entry (annotations: read-only, idempotent, closed world)."""
        return {
            "name": self.name,
            "description": self.description,
            "inputSchema": self.parameters,
            "annotations": {"readOnlyHint": True, "idempotentHint": True, "openWorldHint": False},
        }

    # -- running a call -----------------------------------------------------------------------------
    def parse_arguments(self, arguments: str | bytes | Mapping[str, Any] | None) -> tuple[str, int]:
        """Validate the model's arguments into ``(query, limit)``; raises ToolError("invalid arguments…")."""
        if arguments is None:
            data: Any = {}
        elif isinstance(arguments, Mapping):
            data = dict(arguments)
        else:
            text = arguments.decode("utf-8", "replace") if isinstance(arguments, bytes) else arguments
            if not text.strip():
                data = {}
            else:
                try:
                    data = orjson.loads(text)
                except orjson.JSONDecodeError as err:
                    raise ToolError(f"invalid arguments: not JSON ({err})") from None
        if not isinstance(data, dict):
            raise ToolError("invalid arguments: expected a JSON object")
        query = data.get("query", "")
        if query is None:
            query = ""
        if not isinstance(query, str):
            raise ToolError("invalid arguments: query must be a string")
        if "\x00" in query:
            raise ToolError("invalid arguments: query must not contain NUL characters")
        limit = data.get("limit")
        if limit is None:
            limit = self.default_limit
        elif isinstance(limit, bool) or not isinstance(limit, int):
            raise ToolError("invalid arguments: limit must be an integer")
        if limit <= 0:
            limit = self.default_limit
        return query, min(limit, self.max_limit)

    def run(self, arguments: str | bytes | Mapping[str, Any] | None) -> str:
        """Run one call from the model's argument JSON and return the text the model reads."""
        query, limit = self.parse_arguments(arguments)
        request = SessionQueryRequest(
            session_id=self.session_id, query=query, limit=limit, excerpt_bytes=self.excerpt_bytes
        )
        try:
            result = self.provider.search(request)
        except SessionQueryError as err:
            raise ToolError(f"{self.name} failed ({err.code}): {err.message}") from None
        scope = getattr(self.provider, "scope", None)
        several = getattr(scope, "kind", "sessions") == "workspaces" or len(getattr(scope, "ids", ())) > 1
        noun = "workspace" if self.session_id is None and several else "session"
        return render_result(result, query, scope_noun=noun)

    def run_openai_call(self, tool_call: Mapping[str, Any]) -> dict[str, Any]:
        """Answer an OpenAI ``tool_calls[i]`` with a ``role: tool`` message (errors become its content)."""
        function = tool_call.get("function") or {}
        return {
            "role": "tool",
            "tool_call_id": tool_call.get("id"),
            "content": self._safe(function.get("arguments")),
        }

    def run_anthropic_call(self, tool_use: Mapping[str, Any]) -> dict[str, Any]:
        """Answer an Anthropic ``tool_use`` block with a ``tool_result`` block."""
        try:
            content, error = self.run(tool_use.get("input")), False
        except ToolError as err:
            content, error = str(err), True
        return {
            "type": "tool_result",
            "tool_use_id": tool_use.get("id"),
            "content": content,
            "is_error": error,
        }

    def run_mcp_call(self, arguments: Mapping[str, Any] | None) -> dict[str, Any]:
        """Answer an MCP ``tools/call`` with its ``result`` object."""
        try:
            return {"content": [{"type": "text", "text": self.run(arguments)}], "isError": False}
        except ToolError as err:
            return {"content": [{"type": "text", "text": str(err)}], "isError": True}

    def _safe(self, arguments: Any) -> str:
        try:
            return self.run(arguments)
        except ToolError as err:
            return f"error: {err}"


def session_query_tool(
    provider: SessionQuery | None, *, workspace: bool = False, **kwargs: Any
) -> SessionQueryTool | None:
    """The tool, or ``None`` (decline: advertise nothing) when there is no provider to search."""
    if provider is None:
        return None
    if workspace:
        kwargs.setdefault("name", "workspace_query")
        kwargs.setdefault("description", _WORKSPACE_DESCRIPTION)
    return SessionQueryTool(provider, **kwargs)
