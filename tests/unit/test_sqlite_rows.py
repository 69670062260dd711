"""The pure rows of the embedded projection: new terms by workspace and their ``vocab`` rows."""

from __future__ import annotations

from backscroll.indexer.sqlite.rows import (
    MAX_TERM_CHARS,
    KnownTerms,
    terms_by_workspace,
    text_rows,
    vocab_rows,
)


def test_the_words_of_each_workspace_are_gathered() -> None:
    texts = [("ws-a", text_rows("Parse config")), ("ws-b", text_rows("config")), ("ws-a", text_rows("café"))]
    assert terms_by_workspace(texts) == {"ws-a": {"parse", "config", "cafe"}, "ws-b": {"config"}}


def test_a_vocab_row_carries_the_length_and_the_reversed_term() -> None:
    assert vocab_rows({"ws": {"abc"}}) == [("ws", "abc", 3, "cba")]


def test_known_and_pending_terms_and_overlong_ones_are_left_out() -> None:
    known = KnownTerms()
    known.learn({"ws-a": {"alpha"}})
    long_term = "x" * (MAX_TERM_CHARS + 1)
    by_ws = {"ws-a": {"alpha", "beta", "gamma", long_term}, "ws-b": {"alpha"}}
    assert known.unseen(by_ws, pending={"ws-a": {"gamma"}}) == {"ws-a": {"beta"}, "ws-b": {"alpha"}}
    assert known.unseen({"ws-a": {"alpha"}}) == {}  # a workspace with nothing new is left out


def test_past_its_limit_the_cache_starts_again_from_nothing() -> None:
    known = KnownTerms(limit=3)
    known.learn({"ws": {"a", "b"}})
    assert known.unseen({"ws": {"a", "b"}}) == {}
    known.learn({"ws": {"c", "d"}})  # 4 > 3: what was known is forgotten, the new terms kept
    assert known.unseen({"ws": {"a", "b", "c", "d"}}) == {"ws": {"a", "b"}}
    known.forget()
    assert known.unseen({"ws": {"c"}}) == {"ws": {"c"}}
