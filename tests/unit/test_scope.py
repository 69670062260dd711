"""Scope: what a provider may read, pinned at construction, always a server-side filter."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from backscroll.query.errors import SessionQueryError
from backscroll.query.scope import Scope

BLANK = ["", " ", "\t", "\n", "   "]
INVALID = ["a b", "a/b", "sess\n", "ü", "a" * 129, "*", "s1,s2"]


def scope_error(call: Any) -> SessionQueryError:
    with pytest.raises(SessionQueryError) as caught:
        call()
    assert caught.value.code == "SESSION_QUERY_INVALID_SCOPE"
    return caught.value


@pytest.mark.parametrize("value", BLANK)
def test_blank_ids_are_an_invalid_scope_never_all_sessions(value: str) -> None:
    scope_error(lambda: Scope.session(value))
    scope_error(lambda: Scope.sessions(["s1", value]))
    scope_error(lambda: Scope.workspace(value))
    scope_error(lambda: Scope.workspaces([value], ops=True))


@pytest.mark.parametrize("value", INVALID)
def test_malformed_ids_are_an_invalid_scope(value: str) -> None:
    scope_error(lambda: Scope.session(value))
    scope_error(lambda: Scope.workspace(value))


def test_empty_id_sets_are_an_invalid_scope() -> None:
    scope_error(lambda: Scope.sessions([]))
    scope_error(lambda: Scope.workspaces([], ops=True))


def test_several_workspaces_need_ops() -> None:
    err = scope_error(lambda: Scope.workspaces(["w1", "w2"]))
    assert "ops=True" in err.message
    scope = Scope.workspaces(["w1", "w2"], ops=True)
    assert scope.ids == ("w1", "w2") and scope.ops
    assert Scope.workspaces(["w1"]).ids == ("w1",)
    assert Scope.workspaces(["w1", "w1"]).ids == ("w1",), "duplicates are one workspace"


def test_the_plain_constructor_cannot_bypass_the_rules() -> None:
    scope_error(lambda: Scope(kind="workspaces", ids=("w1", "w2")))
    scope_error(lambda: Scope(kind="sessions", ids=()))
    scope_error(lambda: Scope(kind="sessions", ids=("",)))
    scope_error(lambda: Scope(kind="sessions", ids=("a b",)))
    scope_error(lambda: Scope.model_validate({"kind": "workspaces", "ids": [" "]}))
    assert Scope(kind="workspaces", ids=("w1", "w2"), ops=True).ids == ("w1", "w2")
    with pytest.raises(ValidationError):
        Scope(kind="everything", ids=("x",))
    with pytest.raises(ValidationError):
        Scope(kind="sessions", ids=("s1",), extra=1)  # type: ignore[call-arg]


def test_scope_is_frozen() -> None:
    scope = Scope.session("s1")
    with pytest.raises(ValidationError):
        scope.ids = ("s2",)  # type: ignore[misc]


@pytest.mark.parametrize(
    ("scope", "expected"),
    [
        (Scope.session("s1"), {"terms": {"session_id": ["s1"]}}),
        (Scope.sessions(["s1", "s2", "s1"]), {"terms": {"session_id": ["s1", "s2"]}}),
        (Scope.workspace("w1"), {"terms": {"workspace_id": ["w1"]}}),
        (Scope.workspaces(["w1", "w2"], ops=True), {"terms": {"workspace_id": ["w1", "w2"]}}),
    ],
)
def test_filter_is_a_structured_terms_clause(scope: Scope, expected: dict[str, Any]) -> None:
    assert scope.filter() == expected


def test_routing_pins_session_scopes_to_their_shards_only() -> None:
    assert Scope.session("s1").routing() == "s1"
    assert Scope.sessions(["s1", "s2"]).routing() == "s1,s2"
    assert Scope.workspace("w1").routing() is None
    assert Scope.workspaces(["w1", "w2"], ops=True).routing() is None


def test_admits_session_id() -> None:
    assert Scope.sessions(["s1", "s2"]).admits_session_id("s2") is True
    assert Scope.session("s1").admits_session_id("s2") is False
    assert Scope.workspace("w1").admits_session_id("s2") is None  # the index decides


def test_fingerprint_ignores_order_but_not_kind() -> None:
    assert Scope.sessions(["a", "b"]).fingerprint() == Scope.sessions(["b", "a"]).fingerprint()
    assert Scope.session("a").fingerprint() != Scope.workspace("a").fingerprint()
