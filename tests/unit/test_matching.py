"""The matching rules in pure code: query words, tiers, the digit rule, CJK rows (no I/O)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from backscroll.indexer.sqlite.view import text_rows
from backscroll.indexer.textfold import IDENT_RE, QUERY_TOKEN_RE, cjk_grams, fold, is_cjk, mixed_key
from backscroll.query.scoring import (
    FIELD_BONUS,
    OCCURRENCE,
    TIER_EXACT,
    TIER_FOLDED,
    TIER_FUZZY,
    TIER_FUZZY2,
    TIER_PARTS,
    TIER_PREFIX,
    TIER_PREFIX_NUMBER,
    TIER_SUBSTRING,
    _Text,
    extends,
    fuzzy_budget,
    max_bonus,
    score_text,
    typo_match,
    word_tier,
)


def _score(text: str, query: str, **kwargs: bool) -> float | None:
    words = [m.group().lower() for m in QUERY_TOKEN_RE.finditer(query)]
    return score_text(text, words, [fold(w) for w in words], **kwargs)


def test_query_tokens_keep_identifiers_whole_and_split_cjk() -> None:
    assert QUERY_TOKEN_RE.findall("get_t ZSTD_g types.M 2.2.1 用Python写 x") == [
        "get_t", "ZSTD_g", "types.M", "2.2.1", "用", "Python", "写", "x",
    ]  # fmt: skip
    assert IDENT_RE.findall("call get_type() on 9.0.1~rc2. end.") == ["get_type", "9.0.1"]


def test_cjk_helpers() -> None:
    assert is_cjk("数据库") and is_cjk("한국어") and not is_cjk("abc") and not is_cjk("")
    assert cjk_grams("数据库") == ["数据", "据库"] and cjk_grams("検") == ["検"]
    rows = text_rows("我们的数据库 and 検")
    assert rows.cjk == "我们 们的 的数 数据 据库 0 検 0 我 们 的 数 据 库 検"


def test_digit_skeletons() -> None:
    assert mixed_key("python3") == ("a3", "python")
    assert mixed_key("crème00brûlée") == ("a00a", "crèmebrûlée")
    assert mixed_key("9931") is None and mixed_key("abc") is None
    assert typo_match("pyhton3", "python3", 2) == 1
    assert typo_match("ipv4", "ipv6", 1) is None
    assert typo_match("pythn4", "python3", 2) is None


@pytest.mark.parametrize(
    ("text", "query", "tier"),
    [
        ("Résumé", "Résumé", TIER_EXACT),
        ("resume", "Résumé", TIER_FOLDED),
        ("resumed", "resume", TIER_PREFIX),
        ("rezume", "resume", TIER_FUZZY),
        ("rzume", "resume", TIER_FUZZY2),
        ("preresumex", "resume", TIER_SUBSTRING),
        ("python3", "pyhton3", TIER_FUZZY),
        ("get_type", "get_t", TIER_PREFIX),
        ("get_type", "get_type", TIER_EXACT),
        ("acct 9931", "acct_9931", TIER_FOLDED),
        ("2.2.1-3", "2.2.1", TIER_FOLDED),  # its parts in a row: 2 2 1 (3)
        ("2.2.10", "2.2.1", TIER_PREFIX_NUMBER),
        ("get the type", "get_tpye", TIER_PARTS),
        ("我们的数据库迁移完成了", "数据库", TIER_FOLDED),
        ("全文検索エンジン", "検", TIER_FOLDED),
    ],
)
def test_tiers(text: str, query: str, tier: float) -> None:
    assert _score(text, query) == pytest.approx(tier + FIELD_BONUS)


@pytest.mark.parametrize(
    ("text", "query"),
    [
        ("ipv6", "ipv4"),
        ("acct_9931", "acct_9932"),
        ("acct_9931", "9932"),
        ("braid", "ai"),
        ("数据表", "数据库"),
    ],
)
def test_no_match(text: str, query: str) -> None:
    assert _score(text, query) is None


def test_occurrences_count_up_to_three_and_stay_below_a_tier_step() -> None:
    once, twice, many = (_score(t, "zephyr") for t in ("zephyr", "zephyr zephyr", "zephyr " * 9))
    assert once is not None and twice is not None and many is not None
    assert twice - once == pytest.approx(OCCURRENCE) and many - once == pytest.approx(2 * OCCURRENCE)
    assert max_bonus(["w"] * 32) < TIER_PREFIX - TIER_PREFIX_NUMBER


def test_tool_arguments_rank_below_text_at_the_same_tier() -> None:
    text = _score("quokka", "quokka")
    args = score_text("quokka", ["quokka"], ["quokka"], weight=0.75)
    assert text is not None and args is not None and text - args == pytest.approx(FIELD_BONUS)


def test_only_the_last_word_may_be_a_prefix() -> None:
    assert _score("the backstage crew", "crew backst") == pytest.approx(
        TIER_EXACT + TIER_PREFIX + FIELD_BONUS
    )
    assert _score("the backstage crew", "backst crew") == pytest.approx(
        TIER_SUBSTRING + TIER_EXACT + FIELD_BONUS
    )


_LETTERS = st.text(alphabet="abcdeéz", min_size=1, max_size=7)
_TOKENS = st.one_of(_LETTERS, st.builds(lambda a, n: f"{a}{n}", _LETTERS, st.integers(0, 99)))


@settings(max_examples=300, deadline=None)
@given(tokens=st.lists(_TOKENS, min_size=1, max_size=12), word=_TOKENS)
def test_the_fast_paths_give_the_tokens_one_by_one_would(tokens: list[str], word: str) -> None:
    # The prefix tier is first looked for in the joined text (in C), a reading's close tokens come
    # from rapidfuzz: the same as comparing every token of the text in Python.
    seen = _Text.of(" ".join(tokens))
    folded = fold(word)
    budget = fuzzy_budget(folded)
    slow = sorted(
        (d, t) for t in seen.folded_set if (d := typo_match(folded, t, budget)) is not None
    )  # fmt: skip
    assert sorted(seen.close_terms(folded, budget)) == slow
    tier = word_tier(folded, folded, seen, True)
    if folded not in seen.exact and folded not in seen.folded_set and len(folded) >= 3:
        prefix = max((extends(t, folded) for t in seen.folded_set), default=0.0)
        assert tier >= prefix
        assert prefix != TIER_PREFIX or tier == TIER_PREFIX
