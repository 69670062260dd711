"""Self-exclusion on both backends: a search leaves out the calls and results of the searching
tools whatever they are named (``SessionQueryRequest.exclude_tools``), and only by default kinds."""

from __future__ import annotations

from typing import Any

import pytest

from backscroll.query import Scope, SessionQueryError, SessionQueryRequest
from backscroll.query.contract import SELF_TOOL_NAMES
from backscroll.query.tools import session_tools

from .conftest import Harness
from .test_mcp_contract import _event

WORD = "quokkafigure"


def _records() -> list[dict[str, Any]]:
    names = ["history_search", "session_query", "workspace_query", "session_search", "run_sql"]
    records: list[dict[str, Any]] = [
        {
            "v": 1,
            "kind": "header",
            "workspace_id": "ws-t",
            "session_id": "s-t",
            "created_at": "2026-11-02T08:00:00Z",
        },
        _event("ws-t", "s-t", 0, f"the {WORD} is 5", role="user"),
    ]
    for i, name in enumerate(names):
        records.append(
            _event("ws-t", "s-t", 1 + 2 * i, f"{WORD} call", "tool/call", role="assistant", tool_name=name)
        )
        records.append(
            _event("ws-t", "s-t", 2 + 2 * i, f"{WORD} result", "tool/result", role="tool", tool_name=name)
        )
    return records


def _seqs(harness: Harness, **request: Any) -> set[int]:
    provider = harness.provider(Scope.session("s-t"))
    result = provider.search(SessionQueryRequest(query=WORD, limit=50, **request))
    return {match.seq for match in result.matches}


def test_searches_exclude_their_own_tools_whatever_the_name(harness: Harness) -> None:
    harness.append_all(_records())
    harness.index()
    # Default: the built-in names are left out; a renamed tool and other tools are not.
    assert _seqs(harness) == {0, 1, 2, 9, 10}
    # A renamed search tool names itself and its siblings.
    assert _seqs(harness, exclude_tools=("history_search", *SELF_TOOL_NAMES)) == {0, 9, 10}
    assert _seqs(harness, exclude_tools=()) == set(range(11))
    # Explicit kinds search exactly those kinds, the tools' entries included.
    assert _seqs(harness, kinds=("tool/call",)) == {1, 3, 5, 7, 9}
    # The tools pass their own names, whatever the operator called them.
    tools = session_tools(harness.provider(Scope.session("s-t")), names={"session_query": "history_search"})
    assert tools is not None and tools.names == ("history_search",)
    text = tools.run("history_search", {"query": WORD})
    assert text.startswith("3 matches") and "[seq 9," in text and "[seq 1," not in text
    with pytest.raises(SessionQueryError) as caught:
        _seqs(harness, exclude_tools=("",))
    assert caught.value.code == "SESSION_QUERY_INVALID_FILTER"
