"""Query bodies: user text is data (never query syntax) and the scope filter is on every path."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, cast

import pytest

from backscroll.indexer.document import DEFAULT_KINDS, MESSAGE_TYPES
from backscroll.indexer.textfold import WORD_RE, mixed_key
from backscroll.query.contract import SELF_TOOL_NAMES, SessionQueryRequest
from backscroll.query.errors import SessionQueryError
from backscroll.query.opensearch.body import (
    MAX_LEAVES,
    browse_body,
    count_body,
    leaves,
    scan_body,
    search_body,
    word_clause,
)
from backscroll.query.opensearch.provider import OpenSearchProvider
from backscroll.query.plan import SEARCH_TOOL_NAME, QueryPlan
from backscroll.query.scope import Scope

LUCENE = '+alpha -beta && gamma || !(delta) {epsilon} [zeta] ^eta "theta" ~iota *kappa? lambda:mu \\nu /xi'
LUCENE_WORDS = [
    "alpha",
    "beta",
    "gamma",
    "delta",
    "epsilon",
    "zeta",
    "eta",
    "theta",
    "iota",
    "kappa",
    "lambda:mu",
    "nu",
    "xi",
]
FORBIDDEN_QUERIES = {"query_string", "simple_query_string", "script"}
TEXT_QUERIES = {"match", "match_phrase", "multi_match", "intervals"}
TRIGRAM_FIELDS = {"text.tri", "args.tri"}
#: Subfields whose ``term`` value is a whole query word (identifier, CJK gram).
WORD_TERM_FIELDS = {"text.ident", "args.ident", "text.cjk", "args.cjk"}


class FakeClient:
    """Records every query body the provider sends, through ``msearch`` or ``search`` alike, with
    the index and routing it targets; answers as an OpenSearch whose searches find nothing."""

    def __init__(self, total: int = 5) -> None:
        self.total = total
        self.bodies: list[dict[str, Any]] = []
        self.targets: list[dict[str, Any]] = []

    def _answer(self) -> dict[str, Any]:
        return {
            "hits": {"total": {"value": self.total}, "hits": []},
            "aggregations": {"searched": {"doc_count": self.total}, "max_offset": {"value": 41}},
        }

    def msearch(self, *, body: list[dict[str, Any]], request_timeout: float) -> dict[str, Any]:
        for target, query in zip(body[0::2], body[1::2], strict=True):
            self.targets.append(target)
            self.bodies.append(query)
        return {"responses": [self._answer() for _ in body[1::2]]}

    def search(
        self, *, index: str, body: dict[str, Any], request_timeout: float, routing: str | None = None
    ) -> dict[str, Any]:
        self.targets.append({"index": index, **({"routing": routing} if routing else {})})
        self.bodies.append(body)
        return self._answer()


def provider(scope: Scope, client: FakeClient, **options: Any) -> OpenSearchProvider:
    return OpenSearchProvider(scope, client=cast(Any, client), index_prefix="unit", **options)


def plan_for(query: str, *, scope: Scope | None = None, **request: Any) -> QueryPlan:
    made = provider(scope or Scope.session("s1"), FakeClient())
    return made._plan(SessionQueryRequest(query=query, **request))[0]


def walk(node: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    """Every (path, leaf) of a JSON-like body; list positions appear as ``[]``."""
    if isinstance(node, dict):
        for key, value in node.items():
            yield from walk(value, (*path, key))
    elif isinstance(node, list):
        for value in node:
            yield from walk(value, (*path, "[]"))
    else:
        yield path, node


def keys(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        for key, value in node.items():
            yield key
            yield from keys(value)
    elif isinstance(node, list):
        for value in node:
            yield from keys(value)


def assert_text_is_data(body: dict[str, Any], words: list[str]) -> None:
    """No query-syntax query anywhere; no key that a neutral query does not produce (user text never
    becomes a field name or an option); every string that a neutral query does not produce at the same
    place is either the ``query`` of a match-family clause holding nothing but the query's words (or
    their parts), the value of a ``term`` on a trigram subfield holding a 3-gram of one of them, a
    whole word on the identifier or CJK subfields, or a ``prefix``/``regexp``/``wildcard``/``fuzzy``
    value built from one word with every non-word character escaped (all literal)."""
    parts = {part for word in words for part in WORD_RE.findall(word)}
    allowed = set(words) | parts
    assert not FORBIDDEN_QUERIES & set(keys(body))
    assert set(keys(body)) <= STRUCTURE_KEYS, set(keys(body)) - STRUCTURE_KEYS
    for path, leaf in walk(body):
        if not isinstance(leaf, str) or (path, leaf) in STRUCTURE_LEAVES:
            continue
        if path[-1] == "query":
            assert TEXT_QUERIES & set(path), path
            assert set(leaf.split()) <= allowed, leaf
        elif path[-1] == "value":
            kind = path[-3]
            if kind == "prefix":
                assert leaf in allowed, leaf
            elif kind == "wildcard":
                assert leaf[0] == "?" and leaf[1:] in allowed and len(leaf) == 2, leaf
            elif kind == "regexp":
                assert any(leaf == _escaped(word) + "([^0-9].*)?" for word in allowed), leaf
            else:
                assert kind == "fuzzy", path
                keyed = {mixed_key(word) for word in allowed}
                assert tuple(leaf.split("|")) in keyed, leaf
        elif path[-1] in WORD_TERM_FIELDS:
            assert path[-2] == "term" and leaf in allowed, (path, leaf)
        else:
            assert path[-2] == "term" and path[-1] in TRIGRAM_FIELDS, path
            assert len(leaf) == 3 and any(leaf in word for word in words), leaf


def _escaped(word: str) -> str:
    return "".join(ch if ch.isalnum() else "\\" + ch for ch in word)


def bool_of(body: dict[str, Any]) -> dict[str, Any]:
    return cast(dict[str, Any], body["query"]["bool"])


_MARKERS = ("qqqqq", "wwwww", "漢", "字")
_NEUTRAL_BODIES = [
    body
    for neutral in (
        plan_for("漢字 字 qqqqq7 wwwww.qqqqq9 qqqqq wwwww"),
        plan_for("wwwww.qqqqq"),
        plan_for("qqqqq7"),
    )
    for body in (
        search_body(neutral, size=1),
        search_body(neutral, size=1, partial=True),
        count_body(neutral),
    )
]
#: What a search of two ordinary words produces by itself: the builder's own structure.
STRUCTURE_KEYS = set(keys(_NEUTRAL_BODIES))
STRUCTURE_LEAVES = {
    (path, leaf)
    for body in _NEUTRAL_BODIES
    for path, leaf in walk(body)
    if not any(marker in str(leaf) for marker in _MARKERS)
}


# -- user text is data --------------------------------------------------------------------------------


def test_lucene_syntax_is_only_words_in_match_queries() -> None:
    plan = plan_for(LUCENE)
    assert list(plan.words) == LUCENE_WORDS
    assert plan.phrase == " ".join(LUCENE_WORDS)
    for body in (search_body(plan, size=11), search_body(plan, size=11, partial=True), count_body(plan)):
        assert_text_is_data(body, LUCENE_WORDS)


@pytest.mark.parametrize(
    "query",
    [
        "field:value",
        "*:*",
        "a AND b OR c NOT d",
        'x" OR "1"="1',
        "text.exact:secret",
        '{"match_all": {}}',
        "session_id:s2 OR workspace_id:*",
        "\\u0000 \\\\ \\/",
    ],
)
def test_injection_shaped_queries_stay_data(query: str) -> None:
    plan = plan_for(query)
    words = list(plan.words)
    body = search_body(plan, size=11)
    assert_text_is_data(body, words)
    assert bool_of(body)["filter"][0] == {"terms": {"session_id": ["s1"]}}


def test_accented_words_keep_their_raw_form_for_the_exact_tier() -> None:
    plan = plan_for("Tháng BẢY")
    assert plan.words == ("thang", "bay") and plan.raw_words == ("tháng", "bảy")
    body = search_body(plan, size=11)
    leaves = [leaf for _path, leaf in walk(body) if isinstance(leaf, str)]
    assert "tháng" in leaves and "thang" in leaves
    assert_text_is_data(body, ["tháng", "bảy", "thang", "bay"])


def test_short_words_match_whole_tokens_only() -> None:
    short = word_clause("ai", "ai")
    assert "fuzziness" not in str(short) and ".tri" not in str(short)
    long = word_clause("rev", "rev")
    fuzzy = [leaf for path, leaf in walk(long) if path[-1] == "fuzziness"]
    assert fuzzy == [1, 1]  # one edit for three letters, on text and args
    assert any(path[-1] in TRIGRAM_FIELDS for path, _leaf in walk(long))


def test_a_number_has_a_substring_tier_but_no_typo_tier() -> None:
    # A word of 3+ characters matches inside tokens: "9931" finds "acct_9931"; but "9932" is
    # another number, not a typo of it.
    clause = word_clause("9931", "9931")
    assert "fuzziness" not in str(clause)
    grams = sorted(leaf for path, leaf in walk(clause) if path[-1] == "text.tri")
    assert grams == ["931", "993"]


def test_tiers_rank_exact_over_folded_over_prefix_over_fuzzy_and_substring() -> None:
    queries = word_clause("résumé", "resume", last=True)["dis_max"]["queries"]
    boosts: dict[tuple[str, str], float] = {}
    for query in queries:
        clause = query["constant_score"]["filter"]
        if "match" in clause:
            ((field, params),) = clause["match"].items()
            fuzzy = f"fuzzy{params['fuzziness']}" if "fuzziness" in params else ""
            tier = fuzzy or (field.split(".")[-1] if "." in field else "folded")
        elif "prefix" in clause:
            ((field, _params),) = clause["prefix"].items()
            tier = "prefix"
        else:  # every trigram of the word, as literal terms
            ((field, _gram),) = clause["bool"]["filter"][0]["term"].items()
            tier = "tri"
        boosts[(field.split(".")[0], tier)] = query["constant_score"]["boost"]
    order: tuple[str, ...] = ("exact", "folded", "prefix", "fuzzy1", "fuzzy2")
    text = [boosts[("text", tier)] for tier in order]
    assert text == sorted(text, reverse=True) and len(set(text)) == len(order)
    # A substring is one more reading of the word, in the one-edit tier (docs/matching.md).
    assert boosts[("text", "tri")] == boosts[("text", "fuzzy1")]
    order += ("tri",)
    # Text over arguments is decided inside a tier, not by the tiers.
    assert all(boosts[("text", tier)] == boosts[("args", tier)] for tier in order)


def test_only_the_last_word_may_be_a_prefix() -> None:
    assert "prefix" in set(keys(word_clause("backst", "backst", last=True)))
    assert "prefix" not in set(keys(word_clause("backst", "backst")))
    assert "prefix" not in set(keys(word_clause("ba", "ba", last=True)))


def test_a_word_with_digits_is_fuzzy_in_its_letters_only() -> None:
    clause = word_clause("pyhton3", "pyhton3")
    fuzzy = [leaf for path, leaf in walk(clause) if path[-2:] == ("text.mixed", "value")]
    assert fuzzy == ["a3|pyhton", "a3|pyhton"]  # one edit, then two (six letters)
    lengths = [leaf for path, leaf in walk(clause) if path[-2:] == ("text.mixed", "prefix_length")]
    assert lengths == [3, 3]
    assert "a4|ipv" in str(word_clause("ipv4", "ipv4"))  # ipv6 has the skeleton a6: never a typo


def test_identifier_fragments_match_identifier_prefixes() -> None:
    clause = word_clause("get_t", "get_t")
    prefixes = [leaf for path, leaf in walk(clause) if path[-2:] == ("text.ident", "value")]
    assert prefixes == ["get_t"]
    version = word_clause("2.2.1", "2.2.1")
    regexps = [leaf for path, leaf in walk(version) if path[-3:] == ("regexp", "text.ident", "value")]
    assert regexps == ["2\\.2\\.1([^0-9].*)?"]


def test_phrase_bonus_only_for_several_words() -> None:
    one = search_body(plan_for("revenue"), size=11)
    two = search_body(plan_for("revenue churn"), size=11)
    assert "match_phrase" not in set(keys(one))
    phrases = [leaf for path, leaf in walk(two) if "match_phrase" in path]
    assert phrases and set(phrases) == {"revenue churn"}


def test_full_search_requires_every_word_and_partial_any() -> None:
    plan = plan_for("revenue churn")
    full = bool_of(search_body(plan, size=11))
    assert len(full["must"]) == 2 and "minimum_should_match" not in full
    partial = bool_of(search_body(plan, size=11, partial=True))
    assert partial["should"] == full["must"] and partial["minimum_should_match"] == 1
    # Only the words count towards minimum_should_match; the bonuses ride on a match_all.
    (bonuses,) = partial["must"]
    assert bonuses["bool"]["must"] == [{"match_all": {"boost": 0.0}}]


def test_recency_breaks_ties_and_earlier_pages_are_excluded() -> None:
    plan = plan_for("revenue")
    body = search_body(plan, size=11, exclude=["s1:3", "s1:4"])
    assert body["sort"] == [{"_score": "desc"}, {"seq": "desc"}, {"session_id": "asc"}]
    assert {"ids": {"values": ["s1:3", "s1:4"]}} in body["query"]["bool"]["must_not"]
    assert browse_body(plan, size=5, single_session=True)["sort"][0] == {"seq": "desc"}
    assert browse_body(plan, size=5, single_session=False)["sort"][0] == {"time": "desc"}


# -- kinds --------------------------------------------------------------------------------------------


def test_default_kinds_are_messages_without_the_search_tool_itself() -> None:
    assert DEFAULT_KINDS == MESSAGE_TYPES
    plan = plan_for("revenue")
    assert plan.default_kinds and plan.kinds == DEFAULT_KINDS
    exclusion = {"terms": {"tool_name": sorted(set(SELF_TOOL_NAMES))}}  # canonical: sorted, unique
    assert SEARCH_TOOL_NAME in SELF_TOOL_NAMES
    for body in (
        search_body(plan, size=11),
        search_body(plan, size=11, partial=True),
        browse_body(plan, size=11, single_session=True),
    ):
        assert exclusion in bool_of(body)["must_not"]
        assert {"terms": {"type": list(MESSAGE_TYPES)}} in bool_of(body)["filter"]
        assert {"term": {"has_text": True}} in bool_of(body)["filter"]
    searched = count_body(plan)["aggs"]["searched"]["filter"]["bool"]
    assert exclusion in searched["must_not"]


def test_explicit_kinds_search_exactly_those_including_the_tool() -> None:
    plan = plan_for("summary", kinds=("compaction/summary", "tool/result"))
    assert not plan.default_kinds
    body = search_body(plan, size=11)
    assert bool_of(body)["must_not"] == []
    assert {"terms": {"type": ["compaction/summary", "tool/result"]}} in bool_of(body)["filter"]


# -- scope filter on every path ------------------------------------------------------------------------

SCOPES = [
    Scope.session("s1"),
    Scope.sessions(["s1", "s2"]),
    Scope.workspace("w1"),
    Scope.workspaces(["w1", "w2"], ops=True),
]


@pytest.mark.parametrize("scope", SCOPES, ids=lambda s: s.fingerprint())
def test_every_builder_body_carries_the_scope_filter(scope: Scope) -> None:
    for query in ("revenue churn", ""):
        plan = plan_for(query, scope=scope)
        bodies = [
            search_body(plan, size=11),
            search_body(plan, size=11, partial=True),
            browse_body(plan, size=11, single_session=True),
            browse_body(plan, size=11, single_session=False),
            count_body(plan),
            scan_body(plan, size=201),
        ]
        for body in bodies:
            assert scope.filter() in bool_of(body)["filter"]


@pytest.mark.parametrize("scope", SCOPES, ids=lambda s: s.fingerprint())
def test_the_provider_sends_the_scope_filter_on_every_request(scope: Scope) -> None:
    client = FakeClient()
    made = provider(scope, client, scan_max_rows=0)  # the index path (scanned scopes: below)
    made.search(SessionQueryRequest(query="revenue churn"))  # finds nothing, so a partial search follows
    made.search(SessionQueryRequest(query=""))  # browse
    if scope.kind == "sessions":
        provider(scope, client).search(SessionQueryRequest(query="revenue churn"))  # the scope's entries
    kinds = {
        "count": [b for b in client.bodies if "aggs" in b],
        "full": [b for b in client.bodies if "must" in bool_of(b)],
        "partial": [b for b in client.bodies if "minimum_should_match" in bool_of(b)],
        "browse": [b for b in client.bodies if "aggs" not in b and not {"must", "should"} & set(bool_of(b))],
    }
    assert all(kinds.values()), {name: len(found) for name, found in kinds.items()}
    for body in client.bodies:
        assert scope.filter() in bool_of(body)["filter"]
    for target in client.targets:
        assert target["index"] == "unit-events"
        assert target.get("routing") == scope.routing()


def test_narrowing_to_a_session_inside_a_workspace_keeps_both_filters() -> None:
    client = FakeClient()
    provider(Scope.workspace("w1"), client).search(SessionQueryRequest(query="x", session_id="s7"))
    assert {"index": "unit-events", "routing": "s7"} in client.targets
    assert {"index": "unit-sessions", "routing": "s7"} in client.targets
    assert all(target.get("routing") == "s7" for target in client.targets)
    assert len(client.bodies) >= 3
    for body in client.bodies:
        assert {"terms": {"workspace_id": ["w1"]}} in bool_of(body)["filter"]
        assert {"term": {"session_id": "s7"}} in bool_of(body)["filter"]


def test_the_text_checker_is_not_vacuous() -> None:
    plan = plan_for("alpha beta")
    body = search_body(plan, size=11)
    with pytest.raises(AssertionError):
        assert_text_is_data({**body, "post_filter": {"query_string": {"query": "alpha"}}}, ["alpha", "beta"])
    with pytest.raises(AssertionError):
        assert_text_is_data({**body, "post_filter": {"term": {"session_id": "alpha"}}}, ["alpha", "beta"])
    with pytest.raises(AssertionError):
        assert_text_is_data({**body, "post_filter": {"match": {"alpha": {"query": "x"}}}}, ["alpha", "beta"])
    with pytest.raises(AssertionError):
        assert_text_is_data({**body, "post_filter": {"term": {"text.tri": "alpha beta"}}}, ["alpha", "beta"])


def _text_trigrams(body: dict[str, Any]) -> int:
    return sum(1 for path, _ in walk(body) if path[-2:] == ("term", "text.tri"))


def test_a_long_query_takes_fewer_trigrams_per_word_to_fit_the_servers_clause_limit() -> None:
    short = search_body(plan_for("reconciliation"), size=11)
    assert _text_trigrams(short) == 12
    words = " ".join(f"{w}reconciliation" for w in "abcdefghijklmnopqrstuvwxyzABCDE")
    long = search_body(plan_for(words), size=11)
    assert leaves(long["query"]) <= MAX_LEAVES
    assert _text_trigrams(long) < 12 * 31


def test_leaves_count_every_term_and_every_word_of_a_text_query() -> None:
    query = {"bool": {"filter": [{"term": {"a": 1}}, {"match_phrase": {"t": {"query": "a b c"}}}]}}
    assert leaves(query) == 4
    assert leaves({"intervals": {"t": {"all_of": {"intervals": [{"match": {"query": "x"}}] * 3}}}}) == 3


def test_a_query_of_too_many_identifier_parts_is_invalid_not_a_failed_search() -> None:
    idents = " ".join("_".join(f"part{i}{j}x" for j in range(6)) for i in range(20))
    with pytest.raises(SessionQueryError) as caught:
        search_body(plan_for(idents), size=11)
    assert caught.value.code == "SESSION_QUERY_INVALID_QUERY"
