"""Builds OpenSearch query bodies from a validated request. Pure.

User text only ever reaches ``match`` and ``match_phrase`` queries (never ``query_string``), so
Lucene syntax in a query is plain data (a ``regexp`` is built from escaped word characters only).
Ranking layers come from constant-score tiers per word — exact 8, folded 4, prefix 3,
one edit or substring 2, two edits 1.5, identifier parts anywhere 1, exactly those of
:mod:`backscroll.query.scoring` — plus a phrase bonus; small constant terms add "more
occurrences" (interval queries: a word twice, three times) and "message text over arguments"
without crossing a tier. Recency (seq descending) breaks the remaining ties.

The substring tier is a filter on the word's 3-grams anywhere in the entry, which can over-match
(``bals``: ``balance`` and ``totals``); the provider core takes the tier of every hit that may hold
a typo or substring match from its text (:func:`backscroll.query.typo_readings.diversify`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from backscroll.indexer.textfold import WORD_RE, is_cjk, mixed_key
from backscroll.query.errors import SessionQueryError
from backscroll.query.plan import QueryPlan
from backscroll.query.scoring import (
    FIELD_BONUS,
    MAX_COUNTED,
    OCCURRENCE,
    PHRASE_EXACT,
    PHRASE_FOLDED,
    TIER_EXACT,
    TIER_FOLDED,
    TIER_FUZZY,
    TIER_FUZZY2,
    TIER_PARTS,
    TIER_PREFIX,
    TIER_PREFIX_NUMBER,
    TIER_SUBSTRING,
    fuzzy_budget,
    is_compound,
    near_compound,
    phrase_words,
)

__all__ = [
    "HIT_SOURCE",
    "browse_body",
    "count_body",
    "scan_body",
    "search_body",
]

_FIELDS = ("text", "args")
#: What a hit needs of its document (the rest of ``_source`` is never sent back).
HIT_SOURCE = ("session_id", "seq", "type", "text", "args", "turn", "role", "time")
#: Terms a fuzzy query may expand to (per field and shard).
_EXPANSIONS = 128
#: Leaf queries a body may hold. OpenSearch refuses a query of more than 1,024 (its default
#: ``indices.query.bool.max_clause_count``); the filters and bonuses outside the words' tiers hold
#: a few dozen.
MAX_LEAVES: Final = 900
#: 3-grams per word in the substring tier, then fewer when a long query would hold too many leaves
#: (fewer 3-grams over-match more, and the provider core takes the tier from the text anyway).
_GRAM_CAPS: Final = (12, 4, 2)
#: The caps tried in turn, each with or without an identifier's tiers inside longer identifiers
#: and of typos in its parts; a query too long even with the fewest 3-grams drops those (its
#: parts then rank in the parts tier) rather than fail.
_LEAF_BUDGETS: Final = (*((cap, True) for cap in _GRAM_CAPS), (_GRAM_CAPS[-1], False))
#: Leaf queries per word outside its tiers (its occurrence bonuses, its words in the phrases).
_OTHER_LEAVES: Final = 12
_LEAF_QUERIES: Final = frozenset(
    {"term", "terms", "ids", "exists", "range", "prefix", "regexp", "wildcard", "fuzzy", "match_all"}
)


def leaves(query: Any) -> int:
    """The leaf queries of a query body, as OpenSearch counts them against its clause limit: one
    per term query, one per word of a ``match``, ``match_phrase`` or ``intervals`` rule."""
    if isinstance(query, list):
        return sum(leaves(item) for item in query)
    if not isinstance(query, dict):
        return 0
    count = 0
    for key, value in query.items():
        if key in _LEAF_QUERIES:
            count += 1
        elif key in ("match", "match_phrase") and isinstance(value, dict):
            # {field: {"query": text}}, or an intervals rule's {"query": text}
            texts = [rule.get("query", "") if isinstance(rule, dict) else rule for rule in value.values()]
            count += sum(len(str(text).split()) or 1 for text in texts)
        else:
            count += leaves(value)
    return count


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


def _prefix(field: str, fragment: str) -> list[dict[str, Any]]:
    """Tokens that extend ``fragment``: a fragment ending in a digit that goes on into a longer
    number (``2.2.1`` in ``2.2.10``) ranks below one that does not (``2.2.1-3``)."""
    prefix = {"prefix": {field: {"value": fragment}}}
    if not fragment[-1].isdecimal():
        return [_const(prefix, TIER_PREFIX)]
    escaped = "".join(ch if ch.isalnum() else "\\" + ch for ch in fragment)
    regexp = {"regexp": {field: {"value": f"{escaped}([^0-9].*)?", "flags": "NONE"}}}
    return [_const(regexp, TIER_PREFIX), _const(prefix, TIER_PREFIX_NUMBER)]


def _plain_tiers(
    raw: str, folded: str, field: str, last: bool, typos: bool = True, grams: int = _GRAM_CAPS[0]
) -> list[dict[str, Any]]:
    tiers = [
        _const({"match": {f"{field}.exact": {"query": raw}}}, TIER_EXACT),
        _const({"match": {field: {"query": folded}}}, TIER_FOLDED),
    ]
    if last and len(folded) >= 3:
        tiers += _prefix(field, folded)
    budget = fuzzy_budget(folded) if typos else 0
    key = mixed_key(folded)
    for edits, tier in ((1, TIER_FUZZY), (2, TIER_FUZZY2)):
        if edits > budget:
            break
        if key is None:
            fuzzy = {"query": folded, "fuzziness": edits, "prefix_length": 0, "max_expansions": _EXPANSIONS}
            tiers.append(_const({"match": {field: fuzzy}}, tier))
        else:
            # Digits exact (the skeleton is the fuzzy query's fixed prefix), typos in the letters.
            skeleton, letters = key
            mixed = {
                "value": f"{skeleton}|{letters}",
                "fuzziness": edits,
                "prefix_length": len(skeleton) + 1,
                "max_expansions": _EXPANSIONS,
            }
            tiers.append(_const({"fuzzy": {f"{field}.mixed": mixed}}, tier))
    if len(folded) >= 3:
        kept = [{"term": {f"{field}.tri": gram}} for gram in trigrams(folded, grams)]
        tiers.append(_const({"bool": {"filter": kept}}, TIER_SUBSTRING))
    return tiers


def _compound_tiers(raw: str, folded: str, field: str, segments: bool = True) -> list[dict[str, Any]]:
    whole = TIER_EXACT if raw == folded else TIER_FOLDED
    tiers = [
        _const({"term": {f"{field}.ident": folded}}, whole),
        _const({"match_phrase": {field: {"query": folded}}}, TIER_FOLDED),
    ]
    if len(folded) >= 3:
        tiers += _prefix(f"{field}.ident", folded)
    parts = WORD_RE.findall(folded)
    if segments and near_compound(folded) and parts:
        # Inside a longer identifier from a segment on (``parse_he`` in ``self.parse_header``):
        # its parts but the last as words, the last as the start of one. The provider core keeps
        # the hits that hold it as typed (typo_readings.diversify), at their tier.
        inside = [{"match": {field: {"query": part}}} for part in parts[:-1]]
        inside.append({"prefix": {field: {"value": parts[-1]}}})
        tiers.append(_const({"bool": {"filter": inside}}, TIER_SUBSTRING))
        if any(fuzzy_budget(part) for part in parts):
            # Its parts each within their own typo budget (``exmaple.cmo``: ``example`` … ``com``);
            # the provider core keeps the hits that hold them as words in a row, at their tier.
            near = [_near_part(part, field) for part in parts]
            tiers.append(_const({"bool": {"filter": near}}, TIER_FUZZY))
    return tiers


def _near_part(part: str, field: str) -> dict[str, Any]:
    """The part as a word, or a word within its typo budget (the digit rule included)."""
    budget = fuzzy_budget(part)
    same: dict[str, Any] = {"match": {field: {"query": part}}}
    if not budget:
        return same
    key = mixed_key(part)
    if key is None:
        fuzzy = {"query": part, "fuzziness": budget, "prefix_length": 0, "max_expansions": _EXPANSIONS}
        return {"match": {field: fuzzy}}
    skeleton, letters = key
    mixed = {
        "value": f"{skeleton}|{letters}",
        "fuzziness": budget,
        "prefix_length": len(skeleton) + 1,
        "max_expansions": _EXPANSIONS,
    }
    return {"bool": {"should": [same, {"fuzzy": {f"{field}.mixed": mixed}}], "minimum_should_match": 1}}


def _cjk_tiers(raw: str, folded: str, field: str) -> list[dict[str, Any]]:
    tiers = [
        _const({"match": {f"{field}.exact": {"query": raw}}}, TIER_EXACT),
        _const({"match": {field: {"query": folded}}}, TIER_FOLDED),
    ]
    if len(folded) >= 2:
        inside: dict[str, Any] = {"match_phrase": {f"{field}.cjk": {"query": folded}}}
    else:
        # One character: alone, or as the first or second character of a bigram.
        inside = {
            "bool": {
                "should": [
                    {"term": {f"{field}.cjk": folded}},
                    {"prefix": {f"{field}.cjk": {"value": folded}}},
                    {"wildcard": {f"{field}.cjk": {"value": f"?{folded}"}}},
                ]
            }
        }
    tiers.append(_const(inside, TIER_FOLDED))
    return tiers


def word_clause(
    raw: str,
    folded: str,
    *,
    last: bool = False,
    typos: bool = True,
    grams: int = _GRAM_CAPS[0],
    segments: bool = True,
) -> dict[str, Any]:
    """Matches one query word in any tier (``last``: the query's last word, which may be a prefix;
    ``typos=False``: not its typo tiers; ``grams``: at most this many 3-grams in its substring
    tier; ``segments=False``: an identifier without its tiers inside longer identifiers and of
    typos in its parts); scores as the best tier it reaches (:mod:`backscroll.query.scoring` has
    the same tiers)."""
    tiers: list[dict[str, Any]] = []
    for field in _FIELDS:
        if is_compound(folded):
            tiers += _compound_tiers(raw, folded, field, segments)
        elif is_cjk(folded):
            tiers += _cjk_tiers(raw, folded, field)
        else:
            tiers += _plain_tiers(raw, folded, field, last, typos, grams)
    if is_compound(folded):
        # Every part somewhere (``get_tpye`` finds ``get`` … ``type``): the lowest tier.
        parts = [word_clause(part, part, grams=grams) for part in WORD_RE.findall(folded)]
        if parts:
            tiers.append(_const({"bool": {"filter": parts}}, TIER_PARTS))
    return {"dis_max": {"queries": tiers}}


def _occurrences(word: str) -> list[dict[str, Any]]:
    """``OCCURRENCE`` per extra whole-token occurrence of a plain word (the 2nd, the 3rd)."""
    if is_compound(word) or is_cjk(word):
        return []
    out = []
    for times in range(2, MAX_COUNTED + 1):
        for field in _FIELDS:
            # ``mode`` (OpenSearch 2.x) replaces the deprecated ``ordered`` flag, whose warning header
            # opensearch-py turns into a Python warning on the first query after a node starts.
            rule = {"all_of": {"mode": "ordered", "intervals": [{"match": {"query": word}}] * times}}
            out.append(_const({"intervals": {field: rule}}, OCCURRENCE))
    return out


def _filters(plan: QueryPlan) -> list[dict[str, Any]]:
    clauses = [*plan.filters, {"terms": {"type": list(plan.kinds)}}, {"term": {"has_text": True}}]
    if plan.since is not None or plan.until is not None:
        bounds = {"gte": plan.since, "lte": plan.until}
        clauses.append({"range": {"time": {k: v.isoformat() for k, v in bounds.items() if v is not None}}})
    return clauses


def _must_not(
    plan: QueryPlan, exclude: Sequence[str] = (), skip: frozenset[str] = frozenset()
) -> list[dict[str, Any]]:
    # The search tool's own calls and results are not history worth finding.
    clauses: list[dict[str, Any]] = []
    if skip:  # a second window of readings, without the crowded ones (readings.crowded)
        clauses += [{"terms": {field: sorted(skip)}} for field in _FIELDS]
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
    skip: frozenset[str] = frozenset(),
    inside: frozenset[str] = frozenset(),
) -> dict[str, Any]:
    """A ranked search: every word must match (or, ``partial``, at least one); entries holding a
    word of ``skip`` are left out; the words of ``inside`` are looked for without their typo tiers.

    Raises ``SESSION_QUERY_INVALID_QUERY`` for a query whose tiers would hold more leaf queries
    than the server takes (:data:`MAX_LEAVES`) even with the fewest 3-grams per word."""
    last = len(plan.words) - 1
    for grams, segments in _LEAF_BUDGETS:
        clauses = [
            word_clause(r, w, last=i == last, typos=w not in inside, grams=grams, segments=segments)
            for i, (r, w) in enumerate(zip(plan.raw_words, plan.words, strict=True))
        ]
        if leaves(clauses) <= MAX_LEAVES - _OTHER_LEAVES * len(plan.words):
            break
    else:
        raise SessionQueryError(
            "SESSION_QUERY_INVALID_QUERY", "the query is too long to search: use fewer or shorter words"
        )
    should: list[dict[str, Any]] = []
    if len(plan.words) > 1:
        exact_phrase = " ".join(phrase_words(plan.raw_words))
        folded_phrase = " ".join(phrase_words(plan.words))
        # The exact phrase is also the folded one, whose bonus it tops up to PHRASE_EXACT (the
        # clauses add up; score_text gives an exact phrase PHRASE_EXACT, not both bonuses).
        exact = {"match_phrase": {"text.exact": {"query": exact_phrase}}}
        should.append(_const(exact, PHRASE_EXACT - PHRASE_FOLDED))
        should.append(_const({"match_phrase": {"text": {"query": folded_phrase}}}, PHRASE_FOLDED))
    # Within a tier: more occurrences, then message text over tool arguments; then recency (sort).
    for word in plan.words:
        should += _occurrences(word)
    should.append(_const({"exists": {"field": "text"}}, FIELD_BONUS))
    boolean: dict[str, Any] = {"filter": _filters(plan), "must_not": _must_not(plan, exclude, skip)}
    if partial:
        boolean["should"] = clauses
        boolean["minimum_should_match"] = 1
        # The bonuses must not count as a matching word: they ride on a clause every entry matches.
        boolean["must"] = [{"bool": {"must": [{"match_all": {"boost": 0.0}}], "should": should}}]
    else:
        boolean["must"] = clauses
        boolean["should"] = should
    body: dict[str, Any] = {
        "size": size,
        "query": {"bool": boolean},
        "sort": [{"_score": "desc"}, {"seq": "desc"}, {"session_id": "asc"}],
        "track_total_hits": False,
        # No highlighter: it re-analysed every returned text against every tier; the spelling a
        # typo matched is found in the hit's text instead (backscroll.query.typo_hints).
        "_source": {"includes": list(HIT_SOURCE)},
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
        "_source": {"includes": list(HIT_SOURCE)},
    }
    return body


def scan_body(plan: QueryPlan, *, size: int, exclude: Sequence[str] = ()) -> dict[str, Any]:
    """Up to ``size`` entries a search of ``plan`` may return (its filters, not its words), in no
    order: the entries of a small scope, which the caller scores itself.

    Their whole ``_source``: limiting it to :data:`HIT_SOURCE` makes the server parse and write
    every entry again, which costs more than sending the few small fields a hit does not read
    (about 0.8 ms of a 200-entry scan, measured with ``benchmarks.bench_os_session``)."""
    return {
        "size": size,
        "query": {"bool": {"filter": _filters(plan), "must_not": _must_not(plan, exclude)}},
        "sort": [{"_doc": "asc"}],
        "track_total_hits": False,
    }


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
