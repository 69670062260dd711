"""The Agent SDK blocks of docs/integrating.md (fenced as ``python sdk=NAME``) run with their SDK
installed, after a stand-in for the page's first section: an embedded backend holding session
``s-1`` of ``ws-payments``, its provider and reader."""

from __future__ import annotations

import asyncio
import importlib.util
import re
import warnings
from pathlib import Path
from typing import Any

import pytest

from backscroll.backends import EmbeddedBackend
from backscroll.query import Scope
from backscroll.query.tools import SYSTEM_PROMPT, session_tools

from .adapter_history import history

DOC = Path(__file__).resolve().parents[2] / "docs" / "integrating.md"
BLOCK = re.compile(r"^```python sdk=(\S+)\n(.*?)^```", re.M | re.S)
MODULES = {"openai-agents": "agents", "pydantic-ai": "pydantic_ai", "langchain": "langchain_core"}


def test_every_sdk_has_a_block() -> None:
    assert sorted(sdk for sdk, _ in BLOCK.findall(DOC.read_text(encoding="utf-8"))) == sorted(MODULES)


@pytest.mark.parametrize("sdk", sorted(MODULES))
def test_the_sdk_block_runs(sdk: str, tmp_path: Path) -> None:
    if importlib.util.find_spec(MODULES[sdk]) is None:
        pytest.skip(f"{MODULES[sdk]} is not installed")
    [body] = [body for name, body in BLOCK.findall(DOC.read_text(encoding="utf-8")) if name == sdk]
    backend = EmbeddedBackend(tmp_path / "backscroll.db")
    with backend.open_log() as log:
        for record in history():
            log.append({**record, "workspace_id": "ws-payments"}).result(timeout=10)
    namespace: dict[str, Any] = {
        "backend": backend,
        "Scope": Scope,
        "SYSTEM_PROMPT": SYSTEM_PROMPT,
        "session_tools": session_tools,
        "provider": backend.open_provider(Scope.session("s-1")),
        "reader": backend.open_reader(Scope.session("s-1")),
    }
    try:
        exec(compile(body, f"{DOC.name}[{sdk}]", "exec"), namespace)
    finally:
        for name in ("provider", "reader", "log"):
            if name in namespace:
                namespace[name].close()
        _close_the_threads_loop()


def _close_the_threads_loop() -> None:
    """pydantic-ai's ``run_sync`` keeps an event loop as the thread's current one, for the next
    call; the test closes it here instead of leaving it for a later test's garbage collection."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        try:
            loop = asyncio.get_event_loop_policy().get_event_loop()
        except RuntimeError:
            return
    if not loop.is_running():
        loop.close()
        asyncio.set_event_loop(None)
