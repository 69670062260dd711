"""The MCP stdio transport in process: every malformed frame gets exactly its JSON-RPC error reply
(and the server goes on serving), and a call in flight when stdin closes is still answered."""

from __future__ import annotations

import io
import threading
import time
from typing import Any

import anyio
import orjson
import pytest

from backscroll.query import SessionMatch, SessionQueryRequest, SessionQueryResult
from backscroll.query.tools import session_tools
from backscroll.query.tools.mcp_frames import MAX_FRAME_BYTES, check_frame
from backscroll.query.tools.mcp_server import build_server
from backscroll.query.tools.mcp_stdio import serve_stdio_streams

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
INITIALIZED = b'{"jsonrpc":"2.0","method":"notifications/initialized"}'
END = b'{"jsonrpc":"2.0","id":"end","method":"ping"}'


class SlowProvider:
    """One match for any query, after ``delay`` seconds."""

    def __init__(self, delay: float = 0.0) -> None:
        self.delay = delay
        self.calls = 0
        self._lock = threading.Lock()

    def search(self, request: SessionQueryRequest) -> SessionQueryResult:
        with self._lock:
            self.calls += 1
        time.sleep(self.delay)
        match = SessionMatch(session_id="s1", entry_id="s1:0", seq=0, kind="user/message", excerpt="found it")
        return SessionQueryResult(matches=(match,), searched=1)


def _serve(frames: list[bytes], provider: SlowProvider | None = None) -> list[dict[str, Any]]:
    toolset = session_tools(provider or SlowProvider())
    assert toolset is not None
    stdin = io.BytesIO(b"".join(frame + b"\n" for frame in frames))
    stdout = io.BytesIO()

    async def main() -> None:
        with anyio.fail_after(60):
            await serve_stdio_streams(build_server(toolset), stdin, stdout, drain_timeout_s=30)

    anyio.run(main)
    return [orjson.loads(line) for line in stdout.getvalue().splitlines()]


def _call(request_id: int, arguments: dict[str, Any]) -> bytes:
    params = {"name": "session_query", "arguments": arguments}
    return orjson.dumps({"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params})


# (frame, the reply's id and error code, or None when no reply is due)
MALFORMED: list[tuple[str, bytes, tuple[Any, int] | None]] = [
    ("empty object", b"{}", (None, -32600)),
    ("empty array", b"[]", (None, -32600)),
    ("batch", b'[{"jsonrpc":"2.0","id":1,"method":"ping"}]', (None, -32600)),
    ("number", b"5", (None, -32600)),
    ("string", b'"ping"', (None, -32600)),
    ("null", b"null", (None, -32600)),
    ("jsonrpc 1.0", b'{"jsonrpc":"1.0","id":7,"method":"ping"}', (7, -32600)),
    ("no jsonrpc", b'{"id":16,"method":"ping"}', (16, -32600)),
    ("id an object", b'{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}', (None, -32600)),
    ("id null", b'{"jsonrpc":"2.0","id":null,"method":"ping"}', (None, -32600)),
    ("id a boolean", b'{"jsonrpc":"2.0","id":true,"method":"ping"}', (None, -32600)),
    ("id a fraction", b'{"jsonrpc":"2.0","id":1.5,"method":"ping"}', (None, -32600)),
    ("method not a string", b'{"jsonrpc":"2.0","id":8,"method":5}', (8, -32600)),
    ("params a string", b'{"jsonrpc":"2.0","id":9,"method":"tools/list","params":"x"}', (9, -32600)),
    ("params an array", b'{"jsonrpc":"2.0","id":10,"method":"tools/list","params":[1]}', (10, -32602)),
    ("neither request nor response", b'{"jsonrpc":"2.0","id":18}', (18, -32600)),
    ("invalid UTF-8", b'{"jsonrpc":"2.0","id":1,"method":"\xff\xfe"}', (None, -32700)),
    ("truncated", b'{"jsonrpc":"2.0","id":1,"meth', (None, -32700)),
    ("NUL bytes", b'{"jsonrpc":"2.0","id":1,"method":"pi\x00ng"}', (None, -32700)),
    ("BOM", b'\xef\xbb\xbf{"jsonrpc":"2.0","id":1,"method":"ping"}', (None, -32700)),
    ("NaN", b'{"jsonrpc":"2.0","id":17,"method":"ping","params":{"x":NaN}}', (None, -32700)),
    ("nested too deep", b"[" * 200_000, (None, -32700)),
    (
        "huge line",
        b'{"jsonrpc":"2.0","id":1,"method":"ping","x":"' + b"a" * (MAX_FRAME_BYTES + 10) + b'"}',
        (None, -32600),
    ),
    ("duplicate ids", b'{"jsonrpc":"2.0","id":11,"id":12,"method":"ping"}', (None, -32600)),
    ("duplicate keys", b'{"jsonrpc":"2.0","id":13,"method":"ping","method":"ping"}', (13, -32600)),
    ("notification, method not a string", b'{"jsonrpc":"2.0","method":5}', (None, -32600)),
    ("notification of an unknown method", b'{"jsonrpc":"2.0","method":"no/such"}', None),
    ("notification with array params", b'{"jsonrpc":"2.0","method":"no/such","params":[1]}', None),
    ("unknown method", b'{"jsonrpc":"2.0","id":14,"method":"no/such"}', (14, -32601)),
    ("invalid params", b'{"jsonrpc":"2.0","id":15,"method":"tools/call","params":{"name":5}}', (15, -32602)),
    ("string id, unknown method", b'{"jsonrpc":"2.0","id":"x","method":"nope"}', ("x", -32601)),
]


@pytest.mark.parametrize(
    ("frame", "expected"), [(f, e) for _, f, e in MALFORMED], ids=[n for n, _, _ in MALFORMED]
)
def test_each_malformed_frame_gets_exactly_its_error_reply(
    frame: bytes, expected: tuple[Any, int] | None
) -> None:
    replies = _serve([INIT, INITIALIZED, frame, END])
    # Replies are matched by id, not order: an error reply may overtake the answer to initialize.
    init = [reply for reply in replies if reply["id"] == "init"]
    assert len(init) == 1 and "result" in init[0]
    assert replies[-1] == {"jsonrpc": "2.0", "id": "end", "result": {}}, "the server goes on serving"
    errors = [reply for reply in replies[:-1] if reply["id"] != "init"]
    assert [(reply["id"], reply["error"]["code"]) for reply in errors] == (
        [] if expected is None else [expected]
    )
    assert all(isinstance(reply["error"]["message"], str) for reply in errors)


def test_a_blank_line_is_skipped_and_a_last_frame_without_newline_is_read() -> None:
    assert check_frame(b"  \t").reply is None and check_frame(b"").message is None
    toolset = session_tools(SlowProvider())
    assert toolset is not None
    stdin, stdout = io.BytesIO(INIT + b"\n\n" + END), io.BytesIO()
    anyio.run(lambda: serve_stdio_streams(build_server(toolset), stdin, stdout))
    assert [orjson.loads(line)["id"] for line in stdout.getvalue().splitlines()] == ["init", "end"]


def test_a_call_in_flight_when_stdin_closes_is_answered() -> None:
    provider = SlowProvider(delay=1.0)
    replies = _serve([INIT, INITIALIZED, _call(1, {"query": "x"})], provider)
    assert [reply["id"] for reply in replies] == ["init", 1]
    assert replies[1]["result"]["isError"] is False
    assert "found it" in replies[1]["result"]["content"][0]["text"]


def test_oversized_arguments_are_refused_before_any_search() -> None:
    provider = SlowProvider()
    started = time.monotonic()
    replies = _serve([INIT, INITIALIZED, _call(1, {"query": "x" * 200_000})], provider)
    assert time.monotonic() - started < 10
    result = replies[1]["result"]
    assert (
        result["isError"] is True and "SESSION_QUERY_TOOL_INVALID_ARGUMENTS" in result["content"][0]["text"]
    )
    assert "try again" not in result["content"][0]["text"]
    assert provider.calls == 0


def test_a_call_the_client_cancelled_is_not_waited_for() -> None:
    cancel = orjson.dumps(
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 0, "reason": "gone"}}
    )
    started = time.monotonic()
    replies = _serve([INIT, INITIALIZED, _call(0, {"query": "x"}), cancel], SlowProvider(delay=2.0))
    assert [reply["id"] for reply in replies] == ["init"]  # a cancelled call is never answered
    assert time.monotonic() - started < 20  # not the 30 s grace
