"""The pydantic-ai adapter with the real SDK and a scripted ``FunctionModel`` (no network)."""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("pydantic_ai")

from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from backscroll.query import Scope
from backscroll.query.adapters.pydantic_ai import toolset
from backscroll.query.tools import SYSTEM_PROMPT, session_tools

from .adapter_history import WS, history
from .conftest import Harness

FIVE = {"session_query", "session_search", "session_event_read", "session_trace", "session_event_trace"}


def scripted(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """Calls ``session_query`` (and a read with bad arguments) first, then answers with what the
    tools returned."""
    returned = [part for message in messages for part in message.parts if isinstance(part, ToolReturnPart)]
    if not returned:
        assert {tool.name for tool in info.function_tools} == FIVE
        return ModelResponse(
            parts=[
                ToolCallPart(tool_name="session_query", args={"query": "zurich revnue"}, tool_call_id="c1"),
                ToolCallPart(tool_name="session_event_read", args={"seq": "zero"}, tool_call_id="c2"),
            ]
        )
    return ModelResponse(parts=[TextPart("\n---\n".join(str(part.content) for part in returned))])


def test_an_agent_run_calls_the_search_tool(harness: Harness) -> None:
    harness.append_all(history())
    harness.index()
    workspace = Scope.workspace(WS)  # several sessions: session_search too
    tools = session_tools(harness.provider(workspace), harness.reader(workspace), session_id="s-1")
    assert tools is not None and set(tools.names) == FIVE
    agent = Agent(FunctionModel(scripted), instructions=SYSTEM_PROMPT, toolsets=[toolset(tools)])
    answer = asyncio.run(agent.run("What was the Zürich forecast?")).output
    found, failed = answer.split("\n---\n")
    assert "4.1M" in found and "seq 0" in found
    assert failed.startswith("error: ") and "SESSION_QUERY_TOOL_INVALID_ARGUMENTS" in failed


def test_a_declined_set_is_an_empty_toolset() -> None:
    assert toolset(None).tools == {}
