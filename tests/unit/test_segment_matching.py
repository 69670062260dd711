"""Identifiers typed from a later segment on, and with typos in their parts: the tiers of
``score_text``, the query split at ``/``, the window they need and the OpenSearch body."""

from __future__ import annotations

import random
import string

import pytest

from backscroll.indexer.textfold import QUERY_TOKEN_RE, word_start_match
from backscroll.query import typo_readings as readings
from backscroll.query.contract import SessionQueryRequest
from backscroll.query.engine import EngineHit
from backscroll.query.opensearch.body import leaves, search_body
from backscroll.query.plan import plan_request
from backscroll.query.scope import Scope
from backscroll.query.scoring import (
    TIER_FUZZY,
    TIER_FUZZY2,
    TIER_PARTS,
    TIER_PREFIX,
    TIER_SUBSTRING,
    score_text,
)


def _tier(text: str, word: str) -> float:
    score = score_text(text, [word], [word])
    return 0.0 if score is None else readings.tier_of(score)


@pytest.mark.parametrize(
    ("text", "word", "tier"),
    [
        ("call self.parse_header(raw)", "parse_he", TIER_SUBSTRING),
        ("DEFAULT_MAX_BYTES = 3", "max_b", TIER_SUBSTRING),
        ("see app/conf.yaml", "conf.y", TIER_PREFIX),  # the start of the identifier conf.yaml
        ("see query/scoring.py", "query/sc", TIER_SUBSTRING),
        ("reparse_header", "parse_he", 0.0),  # inside a segment: never
        ("parse the header", "parse_he", 0.0),  # not the separator typed
        ("visit example.com now", "exmple.com", TIER_FUZZY),  # one edit in all
        ("visit example.com now", "exmaple.cmo", TIER_FUZZY2),  # one edit in each part
        ("settings.json", "setings.jsno", TIER_FUZZY2),
        ("an example of com ports", "exmaple.cmo", TIER_PARTS),  # the parts apart
        ("the example.org mirror", "exmaple.cmo", 0.0),  # org is two edits from cmo
        ("version 2.2.10", "2.2.2", TIER_PARTS),  # numbers have no typo tier: parts apart only
    ],
)
def test_the_tier_of_an_identifier_inside_longer_ones_and_with_typos(
    text: str, word: str, tier: float
) -> None:
    assert _tier(text, word) == tier


def test_a_part_keeps_the_budget_of_its_own_length() -> None:
    assert _tier("www.example.com", "example.cxmy") == 0.0  # two edits in a part of 3: no match
    assert _tier("www.example.com", "exmaple.com") == TIER_FUZZY  # a later segment on, one edit


def test_a_fragment_starts_where_no_word_character_comes_before_it() -> None:
    assert word_start_match("self.parse_header", "parse_he") is not None
    assert word_start_match("x__parse_header", "parse_he") is not None
    assert word_start_match("reparse_header", "parse_he") is None
    assert word_start_match("数据parse_header", "parse_he") is not None


def test_a_query_word_joined_by_a_slash_is_one_identifier() -> None:
    assert QUERY_TOKEN_RE.findall("query/sc src/ a/b/c") == ["query/sc", "src", "a/b/c"]
    plan, _ = plan_request(SessionQueryRequest(query="src/query/ sc"), Scope.workspace("w"), 100)
    assert plan.words == ("src/query", "sc")


def _hit(seq: int, text: str, score: float) -> EngineHit:
    return EngineHit(
        session_id="s", entry_id=f"s:{seq}", seq=seq, kind="user/message", text=text, score=score
    )


def test_identifiers_alone_need_the_window_only_when_a_hit_scores_above_its_text() -> None:
    plan, _ = plan_request(SessionQueryRequest(query="parse_he"), Scope.workspace("w"), 100)
    exact = [_hit(seq, "self.parse_header", TIER_SUBSTRING) for seq in range(3)]
    assert not readings.window_needed(plan, exact, 3)
    over = [*exact[:2], _hit(9, "parse the header", TIER_SUBSTRING)]
    assert readings.window_needed(plan, over, 3)
    assert readings.diversify(plan, over) == over[:2]  # the over-match is left out


def test_a_very_long_query_of_identifiers_is_searched_without_their_segment_filters() -> None:
    rng = random.Random(1)

    def name() -> str:
        return ".".join("".join(rng.choice(string.ascii_lowercase) for _ in range(6)) for _ in range(9))

    plan, _ = plan_request(
        SessionQueryRequest(query=" ".join(name() for _ in range(6))), Scope.workspace("w"), 100
    )
    body = search_body(plan, size=10)  # not refused
    assert leaves(body["query"]) <= 900
