"""LangChain and LangGraph (``langchain-core``): the model tools as ``StructuredTool`` objects and
:class:`LogChatMessageHistory`, a ``BaseChatMessageHistory`` kept in the entry log.

Install the extra: ``pip install 'backscroll-query[langchain]'``.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

try:
    from langchain_core.chat_history import BaseChatMessageHistory
    from langchain_core.messages import BaseMessage, message_to_dict, messages_from_dict
    from langchain_core.tools import StructuredTool
except ImportError as err:
    raise ImportError(
        f"{__name__} needs langchain-core: pip install 'backscroll-query[langchain]'", name=err.name
    ) from err

from backscroll.query.adapters.item_log import EventLister, ItemEvent, ItemLog
from backscroll.query.tools.base import ModelTool

if TYPE_CHECKING:
    from backscroll.ingest.entry_log import EntryLog

__all__ = ["LogChatMessageHistory", "message_event", "structured_tool", "structured_tools"]

_BAD_SEGMENT = re.compile(r"[^a-z0-9_.-]+")


def structured_tool(tool: ModelTool) -> StructuredTool:
    """One model tool as a LangChain ``StructuredTool`` with the tool's own JSON Schema (the tool
    checks the arguments; a failed call answers the model with ``error: …`` text)."""

    def run(**arguments: Any) -> str:
        text, failed = tool.answer(arguments)
        return f"error: {text}" if failed else text

    async def arun(**arguments: Any) -> str:
        return await asyncio.to_thread(run, **arguments)

    return StructuredTool(
        name=tool.name, description=tool.description, args_schema=tool.parameters, func=run, coroutine=arun
    )


def structured_tools(tools: Iterable[ModelTool] | None) -> list[StructuredTool]:
    """Every tool of a set (``session_tools(...)``; ``None``, the declined set, gives none), for
    ``model.bind_tools(...)`` or LangGraph's ``ToolNode``."""
    return [structured_tool(tool) for tool in tools or ()]


def message_event(item: Mapping[str, Any]) -> ItemEvent:
    """How a message (as ``message_to_dict`` gives it) is logged: human and AI messages as
    ``user/message`` and ``assistant/message``, tool messages as ``tool/result``, system messages
    as ``message/system``, anything else as ``item/<type>`` (kept, not searched by default)."""
    kind = item.get("type")
    data = item.get("data")
    data = data if isinstance(data, Mapping) else {}
    path: tuple[str | int, ...] | None = ("data", "content") if isinstance(data.get("content"), str) else None
    if kind in ("human", "ai"):
        role = "user" if kind == "human" else "assistant"
        return ItemEvent(f"{role}/message", role=role, text_path=path)
    if kind == "tool":
        name, call_id = data.get("name"), data.get("tool_call_id")
        return ItemEvent(
            "tool/result",
            role="tool",
            tool_name=name if isinstance(name, str) else None,
            call_id=call_id if isinstance(call_id, str) else None,
            text_path=path,
        )
    if kind == "system":
        return ItemEvent("message/system", role="system", text_path=path)
    segment = _BAD_SEGMENT.sub("_", str(kind or "unknown").lower()).strip("_")[:48] or "unknown"
    return ItemEvent(f"item/{segment}", text_path=path)


# Without langchain-core installed a type checker sees Any here.
class LogChatMessageHistory(BaseChatMessageHistory):  # type: ignore[misc,unused-ignore]
    """A chat history kept in the entry log, for ``RunnableWithMessageHistory`` or your own loop.

    Each message is one event (searchable like any message; see
    :class:`~backscroll.query.adapters.item_log.ItemLog`); ``clear`` appends a tombstone, so the
    log keeps what the history forgot. ``reader`` must see this process's appends:
    ``backend.open_reader(Scope.session(session_id), live=log)``.
    """

    def __init__(self, session_id: str, *, log: EntryLog, reader: EventLister, workspace_id: str) -> None:
        self.session_id = session_id
        self._items = ItemLog(
            log, reader, workspace_id=workspace_id, session_id=session_id, origin="langchain"
        )

    @property
    def messages(self) -> list[BaseMessage]:  # type: ignore[override,unused-ignore]
        """Every remembered message, oldest first."""
        listed: list[BaseMessage] = messages_from_dict([item for _seq, item in self._items.items()])
        return listed

    def add_messages(self, messages: Sequence[BaseMessage]) -> None:
        """Append the messages in order, one event each."""
        self._items.add([message_to_dict(message) for message in messages], message_event)

    def clear(self) -> None:
        """Forget every message (the log keeps them)."""
        self._items.clear()

    def close(self) -> None:
        """Release the session's writer; the log and the reader stay open (they are yours)."""
        self._items.close()
