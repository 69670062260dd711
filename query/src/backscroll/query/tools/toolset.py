"""A set of model tools over one scope, with dispatch by name for each API (the decline rule:
a tool that can only ever answer "nothing" is not offered)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any, Final

import backscroll.query.tools.sdk as sdk
from backscroll.query.contract import SessionQuery
from backscroll.query.tools.base import ModelTool
from backscroll.query.tools.errors import ToolError, invalid_arguments
from backscroll.query.tools.reading import EventReadTool, EventTraceTool, SessionReads, SessionTraceTool
from backscroll.query.tools.search import (
    SEARCH_DESCRIPTION,
    WORKSPACE_DESCRIPTION,
    SessionQueryTool,
    SessionSearchTool,
)

if TYPE_CHECKING:
    from anthropic.types import ToolParam as AnthropicToolParam
    from anthropic.types import ToolResultBlockParam
    from openai.types.chat import ChatCompletionFunctionToolParam, ChatCompletionToolMessageParam
    from openai.types.responses import FunctionToolParam
    from openai.types.responses.response_input_item_param import FunctionCallOutput

__all__ = ["SYSTEM_PROMPT", "Toolset", "session_tools"]

#: A paragraph for the system prompt that points the model at the tools.
SYSTEM_PROMPT: Final = (
    "Your earlier work is kept in a durable session history, including turns that were summarised "
    "away when the context was compacted. When you need a detail that is no longer in context (a "
    "tool result, a number, an identifier, a decision), search it with session_query instead of "
    "redoing the work; read the full entry with session_event_read (its seq is in the search "
    "result). Use session_search to find other sessions of this workspace, session_trace for a "
    "session's parent and sub-sessions, and session_event_trace to see what replaced an event."
)


def _several(scope: object) -> bool:
    return getattr(scope, "kind", "sessions") == "workspaces" or len(getattr(scope, "ids", ())) > 1


class Toolset:
    """The tools offered for one scope, by name; every ``run_*_call`` dispatches on the call's tool
    name and never raises (an unknown name is a SESSION_QUERY_TOOL_UNKNOWN error result)."""

    def __init__(self, tools: Sequence[ModelTool]) -> None:
        names = [tool.name for tool in tools]
        if len(set(names)) != len(names):
            raise ValueError(f"duplicate tool names in {names}")
        self._tools = {tool.name: tool for tool in tools}

    def __iter__(self) -> Iterator[ModelTool]:
        return iter(self._tools.values())

    def __len__(self) -> int:
        return len(self._tools)

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self._tools)

    def get(self, name: str) -> ModelTool | None:
        return self._tools.get(name)

    # -- definitions --------------------------------------------------------------------------------
    def openai_tools(self) -> list[ChatCompletionFunctionToolParam]:
        return [tool.openai_tool() for tool in self]

    def responses_tools(self, *, strict: bool = True) -> list[FunctionToolParam]:
        return [tool.responses_tool(strict=strict) for tool in self]

    def anthropic_tools(self) -> list[AnthropicToolParam]:
        return [tool.anthropic_tool() for tool in self]

    def mcp_tools(self) -> list[dict[str, Any]]:
        return [tool.mcp_tool() for tool in self]

    # -- running ------------------------------------------------------------------------------------
    def run(self, name: object, arguments: object = None) -> str:
        """Run the named tool; raises :class:`ToolError` only."""
        tool = self._tools.get(name) if isinstance(name, str) else None
        if tool is None:
            shown = name[:64] if isinstance(name, str) else type(name).__name__
            raise ToolError("SESSION_QUERY_TOOL_UNKNOWN", f"no tool named {shown!r}")
        return tool.run(arguments)

    def answer(self, name: object, arguments: object = None, *, well_formed: bool = True) -> tuple[str, bool]:
        """``(text, is_error)`` of one call."""
        try:
            if not well_formed:
                raise invalid_arguments("the tool call is not an object with arguments")
            return self.run(name, arguments), False
        except ToolError as err:
            return str(err), True

    def run_openai_call(self, tool_call: object) -> ChatCompletionToolMessageParam:
        call_id, name, arguments, ok = sdk.parse_chat_call(tool_call)
        text, failed = self.answer(name, arguments, well_formed=ok)
        return sdk.chat_result(call_id, f"error: {text}" if failed else text)

    def run_responses_call(self, item: object) -> FunctionCallOutput:
        call_id, name, arguments, ok = sdk.parse_responses_call(item)
        text, failed = self.answer(name, arguments, well_formed=ok)
        return sdk.responses_result(call_id, f"error: {text}" if failed else text)

    def run_anthropic_call(self, tool_use: object) -> ToolResultBlockParam:
        call_id, name, arguments, ok = sdk.parse_anthropic_call(tool_use)
        text, failed = self.answer(name, arguments, well_formed=ok)
        return sdk.anthropic_result(call_id, text, is_error=failed)

    def run_mcp_call(self, name: object, arguments: object) -> sdk.McpToolResult:
        text, failed = self.answer(name, arguments)
        return sdk.mcp_result(text, is_error=failed)

    # -- asyncio: the same calls in a worker thread, so a search never blocks the event loop -------
    async def arun(self, name: object, arguments: object = None) -> str:
        """:meth:`run` without blocking the event loop; raises :class:`ToolError` only."""
        return await asyncio.to_thread(self.run, name, arguments)

    async def arun_openai_call(self, tool_call: object) -> ChatCompletionToolMessageParam:
        return await asyncio.to_thread(self.run_openai_call, tool_call)

    async def arun_responses_call(self, item: object) -> FunctionCallOutput:
        return await asyncio.to_thread(self.run_responses_call, item)

    async def arun_anthropic_call(self, tool_use: object) -> ToolResultBlockParam:
        return await asyncio.to_thread(self.run_anthropic_call, tool_use)

    async def arun_mcp_call(self, name: object, arguments: object) -> sdk.McpToolResult:
        return await asyncio.to_thread(self.run_mcp_call, name, arguments)


def session_tools(
    provider: SessionQuery | None = None,
    reader: SessionReads | None = None,
    *,
    session_id: str | None = None,
    max_limit: int | None = None,
    names: dict[str, str] | None = None,
) -> Toolset | None:
    """The tools one agent (or one MCP server) gets for a scope, or ``None`` to decline.

    * ``provider`` gives ``session_query`` (pinned to ``session_id`` when given) and, when its scope
      spans several sessions, ``session_search`` (which leaves ``session_id`` out);
    * ``reader`` gives ``session_event_read``, ``session_trace`` and ``session_event_trace``
      (``session_id`` is their default session);
    * ``names`` renames tools (``{"session_query": "history_search"}``); the searches leave out the
      calls of every tool of the set, whatever its name, and of the built-in names.
    """
    renamed = dict(names or {})

    def name(default: str) -> str:
        return renamed.get(default, default)

    from backscroll.query.contract import SELF_TOOL_NAMES

    excluded = tuple(dict.fromkeys([*SELF_TOOL_NAMES, *renamed.values()]))
    tools: list[ModelTool] = []
    if provider is not None:
        several = _several(getattr(provider, "scope", None))
        tools.append(
            SessionQueryTool(
                provider,
                session_id=session_id,
                name=name("session_query"),
                # Unpinned over several sessions, it searches them all: say so.
                description=WORKSPACE_DESCRIPTION if several and session_id is None else SEARCH_DESCRIPTION,
                max_limit=max_limit,
                exclude_tools=excluded,
            )
        )
        if several:
            tools.append(
                SessionSearchTool(
                    provider,
                    exclude_session_id=session_id,
                    name=name("session_search"),
                    exclude_tools=excluded,
                )
            )
    if reader is not None:
        tools.append(EventReadTool(reader, session_id=session_id, name=name("session_event_read")))
        tools.append(SessionTraceTool(reader, session_id=session_id, name=name("session_trace")))
        tools.append(EventTraceTool(reader, session_id=session_id, name=name("session_event_trace")))
    return Toolset(tools) if tools else None
