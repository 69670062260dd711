"""The log-backed item memory every SDK adapter shares (no SDK needed): items come back equal to
what was added, pops and clears are tombstones, and the adapters' package loads no SDK."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from backscroll.backends import EmbeddedBackend
from backscroll.ingest import RecordRejected
from backscroll.query import Scope, SessionQueryRequest
from backscroll.query.adapters.item_log import ItemEvent, ItemLog, decode, encode

SDKS = ("agents", "pydantic_ai", "langchain_core")


def test_the_adapters_package_loads_no_sdk() -> None:
    script = textwrap.dedent(
        f"""
        import json, sys
        sys.modules.update(dict.fromkeys({SDKS!r}))
        import backscroll.query, backscroll.query.tools, backscroll.query.adapters.item_log
        failed = {{}}
        for name in ("openai_agents", "pydantic_ai", "langchain"):
            try:
                __import__("backscroll.query.adapters." + name)
            except ImportError as err:
                failed[name] = [err.name.split(".")[0], str(err)]
        print(json.dumps(failed))
        """
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    failed = json.loads(out.stdout)
    extras = {"openai_agents": "openai-agents", "pydantic_ai": "pydantic-ai", "langchain": "langchain"}
    assert {name: sdk for name, (sdk, _) in failed.items()} == dict(zip(extras, SDKS, strict=True))
    for name, (_, message) in failed.items():
        assert f"pip install 'backscroll-query[{extras[name]}]'" in message


def _describe(item: Any) -> ItemEvent:
    if item.get("role") == "user":
        return ItemEvent("user/message", role="user", text_path=("content",))
    return ItemEvent("item/other")


@pytest.mark.parametrize(
    "item",
    [
        {"role": "user", "content": "plain"},
        {"role": "user", "content": ""},
        {"role": "user", "content": "NUL \x00 inside"},
        {"role": "user", "content": "long shape", "extra": "x" * 2000},
        {"role": "user", "content": ["not", "text"]},
        {"kind": "other", "nested": {"a": [1, 2.5, None, True]}},
    ],
)
def test_an_item_comes_back_equal(item: dict[str, Any]) -> None:
    fields = encode(item, _describe(item))
    assert "\x00" not in fields["text"]
    assert all(len(str(value)) <= 1024 for value in fields["attrs"].values())
    view = type("View", (), {"text": fields["text"], "attrs": fields["attrs"]})()
    assert decode(view) == item


def test_items_pops_and_clears_on_the_embedded_backend(tmp_path: Path) -> None:
    backend = EmbeddedBackend(tmp_path / "backscroll.db")
    with backend.open_log() as log:
        log.append(
            {
                "v": 1,
                "kind": "header",
                "workspace_id": "ws",
                "session_id": "other",
                "created_at": "2026-11-30T10:00:00Z",
            }
        )
        reader = backend.open_reader(Scope.session("mem"), live=log)
        memory = ItemLog(log, reader, workspace_id="ws", session_id="mem")
        items = [{"role": "user", "content": f"message {n} about the zurich forecast"} for n in range(4)]
        memory.add(items, _describe)
        with pytest.raises(RecordRejected):  # a NUL in a type: nothing of the batch is appended
            memory.add([{"role": "user", "content": "kept out"}], lambda _item: ItemEvent("bad\x00type"))
        assert [item for _seq, item in memory.items()] == items
        with pytest.raises(RecordRejected) as caught:  # what JSON cannot hold is refused, typed
            memory.add([{"role": "user", "content": b"bytes"}], _describe)
        assert caught.value.field == "item"
        assert memory.pop() == items[3]
        assert [item for _seq, item in memory.items(2)] == items[1:3]
        memory.clear()
        assert memory.items() == [] and memory.pop() is None
        memory.add(items[:1], _describe)
        assert [seq for seq, _item in memory.items()] == [6]  # 4 items, a pop, a clear, then this one
        memory.close()
        # What the memory forgot stays in the log, and is searched like any message.
        found = backend.open_provider(Scope.session("mem")).search(SessionQueryRequest(query="message 3"))
        assert 3 in [m.seq for m in found.matches]
        reader.close()
