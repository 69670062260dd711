"""The model tools on both backends where results are cut or paged: session_search says when its
cap left matches out, a tool ``max_limit`` above the provider's is honoured, a cursor survives
filters given in another order, and session_event_read reads a long text whole in pieces."""

from __future__ import annotations

import re
from typing import Any

import orjson
import pytest

from backscroll.query import Scope, SessionQueryError, SessionQueryRequest
from backscroll.query.tools import EventReadTool, SessionQueryTool, ToolError, session_tools

from .conftest import Harness
from .test_mcp_contract import _event

WORD = "wombatledger"


def _header(ws: str, sid: str) -> dict[str, Any]:
    return {
        "v": 1,
        "kind": "header",
        "workspace_id": ws,
        "session_id": sid,
        "created_at": "2026-11-02T08:00:00Z",
    }


def test_session_search_says_when_the_cap_cut_the_last_page(harness: Harness) -> None:
    records: list[dict[str, Any]] = []
    for s in range(15):
        records.append(_header("ws-c", f"s{s:02d}"))
        records.extend(_event("ws-c", f"s{s:02d}", i, f"{WORD} note {i}", role="user") for i in range(10))
    harness.append_all(records)
    harness.index()
    # 140 matches outside the own session: pages of 50 bring 141 (the last page has no cursor).
    tools = session_tools(harness.provider(Scope.workspace("ws-c")), session_id="s00")
    assert tools is not None
    text = tools.run("session_search", {"query": WORD})
    assert text.startswith("100 matches in 14 sessions"), text.splitlines()[0]
    assert "(result cap reached" in text


def test_a_tool_max_limit_above_the_providers_is_the_one_that_counts(harness: Harness) -> None:
    records = [_header("ws-l", "s-l")]
    records.extend(_event("ws-l", "s-l", i, f"{WORD} line {i}", role="user") for i in range(120))
    harness.append_all(records)
    harness.index()
    provider = harness.provider(Scope.session("s-l"))  # its own maximum stays 50
    tool = SessionQueryTool(provider, max_limit=100)
    text = tool.run({"query": WORD, "limit": 500})
    assert text.splitlines()[0] == "100 matches (searched 120 entries):"
    seqs = [int(m) for m in re.findall(r"^\[seq (\d+)", text, flags=re.M)]
    assert len(seqs) == 100 and len(set(seqs)) == 100
    assert "more matches exist" in text
    assert "at most 100" in tool.parameters["properties"]["limit"]["description"]
    with pytest.raises(SessionQueryError) as caught:
        SessionQueryTool(provider, max_limit=1001)
    assert caught.value.code == "SESSION_QUERY_INVALID_CONFIG"


def test_a_cursor_holds_for_the_same_filters_in_another_order(harness: Harness) -> None:
    records = [_header("ws-k", "s-k")]
    for i in range(12):
        kind = "user/message" if i % 2 else "assistant/message"
        records.append(_event("ws-k", "s-k", i, f"{WORD} {i}", kind, role=kind.split("/")[0]))
    harness.append_all(records)
    harness.index()
    provider = harness.provider(Scope.session("s-k"))
    kinds = ("user/message", "assistant/message")
    first = provider.search(SessionQueryRequest(query=WORD, kinds=kinds, limit=5, exclude_tools=("a", "b")))
    assert first.next_cursor is not None
    reordered = SessionQueryRequest(
        query=WORD,
        kinds=(*reversed(kinds), kinds[0]),
        limit=5,
        exclude_tools=("b", "a", "b"),
        cursor=first.next_cursor,
    )
    second = provider.search(reordered)
    seen = {m.seq for m in first.matches}
    assert len(second.matches) == 5 and not seen & {m.seq for m in second.matches}


def test_event_read_reads_a_long_text_whole_in_pieces(harness: Harness) -> None:
    text = "".join(f"{i:07d}\n" for i in range(7_500))  # 60,000 characters
    harness.append_all([_header("ws-r", "s-r"), _event("ws-r", "s-r", 0, text, role="tool")])
    harness.index()
    tool = EventReadTool(harness.reader(Scope.session("s-r")))
    offset, pieces = 0, []
    for _ in range(10):
        answer = tool.run({"seq": 0, "offset": offset})
        assert len(answer) < 20_000
        body = answer.split("```json\n", 1)[1].rsplit("\n```", 1)[0]
        pieces.append(orjson.loads(body)["text"])
        found = re.search(r"call again with offset=(\d+)", answer)
        if found is None:
            assert "this is the end of the text" in answer
            break
        offset = int(found.group(1))
    assert "".join(pieces) == text and 4 <= len(pieces) <= 6
    with pytest.raises(ToolError, match="offset"):
        tool.run({"seq": 0, "offset": 60_001})
    with pytest.raises(ToolError, match="offset"):
        tool.run({"seq": 0, "offset": -1})
