"""``backscroll mcp`` over raw stdio on both backends: malformed frames get their JSON-RPC error
reply, oversized arguments are a non-retriable argument error, and a call written just before
stdin closes is still answered."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import orjson

from .conftest import Harness
from .test_mcp_contract import _server_env, corpus

INIT = orjson.dumps(
    {
        "jsonrpc": "2.0",
        "id": "init",
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        },
    }
)


def _call(request_id: int, name: str, arguments: dict[str, Any]) -> bytes:
    params = {"name": name, "arguments": arguments}
    return orjson.dumps({"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params})


def _exchange(harness: Harness, tmp_path: Path, frames: list[bytes]) -> dict[Any, dict[str, Any]]:
    """Write every frame, close stdin at once, and return the replies by id."""
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "backscroll.cli.main",
            "mcp",
            "--workspace",
            "ws-a",
            "--own-session",
            "s-root",
        ],
        input=b"".join(frame + b"\n" for frame in frames),
        capture_output=True,
        env=_server_env(harness),
        cwd=str(tmp_path),
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode()
    replies = [orjson.loads(line) for line in done.stdout.splitlines()]
    by_id = {reply["id"]: reply for reply in replies if reply["id"] is not None}
    by_id[None] = {"errors": [reply["error"]["code"] for reply in replies if reply["id"] is None]}
    return by_id


def test_raw_frames_are_answered_and_stdin_closing_waits_for_the_calls(
    harness: Harness, tmp_path: Path
) -> None:
    harness.append_all(corpus())
    harness.index()
    started = time.monotonic()
    replies = _exchange(
        harness,
        tmp_path,
        [
            INIT,
            b'{"jsonrpc":"2.0","method":"notifications/initialized"}',
            b'{"jsonrpc":"2.0","id":1,"meth',
            b"[]",
            b'{"jsonrpc":"1.0","id":2,"method":"ping"}',
            b'{"jsonrpc":"2.0","id":3,"method":"no/such"}',
            b'{"jsonrpc":"2.0","id":4,"method":"tools/list","params":[1]}',
            b'{"jsonrpc":"2.0","id":5,"method":"ping","pad":"' + b"x" * (2 * 1024 * 1024) + b'"}',
            _call(6, "session_query", {"query": "figure " * 30_000}),
            _call(7, "session_query", {"query": "secret figure"}),  # the last frame before stdin closes
        ],
    )
    assert replies[None]["errors"] == [-32700, -32600, -32600]  # truncated, batch, oversized frame
    assert replies[2]["error"]["code"] == -32600
    assert replies[3]["error"]["code"] == -32601
    assert replies[4]["error"]["code"] == -32602
    oversized = replies[6]["result"]
    assert oversized["isError"] is True
    assert "SESSION_QUERY_TOOL_INVALID_ARGUMENTS" in oversized["content"][0]["text"]
    assert "try again" not in oversized["content"][0]["text"]
    answer = replies[7]["result"]
    assert answer["isError"] is False and "42" in answer["content"][0]["text"]
    assert time.monotonic() - started < 120
