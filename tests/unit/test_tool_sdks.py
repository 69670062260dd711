"""The tools through the real OpenAI and Anthropic SDKs, offline: definitions validate against the
SDKs' own param types, and a full round trip (the model's tool call as the SDK parses it → our run
→ the tool result message the SDK sends back) goes through each client with a mock HTTP transport."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import jsonschema
import openai
import pytest
from anthropic.types import ToolParam as AnthropicToolParam
from anthropic.types import ToolResultBlockParam
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from openai.types.chat import ChatCompletionFunctionToolParam, ChatCompletionToolMessageParam
from openai.types.responses import FunctionToolParam, ResponseInputItemParam
from openai.types.responses.response_input_item_param import FunctionCallOutput
from pydantic import TypeAdapter

from backscroll.backends import Backend, EmbeddedBackend
from backscroll.query import Scope
from backscroll.query.tools import DEFAULT_MAX_OUTPUT_CHARS, Toolset, session_tools

T0 = datetime(2026, 11, 2, 8, 0, tzinfo=UTC)
TOOL_NAMES = {"session_query", "session_search", "session_event_read", "session_trace", "session_event_trace"}


class _AnyText(str):
    def __eq__(self, other: object) -> bool:
        return isinstance(other, str)

    __hash__ = str.__hash__


ANY_TEXT = _AnyText()


def _event(
    ws: str, sid: str, seq: int, text: str, kind: str = "user/message", **extra: Any
) -> dict[str, Any]:
    record: dict[str, Any] = {
        "v": 1,
        "kind": "event",
        "workspace_id": ws,
        "session_id": sid,
        "seq": seq,
        "type": kind,
        "time": (T0 + timedelta(minutes=seq)).isoformat(),
        "turn": seq,
        "text": text,
    }
    if kind != "tool/call":
        record["surface"] = {"op": "append"}
    record.update(extra)
    return record


def load(path: Path) -> Backend:
    """An embedded backend holding two workspaces (ws-a: s-root and its child; ws-b: s-secret)."""
    backend = EmbeddedBackend(path)
    records = [
        {
            "v": 1,
            "kind": "header",
            "workspace_id": "ws-a",
            "session_id": "s-root",
            "created_at": T0.isoformat(),
        },
        _event("ws-a", "s-root", 0, "my secret figure is 42", role="user"),
        _event("ws-a", "s-root", 1, "noted the figure", "assistant/message", role="assistant"),
        {
            "v": 1,
            "kind": "header",
            "workspace_id": "ws-a",
            "session_id": "s-child",
            "created_at": (T0 + timedelta(hours=1)).isoformat(),
            "parent_session_id": "s-root",
        },
        _event("ws-a", "s-child", 0, "the child computed figure 7", role="user"),
        {
            "v": 1,
            "kind": "header",
            "workspace_id": "ws-b",
            "session_id": "s-secret",
            "created_at": T0.isoformat(),
        },
        _event("ws-b", "s-secret", 0, "their secret figure is 99", role="user"),
    ]
    with backend.open_log() as log:
        for handle in [log.append(r) for r in records]:
            handle.result(timeout=10)
    return backend


@pytest.fixture(scope="module")
def toolset(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Toolset]:
    backend = load(tmp_path_factory.mktemp("sdk") / "backscroll.db")
    scope = Scope.workspace("ws-a")
    with backend.open_provider(scope) as provider, backend.open_reader(scope) as reader:
        tools = session_tools(provider, reader, session_id="s-root")
        assert tools is not None
        yield tools


def mock_client(replies: list[dict[str, Any]], seen: list[dict[str, Any]]) -> httpx2.Client:
    """An HTTP client that records each request body and answers with the next canned reply."""

    def handler(request: httpx2.Request) -> httpx2.Response:
        seen.append(json.loads(request.content))
        return httpx2.Response(200, json=replies[len(seen) - 1])

    return httpx2.Client(transport=httpx2.MockTransport(handler))


# -- definitions ----------------------------------------------------------------------------------------


def test_definitions_validate_against_the_sdk_types(toolset: Toolset) -> None:
    assert set(toolset.names) == {
        "session_query",
        "session_search",
        "session_event_read",
        "session_trace",
        "session_event_trace",
    }
    chat = TypeAdapter(ChatCompletionFunctionToolParam)
    responses = TypeAdapter(FunctionToolParam)
    claude = TypeAdapter(AnthropicToolParam)
    for tool in toolset:
        assert chat.validate_python(tool.openai_tool()) == tool.openai_tool()
        assert claude.validate_python(tool.anthropic_tool()) == tool.anthropic_tool()
        for strict in (True, False):
            definition = tool.responses_tool(strict=strict)
            assert responses.validate_python(definition) == definition
            assert definition["strict"] is strict
        schema: dict[str, Any] = dict(tool.responses_tool()["parameters"] or {})
        jsonschema.Draft202012Validator.check_schema(schema)
        assert schema["additionalProperties"] is False
        assert schema["required"] == list(schema["properties"])
        # Strict mode makes the model send every property; null means "not given".
        nulls = {
            name: None for name in schema["properties"] if name not in tool.parameters.get("required", ())
        }
        jsonschema.validate({**nulls, "seq": 0} if "seq" in schema["properties"] else nulls, schema)
        assert tool.answer({**nulls, "seq": 0} if "seq" in schema["properties"] else nulls)[1] is False


# -- round trips ------------------------------------------------------------------------------------------


def _chat_completion(message: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 0,
        "model": "m",
        "choices": [{"index": 0, "finish_reason": "tool_calls", "message": message}],
    }


def test_openai_chat_completions_round_trip(toolset: Toolset) -> None:
    calls = [
        ("call_1", "session_query", '{"query": "secret figure", "session_id": "s-secret"}'),
        ("call_2", "session_event_read", '{"session_id": "s-child", "seq": 0}'),
        ("call_3", "session_event_read", "[1, 2]"),
        ("call_4", "session_trace", "{}"),
    ]
    tool_calls = [
        {"id": cid, "type": "function", "function": {"name": name, "arguments": args}}
        for cid, name, args in calls
    ]
    replies = [
        _chat_completion({"role": "assistant", "content": None, "tool_calls": tool_calls}),
        _chat_completion({"role": "assistant", "content": "The figure was 42."}),
    ]
    seen: list[dict[str, Any]] = []
    client = openai.OpenAI(api_key="test", http_client=mock_client(replies, seen), max_retries=0)
    messages: list[Any] = [{"role": "user", "content": "What was my secret figure?"}]
    reply = client.chat.completions.create(model="m", messages=messages, tools=toolset.openai_tools())
    assert seen[0]["tools"] == toolset.openai_tools()
    message = reply.choices[0].message
    messages.append(message.model_dump(exclude_none=True))
    assert message.tool_calls is not None
    results = [toolset.run_openai_call(call) for call in message.tool_calls]  # the SDK's own objects
    adapter = TypeAdapter(ChatCompletionToolMessageParam)
    for result in results:
        adapter.validate_python(result)
    by_id = {r["tool_call_id"]: str(r["content"]) for r in results}
    assert "42" in by_id["call_1"] and "99" not in by_id["call_1"]
    assert "the child computed figure 7" in by_id["call_2"]
    assert by_id["call_3"].startswith("error: invalid arguments (SESSION_QUERY_TOOL_INVALID_ARGUMENTS)")
    assert "s-child" in by_id["call_4"]
    messages.extend(results)
    final = client.chat.completions.create(model="m", messages=messages, tools=toolset.openai_tools())
    assert final.choices[0].message.content == "The figure was 42."
    sent = [m for m in seen[1]["messages"] if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in sent] == [c[0] for c in calls]


def _response(output: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "id": "resp_1",
        "object": "response",
        "created_at": 0,
        "model": "m",
        "status": "completed",
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
    }


def test_openai_responses_round_trip_with_strict_tools(toolset: Toolset) -> None:
    item = {
        "type": "function_call",
        "id": "fc_1",
        "call_id": "call_9",
        "name": "session_query",
        "arguments": '{"query": "figure", "limit": null}',
        "status": "completed",
    }
    final_message = {
        "type": "message",
        "id": "msg_1",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": "done", "annotations": []}],
    }
    seen: list[dict[str, Any]] = []
    replies = [_response([item]), _response([final_message])]
    client = openai.OpenAI(api_key="test", http_client=mock_client(replies, seen), max_retries=0)
    tools = toolset.responses_tools()
    first = client.responses.create(model="m", input="find the figure", tools=tools)
    assert seen[0]["tools"] == tools and all(t["strict"] for t in seen[0]["tools"])
    outputs: list[ResponseInputItemParam] = [
        toolset.run_responses_call(out) for out in first.output if out.type == "function_call"
    ]
    assert len(outputs) == 1
    TypeAdapter(FunctionCallOutput).validate_python(outputs[0])
    assert outputs[0] == {"type": "function_call_output", "call_id": "call_9", "output": ANY_TEXT}
    assert "42" in str(dict(outputs[0])["output"])
    second = client.responses.create(model="m", previous_response_id=first.id, input=outputs, tools=tools)
    assert second.output_text == "done"
    assert seen[1]["input"] == outputs


def test_anthropic_messages_round_trip(toolset: Toolset) -> None:
    content = [
        {"type": "text", "text": "Looking."},
        {"type": "tool_use", "id": "toolu_1", "name": "session_search", "input": {"query": "figure"}},
        {"type": "tool_use", "id": "toolu_2", "name": "session_event_trace", "input": {"seq": "zero"}},
    ]
    usage = {"input_tokens": 1, "output_tokens": 1}
    replies: list[dict[str, Any]] = [
        {"id": "msg_1", "type": "message", "role": "assistant", "model": "m", "content": content,
         "stop_reason": "tool_use", "usage": usage},
        {"id": "msg_2", "type": "message", "role": "assistant", "model": "m",
         "content": [{"type": "text", "text": "42"}], "stop_reason": "end_turn", "usage": usage},
    ]  # fmt: skip
    seen: list[dict[str, Any]] = []
    client = anthropic.Anthropic(api_key="test", http_client=mock_client(replies, seen), max_retries=0)
    messages: list[Any] = [{"role": "user", "content": "which sessions mention the figure?"}]
    reply = client.messages.create(
        model="m", max_tokens=256, messages=messages, tools=toolset.anthropic_tools()
    )
    assert seen[0]["tools"] == toolset.anthropic_tools()
    messages.append({"role": "assistant", "content": reply.content})
    results = [toolset.run_anthropic_call(block) for block in reply.content if block.type == "tool_use"]
    adapter = TypeAdapter(ToolResultBlockParam)
    for result in results:
        adapter.validate_python(result)
    assert results[0]["is_error"] is False and "[session s-child]" in str(results[0]["content"])
    assert "99" not in str(results[0]["content"])
    assert results[1]["is_error"] is True and "SESSION_QUERY_TOOL_INVALID_ARGUMENTS" in str(
        results[1]["content"]
    )
    messages.append({"role": "user", "content": results})
    final = client.messages.create(
        model="m", max_tokens=256, messages=messages, tools=toolset.anthropic_tools()
    )
    assert final.content[0].type == "text"
    sent = seen[1]["messages"][-1]["content"]
    assert [block["tool_use_id"] for block in sent] == ["toolu_1", "toolu_2"]


# -- the adapters take any JSON -----------------------------------------------------------------------------

ANY_JSON: list[Any] = [
    None, [], ["x"], [1, 2], (1, 2), 0, 7, -1, 2.5, float("nan"), True, False, "", " ", "x", "[1]", "5",
    "null", "{", b"\xff", {"query": None}, {"seq": None}, {1: 2}, object(), {"seq": 10**100},
]  # fmt: skip


@pytest.mark.parametrize("value", ANY_JSON, ids=repr)
def test_every_adapter_takes_any_json(toolset: Toolset, value: Any) -> None:
    for tool in toolset:
        text, failed = tool.answer(value)
        assert isinstance(text, str)
        if failed:
            assert "(SESSION_QUERY_" in text
        mcp = tool.run_mcp_call(value)
        assert mcp["isError"] is failed and mcp["content"][0]["text"] == text
        chat = tool.run_openai_call({"id": "c", "function": {"name": tool.name, "arguments": value}})
        assert chat["tool_call_id"] == "c" and isinstance(chat["content"], str)
        claude = tool.run_anthropic_call({"id": "t", "name": tool.name, "input": value})
        assert claude["is_error"] is failed
        resp = tool.run_responses_call({"call_id": "r", "name": tool.name, "arguments": value})
        assert isinstance(resp["output"], str)
        # The whole call, or its function part, may be anything too.
        if not isinstance(value, dict):
            for call in (value, {"id": "c", "function": value}):
                assert str(tool.run_openai_call(call)["content"]).startswith("error: ")
            assert tool.run_anthropic_call(value)["is_error"] is True
            assert str(toolset.run_responses_call(value)["output"]).startswith("error: ")
    assert toolset.run_mcp_call(value, {})["isError"] is True  # value is never a tool name


def test_unconfigured_tools_answer_not_configured() -> None:
    from backscroll.query import SessionQueryTool, ToolError
    from backscroll.query.tools import EventReadTool, EventTraceTool, SessionSearchTool, SessionTraceTool

    tools: list[Callable[[], Any]] = [
        lambda: SessionQueryTool(None),
        lambda: SessionSearchTool(None),
        lambda: EventReadTool(None),
        lambda: SessionTraceTool(None),
        lambda: EventTraceTool(None),
    ]
    for make in tools:
        tool = make()
        samples: tuple[object, ...] = ({}, [1], None, "x")
        for arguments in samples:
            with pytest.raises(ToolError) as caught:
                tool.run(arguments)
            assert caught.value.code == "SESSION_QUERY_TOOL_NOT_CONFIGURED"
            assert "session query is not configured for this run" in str(caught.value)
    assert session_tools(None, None) is None


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=40),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=12,
)
#: Argument objects built from the tools' own property names, so values of every type reach them.
argument_objects = st.dictionaries(
    st.sampled_from(["query", "limit", "session_id", "seq", "before", "after", "kinds", "cursor"]),
    json_values,
    max_size=5,
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    name=st.sampled_from(sorted(TOOL_NAMES)), arguments=json_values | argument_objects, as_text=st.booleans()
)
def test_generated_arguments_get_a_text_or_a_typed_error(
    toolset: Toolset, name: str, arguments: Any, as_text: bool
) -> None:
    sent: Any = json.dumps(arguments) if as_text else arguments
    text, failed = toolset.answer(name, sent)
    assert isinstance(text, str) and len(text) <= DEFAULT_MAX_OUTPUT_CHARS
    if failed:
        assert re.search(r"\((SESSION_QUERY_[A-Z_]+)\)", text), text
    assert "their secret figure is 99" not in text  # never another workspace's data


def test_async_twins_answer_like_the_sync_calls(toolset: Toolset) -> None:
    import asyncio

    async def main() -> None:
        tool = toolset.get("session_query")
        assert tool is not None
        assert await tool.arun({"query": "figure"}) == tool.run({"query": "figure"})
        assert await toolset.arun("session_trace", {}) == toolset.run("session_trace", {})
        call = {"id": "c", "function": {"name": "session_query", "arguments": "[1]"}}
        assert await toolset.arun_openai_call(call) == toolset.run_openai_call(call)
        item = {"call_id": "r", "name": "session_event_read", "arguments": '{"seq": 0}'}
        assert await toolset.arun_responses_call(item) == toolset.run_responses_call(item)
        block = {"id": "t", "name": "nope", "input": {}}
        assert (await toolset.arun_anthropic_call(block))["is_error"] is True
        assert (await toolset.arun_mcp_call("session_search", {"query": 5}))["isError"] is True

    asyncio.run(main())
