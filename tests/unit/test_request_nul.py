"""A NUL in the query is refused when the request is built (typed INVALID_QUERY), not later."""

from __future__ import annotations

import pytest

from backscroll.query import SessionQueryError, SessionQueryRequest


@pytest.mark.parametrize("query", ["\x00", "needle\x00", "\x00 needle", "a\x00b"])
def test_a_nul_in_the_query_is_refused_when_the_request_is_built(query: str) -> None:
    with pytest.raises(SessionQueryError) as caught:
        SessionQueryRequest(query=query)
    assert caught.value.code == "SESSION_QUERY_INVALID_QUERY"
    with pytest.raises(SessionQueryError) as caught:
        SessionQueryRequest.model_validate({"query": query, "limit": 5})
    assert caught.value.code == "SESSION_QUERY_INVALID_QUERY"


def test_a_query_without_nul_is_built() -> None:
    assert SessionQueryRequest(query="needle \u2400 text").query == "needle \u2400 text"
