"""The OpenAI Agents SDK (``openai-agents``, module ``agents``): the model tools as
``FunctionTool`` objects and :class:`LogSession`, a ``Session`` memory kept in the entry log.

Install the extra: ``pip install 'backscroll-query[openai-agents]'``.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, cast

try:
    from agents import FunctionTool, SessionSettings, Tool
    from agents.memory.session_settings import resolve_session_limit
except ImportError as err:
    raise ImportError(
        f"{__name__} needs the OpenAI Agents SDK: pip install 'backscroll-query[openai-agents]'",
        name=err.name,
    ) from err

from backscroll.query.adapters.item_log import EventLister, ItemEvent, ItemLog
from backscroll.query.tools.base import ModelTool

if TYPE_CHECKING:
    from agents import TResponseInputItem
    from agents.tool_context import ToolContext

    from backscroll.ingest.entry_log import EntryLog

__all__ = ["LogSession", "function_tool", "function_tools", "item_event"]

_BAD_SEGMENT = re.compile(r"[^a-z0-9_.-]+")


def function_tool(tool: ModelTool) -> FunctionTool:
    """One model tool as an Agents SDK ``FunctionTool`` (strict schema; a failed call answers the
    model with ``error: …`` text, it never fails the run)."""

    async def invoke(_context: ToolContext[Any], arguments: str) -> str:
        text, failed = await asyncio.to_thread(tool.answer, arguments)
        return f"error: {text}" if failed else text

    return FunctionTool(
        name=tool.name,
        description=tool.description,
        params_json_schema=tool.strict_parameters,
        on_invoke_tool=invoke,
        strict_json_schema=True,
    )


def function_tools(tools: Iterable[ModelTool] | None) -> list[Tool]:
    """Every tool of a set (``session_tools(...)``; ``None``, the declined set, gives none)."""
    return [function_tool(tool) for tool in tools or ()]


def _text_path(item: Mapping[str, Any], key: str) -> tuple[str | int, ...] | None:
    value = item.get(key)
    if isinstance(value, str):
        return (key,)
    if (
        isinstance(value, list)
        and len(value) == 1
        and isinstance(value[0], dict)
        and isinstance(value[0].get("text"), str)
    ):
        return (key, 0, "text")
    return None


def item_event(item: Mapping[str, Any], call_names: Mapping[str, str] | None = None) -> ItemEvent:
    """How a Responses input item is logged: messages as ``user/message`` or
    ``assistant/message``, ``function_call`` as ``tool/call``, ``function_call_output`` as
    ``tool/result`` (named after its call when ``call_names`` knows it); any other item as
    ``item/<type>``, kept but not searched by default."""
    kind = item.get("type")
    role = item.get("role")
    call_id = item.get("call_id") if isinstance(item.get("call_id"), str) else None
    if kind in (None, "message") and role in ("user", "assistant"):
        return ItemEvent(f"{role}/message", role=role, text_path=_text_path(item, "content"))
    if kind in (None, "message") and role in ("system", "developer"):
        return ItemEvent("message/system", role="system", text_path=_text_path(item, "content"))
    if kind == "function_call":
        name = item.get("name")
        return ItemEvent(
            "tool/call",
            role="assistant",
            tool_name=name if isinstance(name, str) else None,
            call_id=call_id,
            text_path=("arguments",) if isinstance(item.get("arguments"), str) else None,
        )
    if kind == "function_call_output":
        return ItemEvent(
            "tool/result",
            role="tool",
            tool_name=(call_names or {}).get(call_id or ""),
            call_id=call_id,
            text_path=_text_path(item, "output"),
        )
    segment = _BAD_SEGMENT.sub("_", str(kind or "unknown").lower()).strip("_")[:48] or "unknown"
    return ItemEvent(
        f"item/{segment}", role=role if role in ("user", "assistant", "system", "tool") else None
    )


class LogSession:
    """An Agents SDK ``Session`` kept in the entry log: pass it as ``Runner.run(..., session=)``.

    Each item is one event (messages are searchable like any message; see
    :class:`~backscroll.query.adapters.item_log.ItemLog`); ``pop_item`` and ``clear_session``
    append tombstones, so what the memory forgot stays in the log. ``reader`` must see this
    process's appends: ``backend.open_reader(Scope.session(session_id), live=log)``.
    """

    session_settings: SessionSettings | None

    def __init__(
        self,
        session_id: str,
        *,
        log: EntryLog,
        reader: EventLister,
        workspace_id: str,
        session_settings: SessionSettings | None = None,
    ) -> None:
        self.session_id = session_id
        self.session_settings = session_settings
        self._items = ItemLog(
            log, reader, workspace_id=workspace_id, session_id=session_id, origin="openai-agents"
        )
        self._call_names: dict[str, str] = {}

    async def get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
        """The latest ``limit`` items (default: the settings' limit, else all), oldest first."""
        chosen = resolve_session_limit(limit, self.session_settings)
        listed = await asyncio.to_thread(self._items.items, chosen)
        return [cast("TResponseInputItem", item) for _seq, item in listed]

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        """Append the items in order, one event each."""
        dicts = [cast("dict[str, Any]", item) for item in items]
        for item in dicts:
            if item.get("type") == "function_call" and isinstance(item.get("name"), str):
                self._call_names[str(item.get("call_id"))] = item["name"]
        names = dict(self._call_names)
        await asyncio.to_thread(self._items.add, dicts, lambda item: item_event(item, names))

    async def pop_item(self) -> TResponseInputItem | None:
        """Forget the latest item and return it; ``None`` when the memory is empty."""
        item = await asyncio.to_thread(self._items.pop)
        return None if item is None else cast("TResponseInputItem", item)

    async def clear_session(self) -> None:
        """Forget every item (the log keeps them)."""
        await asyncio.to_thread(self._items.clear)

    def close(self) -> None:
        """Release the session's writer; the log and the reader stay open (they are yours)."""
        self._items.close()
