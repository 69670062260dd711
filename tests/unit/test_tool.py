"""The model-facing ``session_query`` tool over an in-memory provider: arguments, gating, limits,
rendering and the scope."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import jsonschema
import orjson
import pytest

from backscroll.query import (
    DEFAULT_EXCERPT_BYTES,
    ERROR_CODES,
    MAX_LIMIT,
    TOOL_NAME,
    SessionMatch,
    SessionQuery,
    SessionQueryError,
    SessionQueryRequest,
    SessionQueryResult,
    SessionQueryTool,
    ToolError,
    render_result,
    session_query_tool,
)

_T0 = datetime(2026, 11, 1, 9, 30, tzinfo=UTC)
NO_HISTORY = "No searchable history yet in this session."


class FakeProvider:
    """An in-memory :class:`SessionQuery`: substring AND over one session's texts, newest first."""

    def __init__(self, texts: tuple[str, ...] = (), *, error: Exception | None = None) -> None:
        self.texts = texts
        self.error = error
        self.requests: list[SessionQueryRequest] = []
        self._lock = threading.Lock()

    def search(self, request: SessionQueryRequest) -> SessionQueryResult:
        limit = request.limit if request.limit is not None else 10
        with self._lock:
            self.requests.append(request)
        if self.error is not None:
            raise self.error
        words = request.query.lower().split()
        hits = [(seq, text) for seq, text in enumerate(self.texts) if all(w in text.lower() for w in words)]
        hits.sort(key=lambda hit: -hit[0])
        matches = tuple(
            SessionMatch(
                session_id=request.session_id or "s1",
                entry_id=f"s1:{seq}",
                seq=seq,
                kind="assistant/message",
                turn=seq // 2,
                role="assistant",
                excerpt=text[: request.excerpt_bytes],
                created_at=_T0 + timedelta(minutes=seq),
                score=float(len(words)),
            )
            for seq, text in hits[:limit]
        )
        more = len(hits) > limit
        return SessionQueryResult(
            matches=matches, searched=len(self.texts), next_cursor="next" if more else None
        )


def _tool(texts: tuple[str, ...] = ("alpha",), **kwargs: Any) -> tuple[SessionQueryTool, FakeProvider]:
    provider = FakeProvider(texts)
    made = session_query_tool(provider, **kwargs)
    assert made is not None
    return made, provider


def _match_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("[seq ")]


def test_the_fake_is_a_session_query() -> None:
    assert isinstance(FakeProvider(), SessionQuery)


# -- argument forms -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "arguments", ["", "   ", "\n\t", "{}", None, {}, b"", b"{}", '{"query": null}', '{"limit": null}']
)
def test_empty_arguments_browse(arguments: Any) -> None:
    made, provider = _tool(("one", "two", "three"))
    text = made.run(arguments)
    assert text.startswith("3 matches (searched 3 entries):")
    assert provider.requests == [SessionQueryRequest(query="", limit=10, excerpt_bytes=DEFAULT_EXCERPT_BYTES)]


@pytest.mark.parametrize(
    "arguments",
    [
        "not json",
        "{",
        '{"query": "x",}',
        b"\xff\xfe",
        '{"limit": "5"}',
        '{"limit": 2.5}',
        '{"limit": 5.0}',
        '{"limit": true}',
        '{"limit": [5]}',
        '{"limit": 1e3}',
        '{"query": 5}',
        '{"query": ["a"]}',
        '{"query": {"a": 1}}',
        "[]",
        '"a string"',
        "5",
        "null",
        '{"query": "a\\u0000b"}',
        {"limit": "5"},
        {"query": 1.5},
    ],
)
def test_malformed_arguments_are_invalid_arguments(arguments: Any) -> None:
    made, provider = _tool()
    with pytest.raises(ToolError) as caught:
        made.run(arguments)
    assert str(caught.value).startswith("invalid arguments")
    assert provider.requests == [], "nothing reaches the provider"


def test_arguments_as_json_text_bytes_or_mapping_are_equal() -> None:
    made, provider = _tool(("alpha beta", "alpha"))
    outputs = {
        made.run('{"query": "alpha", "limit": 1}'),
        made.run(b'{"query": "alpha", "limit": 1}'),
        made.run({"query": "alpha", "limit": 1}),
    }
    assert len(outputs) == 1
    assert {(r.query, r.limit) for r in provider.requests} == {("alpha", 1)}


# -- unknown arguments are ignored; the fence ------------------------------------------------------


def test_unknown_arguments_are_ignored() -> None:
    made, provider = _tool(("model answer",))
    made.run(
        {
            "query": "summary",
            "kinds": ["compaction/summary"],
            "cursor": "x",
            "excerpt_bytes": 9,
            "session_id": "s2",
            "workspace_id": "w9",
            "scope": "all",
        }
    )
    (request,) = provider.requests
    assert request.kinds == () and request.cursor is None and request.session_id is None
    assert request.excerpt_bytes == DEFAULT_EXCERPT_BYTES


def test_the_provider_receives_only_the_pinned_request() -> None:
    made, provider = _tool(session_id="s1")
    made.run('{"query": "x", "session_id": "s9"}')
    assert provider.requests == [
        SessionQueryRequest(session_id="s1", query="x", kinds=(), limit=10, excerpt_bytes=600, cursor=None)
    ]


def test_without_a_pinned_id_the_scope_decides() -> None:
    made, provider = _tool()
    made.run({"query": "x", "session_id": "s9"})
    assert provider.requests[0].session_id is None, "the provider's own scope, never the model's id"


def test_the_schema_offers_only_query_and_limit() -> None:
    made, _ = _tool()
    schema = made.parameters
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["type"] == "object"
    assert set(schema["properties"]) == {"query", "limit"}
    assert schema["properties"]["query"]["type"] == "string"
    assert schema["properties"]["limit"]["type"] == "integer"
    assert "required" not in schema
    for valid in ({}, {"query": "x"}, {"limit": 3}, {"query": "", "limit": 0}):
        jsonschema.validate(valid, schema)


# -- declining, gating, parallel ------------------------------------------------------------------


def test_declines_without_a_provider() -> None:
    assert session_query_tool(None) is None
    assert session_query_tool(None, workspace=True) is None
    made, _ = _tool()
    assert isinstance(made, SessionQueryTool) and made.name == TOOL_NAME == "session_query"


def test_workspace_variant_has_its_own_name() -> None:
    made, _ = _tool(workspace=True)
    assert made.name == "workspace_query" and made.name != TOOL_NAME
    assert "workspace" in made.description
    assert made.openai_tool()["function"]["name"] == "workspace_query"


def test_self_gated_and_parallel_safe() -> None:
    made, _ = _tool()
    assert made.parallel_safe is True
    assert made.self_gated is True
    assert SessionQueryTool.parallel_safe is True and SessionQueryTool.self_gated is True


def test_parallel_calls_are_safe() -> None:
    made, provider = _tool(tuple(f"entry {i}" for i in range(30)))
    outputs: list[str] = []
    errors: list[BaseException] = []

    def call(i: int) -> None:
        try:
            outputs.append(made.run({"query": f"entry {i}", "limit": 1}))
        except BaseException as err:
            errors.append(err)

    threads = [threading.Thread(target=call, args=(i,)) for i in range(30)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == [] and len(outputs) == 30 and len(provider.requests) == 30


# -- clamping -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("limit", "expected"),
    [
        (None, 10),
        (0, 10),
        (-5, 10),
        (-(2**63), 10),
        (1, 1),
        (7, 7),
        (50, 50),
        (51, 50),
        (999, 50),
        (10**30, 50),
    ],
)
def test_limit_is_clamped_and_non_positive_means_default(limit: int | None, expected: int) -> None:
    made, provider = _tool()
    made.run({"query": "x"} if limit is None else {"query": "x", "limit": limit})
    assert provider.requests[0].limit == expected


def test_operator_max_and_default() -> None:
    made, provider = _tool(max_limit=3, default_limit=2)
    for limit in (999, 0, None, 3, 1):
        made.run({} if limit is None else {"limit": limit})
    assert [r.limit for r in provider.requests] == [3, 2, 2, 3, 1]
    assert "at most 3" in made.parameters["properties"]["limit"]["description"]


def test_bad_tool_configuration() -> None:
    for kwargs in ({"default_limit": 0}, {"default_limit": 51}, {"max_limit": 3, "default_limit": 10}):
        with pytest.raises(SessionQueryError) as caught:
            SessionQueryTool(FakeProvider(), **kwargs)  # type: ignore[arg-type]
        assert caught.value.code == "SESSION_QUERY_INVALID_CONFIG"


def test_the_header_reports_what_was_returned() -> None:
    made, _ = _tool(tuple("match me" for _ in range(100)), max_limit=3, default_limit=3)
    text = made.run({"query": "match", "limit": 999})
    assert text.splitlines()[0] == "3 matches (searched 100 entries):"
    assert len(_match_lines(text)) == 3


# -- provider errors become tool errors, never "no results" ---------------------------------------


@pytest.mark.parametrize("code", sorted(ERROR_CODES))
def test_provider_errors_are_tool_errors(code: Any) -> None:
    provider = FakeProvider(error=SessionQueryError(code, "something broke"))
    made = session_query_tool(provider)
    assert made is not None
    with pytest.raises(ToolError) as caught:
        made.run({"query": "x"})
    message = str(caught.value)
    # A fixed, model-safe message that keeps the code; the provider's own words stay in the log.
    assert "something broke" not in message
    assert caught.value.code in (code, "SESSION_QUERY_TOOL_FAILED", "SESSION_QUERY_SESSION_NOT_FOUND")
    assert message == f"session_query failed ({caught.value.code}): {caught.value.message}"
    if code in ("SESSION_QUERY_INVALID_CONFIG", "SESSION_QUERY_SOURCE_CONFLICT"):
        assert caught.value.code == "SESSION_QUERY_TOOL_FAILED"
    assert "No entries" not in message and "No searchable" not in message
    assert caught.value.__cause__ is None and caught.value.__suppress_context__, "no chained trace"


def test_unexpected_provider_exceptions_are_not_no_results() -> None:
    made = session_query_tool(FakeProvider(error=RuntimeError("bug in a custom provider")))
    assert made is not None
    with pytest.raises(ToolError) as caught:  # anything but a rendered answer, and no crash
        made.run({"query": "x"})
    assert caught.value.code == "SESSION_QUERY_TOOL_FAILED"
    assert "bug in a custom provider" not in str(caught.value)  # diagnostics are logged, not shown


# -- rendering -----------------------------------------------------------------------------------


def _match(seq: int, **kwargs: Any) -> SessionMatch:
    fields: dict[str, Any] = {
        "session_id": "s1",
        "entry_id": f"s1:{seq}",
        "seq": seq,
        "kind": "tool/result",
        "turn": 3,
        "role": "tool",
        "excerpt": f"excerpt {seq}",
        "created_at": _T0,
        "score": 2.25,
    }
    fields.update(kwargs)
    return SessionMatch(**fields)


def test_rendered_match_blocks() -> None:
    result = SessionQueryResult(
        matches=(
            _match(7),
            _match(
                5,
                role=None,
                kind="compaction/summary",
                turn=None,
                score=0.0,
                created_at=datetime(2026, 11, 1, 11, 30, tzinfo=timezone(timedelta(hours=2))),
            ),
            _match(4, created_at=None, score=12.06),
        ),
        searched=12,
    )
    assert render_result(result, "q") == "\n".join(
        [
            "3 matches (searched 12 entries):",
            "",
            "[seq 7, turn 3, tool] score 2.2 · 2026-11-01T09:30:00Z",
            "excerpt 7",
            "",
            "[seq 5, compaction/summary] score 0.0 · 2026-11-01T09:30:00Z",
            "excerpt 5",
            "",
            "[seq 4, turn 3, tool] score 12.1",
            "excerpt 4",
        ]
    )


def test_rendered_one_match_partial_and_more() -> None:
    one = render_result(SessionQueryResult(matches=(_match(1),), searched=1), "q")
    assert one.startswith("1 match (searched 1 entries):\n")
    two = SessionQueryResult(matches=(_match(1), _match(0)), searched=4, partial=True)
    partial = render_result(two, "a b")
    assert partial.startswith("No entry matched every word; 2 closest matches (searched 4 entries):")
    more = render_result(SessionQueryResult(matches=(_match(1),), searched=9, next_cursor="c"), "q")
    assert more.endswith("(more matches exist; narrow the query to see others)")
    assert not more.endswith("\n")


def test_rendered_empty_texts() -> None:
    assert render_result(SessionQueryResult(searched=0), "x") == NO_HISTORY
    assert render_result(SessionQueryResult(searched=0), "") == NO_HISTORY
    no_match = render_result(SessionQueryResult(searched=3), "zzz")
    assert no_match == 'No entries matched "zzz" (searched 3 entries).'


def test_tool_empty_texts() -> None:
    empty, _ = _tool(())
    assert empty.run({"query": "x"}) == NO_HISTORY
    assert empty.run({}) == NO_HISTORY
    some, _ = _tool(("a", "b", "c"))
    assert some.run({"query": "zzz"}) == 'No entries matched "zzz" (searched 3 entries).'


def test_output_is_bounded_by_limit_times_excerpt() -> None:
    made, _ = _tool(tuple("x" * 5000 + " needle" for _ in range(80)))
    text = made.run({"query": "needle", "limit": 1000})
    assert len(_match_lines(text)) == 50
    assert len(text.encode()) <= 50 * (DEFAULT_EXCERPT_BYTES + 120) + 200


def test_echoed_query_stays_one_line() -> None:
    """The no-match sentence quotes the query; a newline in it must not break the one-line shape."""
    made, _ = _tool(("a", "b"))
    text = made.run({"query": "first\nsecond"})
    assert "\n" not in text and text.startswith("No entries matched ")


def test_echoed_query_is_bounded() -> None:
    """The output bound (limit × excerpt plus headers) must hold when the model sends a huge query."""
    made, _ = _tool(("a", "b"))
    text = made.run({"query": "q" * 20_000})
    assert text.startswith("No entries matched ")
    assert len(text.encode()) <= 1_000


# -- the three API shapes and their call adapters -------------------------------------------------


def test_openai_definition_and_call() -> None:
    made, provider = _tool(("alpha", "beta"))
    definition = made.openai_tool()
    assert definition == {
        "type": "function",
        "function": {"name": "session_query", "description": made.description, "parameters": made.parameters},
    }
    orjson.dumps(definition)
    call = {
        "id": "call_1",
        "type": "function",
        "function": {"name": "session_query", "arguments": '{"query": "alpha"}'},
    }
    reply = made.run_openai_call(call)
    assert reply == {"role": "tool", "tool_call_id": "call_1", "content": made.run({"query": "alpha"})}
    assert str(reply["content"]).startswith("1 match (searched 2 entries):")
    browse = made.run_openai_call({"id": "call_2", "function": {"name": "session_query", "arguments": ""}})
    assert str(browse["content"]).startswith("2 matches")
    bad = made.run_openai_call({"id": "call_3", "function": {"arguments": "not json"}})
    assert bad["tool_call_id"] == "call_3" and str(bad["content"]).startswith("error: invalid arguments")
    assert all(r.session_id is None for r in provider.requests)


def test_anthropic_definition_and_call() -> None:
    made, _ = _tool(("alpha", "beta"))
    definition = made.anthropic_tool()
    assert definition == {
        "name": "session_query",
        "description": made.description,
        "input_schema": made.parameters,
    }
    reply = made.run_anthropic_call(
        {"type": "tool_use", "id": "toolu_1", "name": "session_query", "input": {"query": "beta"}}
    )
    assert reply == {
        "type": "tool_result",
        "tool_use_id": "toolu_1",
        "content": made.run({"query": "beta"}),
        "is_error": False,
    }
    bad = made.run_anthropic_call({"type": "tool_use", "id": "toolu_2", "input": {"limit": "x"}})
    assert bad["is_error"] is True and str(bad["content"]).startswith("invalid arguments")
    assert bad["tool_use_id"] == "toolu_2"


def test_mcp_definition_and_call() -> None:
    made, _ = _tool(("alpha", "beta"))
    definition = made.mcp_tool()
    assert definition["name"] == "session_query"
    assert definition["inputSchema"] == made.parameters
    assert definition["annotations"] == {
        "title": "session query",
        "readOnlyHint": True,
        "destructiveHint": False,
        "idempotentHint": True,
        "openWorldHint": False,
    }
    reply = made.run_mcp_call({"query": "alpha"})
    assert reply == {"content": [{"type": "text", "text": made.run({"query": "alpha"})}], "isError": False}
    assert made.run_mcp_call(None)["content"][0]["text"].startswith("2 matches")
    bad = made.run_mcp_call({"query": 3})
    assert bad["isError"] is True and bad["content"][0]["text"].startswith("invalid arguments")


@pytest.mark.parametrize("adapter", ["openai", "anthropic", "mcp"])
def test_adapters_turn_provider_errors_into_error_replies(adapter: str) -> None:
    made = session_query_tool(FakeProvider(error=SessionQueryError("SESSION_QUERY_INDEX_FAILED", "down")))
    assert made is not None
    text: str
    if adapter == "openai":
        reply: Mapping[str, Any] = made.run_openai_call({"id": "c", "function": {"arguments": "{}"}})
        text = reply["content"]
        assert text.startswith("error: ")
    elif adapter == "anthropic":
        reply = made.run_anthropic_call({"id": "t", "input": {}})
        assert reply["is_error"] is True
        text = str(reply["content"])
    else:
        reply = made.run_mcp_call({})
        assert reply["isError"] is True
        text = reply["content"][0]["text"]
    assert "SESSION_QUERY_INDEX_FAILED" in text and "No entries" not in text


def test_defaults_match_the_contract() -> None:
    made, _ = _tool()
    assert (made.default_limit, made.max_limit, made.excerpt_bytes) == (10, MAX_LIMIT, DEFAULT_EXCERPT_BYTES)
    assert "compaction" in made.description and "query" in made.description
