"""The filter that narrows an OpenSearch scan to the entries that may match, by the shape of each
query word (that it keeps every entry the query can match is proven against the real server in
``tests/integration/test_os_scan_plan.py``)."""

from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from tests.contracts.query_shapes import edit

from sessionlog.query import Scope, SessionQueryRequest
from sessionlog.query.builder import MAX_LEAVES, QueryPlan, leaves, search_body
from sessionlog.query.errors import SessionQueryError
from sessionlog.query.os_narrow import _edited, narrowing, reading_covered, scan_filter
from sessionlog.query.plan import plan_request
from sessionlog.query.scoring import typo_match


def _plan(query: str) -> QueryPlan:
    return plan_request(SessionQueryRequest(query=query), Scope.session("s"), 50)[0]


def _leaves(clause: Any, kind: str) -> list[dict[str, Any]]:
    """Every ``kind`` query inside ``clause``."""
    found: list[dict[str, Any]] = []
    if isinstance(clause, dict):
        for key, value in clause.items():
            if key == kind:
                found.append(value)
            found += _leaves(value, kind)
    elif isinstance(clause, list):
        for item in clause:
            found += _leaves(item, kind)
    return found


def test_a_plain_word_is_a_whole_token_its_trigrams_or_a_token_within_its_budget() -> None:
    narrow = scan_filter(_plan("Report"), False)
    assert narrow is not None and narrow["bool"]["minimum_should_match"] == 1
    terms = _leaves(narrow, "term")
    assert {"text": "report"} in terms and {"args.exact": "report"} in terms
    assert {"text.tri": "rep"} in terms and {"args.tri": "ort"} in terms
    fuzzy = _leaves(narrow, "fuzzy")
    assert [next(iter(f)) for f in fuzzy] == ["text", "args"]
    rule = fuzzy[0]["text"]
    # Every term within the budget, not the ranking tier's 128: the filter must not drop one.
    assert rule["fuzziness"] == 2 and rule["rewrite"] == "constant_score" and rule["transpositions"]


def test_a_short_word_is_only_a_whole_token_and_a_word_with_digits_keeps_them_exact() -> None:
    short = scan_filter(_plan("ok"), False)
    assert not _leaves(short, "fuzzy") and not _leaves(short, "bool")[1:]
    mixed = _leaves(scan_filter(_plan("pyhton3"), False), "fuzzy")
    assert mixed[0] == {
        "text.mixed": {
            "value": "a3|pyhton",
            "fuzziness": 2,
            "prefix_length": 3,
            "transpositions": True,
            "rewrite": "constant_score",
        }
    }


def test_an_identifier_needs_each_of_its_longer_parts() -> None:
    narrow = scan_filter(_plan("get_type_of"), False)
    assert narrow is not None and len(narrow["bool"]["filter"]) == 2  # "get" and "type", not "of"
    assert scan_filter(_plan("v2.1"), False) is None, "no part of three characters"
    assert scan_filter(_plan("acct_9931"), False) is not None


def test_the_words_are_or_ed_when_each_has_a_test_so_that_any_word_is_served_too() -> None:
    plan = _plan("report budget")
    assert scan_filter(plan, False) == scan_filter(plan, True)
    assert len(scan_filter(plan, False)["bool"]["should"]) == 2  # type: ignore[index]


def test_a_word_without_a_test_leaves_the_others_and_all_of_them_for_any_word() -> None:
    plan = _plan("report 東京")
    narrow = scan_filter(plan, False)
    assert narrow is not None and narrow == scan_filter(_plan("report"), False)
    assert scan_filter(plan, True) is None
    assert scan_filter(_plan("東京"), False) is None
    assert scan_filter(_plan(""), False) is None, "browsing"


def test_a_word_looked_for_inside_longer_words_needs_only_its_trigrams() -> None:
    narrow = scan_filter(_plan("piled"), False, frozenset({"piled"}))
    assert not _leaves(narrow, "fuzzy")
    assert {t["text.tri"] for t in _leaves(narrow, "term") if "text.tri" in t} == {"pil", "ile", "led"}
    assert scan_filter(_plan("go"), False, frozenset({"go"})) is None


@given(word=st.text("abcdefghij", min_size=7, max_size=14), seed=st.integers(0, 2**32))
def test_a_string_one_edit_away_holds_every_trigram_of_one_of_the_kept_lists(word: str, seed: int) -> None:
    edited = edit(random.Random(seed), word)
    if typo_match(word, edited, 1) is None or edited == word[: len(edited)]:
        return  # the shape tool also cuts words: only real one-edit strings are in question
    grams = {edited[i : i + 3] for i in range(len(edited) - 2)}
    kept = _edited(word)
    assert kept is not None and any(set(lists) <= grams for lists in kept), (word, edited)


def test_only_a_word_of_seven_letters_or_more_keeps_its_readings_inside_longer_words() -> None:
    assert reading_covered("compilled", "compiled") and reading_covered("monorig", "monoring")
    assert not reading_covered("reprot", "report"), "six letters: an edit may leave no 3-gram whole"
    assert not reading_covered("compilled", "compile"), "two edits: not a reading inside"
    narrow = scan_filter(_plan("compilled"), False)
    assert {"text.tri": "pil"} in _leaves(narrow, "term") and len(_leaves(narrow, "bool")) > 8


def test_a_long_querys_filter_is_loosened_to_fit_the_servers_clause_limit() -> None:
    assert narrowing(_plan("compilled"), False).readings
    rng = random.Random(3)
    words = " ".join("".join(rng.choice("abcdefghij") for _ in range(40)) for _ in range(32))
    loose = narrowing(_plan(words), False)
    assert loose.filter is not None and not loose.readings
    assert leaves(loose.filter) <= MAX_LEAVES - 100


def test_a_ranked_search_takes_fewer_trigrams_per_word_in_a_long_query_or_refuses_it() -> None:
    short = search_body(_plan("reconciliation"), size=11)
    assert {"text.tri": "rec"} in _leaves(short, "term") and len(_leaves(short, "term")) > 24
    long = search_body(
        _plan(" ".join(f"{w}reconciliation" for w in "abcdefghijklmnopqrstuvwxyzABCDE")), size=11
    )
    assert leaves(long["query"]) <= MAX_LEAVES
    idents = " ".join("_".join(f"part{i}{j}x" for j in range(6)) for i in range(20))
    with pytest.raises(SessionQueryError) as caught:
        search_body(_plan(idents), size=11)
    assert caught.value.code == "SESSION_QUERY_INVALID_QUERY"
