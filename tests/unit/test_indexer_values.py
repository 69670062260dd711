"""The indexer's value types: equal and hashed by their fields, with slots, like the frozen
dataclasses they replace (the type checker refuses assignments to them)."""

from __future__ import annotations

from backscroll.indexer.ports import RawRecord
from backscroll.indexer.projector import Action
from backscroll.indexer.values import value_type


@value_type
class _Pair:
    left: int
    right: tuple[int, ...] = ()


def test_values_are_equal_and_hashed_by_their_fields() -> None:
    assert _Pair(1, (2,)) == _Pair(1, (2,)) and _Pair(1) != _Pair(2)
    assert hash(_Pair(1, (2,))) == hash(_Pair(1, (2,)))
    assert len({_Pair(1), _Pair(1), _Pair(2)}) == 2
    raw = RawRecord("log", 0, 7, b"k", b"v", 1)
    assert {raw: 1}[RawRecord("log", 0, 7, b"k", b"v", 1)] == 1


def test_values_have_slots_and_no_instance_dict() -> None:
    assert not hasattr(_Pair(1), "__dict__")
    assert getattr(Action, "__slots__", None) == ("op", "target", "doc_id", "routing", "body")
