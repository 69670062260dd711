"""Builds OpenSearch query bodies from a validated request. Pure.

User text only ever reaches ``match`` and ``match_phrase`` queries (never ``query_string``), so
Lucene syntax in a query is plain data. Ranking layers (spec D2) come from constant-score tiers per
word — exact 8, folded 4, fuzzy 2, substring 1 (tool arguments at three quarters of that) — plus
a phrase bonus; a tiny BM25 term adds "more occurrences, message text over arguments" without
crossing a tier. Recency (seq descending) breaks ties.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["SEARCH_TOOL_NAME", "QueryPlan", "browse_body", "count_body", "search_body"]

SEARCH_TOOL_NAME = "session_query"
_FIELDS = (("text", 1.0), ("args", 0.75))
_TIERS = (("exact", 8.0), ("folded", 4.0), ("fuzzy", 2.0), ("substring", 1.0))
_PHRASE_EXACT = 40.0
_PHRASE_FOLDED = 20.0
_TIEBREAK = 0.01


@dataclass(frozen=True, slots=True)
class QueryPlan:
    """The normalised request: scope filter, kinds, and the query words (original and folded)."""

    filters: tuple[dict[str, Any], ...]
    kinds: tuple[str, ...]
    raw_words: tuple[str, ...]
    words: tuple[str, ...]
    phrase: str
    default_kinds: bool
    limit: int = 10
    exclude_tools: tuple[str, ...] = (SEARCH_TOOL_NAME,)

    @property
    def browse(self) -> bool:
        return not self.words


def _const(query: dict[str, Any], boost: float) -> dict[str, Any]:
    return {"constant_score": {"filter": query, "boost": boost}}


def trigrams(word: str, cap: int = 12) -> list[str]:
    """The word's distinct 3-grams (at most ``cap``, spread over the word). A ``match`` on the
    trigram field would OR them (they share a position); every one of them must be present."""
    grams = list(dict.fromkeys(word[i : i + 3] for i in range(len(word) - 2)))
    if len(grams) > cap:
        step = (len(grams) - 1) / (cap - 1)
        grams = [grams[round(i * step)] for i in range(cap)]
    return grams


def word_clause(raw: str, folded: str) -> dict[str, Any]:
    """Matches one query word in any tier; scores as the best tier it reaches."""
    tiers: list[dict[str, Any]] = []
    for field, weight in _FIELDS:
        tiers.append(_const({"match": {f"{field}.exact": {"query": raw}}}, 8.0 * weight))
        tiers.append(_const({"match": {field: {"query": folded}}}, 4.0 * weight))
        # A number one edit away is another number (acct_9931 is not acct_9932): no typo tier.
        if len(folded) >= 3 and not any(ch.isdigit() for ch in folded):
            fuzzy = {"query": folded, "fuzziness": "AUTO", "prefix_length": 0, "max_expansions": 50}
            tiers.append(_const({"match": {field: fuzzy}}, 2.0 * weight))
        if len(folded) >= 3:
            grams = [{"term": {f"{field}.tri": gram}} for gram in trigrams(folded)]
            tiers.append(_const({"bool": {"filter": grams}}, weight))
    return {"dis_max": {"queries": tiers}}


def _filters(plan: QueryPlan) -> list[dict[str, Any]]:
    clauses = [*plan.filters, {"terms": {"type": list(plan.kinds)}}, {"term": {"has_text": True}}]
    return clauses


def _must_not(plan: QueryPlan, exclude: Sequence[str] = ()) -> list[dict[str, Any]]:
    # The search tool's own calls and results are not history worth finding (D8).
    clauses: list[dict[str, Any]] = []
    if plan.default_kinds and plan.exclude_tools:
        clauses.append({"terms": {"tool_name": list(plan.exclude_tools)}})
    if exclude:
        # Pages after the first leave out what earlier pages returned. Unlike search_after on
        # [_score, …], this cannot repeat or skip an entry when unrelated writes shift BM25 statistics.
        clauses.append({"ids": {"values": list(exclude)}})
    return clauses


def search_body(
    plan: QueryPlan,
    *,
    size: int,
    partial: bool = False,
    exclude: Sequence[str] = (),
) -> dict[str, Any]:
    """A ranked search: every word must match (or, ``partial``, at least one)."""
    clauses = [word_clause(r, w) for r, w in zip(plan.raw_words, plan.words, strict=True)]
    should: list[dict[str, Any]] = []
    if len(plan.words) > 1:
        should.append(_const({"match_phrase": {"text.exact": {"query": plan.phrase}}}, _PHRASE_EXACT))
        should.append(_const({"match_phrase": {"text": {"query": plan.phrase}}}, _PHRASE_FOLDED))
    should.append(
        {
            # Within a tier: more occurrences, rarer words, closer spellings, text over arguments.
            "multi_match": {
                "query": " ".join(plan.words),
                "fields": ["text", "args^0.3"],
                "fuzziness": "AUTO",
                "boost": _TIEBREAK,
            }
        }
    )
    boolean: dict[str, Any] = {"filter": _filters(plan), "must_not": _must_not(plan, exclude)}
    if partial:
        boolean["should"] = clauses + should
        boolean["minimum_should_match"] = 1
    else:
        boolean["must"] = clauses
        boolean["should"] = should
    body: dict[str, Any] = {
        "size": size,
        "query": {"bool": boolean},
        "sort": [{"_score": "desc"}, {"seq": "desc"}, {"session_id": "asc"}],
        "track_total_hits": False,
        "_source": {"excludes": ["content_hash", "attrs"]},
        "highlight": {
            "type": "unified",
            "fields": {"text": {}, "args": {}},
            "number_of_fragments": 3,
            "fragment_size": 80,
            "pre_tags": ["\ue000"],
            "post_tags": ["\ue001"],
            "highlight_query": {"bool": {"should": clauses}},
        },
    }
    return body


def browse_body(
    plan: QueryPlan, *, size: int, single_session: bool, exclude: Sequence[str] = ()
) -> dict[str, Any]:
    """The most recent entries (seq descending in a session; time, then seq, across sessions)."""
    sort: list[dict[str, str]] = (
        [{"seq": "desc"}, {"session_id": "asc"}]
        if single_session
        else [{"time": "desc"}, {"seq": "desc"}, {"session_id": "asc"}]
    )
    body: dict[str, Any] = {
        "size": size,
        "query": {"bool": {"filter": _filters(plan), "must_not": _must_not(plan, exclude)}},
        "sort": sort,
        "track_total_hits": False,
        "_source": {"excludes": ["content_hash", "attrs"]},
    }
    return body


def count_body(plan: QueryPlan) -> dict[str, Any]:
    """How many entries the request considered (``searched``) and the scope's size (generation)."""
    return {
        "size": 0,
        "track_total_hits": True,
        "query": {"bool": {"filter": list(plan.filters)}},
        "aggs": {
            "searched": {
                "filter": {
                    "bool": {"filter": _filters(plan)[len(plan.filters) :], "must_not": _must_not(plan)}
                }
            },
            "max_offset": {"max": {"field": "offset"}},
        },
    }
