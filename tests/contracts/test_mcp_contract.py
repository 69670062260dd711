"""``backscroll mcp`` driven by the ``mcp`` SDK's stdio client, on both backends: the tools are
listed with their annotations, each one answers, hostile arguments get error results (never a
crash), and nothing outside the pinned workspace ever comes back."""

from __future__ import annotations

import os
import sys
import warnings
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, cast

import anyio
import mcp_types as types
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError

from .conftest import Harness

T0 = datetime(2026, 11, 2, 8, 0, tzinfo=UTC)
TOOLS = {"session_query", "session_search", "session_event_read", "session_trace", "session_event_trace"}


def _header(ws: str, sid: str, hours: int, parent: str | None = None) -> dict[str, Any]:
    record: dict[str, Any] = {
        "v": 1,
        "kind": "header",
        "workspace_id": ws,
        "session_id": sid,
        "created_at": (T0 + timedelta(hours=hours)).isoformat(),
        "title": f"title of {sid}",
    }
    if parent is not None:
        record["parent_session_id"] = parent
    return record


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


def corpus() -> list[dict[str, Any]]:
    return [
        _header("ws-a", "s-root", 0),
        _event("ws-a", "s-root", 0, "my secret figure is 42", role="user"),
        _event("ws-a", "s-root", 1, "noted the figure", "assistant/message", role="assistant"),
        # The tools' own calls and results, under built-in and renamed names: never found.
        _event(
            "ws-a", "s-root", 2, "figure lookup", "tool/call", role="assistant", tool_name="session_search"
        ),
        _event("ws-a", "s-root", 3, "figure found", "tool/result", role="tool", tool_name="session_query"),
        _header("ws-a", "s-child", 1, parent="s-root"),
        _event("ws-a", "s-child", 0, "the child computed figure 7", role="user"),
        _event("ws-a", "s-child", 1, "child answer about the figure", "assistant/message", role="assistant"),
        _event("ws-a", "s-child", 2, "child follow-up", role="user"),
        _header("ws-b", "s-secret", 2),
        _event("ws-b", "s-secret", 0, "their secret figure is 99", role="user"),
    ]


def _server_env(harness: Harness) -> dict[str, str]:
    return {
        "PYTHONPATH": os.pathsep.join(sys.path),
        "BACKSCROLL_LOG_LEVEL": "warning",
        **harness.settings_env(),
    }


def _with_server(
    harness: Harness, tmp_path: Path, args: list[str], body: Callable[[ClientSession], Awaitable[None]]
) -> None:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "backscroll.cli.main", "mcp", *args],
        env=_server_env(harness),
        cwd=str(tmp_path),
    )

    async def main() -> None:
        with (tmp_path / "server.err").open("w") as errlog:
            async with (
                stdio_client(params, errlog=errlog) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                with anyio.fail_after(120):
                    await body(session)

    anyio.run(main)


def _text(result: Any) -> tuple[str, bool]:
    assert isinstance(result, types.CallToolResult)
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text, bool(result.is_error)


@pytest.fixture
def filled(harness: Harness) -> Harness:
    harness.append_all(corpus())
    harness.index()
    return harness


def test_workspace_server_lists_and_answers_every_tool(filled: Harness, tmp_path: Path) -> None:
    async def body(session: ClientSession) -> None:
        listed = await session.list_tools()
        assert {tool.name for tool in listed.tools} == TOOLS
        for tool in listed.tools:
            assert tool.annotations is not None
            assert tool.annotations.read_only_hint is True and tool.annotations.idempotent_hint is True
            assert tool.annotations.destructive_hint is False and tool.annotations.open_world_hint is False
            assert tool.input_schema["type"] == "object" and tool.description

        async def call(name: str, arguments: dict[str, Any] | None) -> tuple[str, bool]:
            return _text(await session.call_tool(name, arguments))

        text, error = await call("session_query", {"query": "secret figure", "session_id": "s-secret"})
        assert not error and "42" in text and "99" not in text and "s-secret" not in text
        text, error = await call("session_query", {"query": "figure"})
        assert not error and "lookup" not in text and "found" not in text  # its own calls are left out
        text, error = await call("session_search", {"query": "figure"})
        assert not error and "[session s-child]" in text
        assert "s-root" not in text and "s-secret" not in text and "99" not in text
        text, error = await call(
            "session_event_read", {"session_id": "s-child", "seq": 1, "before": 1, "after": 1}
        )
        assert not error and "child answer about the figure" in text and "events 0–2" in text
        text, error = await call("session_event_read", {"seq": 0})  # the own session by default
        assert not error and "my secret figure is 42" in text
        text, error = await call("session_trace", {})
        assert not error and "s-child" in text and "s-secret" not in text
        text, error = await call("session_trace", {"session_id": "s-child"})
        assert not error and "1. session s-root" in text and "complete" in text
        text, error = await call("session_event_trace", {"session_id": "s-child", "seq": 2})
        assert not error and "Replaced by: nothing" in text

    _with_server(filled, tmp_path, ["--workspace", "ws-a", "--own-session", "s-root"], body)


HOSTILE: list[tuple[str, dict[str, Any] | None, str]] = [
    ("session_event_read", {"seq": "1"}, "SESSION_QUERY_TOOL_INVALID_ARGUMENTS"),
    ("session_event_read", {"seq": 1.0}, "SESSION_QUERY_TOOL_INVALID_ARGUMENTS"),
    ("session_event_read", {"seq": True}, "SESSION_QUERY_TOOL_INVALID_ARGUMENTS"),
    ("session_event_read", None, "SESSION_QUERY_TOOL_INVALID_ARGUMENTS"),
    ("session_event_read", {"session_id": ["s-root"], "seq": 0}, "SESSION_QUERY_TOOL_INVALID_ARGUMENTS"),
    ("session_event_read", {"seq": 0, "before": 10**6}, "SESSION_QUERY_INVALID_WINDOW"),
    ("session_event_read", {"seq": 0, "after": -1}, "SESSION_QUERY_INVALID_WINDOW"),
    ("session_event_read", {"seq": 10**30}, "SESSION_QUERY_EVENT_NOT_FOUND"),
    ("session_event_read", {"seq": -1}, "SESSION_QUERY_EVENT_NOT_FOUND"),
    ("session_event_trace", {"seq": {"$gt": 0}}, "SESSION_QUERY_TOOL_INVALID_ARGUMENTS"),
    ("session_query", {"query": ["figure"]}, "SESSION_QUERY_TOOL_INVALID_ARGUMENTS"),
    ("session_query", {"query": "a\x00b"}, "SESSION_QUERY_TOOL_INVALID_ARGUMENTS"),
    ("session_query", {"limit": "5"}, "SESSION_QUERY_TOOL_INVALID_ARGUMENTS"),
    ("session_search", {"query": 5}, "SESSION_QUERY_TOOL_INVALID_ARGUMENTS"),
    ("no_such_tool", {}, "SESSION_QUERY_TOOL_UNKNOWN"),
]
#: Ids outside the scope, missing, or malformed: one identical answer, whatever the tool.
OUTSIDE = ["s-secret", "s-nope", "", " ", "a b", "x" * 5000, "../s-secret", "s-secret\n"]


def test_hostile_arguments_get_error_results_and_never_another_scopes_data(
    filled: Harness, tmp_path: Path
) -> None:
    async def body(session: ClientSession) -> None:
        for name, arguments, code in HOSTILE:
            text, error = _text(await session.call_tool(name, arguments))
            assert error and f"({code})" in text, (name, arguments, text)
            assert "Traceback" not in text and "99" not in text
        text, error = _text(await session.call_tool("session_query", {"limit": 10**30}))
        assert not error and "42" in text
        answers = set()
        for tool, extra in (
            ("session_event_read", {"seq": 0}),
            ("session_event_trace", {"seq": 0}),
            ("session_trace", {}),
        ):
            for sid in OUTSIDE:
                text, error = _text(await session.call_tool(tool, {"session_id": sid, **extra}))
                if sid.strip():
                    assert error and "(SESSION_QUERY_SESSION_NOT_FOUND)" in text, (tool, sid, text)
                    assert "99" not in text and "s-secret" not in text
                    answers.add(text.split(":", 1)[1])
        assert len(answers) == 1, answers
        # Arguments that are not an object at all never reach a tool: the SDK refuses them as
        # invalid params, and the server goes on serving.
        for hostile in ([1, 2], "figure", 5, 2.5, True):
            request = types.CallToolRequest.model_construct(
                params=types.CallToolRequestParams.model_construct(
                    name="session_query", arguments=cast(Any, hostile)
                )
            )
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                try:
                    reply = await session.send_request(request, types.CallToolResult)
                except MCPError:
                    continue
            assert reply.is_error
        text, error = _text(await session.call_tool("session_query", {"query": "secret"}))
        assert not error and "42" in text

    _with_server(filled, tmp_path, ["--workspace", "ws-a", "--own-session", "s-root"], body)


def test_session_scoped_server_offers_no_cross_session_search(filled: Harness, tmp_path: Path) -> None:
    async def body(session: ClientSession) -> None:
        listed = await session.list_tools()
        assert {tool.name for tool in listed.tools} == TOOLS - {"session_search"}
        text, error = _text(await session.call_tool("session_trace", {}))
        # The parent is outside the scope: a boundary, its id never shown.
        assert not error and "s-root" not in text and "beyond what you can read" in text
        text, error = _text(await session.call_tool("session_trace", {"session_id": "s-root"}))
        assert error and "SESSION_NOT_FOUND" in text
        text, error = _text(await session.call_tool("session_event_read", {"seq": 0, "after": 2}))
        assert not error and "the child computed figure 7" in text and "42" not in text

    _with_server(filled, tmp_path, ["--session", "s-child"], body)
