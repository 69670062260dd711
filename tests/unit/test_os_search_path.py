"""The OpenSearch search path: one request per search with only the sub-searches it needs, no
highlighter, typo hints found in the hit's own text, orjson on the wire, and a mapping whose
indexed fields are exactly what queries filter, sort and aggregate on."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any, cast

import orjson
import pytest
from opensearchpy.exceptions import SerializationError

from backscroll.indexer.opensearch.mappings import events_index_body
from backscroll.query import OpenSearchProvider, Scope, SessionQueryRequest
from backscroll.query.excerpt import excerpt
from backscroll.query.opensearch.body import HIT_SOURCE, browse_body, count_body, scan_body, search_body
from backscroll.query.opensearch.serializer import OrjsonSerializer
from backscroll.query.plan import plan_request
from backscroll.query.typo_hints import typo_hints


class CountingClient:
    """Counts the HTTP-level calls a search makes, and answers ``msearch`` with one hit."""

    def __init__(self, hits: list[dict[str, Any]] | None = None) -> None:
        self.calls: list[tuple[str, list[dict[str, Any]]]] = []
        self.hits = hits if hits is not None else []

    def _answer(self, body: dict[str, Any]) -> dict[str, Any]:
        if "aggs" in body:
            return {
                "hits": {"total": {"value": 3}, "hits": []},
                "aggregations": {"searched": {"doc_count": 3}, "max_offset": {"value": 7}},
            }
        return {"hits": {"total": {"value": 0}, "hits": self.hits}}

    def msearch(self, *, body: list[dict[str, Any]], request_timeout: float) -> dict[str, Any]:
        self.calls.append(("msearch", body))
        return {"responses": [self._answer(line) for line in body[1::2]]}

    def search(self, *, body: dict[str, Any], request_timeout: float, **_: Any) -> dict[str, Any]:
        self.calls.append(("search", [body]))
        return self._answer(body)


def _hit(text: str, seq: int = 1) -> dict[str, Any]:
    source = {"session_id": "s1", "seq": seq, "type": "user/message", "text": text}
    return {"_id": f"s1:{seq}", "_score": 4.0, "_source": source, "sort": [4.0, seq, "s1"]}


def _provider(scope: Scope, client: CountingClient) -> OpenSearchProvider:
    return OpenSearchProvider(scope, client=cast(Any, client), index_prefix="unit")


def _headers(body: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return body[0::2]


def test_a_session_search_is_one_request_of_count_and_page_routed_to_the_session() -> None:
    client = CountingClient([_hit("the quarterly revenue")])
    result = _provider(Scope.session("s1"), client).search(SessionQueryRequest(query="revenue"))
    assert [name for name, _ in client.calls] == ["msearch"]
    body = client.calls[0][1]
    assert len(body) == 4, "count and page only: no existence or watermark sub-search"
    assert all(header.get("routing") == "s1" for header in _headers(body))
    assert result.searched == 3 and len(result.matches) == 1


def test_a_workspace_search_narrowed_to_a_session_folds_its_existence_into_the_same_request() -> None:
    client = CountingClient([_hit("the quarterly revenue")])
    _provider(Scope.workspace("w1"), client).search(SessionQueryRequest(query="revenue", session_id="s1"))
    assert [name for name, _ in client.calls] == ["msearch"]
    headers = _headers(client.calls[0][1])
    assert len(headers) == 3 and headers[2]["index"] == "unit-sessions" and headers[2]["routing"] == "s1"


def test_a_workspace_search_is_one_request_without_routing() -> None:
    client = CountingClient([_hit("the quarterly revenue")])
    _provider(Scope.workspace("w1"), client).search(SessionQueryRequest(query="revenue"))
    assert [name for name, _ in client.calls] == ["msearch"]
    assert all("routing" not in header for header in _headers(client.calls[0][1]))


def test_the_closest_matches_fallback_is_the_only_second_request() -> None:
    client = CountingClient([])
    _provider(Scope.workspace("w1"), client).search(SessionQueryRequest(query="revenue churn"))
    assert [name for name, _ in client.calls] == ["msearch", "search"]
    client = CountingClient([])
    _provider(Scope.workspace("w1"), client).search(SessionQueryRequest(query="revenue"))
    assert [name for name, _ in client.calls] == ["msearch"], "one word: nothing closer to look for"
    client = CountingClient([])
    _provider(Scope.session("s1"), client).search(SessionQueryRequest(query="revenue churn"))
    assert [name for name, _ in client.calls] == ["msearch"], "a scanned session ranks them itself"


def _plan(query: str) -> Any:
    request = SessionQueryRequest(query=query, session_id="s1")
    return plan_request(request, Scope.session("s1"), 100, 10)[0]


@pytest.mark.parametrize("query", ["revenue", "revnue forcast", "get_type", "", "数据库"])
def test_no_body_asks_for_a_highlighter_and_a_page_only_for_the_source_a_hit_reads(query: str) -> None:
    plan = _plan(query)
    bodies = [search_body(plan, size=11), search_body(plan, size=11, partial=True)]
    bodies += [
        browse_body(plan, size=11, single_session=True),
        browse_body(plan, size=11, single_session=False),
    ]
    for body in bodies:
        assert "highlight" not in body
        assert body["_source"] == {"includes": list(HIT_SOURCE)}
        assert body["track_total_hits"] is False
    # A scan asks for the whole source: filtering it costs the server more than the bytes it saves.
    scan = scan_body(plan, size=501, exclude=["s1:3"])
    assert "highlight" not in scan and "_source" not in scan and scan["track_total_hits"] is False


def test_a_hit_reads_only_what_the_page_source_holds() -> None:
    client = CountingClient([_hit("Revenue forecast")])
    match = _provider(Scope.session("s1"), client).search(SessionQueryRequest(query="revenue")).matches[0]
    assert (match.session_id, match.seq, match.kind, match.excerpt) == (
        "s1",
        1,
        "user/message",
        "Revenue forecast",
    )


# -- typo hints ------------------------------------------------------------------------------------
def test_no_hint_when_a_word_occurs_as_typed() -> None:
    assert typo_hints("the Revenue forecast", ["revenue"]) == ()
    assert typo_hints("prefix backstage", ["backst"]) == ()
    assert typo_hints("Đơn hàng", ["don"]) == ()


def test_the_tokens_within_the_typo_budget_are_the_hints() -> None:
    assert typo_hints("x " * 500 + "Revenue forecast, revenues", ["revnue"]) == ("revenue", "revenues")
    assert typo_hints("Đơn hàng, Revenüe", ["revnue"]) == ("revenue",)
    assert typo_hints("about python3 and python2", ["pyhton3"]) == ("python3",)
    assert typo_hints("ipv6 only", ["ipv4"]) == (), "digits must match exactly"
    assert typo_hints("nothing close", ["zzzzzz"]) == ()


def test_an_identifier_hints_its_parts_and_their_typos() -> None:
    assert set(typo_hints("call get then type", ["get_tpye"])) == {"get", "type"}


def test_a_typo_hint_centres_the_excerpt_in_a_long_text() -> None:
    text = "x " * 1000 + "Revenue forecast" + " y" * 1000
    out = excerpt(text, ["revnue"], 200, typo_hints(text, ["revnue"]))
    assert "Revenue forecast" in out


# -- orjson ----------------------------------------------------------------------------------------
def test_the_serializer_round_trips_and_falls_back_for_what_orjson_refuses() -> None:
    ser = OrjsonSerializer()
    body = {"q": "naïve ☃", "n": 1, "when": datetime(2026, 1, 2, tzinfo=UTC)}
    assert orjson.loads(ser.dumps(body)) == {"q": "naïve ☃", "n": 1, "when": "2026-01-02T00:00:00+00:00"}
    assert ser.dumps({"big": 2**70}) == '{"big":1180591620717411303424}'
    assert ser.dumps("already text") == "already text"
    assert ser.loads('{"a":[1,2]}') == {"a": [1, 2]}
    with pytest.raises(SerializationError):
        ser.loads("{not json")
    with pytest.raises(SerializationError):
        ser.dumps({"x": object()})


# -- mapping ---------------------------------------------------------------------------------------
def _fields(properties: dict[str, Any], prefix: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    for name, spec in properties.items():
        yield prefix + name, spec
        for sub, subspec in spec.get("fields", {}).items():
            yield f"{prefix}{name}.{sub}", subspec


_MAPPING = dict(_fields(events_index_body()["mappings"]["properties"]))


_QUERIES = {"match", "match_phrase", "term", "terms", "prefix", "regexp", "fuzzy", "intervals", "range"}


def _used(node: Any) -> Iterator[tuple[str, str]]:
    """(query kind, field) of every clause, sort and aggregation in a body."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key in _QUERIES:
                yield from ((key, field) for field in value)
                continue  # below a field: its query text, or an intervals rule (no fields)
            elif key == "exists" or key == "max":
                yield key, value["field"]
            elif key == "sort":
                for one in value:
                    yield "sort", next(iter(one))
            if key != "_source":
                yield from _used(value)
    elif isinstance(node, list):
        for value in node:
            yield from _used(value)


@pytest.mark.parametrize(
    "query", ["revenue", "revnue forcast quarter", "get_type 2.2.1", "python3", "数据库", ""]
)
def test_every_field_a_query_uses_is_indexed_as_the_query_needs(query: str) -> None:
    plan = _plan(query)
    bodies = [count_body(plan), search_body(plan, size=11), search_body(plan, size=11, partial=True)]
    bodies += [browse_body(plan, size=11, single_session=False), scan_body(plan, size=501)]
    for body in bodies:
        for kind, field in _used(body):
            if field in ("_score", "_doc"):
                continue
            spec = _MAPPING[field]
            if kind in ("sort", "max"):
                assert spec.get("doc_values", True) is not False, field
                continue
            assert spec.get("index", True) is not False, (kind, field)
            if kind in ("match_phrase", "intervals"):
                assert spec.get("index_options", "positions") in ("positions", "offsets"), (kind, field)
            if kind == "exists" and spec["type"] == "text":
                assert spec.get("norms", True), field


def test_read_only_fields_are_not_indexed() -> None:
    for name in ("schema", "turn", "role", "text_bytes", "surface_state", "content_hash", "partition"):
        assert _MAPPING[name]["index"] is False and _MAPPING[name]["doc_values"] is False, name
    for name in ("workspace_id", "session_id", "seq", "type", "time", "tool_name", "has_text"):
        assert _MAPPING[name].get("index", True), name
