"""Match-centred excerpts: where the window sits, its caps and markers, and their invariants."""

from __future__ import annotations

import re

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from backscroll.indexer.textfold import fold
from backscroll.query.contract import DEFAULT_EXCERPT_BYTES
from backscroll.query.excerpt import ELLIPSIS, excerpt, first_match

SPACES = re.compile(r"\s+")


def nbytes(text: str) -> int:
    return len(text.encode("utf-8"))


def collapse(text: str) -> str:
    return SPACES.sub(" ", text)


# -- scenarios ----------------------------------------------------------------------------------------


def test_default_budget_is_600_bytes() -> None:
    assert DEFAULT_EXCERPT_BYTES == 600
    assert ELLIPSIS == "…" and nbytes(ELLIPSIS) == 3


@pytest.mark.parametrize("budget", [600, 200])
def test_match_at_the_start_of_a_long_text(budget: int) -> None:
    text = "needle " + "x" * 50_000
    out = excerpt(text, ["needle"], budget)
    assert nbytes(out) <= budget
    assert out.startswith("needle ")  # nothing cut before the match: no leading marker
    assert out.endswith(ELLIPSIS) and out.count(ELLIPSIS) == 1
    assert nbytes(out) >= budget - 2 * nbytes(ELLIPSIS), "the budget is used, not wasted"


@pytest.mark.parametrize("text", ["ắ" * 2000, "a\u0306\u0301" * 2000, "😀" * 2000, "é" * 2000])
def test_multibyte_text_within_budget(text: str) -> None:
    out = excerpt(text, [], 100)
    assert nbytes(out) <= 100
    assert out.encode("utf-8").decode("utf-8") == out
    body = out.removesuffix(ELLIPSIS)
    assert out.endswith(ELLIPSIS) and not out.startswith(ELLIPSIS)
    assert text.startswith(body) and body


@pytest.mark.parametrize(
    ("text", "word"),
    [
        ("Doanh Thu THÁNG Bảy", "thang"),
        ("Đơn hàng số 42 đã giao", "don"),
        ("long long long—café, next value", "cafe"),
        ("no match here at all", "zzz"),
    ],
)
def test_short_text_verbatim(text: str, word: str) -> None:
    assert excerpt(text, [word], 600) == text


def test_needle_in_the_middle() -> None:
    text = "a" * 5000 + " NEEDLE " + "b" * 5000
    out = excerpt(text, ["needle"], 600)
    assert nbytes(out) <= 600
    assert "NEEDLE" in out
    assert out.startswith(ELLIPSIS) and out.endswith(ELLIPSIS)
    before = nbytes(out[: out.index("NEEDLE")])
    assert 600 // 4 <= before <= 600 // 2, f"about a third of the budget precedes the match, got {before}"


def test_snippet_keeps_accents_and_punctuation_but_not_newlines() -> None:
    text = "long long long—café,\nnext value " + "z" * 200
    out = excerpt(text, ["cafe"], 24)
    assert nbytes(out) <= 24
    assert "café" in out and "—" in out and "\n" not in out


def test_match_near_the_end_gives_the_room_back_to_the_left() -> None:
    text = "x" * 5000 + " needle"
    out = excerpt(text, ["needle"], 600)
    assert out.startswith(ELLIPSIS) and out.endswith("needle")
    assert nbytes(out) >= 600 - nbytes(ELLIPSIS) - 1


def test_original_case_and_accents_are_kept_in_long_texts() -> None:
    text = "x " * 1000 + "Đơn HÀNG tháng Bảy" + " y" * 1000
    out = excerpt(text, ["don", "hang"], 200)
    assert "Đơn HÀNG" in out
    assert nbytes(out) <= 200


def test_whitespace_runs_collapse_to_one_space() -> None:
    assert excerpt("  a  \n\t b \r\n ", ["a"], 600) == "a b"
    text = "word \n\n\t " * 3000 + "needle" + "\n\n  tail" * 3000
    out = excerpt(text, ["needle"], 600)
    assert "needle" in out
    assert "\n" not in out and "\t" not in out and "  " not in out


def test_a_highlight_hint_centres_a_fuzzy_match() -> None:
    text = "x " * 1000 + "Revenue forecast" + " y" * 1000
    out = excerpt(text, ["revnue"], 200, hints=["Revenue"])
    assert "Revenue forecast" in out


def test_no_match_starts_at_the_beginning() -> None:
    text = "alpha " * 1000
    out = excerpt(text, ["zzz"], 100)
    assert out.startswith("alpha") and out.endswith(ELLIPSIS)
    assert excerpt("\n\n  alpha " * 1000, [], 100).startswith("alpha"), "leading whitespace is dropped"


@pytest.mark.parametrize(
    ("text", "budget", "expected"), [("x" * 100, 6, ""), ("abc", 3, "abc"), ("abcd", 3, ""), (" \n0", 1, "0")]
)
def test_tiny_budgets_never_overflow(text: str, budget: int, expected: str) -> None:
    assert excerpt(text, [], budget) == expected


# -- first_match -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "words", "span"),
    [
        ("braided cable ai", ["ai"], (14, 16)),  # 1–2 characters match whole tokens only
        ("braided cable", ["ai"], (0, 0)),
        ("ai_x", ["ai"], (0, 2)),  # "_" separates tokens, as in the index
        ("acct_9931 done", ["9931"], (5, 9)),  # 3+ characters match inside tokens
        ("the revenue", ["rev"], (4, 7)),
        ("beta alpha", ["alpha", "beta"], (0, 4)),  # the earliest of the words
        ("Straße x", ["strasse"], (0, 6)),  # a folded span maps back to source characters
        ("xx æble", ["aeble"], (3, 7)),
        ("Đơn hàng", ["hang"], (4, 8)),
        ("nothing", [], (0, 0)),
        ("", ["x"], (0, 0)),
        ("abc", [""], (0, 0)),
    ],
)
def test_first_match(text: str, words: list[str], span: tuple[int, int]) -> None:
    assert first_match(text, words) == span


def test_first_match_uses_hints_only_without_a_word_match() -> None:
    assert first_match("one Revenue two", ["revnue"], ["REVENUE"]) == (4, 11)
    assert first_match("one revenue two revnue", ["revnue"], ["revenue"]) == (16, 22)


ascii_words = st.from_regex(r"[a-z0-9]{1,6}", fullmatch=True)


ascii_texts = st.text(alphabet=st.characters(codec="ascii"))


@settings(max_examples=300, deadline=None)
@given(ascii_texts, st.lists(ascii_words, min_size=1, max_size=3), ascii_texts)
def test_ascii_fast_path_agrees_with_the_general_path(prefix: str, words: list[str], suffix: str) -> None:
    text = f"{prefix} {words[-1].upper()} {suffix}"
    span = first_match(text, words)
    assert span != (0, 0)
    # A trailing non-ASCII token sends the same text through the per-character offsets.
    assert first_match(text + " é", words) == span


# -- invariants -------------------------------------------------------------------------------------

texts = st.text(alphabet=st.characters(exclude_characters=ELLIPSIS, exclude_categories=["Cs"]), max_size=3000)


@settings(max_examples=400, deadline=None)
@given(texts, st.integers(0, 1500), st.lists(ascii_words, max_size=3))
def test_excerpt_invariants(text: str, budget: int, words: list[str]) -> None:
    out = excerpt(text, words, budget)
    assert nbytes(out) <= budget
    assert out.encode("utf-8").decode("utf-8") == out
    collapsed = collapse(text)
    body = out.removeprefix(ELLIPSIS).removesuffix(ELLIPSIS)
    assert body in collapsed
    if not out.startswith(ELLIPSIS):
        assert collapsed.lstrip().startswith(body)
    if not out.endswith(ELLIPSIS):
        assert collapsed.rstrip().endswith(body)
    if len(text) <= 2 * max(budget, 16) and nbytes(collapsed.strip()) <= budget:
        assert out == collapsed.strip(), "a text that fits is returned whole, without markers"


@settings(max_examples=300, deadline=None)
@given(texts, st.from_regex(r"[A-Za-z]{3,8}", fullmatch=True), texts, st.integers(40, 1500))
def test_excerpt_contains_the_first_match(prefix: str, word: str, suffix: str, budget: int) -> None:
    text = prefix + word + suffix
    assume(fold(prefix + word).find(word.lower()) == len(fold(prefix)))  # no earlier occurrence
    out = excerpt(text, [word.lower()], budget)
    assert word in out
    assert nbytes(out) <= budget


# -- cost ----------------------------------------------------------------------------------------------


# How long these take is measured in benchmarks/, never asserted here: these check the result.


def _cut(text: str, words: list[str]) -> str:
    out = excerpt(text, words, 600)
    assert nbytes(out) <= 600
    return out


def test_one_mebibyte_ascii_text_centres_on_a_match_at_the_end() -> None:
    mib = 1024 * 1024
    at_end = "x " * (mib // 2 - 4) + "needle"
    assert nbytes(at_end) <= mib
    assert _cut(at_end, ["needle"]).endswith("needle")
    assert _cut(at_end, ["absent"]).startswith("x x")


def test_one_mebibyte_non_ascii_text_centres_on_a_match_at_the_end() -> None:
    text = "Đơn hàng tháng Bảy " * (1024 * 1024 // 27) + "needle"
    assert nbytes(text) <= 1024 * 1024
    assert _cut(text, ["needle"]).endswith("needle")
