"""Every ``python`` block of docs/integrating.md runs, in order, in one namespace: against the
embedded backend, a real ``backscroll mcp`` subprocess, and scripted offline stand-ins for the
OpenAI and Anthropic APIs (the real SDK clients over a mock HTTP transport). The JSON client
configurations in the doc and the README are what ``backscroll mcp`` accepts."""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import openai
import pytest

from backscroll.query.tools import Toolset

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "integrating.md"
BLOCK = re.compile(r"^```(\S+)([^\n]*)\n(.*?)^```", re.M | re.S)


def blocks(path: Path, language: str) -> list[str]:
    return [
        body
        for lang, extra, body in BLOCK.findall(path.read_text(encoding="utf-8"))
        if lang == language and not extra.strip()
    ]


def _chat(request: dict[str, Any]) -> dict[str, Any]:
    if request["messages"][-1]["role"] == "tool":
        message: dict[str, Any] = {"role": "assistant", "content": "It is 4.1M."}
    else:
        call = {"name": "session_query", "arguments": '{"query": "zurich forecast"}'}
        message = {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "call_1", "type": "function", "function": call}],
        }
    return {"id": "c", "object": "chat.completion", "created": 0, "model": "m",
            "choices": [{"index": 0, "finish_reason": "stop", "message": message}]}  # fmt: skip


def _responses(request: dict[str, Any]) -> dict[str, Any]:
    if request.get("previous_response_id"):
        assert request["input"][0]["type"] == "function_call_output"
        output: list[dict[str, Any]] = [
            {
                "type": "message",
                "id": "m1",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": "Friday.", "annotations": []}],
            }
        ]
    else:
        output = [
            {
                "type": "function_call",
                "id": "fc",
                "call_id": "call_1",
                "name": "session_query",
                "arguments": '{"query": "certificate rotation", "limit": null}',
                "status": "completed",
            }
        ]
    return {"id": "resp_1", "object": "response", "created_at": 0, "model": "m", "status": "completed",
            "output": output, "parallel_tool_calls": True, "tool_choice": "auto", "tools": []}  # fmt: skip


def _messages(request: dict[str, Any]) -> dict[str, Any]:
    last = request["messages"][-1]["content"]
    if isinstance(last, list) and last and last[0].get("type") == "tool_result":
        content: list[dict[str, Any]] = [{"type": "text", "text": "It is 4.1M."}]
        stop = "end_turn"
    else:
        content = [
            {"type": "tool_use", "id": "toolu_1", "name": "session_query", "input": {"query": "zurich"}}
        ]
        stop = "tool_use"
    return {"id": "msg", "type": "message", "role": "assistant", "model": "m", "content": content,
            "stop_reason": stop, "usage": {"input_tokens": 1, "output_tokens": 1}}  # fmt: skip


def _transport(answer: Any, seen: list[dict[str, Any]]) -> httpx2.Client:
    def handler(request: httpx2.Request) -> httpx2.Response:
        body = json.loads(request.content)
        seen.append(body)
        if request.url.path.endswith("/responses"):
            return httpx2.Response(200, json=_responses(body))
        return httpx2.Response(200, json=answer(body))

    return httpx2.Client(transport=httpx2.MockTransport(handler))


def test_every_python_block_of_the_integration_guide_runs(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    seen: list[dict[str, Any]] = []
    real_openai, real_anthropic = openai.OpenAI, anthropic.Anthropic

    def fake_openai(**_: Any) -> openai.OpenAI:
        return real_openai(api_key="test", http_client=_transport(_chat, seen), max_retries=0)

    def fake_anthropic(**_: Any) -> anthropic.Anthropic:
        return real_anthropic(api_key="test", http_client=_transport(_messages, seen), max_retries=0)

    monkeypatch.setattr(openai, "OpenAI", fake_openai)
    monkeypatch.setattr(anthropic, "Anthropic", fake_anthropic)
    monkeypatch.setenv("PATH", os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""))
    monkeypatch.chdir(tmp_path)
    code = blocks(DOC, "python")
    assert len(code) >= 10
    namespace: dict[str, Any] = {"__name__": "integrating_doc"}
    try:
        for number, source in enumerate(code, 1):
            exec(compile(source, f"{DOC.name} python block {number}", "exec"), namespace)
    finally:
        for value in list(namespace.values()):
            toolsets = [value] if isinstance(value, Toolset) else []
            for toolset in toolsets:
                for tool in toolset:
                    for part in (getattr(tool, "provider", None), getattr(tool, "reader", None)):
                        if part is not None:
                            part.close()
            close = getattr(value, "close", None)
            if callable(close) and hasattr(value, "scope"):
                close()
    out = capfd.readouterr().out
    assert "The revenue forecast for Zürich is 4.1M." in out  # session_query
    assert "[session s-2]" in out and "[session s-1]" not in out  # session_search leaves s-1 out
    assert "SESSION_QUERY_TOOL_INVALID_ARGUMENTS" in out and "SESSION_QUERY_TOOL_UNKNOWN" in out
    assert "SESSION_QUERY_SESSION_NOT_FOUND" in out
    assert out.count("It is 4.1M.") == 2 and "Friday." in out  # the three SDK loops ended
    tool_messages = [m for body in seen for m in body.get("messages", []) if m.get("role") == "tool"]
    assert tool_messages and "4.1M" in tool_messages[0]["content"]


def _check_client_config(text: str) -> None:
    config = json.loads(text)
    server = config["mcpServers"]["backscroll"]
    assert server["command"] == "backscroll" and server["args"][0] == "mcp"
    assert "--workspace" in server["args"] or "--session" in server["args"]


def test_the_mcp_client_configurations_are_valid() -> None:
    configs = [*blocks(DOC, "json"), *blocks(ROOT / "README.md", "json")]
    assert len(configs) >= 2
    for text in configs:
        _check_client_config(text)
