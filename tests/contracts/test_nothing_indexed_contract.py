"""A search before anything is indexed is an empty history, not an outage: no matches,
``searched == 0``, on every backend and query API (an unreachable index stays an error:
``tests/integration/test_provider_outages.py``)."""

from __future__ import annotations

import pytest

from backscroll.query import Scope, SessionQueryError, SessionQueryRequest

from . import corpus
from .conftest import Harness

BOTH_APIS = True


def test_a_search_before_anything_is_indexed_finds_nothing(harness: Harness) -> None:
    for scope in (Scope.session("s-1"), Scope.workspace("ws-0")):
        result = harness.provider(scope).search(SessionQueryRequest(query="zurich revnue"))
        assert result.matches == () and result.searched == 0


def test_a_session_named_before_anything_is_indexed_is_not_found(harness: Harness) -> None:
    provider = harness.provider(Scope.workspace("ws-0"))
    with pytest.raises(SessionQueryError) as caught:
        provider.search(SessionQueryRequest(session_id="s-1", query="zurich"))
    assert caught.value.code == "SESSION_QUERY_SESSION_NOT_FOUND" and not caught.value.retriable


def test_own_appends_are_found_before_anything_is_indexed(harness: Harness) -> None:
    """Read-your-writes holds on an empty deployment too: the live entries merge into the empty
    history."""
    _, sid = corpus.session(0)
    log = harness.log()
    log.append(corpus.event(0, 0, "the quarterly forecast for Zürich")).result(timeout=30)
    log.flush(timeout=30)
    found = harness.provider(Scope.session(sid), live=log).search(SessionQueryRequest(query="zurich forcast"))
    assert [(m.session_id, m.seq) for m in found.matches] == [(sid, 0)]
