"""Fixtures of the console tests: an embedded corpus built for them, a live console, a browser.

The corpus holds the cases the pages must show: a typo'd and accented match, a compaction (current,
shadowed and log-only events), lineage with descendants, an unresolved parent and a parent cycle,
120 matches of one word for paging, a second workspace a limited token must not see, and hostile
HTML/JS in texts and titles.
"""

from __future__ import annotations

import asyncio
import shutil
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from backscroll.backends import Backend, EmbeddedBackend
from backscroll.console.app import create_app
from backscroll.console.settings import Grants
from backscroll.console.source import ConsoleSource
from backscroll.ingest.sqlite.log import SQLiteEntryLog

BASE = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
PAGING_MATCHES = 120
HOSTILE = (
    '<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2"><b id="injected">bold</b>'
)
FULL_TOKEN = "full-access-token-0123456789"
LIMITED_TOKEN = "limited-token-ws-a-0123456789"
CURSOR_KEY = b"k" * 32


def _header(ws: str, sid: str, minute: int, **extra: Any) -> dict[str, Any]:
    return {
        "v": 1,
        "kind": "header",
        "workspace_id": ws,
        "session_id": sid,
        "created_at": (BASE + timedelta(minutes=minute)).isoformat(),
        **extra,
    }


def _event(ws: str, sid: str, seq: int, kind: str, text: str, **extra: Any) -> dict[str, Any]:
    record = {
        "v": 1,
        "kind": "event",
        "workspace_id": ws,
        "session_id": sid,
        "seq": seq,
        "type": kind,
        "time": (BASE + timedelta(minutes=seq, seconds=1)).isoformat(),
        "text": text,
        **extra,
    }
    if kind in ("user/message", "assistant/message", "tool/result") and "surface" not in record:
        record["surface"] = {"op": "append"}
    if kind.endswith("/message"):
        record.setdefault("role", kind.split("/")[0])
    return record


def corpus_records() -> Iterator[dict[str, Any]]:
    """Every record of the test corpus, in append order."""
    ws = "ws-a"
    yield _header(ws, "s-alpha", 0, title="Quarterly planning")
    yield _event(ws, "s-alpha", 0, "user/message", "What was the revenue forecast for the Zürich office?")
    yield _event(
        ws, "s-alpha", 1, "tool/call", '{"sql": "select forecast from revenue"}', tool_name="run_sql"
    )
    yield _event(ws, "s-alpha", 2, "tool/result", "4.2M for Q3", tool_name="run_sql", role="tool")
    yield _event(ws, "s-alpha", 3, "assistant/message", "The revenue forecast is 4.2M for Q3.")
    yield _event(
        ws,
        "s-alpha",
        4,
        "assistant/message",
        "Compacted: Zürich revenue forecast 4.2M.",
        surface={"op": "replace", "start": 0, "end": 2},
        sources=[0, 2],
    )
    yield _event(ws, "s-alpha", 5, "user/message", "Thanks, now the São Paulo numbers please.")
    yield _header(ws, "s-child", 10, parent_session_id="s-alpha", delegation_depth=1, origin="subagent")
    yield _event(ws, "s-child", 0, "user/message", "Sub-task: check the café invoices.")
    yield _header(ws, "s-grandchild", 20, parent_session_id="s-child", delegation_depth=2, origin="subagent")
    yield _event(ws, "s-grandchild", 0, "user/message", "Deeper sub-task: audit the ledger.")
    yield _header(ws, "s-orphan", 30, parent_session_id="s-missing")
    yield _event(ws, "s-orphan", 0, "user/message", "My parent is gone.")
    yield _header(ws, "s-cycle-1", 40, parent_session_id="s-cycle-2")
    yield _event(ws, "s-cycle-1", 0, "user/message", "I am in a loop.")
    yield _header(ws, "s-cycle-2", 41, parent_session_id="s-cycle-1")
    yield _event(ws, "s-cycle-2", 0, "user/message", "So am I.")
    yield _header(ws, "s-hostile", 50, title=HOSTILE)
    yield _event(ws, "s-hostile", 0, "user/message", f"hostile payload {HOSTILE}")
    yield _event(ws, "s-hostile", 1, "tool/result", f"{HOSTILE} also hostile", tool_name="x", role="tool")
    # Paging: PAGING_MATCHES entries with one rare word, over three sessions.
    for index in range(PAGING_MATCHES):
        sid = f"s-page-{index % 3}"
        if index < 3:
            yield _header("ws-page", sid, 60 + index)
        yield _event("ws-page", sid, index // 3, "user/message", f"zeppelin inventory item {index:03d}")
    # The workspace a limited token must never see.
    yield _header("ws-b", "s-secret", 70, title="Secret merger")
    yield _event("ws-b", "s-secret", 0, "user/message", "The revenue forecast of the secret merger is 9.9M.")


def build_corpus(path: Path) -> Path:
    with SQLiteEntryLog(path) as log:
        for record in corpus_records():
            log.append(record)
        log.flush()
    return path


@pytest.fixture(scope="package")
def corpus_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_corpus(tmp_path_factory.mktemp("console") / "console.db")


def grants() -> Grants:
    return Grants({FULL_TOKEN: None, LIMITED_TOKEN: frozenset({"ws-a", "ws-page"})})


@contextmanager
def live_console(backend: Backend, token_grants: Grants, *, writes: bool = False) -> Iterator[str]:
    """Serve the console on a free loopback port in a thread; yields its base URL."""
    import uvicorn

    app = create_app(ConsoleSource(backend), token_grants, writes=writes, loopback=True)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=lambda: asyncio.run(server.serve(sockets=[sock])), daemon=True)
    thread.start()
    try:
        for _ in range(500):
            if server.started:
                break
            threading.Event().wait(0.01)
        assert server.started, "the console did not start"
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)
        sock.close()


def embedded(path: Path) -> Backend:
    from dataclasses import replace

    return replace(EmbeddedBackend(path), cursor_key=CURSOR_KEY)


def chromium_paths() -> tuple[str, str] | None:
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver")
    return (browser, driver) if browser and driver else None
