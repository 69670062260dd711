"""The LangChain adapter with the real ``langchain-core`` and a fake chat model (no network): the
tools as ``StructuredTool`` in a tool-calling loop, and :class:`LogChatMessageHistory`."""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("langchain_core")

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from backscroll.query import Scope, SessionQueryRequest
from backscroll.query.adapters.langchain import LogChatMessageHistory, structured_tools
from backscroll.query.tools import SYSTEM_PROMPT, session_tools

from .adapter_history import WS, history
from .conftest import Harness


def test_a_tool_calling_loop_searches_and_is_remembered(harness: Harness) -> None:
    harness.append_all(history())
    harness.index()
    toolset = session_tools(
        harness.provider(Scope.session("s-1")), harness.reader(Scope.session("s-1")), session_id="s-1"
    )
    tools = {tool.name: tool for tool in structured_tools(toolset)}
    assert tools["session_query"].args_schema == toolset.get("session_query").parameters  # type: ignore[union-attr]
    call = {"name": "session_query", "args": {"query": "zurich revnue"}, "id": "call-1", "type": "tool_call"}
    model = GenericFakeChatModel(
        messages=iter([AIMessage(content="", tool_calls=[call]), AIMessage(content="4.1M.")])
    )

    log = harness.log()
    memory = LogChatMessageHistory(
        "chat-1", log=log, reader=harness.reader(Scope.session("chat-1"), live=log), workspace_id=WS
    )
    conversation: list[BaseMessage] = [
        SystemMessage(SYSTEM_PROMPT),
        HumanMessage("What was the Zürich forecast?"),
    ]
    while True:
        reply = model.invoke(conversation)
        conversation.append(reply)
        if not isinstance(reply, AIMessage) or not reply.tool_calls:
            break
        for tool_call in reply.tool_calls:
            conversation.append(tools[tool_call["name"]].invoke(tool_call))
    found = conversation[3]
    assert isinstance(found, ToolMessage) and "4.1M" in str(found.content) and "seq 0" in str(found.content)
    assert asyncio.run(tools["session_event_read"].ainvoke({"seq": -1})).startswith("error: ")

    memory.add_messages(conversation)
    assert memory.messages == conversation
    memory.close()
    again = LogChatMessageHistory(
        "chat-1", log=log, reader=harness.reader(Scope.session("chat-1"), live=log), workspace_id=WS
    )
    assert again.messages == conversation
    again.clear()
    assert again.messages == []
    again.add_user_message("Rotate the certificate.")
    assert again.messages == [HumanMessage("Rotate the certificate.")]
    again.close()

    # The history is searchable; the search tool's own result is not (it never finds itself).
    harness.index()
    hits = harness.provider(Scope.session("chat-1")).search(SessionQueryRequest(query="zurich forecast"))
    assert [m.seq for m in hits.matches] == [1]  # the question, not the tool's result at seq 3
