"""The OpenSearch provider when OpenSearch is not there: nothing listening, a server that never
answers. Each is a typed, retriable SESSION_QUERY_INDEX_FAILED within its time budget, never an
empty result, and the search tool reports it as an error in every SDK shape. An index that does not
exist yet (nothing indexed) is an empty history instead. (What a search finds is the contract
suites', on every backend.)"""

from __future__ import annotations

import socket
import time
from typing import Any

import pytest
from conftest import Pipeline

from backscroll.query import (
    OpenSearchProvider,
    Scope,
    SessionQueryError,
    SessionQueryRequest,
    ToolError,
    session_query_tool,
)


def code_of(call: Any) -> SessionQueryError:
    with pytest.raises(SessionQueryError) as caught:
        call()
    return caught.value


def _assert_outage(provider: OpenSearchProvider, within_s: float) -> None:
    for request in (SessionQueryRequest(query="needle"), SessionQueryRequest()):
        started = time.monotonic()
        err = code_of(lambda request=request: provider.search(request))
        assert err.code == "SESSION_QUERY_INDEX_FAILED"
        assert err.retriable
        assert time.monotonic() - started < within_s
    made = session_query_tool(provider)
    assert made is not None
    with pytest.raises(ToolError) as caught:
        made.run({"query": "needle"})
    message = str(caught.value)
    assert "SESSION_QUERY_INDEX_FAILED" in message
    assert "No entries" not in message and "No searchable" not in message
    assert str(made.run_openai_call({"id": "c1", "function": {"arguments": "{}"}})["content"]).startswith(
        "error:"
    )
    assert made.run_anthropic_call({"id": "t1", "input": {}})["is_error"] is True
    assert made.run_mcp_call({})["isError"] is True


def test_unreachable_opensearch_is_a_typed_error_promptly() -> None:
    with OpenSearchProvider(Scope.session("s1"), hosts="http://127.0.0.1:9", request_timeout_s=1) as provider:
        _assert_outage(provider, within_s=3)


def test_a_server_that_never_answers_times_out() -> None:
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(16)  # accepts connections (kernel backlog) and never answers
        url = f"http://127.0.0.1:{silent.getsockname()[1]}"
        with OpenSearchProvider(Scope.session("s1"), hosts=url, request_timeout_s=0.5) as provider:
            _assert_outage(provider, within_s=3)


def test_a_missing_index_is_an_empty_history(pipeline: Pipeline) -> None:
    provider = pipeline.provider(
        Scope.workspace("ws-a"), index_prefix=f"{pipeline.opensearch.index_prefix}-absent"
    )
    for request in (SessionQueryRequest(query="needle thread"), SessionQueryRequest()):
        result = provider.search(request)
        assert result.matches == () and result.searched == 0
