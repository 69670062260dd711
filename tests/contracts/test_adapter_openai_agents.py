"""The OpenAI Agents SDK adapter with the real SDK and a scripted model (no network): the tools
as ``FunctionTool`` in an ``Agent`` run, and :class:`LogSession` as the run's memory."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

pytest.importorskip("agents")

from agents import Agent, Model, ModelResponse, RunConfig, Runner, SessionSettings, Usage
from agents.items import TResponseStreamEvent
from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText

from backscroll.query import Scope, SessionQueryRequest
from backscroll.query.adapters.openai_agents import LogSession, function_tools
from backscroll.query.tools import SYSTEM_PROMPT, session_tools

from .adapter_history import WS, history
from .conftest import Harness


class ScriptedModel(Model):  # type: ignore[misc,unused-ignore]
    """Calls ``session_query`` first, then answers with the text of the tool's output."""

    def __init__(self) -> None:
        self.inputs: list[list[Any]] = []

    async def get_response(self, *args: Any, **kwargs: Any) -> ModelResponse:
        given = args[1] if len(args) > 1 else kwargs["input"]
        items = [{"role": "user", "content": given}] if isinstance(given, str) else list(given)
        self.inputs.append(items)
        outputs = [i for i in items if isinstance(i, dict) and i.get("type") == "function_call_output"]
        if not outputs:
            call = ResponseFunctionToolCall(
                type="function_call",
                call_id="call-1",
                name="session_query",
                arguments='{"query": "zurich revnue", "limit": null}',
            )
            return ModelResponse(output=[call], usage=Usage(), response_id=None)
        text = ResponseOutputText(type="output_text", text=str(outputs[-1]["output"]), annotations=[])
        message = ResponseOutputMessage(
            id="msg-1", type="message", role="assistant", status="completed", content=[text]
        )
        return ModelResponse(output=[message], usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[TResponseStreamEvent]:
        raise NotImplementedError


def test_an_agent_run_calls_the_search_tool_and_remembers_the_run(harness: Harness) -> None:
    harness.append_all(history())
    harness.index()
    tools = session_tools(
        harness.provider(Scope.session("s-1")), harness.reader(Scope.session("s-1")), session_id="s-1"
    )
    agent = Agent(
        name="assistant", instructions=SYSTEM_PROMPT, model=ScriptedModel(), tools=function_tools(tools)
    )
    assert {tool.name for tool in agent.tools} == {
        "session_query",
        "session_event_read",
        "session_trace",
        "session_event_trace",
    }

    log = harness.log()
    memory = LogSession(
        "run-1", log=log, reader=harness.reader(Scope.session("run-1"), live=log), workspace_id=WS
    )
    run_config = RunConfig(tracing_disabled=True)
    result = asyncio.run(
        Runner.run(agent, "What was the Zürich forecast?", session=memory, run_config=run_config)
    )
    assert "4.1M" in result.final_output and "seq 0" in result.final_output

    remembered = asyncio.run(memory.get_items())
    kinds = [item.get("type", "message") for item in remembered]
    assert kinds == ["message", "function_call", "function_call_output", "message"]
    assert remembered[0] == {"role": "user", "content": "What was the Zürich forecast?"}
    memory.close()

    # The remembered run is history like any other: its messages are searched, the tool's own
    # call and result are not (the search never finds itself).
    harness.index()
    run = harness.provider(Scope.session("run-1")).search(SessionQueryRequest(query="forecast"))
    assert sorted(m.seq for m in run.matches) == [0, 3]  # the question and the answer


def test_a_log_session_round_trip(harness: Harness) -> None:
    harness.append_all(history())  # a deployment with something indexed (readers of an empty one fail)
    harness.index()
    log = harness.log()
    items: list[Any] = [
        {"role": "user", "content": "Rotate the gateway certificate."},
        {"role": "system", "content": [{"type": "input_text", "text": "Be brief."}]},
        {
            "type": "function_call",
            "call_id": "c1",
            "name": "shell",
            "arguments": '{"cmd": "ls"}',
            "id": "fc1",
        },
        {"type": "function_call_output", "call_id": "c1", "output": "cert.pem\nkey.pem"},
        {"type": "reasoning", "id": "r1", "summary": []},
        {"role": "user", "content": "a NUL \x00 and\r\n é " + "x" * 2000},
        {
            "id": "m1",
            "type": "message",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": "Done.", "annotations": []}],
        },
    ]

    def session() -> LogSession:
        return LogSession(
            "mem-1", log=log, reader=harness.reader(Scope.session("mem-1"), live=log), workspace_id=WS
        )

    async def scenario() -> None:
        memory = session()
        assert await memory.get_items() == []
        assert await memory.pop_item() is None
        await memory.clear_session()  # nothing to clear: nothing written
        await memory.add_items(items)
        assert await memory.get_items() == items
        assert await memory.get_items(2) == items[-2:]
        assert await memory.get_items(0) == []
        assert await memory.pop_item() == items[-1]
        assert await memory.pop_item() == items[-2]
        assert await memory.get_items() == items[:-2]
        memory.close()

        again = session()  # a new memory of the same session reads the same items
        again.session_settings = SessionSettings(limit=1)
        assert await again.get_items() == items[-3:-2]
        await again.clear_session()
        assert await again.get_items() == []
        await again.add_items(items[:1])
        assert await again.get_items(None) == items[:1]
        assert await again.pop_item() == items[0]
        assert await again.pop_item() is None
        again.close()

    asyncio.run(scenario())
