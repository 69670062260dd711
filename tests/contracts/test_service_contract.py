"""``backscroll serve`` on both backends: scoped search, reads and traces by token, the MCP tools,
the client ServiceProvider, and the hostile suite (forged, expired, revoked, other-scope tokens,
Host and Origin, oversized bodies, the rate limit, binding off loopback without a token)."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from backscroll.query import SessionQueryError, SessionQueryRequest
from backscroll.query.service_client import ServiceProvider
from backscroll.service.app import ServiceConfig, create_app
from backscroll.service.audit import AuditLog
from backscroll.service.guards import HostCheck, RateLimiter
from backscroll.service.tokens import TokenStore

from . import corpus
from .conftest import Harness

pytest.importorskip("uvicorn")
pytest.importorskip("mcp")

NEEDLE_SESSION = 1  # "the quarterly forecast mentions Zürich ..." at seq 17
NEEDLE_WORD = "Zürich"


@contextmanager
def serving(
    harness: Harness, tmp: Path, *, rate: float = 1000.0, burst: int = 1000
) -> Iterator[tuple[str, TokenStore]]:
    """The service on a free loopback port in a thread; yields its URL and token store."""
    import uvicorn

    store = TokenStore(tmp / "tokens.json")
    config = ServiceConfig(
        backend=harness.backend,
        tokens=store,
        hosts=HostCheck.for_bind("127.0.0.1"),
        limiter=RateLimiter(rate, burst),
        audit=AuditLog(tmp / "audit.jsonl"),
        max_body_bytes=2048,
    )
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(create_app(config), log_level="warning", lifespan="off"))
    thread = threading.Thread(target=lambda: asyncio.run(server.serve(sockets=[sock])), daemon=True)
    thread.start()
    try:
        for _ in range(1000):
            if server.started:
                break
            threading.Event().wait(0.01)
        assert server.started, "the service did not start"
        yield f"http://127.0.0.1:{port}", store
    finally:
        server.should_exit = True
        thread.join(timeout=30)
        sock.close()
        config.audit.close()


def post(
    url: str, body: Any, token: str | None, headers: dict[str, str] | None = None
) -> tuple[int, Any, dict[str, str]]:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    sent = {"Content-Type": "application/json", **(headers or {})}
    if token is not None:
        sent["Authorization"] = f"Bearer {token}"
    request = urllib.request.Request(url, data=data, headers=sent, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=60) as answer:
            return answer.status, json.loads(answer.read()), dict(answer.headers)
    except urllib.error.HTTPError as err:
        raw = err.read()
        return err.code, json.loads(raw) if raw else None, dict(err.headers)


def _ws(i: int) -> str:
    return corpus.session(i)[0]


def _sid(i: int) -> str:
    return corpus.session(i)[1]


@pytest.fixture
def service(loaded: Harness, tmp_path: Path) -> Iterator[tuple[str, TokenStore]]:
    with serving(loaded, tmp_path) as served:
        yield served


def test_search_read_trace_within_scope(service: tuple[str, TokenStore]) -> None:
    url, store = service
    _, secret = store.create([_ws(NEEDLE_SESSION)])
    status, result, _ = post(f"{url}/v1/search", {"query": "Zurich", "limit": 5}, secret)
    assert status == 200
    assert result["matches"] and result["matches"][0]["session_id"] == _sid(NEEDLE_SESSION)
    assert {m["session_id"] for m in result["matches"]} <= {
        _sid(i) for i in range(corpus.SESSIONS) if _ws(i) == _ws(NEEDLE_SESSION)
    }
    status, read, _ = post(
        f"{url}/v1/read", {"session": _sid(NEEDLE_SESSION), "seq": 17, "before": 1}, secret
    )
    assert status == 200 and NEEDLE_WORD in json.dumps(read, ensure_ascii=False)
    status, traced, _ = post(f"{url}/v1/trace", {"session": _sid(NEEDLE_SESSION)}, secret)
    assert status == 200 and isinstance(traced, dict)
    status, traced, _ = post(f"{url}/v1/trace", {"session": _sid(NEEDLE_SESSION), "seq": 17}, secret)
    assert status == 200 and isinstance(traced, dict)


def test_other_scope_answers_like_nonexistent(service: tuple[str, TokenStore]) -> None:
    url, store = service
    other = next(i for i in range(corpus.SESSIONS) if _ws(i) != _ws(NEEDLE_SESSION))
    _, secret = store.create([_ws(other)])
    status, result, _ = post(f"{url}/v1/search", {"query": NEEDLE_WORD}, secret)
    assert status == 200 and all(m["session_id"] != _sid(NEEDLE_SESSION) for m in result["matches"])
    assert NEEDLE_WORD not in json.dumps(result, ensure_ascii=False)
    for endpoint, extra in (("read", {"seq": 17}), ("trace", {})):
        foreign = post(f"{url}/v1/{endpoint}", {"session": _sid(NEEDLE_SESSION), **extra}, secret)
        missing = post(f"{url}/v1/{endpoint}", {"session": "s-nope", **extra}, secret)
        assert foreign[0] == missing[0] == 404
        assert foreign[1]["error"]["code"] == missing[1]["error"]["code"] == "SESSION_QUERY_SESSION_NOT_FOUND"
        assert foreign[1]["error"]["message"].replace(_sid(NEEDLE_SESSION), "X") == missing[1]["error"][
            "message"
        ].replace("s-nope", "X")
    # Narrowing to a session or workspace outside the token finds nothing, as a missing one.
    foreign = post(f"{url}/v1/search", {"query": NEEDLE_WORD, "session": _sid(NEEDLE_SESSION)}, secret)
    missing = post(f"{url}/v1/search", {"query": NEEDLE_WORD, "session": "s-nope"}, secret)
    assert foreign[0] == missing[0]
    assert json.dumps(foreign[1]).replace(_sid(NEEDLE_SESSION), "X") == json.dumps(missing[1]).replace(
        "s-nope", "X"
    )
    foreign = post(f"{url}/v1/search", {"query": NEEDLE_WORD, "workspace": _ws(NEEDLE_SESSION)}, secret)
    missing = post(f"{url}/v1/search", {"query": NEEDLE_WORD, "workspace": "ws-nope"}, secret)
    assert foreign[0] == missing[0] == 404 and foreign[1] == missing[1]


def test_session_token_sees_only_its_sessions(service: tuple[str, TokenStore]) -> None:
    url, store = service
    mine = NEEDLE_SESSION
    sibling = next(i for i in range(corpus.SESSIONS) if i != mine and _ws(i) == _ws(mine))
    foreign = next(i for i in range(corpus.SESSIONS) if _ws(i) != _ws(mine))
    # A session of another workspace named on the token does not widen it.
    _, secret = store.create([_ws(mine)], sessions=[_sid(mine), _sid(foreign)])
    status, result, _ = post(f"{url}/v1/search", {"query": "", "limit": 50}, secret)
    assert status == 200 and {m["session_id"] for m in result["matches"]} == {_sid(mine)}
    assert post(f"{url}/v1/read", {"session": _sid(sibling), "seq": 1}, secret)[0] == 404
    assert post(f"{url}/v1/read", {"session": _sid(foreign), "seq": 1}, secret)[0] == 404
    assert post(f"{url}/v1/read", {"session": _sid(mine), "seq": 1}, secret)[0] == 200


def test_forged_expired_and_revoked_tokens(service: tuple[str, TokenStore]) -> None:
    url, store = service
    token, secret = store.create([_ws(NEEDLE_SESSION)])
    body = {"query": NEEDLE_WORD}
    assert post(f"{url}/v1/search", body, secret)[0] == 200
    for forged in (
        None,
        "",
        "bst_",
        f"bst_{token.id}_wrong",
        secret[:-2] + "xx",
        "bst_000000000000_x",
        secret + "x",
    ):
        status, error, headers = post(f"{url}/v1/search", body, forged)
        assert status == 401 and error["error"]["code"] == "BACKSCROLL_UNAUTHORIZED"
        assert headers.get("www-authenticate", headers.get("WWW-Authenticate")) == "Bearer"
    _, expired = store.create([_ws(NEEDLE_SESSION)], expires=datetime.now(UTC) - timedelta(seconds=1))
    assert post(f"{url}/v1/search", body, expired)[0] == 401
    # Revoked by another process (its own store on the same file), while the service runs.
    TokenStore(store.path).revoke(token.id)
    assert post(f"{url}/v1/search", body, secret)[0] == 401


def test_host_origin_and_size(service: tuple[str, TokenStore]) -> None:
    url, store = service
    _, secret = store.create([_ws(NEEDLE_SESSION)])
    body = {"query": NEEDLE_WORD}
    assert post(f"{url}/v1/search", body, secret, {"Host": "evil.example"})[0] == 421
    assert post(f"{url}/v1/search", body, secret, {"Host": "localhost:1"})[0] == 200
    assert post(f"{url}/v1/search", body, secret, {"Origin": "http://evil.example"})[0] == 403
    assert post(f"{url}/v1/search", body, secret, {"Origin": "http://127.0.0.1:9"})[0] == 200
    status, error, _ = post(f"{url}/v1/search", {"query": "x" * 4096}, secret)
    assert status == 413 and error["error"]["code"] == "BACKSCROLL_TOO_LARGE"
    status, error, _ = post(f"{url}/v1/search", b"[not json", secret)
    assert status == 400 and error["error"]["retriable"] is False


def test_audit_lines_name_no_query(service: tuple[str, TokenStore], tmp_path: Path) -> None:
    url, store = service
    token, secret = store.create([_ws(NEEDLE_SESSION)])
    post(f"{url}/v1/search", {"query": NEEDLE_WORD}, secret)
    lines = [json.loads(line) for line in (tmp_path / "audit.jsonl").read_text().splitlines()]
    assert lines[-1]["token"] == token.id and lines[-1]["endpoint"] == "search" and lines[-1]["status"] == 200
    assert NEEDLE_WORD not in (tmp_path / "audit.jsonl").read_text()


def test_rate_limit(loaded: Harness, tmp_path: Path) -> None:
    with serving(loaded, tmp_path, rate=0.5, burst=2) as (url, store):
        _, secret = store.create([_ws(NEEDLE_SESSION)])
        statuses = [post(f"{url}/v1/search", {"query": "x"}, secret) for _ in range(3)]
        assert [s for s, _, _ in statuses] == [200, 200, 429]
        headers = statuses[2][2]
        assert int(headers.get("retry-after", headers.get("Retry-After", "0"))) >= 1
        # Another token has a bucket of its own.
        _, other = store.create([_ws(NEEDLE_SESSION)])
        assert post(f"{url}/v1/search", {"query": "x"}, other)[0] == 200


def test_service_provider_round_trip(service: tuple[str, TokenStore]) -> None:
    url, store = service
    _, secret = store.create([_ws(NEEDLE_SESSION)])
    with ServiceProvider(url, secret) as client:
        result = client.search(SessionQueryRequest(query="Zurich", limit=3))
        assert result.matches and result.matches[0].session_id == _sid(NEEDLE_SESSION)
        narrowed = client.search(SessionQueryRequest(query="Zurich", session_id=_sid(NEEDLE_SESSION)))
        assert narrowed.matches and {m.session_id for m in narrowed.matches} == {_sid(NEEDLE_SESSION)}
        assert NEEDLE_WORD in json.dumps(client.read_event(_sid(NEEDLE_SESSION), 17), ensure_ascii=False)
        with pytest.raises(SessionQueryError) as missing:
            client.read_event("s-nope", 1)
        assert missing.value.code == "SESSION_QUERY_SESSION_NOT_FOUND"
    with pytest.raises(SessionQueryError) as refused:
        ServiceProvider(url, "bst_forged").search(SessionQueryRequest(query="x"))
    assert refused.value.code == "SESSION_QUERY_INVALID_CONFIG" and not refused.value.retriable


def _mcp(url: str, secret: str | None, method: str, params: dict[str, Any]) -> tuple[int, Any]:
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    headers = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-06-18"}
    status, answer, _ = post(f"{url}/mcp", body, secret, headers)
    return status, answer


def test_mcp_tools_are_pinned_to_the_token(service: tuple[str, TokenStore]) -> None:
    url, store = service
    other = next(i for i in range(corpus.SESSIONS) if _ws(i) != _ws(NEEDLE_SESSION))
    _, mine = store.create([_ws(NEEDLE_SESSION)])
    _, theirs = store.create([_ws(other)])
    assert _mcp(url, None, "tools/list", {})[0] == 401
    status, listed = _mcp(url, mine, "tools/list", {})
    assert status == 200, listed
    names = {tool["name"] for tool in listed["result"]["tools"]}
    assert "session_search" in names
    call = {"name": "session_search", "arguments": {"query": NEEDLE_WORD}}
    status, found = _mcp(url, mine, "tools/call", call)
    # The answer echoes the query: look for another word of the needle's entry.
    assert status == 200 and "Kraków" in json.dumps(found, ensure_ascii=False)
    status, hidden = _mcp(url, theirs, "tools/call", call)
    assert status == 200 and "Kraków" not in json.dumps(hidden, ensure_ascii=False)


@pytest.mark.parametrize(
    "argv",
    [
        ["serve", "--host", "0.0.0.0", "--port", "0"],
        ["mcp", "--transport", "http", "--host", "0.0.0.0", "--port", "0", "--workspace", "ws-0"],
        ["console", "--host", "0.0.0.0", "--port", "0"],
    ],
)
def test_non_loopback_bind_without_a_token_is_refused(argv: list[str], tmp_path: Path) -> None:
    env = {
        **os.environ,
        "XDG_DATA_HOME": str(tmp_path),
        "BACKSCROLL_BACKEND": "embedded",
        "BACKSCROLL_SQLITE_PATH": str(tmp_path / "b.db"),
    }
    for name in ("BACKSCROLL_MCP_TOKEN", "BACKSCROLL_CONSOLE_TOKEN", "BACKSCROLL_CONSOLE_TOKENS"):
        env.pop(name, None)
    done = subprocess.run(
        [sys.executable, "-m", "backscroll.cli.main", *argv],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().count("\n") == 0 and "needs" in done.stderr


def test_mcp_http_checks_host_and_token(tmp_path: Path) -> None:
    env = {name: value for name, value in os.environ.items() if not name.startswith("BACKSCROLL_")}
    env.update(
        {
            "XDG_DATA_HOME": str(tmp_path),
            "BACKSCROLL_BACKEND": "embedded",
            "BACKSCROLL_SQLITE_PATH": str(tmp_path / "b.db"),
            "BACKSCROLL_MCP_TOKEN": "a-long-shared-secret",
        }
    )
    argv = ["mcp", "--transport", "http", "--port", "0", "--workspace", "ws-0"]
    process = subprocess.Popen(
        [sys.executable, "-m", "backscroll.cli.main", *argv], env=env, stderr=subprocess.PIPE, text=True
    )
    try:
        assert process.stderr is not None
        banner = process.stderr.readline()
        url = banner.split(" on ", 1)[1].strip()
        port = int(url.removesuffix("/mcp").rsplit(":", 1)[1])
        for _ in range(200):  # the banner comes before uvicorn accepts
            try:
                socket.create_connection(("127.0.0.1", port), 1).close()
                break
            except OSError:
                threading.Event().wait(0.05)
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
        accept = {"Accept": "application/json, text/event-stream"}
        assert post(url, body, None, accept)[0] == 401
        assert post(url, body, "wrong", accept)[0] == 401
        assert post(url, body, "a-long-shared-secret", {**accept, "Host": "evil.example"})[0] == 421
        assert post(url, body, "a-long-shared-secret", {**accept, "Origin": "http://evil.example"})[0] == 403
    finally:
        process.terminate()
        process.wait(timeout=30)
        if process.stderr is not None:
            process.stderr.close()
