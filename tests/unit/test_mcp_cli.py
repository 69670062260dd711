"""``backscroll mcp`` on the embedded backend: the scope is pinned by flags or environment (and
refused when it is missing, double or too wide), and the streamable HTTP transport serves the
same tools to the SDK's HTTP client."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import mcp_types as types
import pytest
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from test_tool_sdks import load
from typer.testing import CliRunner

from backscroll.cli.main import app


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> dict[str, str]:
    for name in list(os.environ):
        if name.startswith("BACKSCROLL_"):
            monkeypatch.delenv(name)
    load(tmp_path / "backscroll.db")
    values = {"BACKSCROLL_BACKEND": "embedded", "BACKSCROLL_SQLITE_PATH": str(tmp_path / "backscroll.db")}
    for name, value in values.items():
        monkeypatch.setenv(name, value)
    monkeypatch.chdir(tmp_path)
    return values


@pytest.mark.parametrize(
    ("args", "extra_env", "message"),
    [
        ([], {}, "pin exactly one scope"),
        (["--session", "s-root", "--workspace", "ws-a"], {}, "pin exactly one scope"),
        (["--workspace", "ws-a", "--workspace", "ws-b"], {}, "SESSION_QUERY_INVALID_SCOPE"),
        (["--session", " "], {}, "SESSION_QUERY_INVALID_SCOPE"),
        (["--session", "s-root", "--own-session", "s-child"], {}, "--own-session must be one of"),
        ([], {"BACKSCROLL_MCP_WORKSPACES": "ws-a ws-b"}, "SESSION_QUERY_INVALID_SCOPE"),
    ],
)
def test_the_scope_must_be_pinned_and_narrow(
    env: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
    args: list[str],
    extra_env: dict[str, str],
    message: str,
) -> None:
    for name, value in extra_env.items():
        monkeypatch.setenv(name, value)
    result = CliRunner().invoke(app, ["mcp", *args])
    assert result.exit_code == 2, result.output
    assert message in result.output and "Traceback" not in result.output


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@pytest.fixture
def http_server(env: dict[str, str], tmp_path: Path) -> Iterator[str]:
    port = _free_port()
    command = [sys.executable, "-m", "backscroll.cli.main", "mcp", "--transport", "http", "--port", str(port)]
    child_env = {**os.environ, "BACKSCROLL_MCP_WORKSPACES": "ws-a", "BACKSCROLL_MCP_OPS": "true"}
    with (tmp_path / "http.err").open("w") as errlog:
        process = subprocess.Popen(command, env=child_env, stdout=subprocess.DEVNULL, stderr=errlog)
        try:
            for _ in range(600):  # the server binds within seconds; give a loaded machine a minute
                if process.poll() is not None:
                    raise AssertionError((tmp_path / "http.err").read_text())
                with socket.socket() as sock:
                    if sock.connect_ex(("127.0.0.1", port)) == 0:
                        break
                time.sleep(0.1)
            yield f"http://127.0.0.1:{port}/mcp"
        finally:
            process.terminate()
            process.wait(timeout=30)


def test_streamable_http_serves_the_same_tools(http_server: str) -> None:
    async def main() -> None:
        async with (
            streamable_http_client(http_server) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            listed = await session.list_tools()
            assert "session_search" in {tool.name for tool in listed.tools}
            result = await session.call_tool("session_query", {"query": "secret figure"})
            assert isinstance(result, types.CallToolResult) and not result.is_error
            block = result.content[0]
            assert isinstance(block, types.TextContent) and "42" in block.text and "99" not in block.text
            bad = await session.call_tool("session_event_read", {"session_id": "s-secret", "seq": 0})
            assert isinstance(bad, types.CallToolResult) and bad.is_error

    anyio.run(main)
