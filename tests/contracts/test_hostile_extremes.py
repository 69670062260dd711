"""Extreme values through every output, on both backends: one stored value never makes a workspace
unsearchable.

The wire refuses a time whose UTC instant lies outside years 0001 to 9999 (or whose offset is past
18 hours), and the indexer dead-letters a logged record carrying one. A view may still hold what
older writers stored, so the view is also written directly (the real projection of records that
bypassed validation, as an indexer without that rule wrote them): times at and past the edges of
the range with offsets, seqs up to the 64-bit limit, empty, huge, control-character, NUL and bidi
text, odd attribute values, and headers missing or full of extremes. Every output then renders
each drawn session without an exception: the CLI's text and JSON (search, read, sessions, trace,
export, dlq), the console's pages (workspace search, session page, health), the model tools and
MCP. User text is escaped where it is shown: no raw control character on the terminal, no live
markup on a page.
"""

from __future__ import annotations

import itertools
import re
import sqlite3
from collections.abc import Iterator
from contextlib import ExitStack, closing
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Final

import anyio
import orjson
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from backscroll.cli.main import app
from backscroll.indexer.ports import Outcome
from backscroll.indexer.projector import project_records
from backscroll.ingest import EventRecord, HeaderRecord, RecordRejected, parse_record
from backscroll.ingest.wire import decode_record
from backscroll.query import Scope, SessionQueryRequest
from backscroll.query.tools import session_tools
from backscroll.query.tools.toolset import Toolset

from .conftest import _PARAMS, Harness, make_harness

WS: Final = "ws-extreme"
#: In every drawn session's first text, so a workspace search finds every drawn session.
WORD: Final = "quokka"
#: Sessions drawn per output (each output reads every session drawn before it too).
EXAMPLES: Final = {"cli": 15, "tools": 25, "mcp": 12, "console": 20}
#: Raw control characters (but newline) and the bidi/line-separator characters a terminal acts on.
_RAW_CONTROL: Final = re.compile(r"[\x00-\x09\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
HOSTILE_MARKUP: Final = '<script>alert(1)</script><img src=x onerror="alert(2)">'

#: Times at the edges of what the wire accepts (kept by the indexer)...
EDGE_TIMES: Final = (
    "0001-01-01T00:00:00Z",
    "0001-01-01T00:00:00-18:00",
    "0001-01-01T18:00:00+18:00",
    "9999-12-31T23:59:59.999999Z",
    "9999-12-31T23:59:00+18:00",
    "9999-12-31T05:59:59.999999-18:00",
)
#: ...and past them: legal RFC 3339 whose UTC instant is outside years 0001 to 9999, or whose
#: offset is past 18 hours (which OpenSearch refuses).
OUT_OF_RANGE_TIMES: Final = (
    "9999-12-31T23:59:59-01:00",
    "9999-12-31T06:00:00-18:00",
    "0001-01-01T00:00:00+01:00",
    "0001-01-01T17:59:59.5+18:00",
    "2026-01-01T00:00:00+18:01",
    "2026-01-01T00:00:00-23:59",
)
#: What a rejection of one of them says.
OUT_OF_RANGE: Final = re.compile(r"years 0001 to 9999|within -18:00 to \+18:00")
TEXTS: Final = (
    "",
    " ",
    "\x00",
    "nul\x00inside",
    "\x1b[2J\x1b[31mred\x07",
    "\r\n\t\x0b\x0c\x85",
    "\u202eevil\u202c \u2066isolate\u2069 \u2028line\u2029",
    "[bold]markup[/bold] :smile: %s{0}",
    HOSTILE_MARKUP,
    "é" * 5000,
    "w " * 40_000,
    "🦘" * 300,
    "x" * 200_000,
)
ATTR_VALUES: Final = (2**64 - 1, -(2**63), 2**53 + 1, 1e308, -0.0, 5e-324, True, None, "\x1b[2J", "")

_session_numbers = itertools.count()


def _settings(output: str) -> settings:
    return settings(
        max_examples=EXAMPLES[output],
        derandomize=True,
        database=None,
        deadline=None,
        # No shrinking: the view keeps every drawn session, so a smaller case would not fail alone.
        phases=[Phase.explicit, Phase.generate],
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )


def _aware_times() -> st.SearchStrategy[datetime]:
    return st.builds(
        lambda moment, minutes: moment.replace(tzinfo=timezone(timedelta(minutes=minutes))),
        st.datetimes(min_value=datetime(1, 1, 1), max_value=datetime(9999, 12, 31, 23, 59, 59, 999999)),
        st.integers(-(23 * 60 + 59), 23 * 60 + 59),
    )


_times = st.one_of(
    st.sampled_from([*EDGE_TIMES, *OUT_OF_RANGE_TIMES]).map(datetime.fromisoformat), _aware_times()
)
_texts = st.one_of(st.sampled_from(TEXTS), st.text(max_size=60))
_ints = st.sampled_from([0, 1, 2**31, 2**53 - 1, 2**53, 2**62, 2**63 - 1])


@st.composite
def sessions(draw: st.DrawFn) -> tuple[str, list[HeaderRecord | EventRecord]]:
    """One session of extremes: an optional header and one to three events, built from valid
    records and then changed without validation (what an older writer could have stored)."""
    sid = f"x-{next(_session_numbers)}"
    records: list[HeaderRecord | EventRecord] = []
    if draw(st.booleans()):
        header = parse_record(
            {
                "v": 1,
                "kind": "header",
                "workspace_id": WS,
                "session_id": sid,
                "created_at": "2026-01-01T00:00:00Z",
            }
        )
        changes: dict[str, Any] = {"created_at": draw(_times)}
        for name, strategy in (
            ("title", _texts),
            ("origin", _texts),
            ("agent_preset", _texts),
            ("parent_session_id", st.sampled_from([sid, "x-0", "nowhere"])),
            ("seed_length", _ints),
            ("delegation_depth", _ints),
        ):
            if draw(st.booleans()):
                changes[name] = draw(strategy)
        records.append(header.model_copy(update=changes))
    for index in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["user/message", "assistant/message", "tool/result", "tool/call", "x/y"]))
        base = parse_record(
            {
                "v": 1,
                "kind": "event",
                "workspace_id": WS,
                "session_id": sid,
                "seq": index,
                "type": "user/message",
                "time": "2026-01-01T00:00:00Z",
                "surface": {"op": "append"},
            }
        )
        assert isinstance(base, EventRecord)
        text = draw(_texts)
        changes = {
            "type": kind,
            "surface": base.surface if kind in ("user/message", "assistant/message", "tool/result") else None,
            "time": draw(_times),
            "text": f"{WORD} {text}" if index == 0 else draw(st.one_of(st.none(), st.just(text))),
            "role": draw(st.sampled_from([None, "user", "assistant", "tool", "system"])),
            "turn": draw(st.one_of(st.none(), _ints)),
        }
        if index == 2:
            changes["seq"] = draw(_ints.filter(lambda n: n >= 2))
        if draw(st.booleans()):
            changes["tool_name"] = draw(_texts)
        if draw(st.booleans()):
            changes["attrs"] = {
                f"k{i}": value for i, value in enumerate(draw(st.lists(st.sampled_from(ATTR_VALUES))))
            }
        records.append(base.model_copy(update=changes))
    return sid, records


class Extremes:
    """A pipeline per backend whose view is written directly, and the ways to read it back."""

    def __init__(self, harness: Harness, directory: Path, env: dict[str, str]) -> None:
        self.harness = harness
        self.directory = directory
        self.env = env
        self.view = harness.view()

    def store(self, records: list[HeaderRecord | EventRecord]) -> bool:
        """Write the records' documents; whether the view took them all (OpenSearch refuses an
        offset past 18 hours: what it refuses, it cannot hold)."""
        results = self.view.write(project_records(records))
        self.view.refresh()
        return all(result.outcome in (Outcome.CREATED, Outcome.WRITTEN) for result in results)

    def cli(self, *args: str) -> Any:
        result = CliRunner().invoke(app, list(args))
        shown = f"{args}: {result.exception!r}\n{result.output[-2000:]}"
        assert result.exception is None or isinstance(result.exception, SystemExit), shown
        assert "Traceback" not in result.output, shown
        assert result.exit_code in (0, 1), shown
        if "--json" in args or args[0] == "export":  # export prints the records as JSONL
            for line in result.stdout.split("\n"):  # not splitlines: JSON text may hold U+2028
                if line:
                    orjson.loads(line)
        else:
            raw = _RAW_CONTROL.search(result.stdout)
            assert raw is None, (args, raw.group() if raw else "", result.stdout[-2000:])
        return result


@pytest.fixture(scope="module", params=_PARAMS)
def extremes(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Extremes]:
    directory = tmp_path_factory.mktemp(f"extremes-{request.param}")
    with ExitStack() as stack:
        harness = stack.enter_context(make_harness(request.param, directory))
        patch = stack.enter_context(pytest.MonkeyPatch.context())
        env = {**harness.settings_env(), "BACKSCROLL_APPENDER_SPOOL_DIR": str(directory / "spool")}
        for name, value in env.items():
            patch.setenv(name, value)
        patch.setenv("BACKSCROLL_LOG_LEVEL", "critical")
        patch.chdir(directory)  # no stray .env
        yield Extremes(harness, directory, env)


# -- the wire and the indexer refuse an out-of-range time -------------------------------------------
def _event(sid: str, seq: int, time: str) -> dict[str, Any]:
    return {
        "v": 1,
        "kind": "event",
        "workspace_id": WS,
        "session_id": sid,
        "seq": seq,
        "type": "user/message",
        "role": "user",
        "surface": {"op": "append"},
        "time": time,
        "text": f"{WORD} at {time}",
    }


@pytest.mark.parametrize("time", OUT_OF_RANGE_TIMES)
def test_the_wire_rejects_a_time_outside_the_utc_range(time: str) -> None:
    header = {"v": 1, "kind": "header", "workspace_id": WS, "session_id": "s", "created_at": time}
    for record, field in ((_event("s", 0, time), "time"), (header, "created_at")):
        with pytest.raises(RecordRejected, match=OUT_OF_RANGE) as caught:
            decode_record(orjson.dumps(record))
        assert caught.value.field == field
        with pytest.raises(RecordRejected, match=OUT_OF_RANGE):
            parse_record(record)


@pytest.mark.parametrize("time", EDGE_TIMES)
def test_the_wire_keeps_a_time_at_the_edges_of_the_range(time: str) -> None:
    assert decode_record(orjson.dumps(_event("s", 0, time))).time == datetime.fromisoformat(time)  # type: ignore[union-attr]


def test_the_cli_append_rejects_the_line(extremes: Extremes) -> None:
    line = orjson.dumps(_event("x-append", 0, OUT_OF_RANGE_TIMES[0]))
    result = CliRunner().invoke(app, ["append", "-"], input=line + b"\n")
    assert result.exit_code == 1, result.output
    assert "time" in result.output and OUT_OF_RANGE.search(result.output)
    assert "Traceback" not in result.output


def test_a_logged_record_with_such_a_time_is_dead_lettered_with_the_reason(harness: Harness) -> None:
    sid = "x-logged"
    key = sid.encode()
    items: list[tuple[bytes | None, bytes | None]] = [(key, orjson.dumps(_event(sid, 0, EDGE_TIMES[0])))]
    items += [(key, orjson.dumps(_event(sid, 1, time))) for time in OUT_OF_RANGE_TIMES]
    header = {
        "v": 1,
        "kind": "header",
        "workspace_id": WS,
        "session_id": sid,
        "created_at": OUT_OF_RANGE_TIMES[0],
    }
    items += [(key, orjson.dumps(header)), (key, orjson.dumps(_event(sid, 1, EDGE_TIMES[-1])))]
    harness.send_raw(items)
    stats = harness.index()
    assert (stats.indexed, stats.dead_lettered) == (2, len(OUT_OF_RANGE_TIMES) + 1)
    letters = harness.dead_letters()
    assert sorted(letter["field"] for letter in letters) == [
        "created_at",
        *["time"] * len(OUT_OF_RANGE_TIMES),
    ]
    assert all(OUT_OF_RANGE.search(letter["reason"]) for letter in letters)
    result = harness.provider(Scope.workspace(WS)).search(SessionQueryRequest(query=WORD))
    assert sorted(match.seq for match in result.matches) == [0, 1]


# -- every output renders whatever the view holds ------------------------------------------------------
@_settings("cli")
@given(drawn=sessions())
def test_the_cli_renders_every_stored_value(extremes: Extremes, drawn: tuple[str, list[Any]]) -> None:
    sid, records = drawn
    stored = extremes.store(records)
    for as_json in ([], ["--json"]):
        assert extremes.cli("search", WORD, "-w", WS, *as_json).exit_code == 0
        assert extremes.cli("search", WORD, "-s", sid, *as_json).exit_code == 0 or not stored
        assert extremes.cli("sessions", "-w", WS, *as_json).exit_code == 0
        extremes.cli("read", sid, "0", "-w", WS, "-A", "2", *as_json)
        extremes.cli("trace", sid, "-w", WS, *as_json)
        extremes.cli("trace", sid, "0", "-w", WS, *as_json)


def _tool_calls(sid: str) -> list[tuple[str, dict[str, Any]]]:
    return [
        ("session_query", {"query": WORD, "session_id": sid}),
        ("session_search", {"query": WORD}),
        ("session_event_read", {"session_id": sid, "seq": 0, "after": 2}),
        ("session_trace", {"session_id": sid}),
        ("session_event_trace", {"session_id": sid, "seq": 0}),
    ]


def _toolset(harness: Harness) -> Toolset:
    scope = Scope.workspace(WS)
    toolset = session_tools(harness.provider(scope), harness.reader(scope))
    assert toolset is not None
    return toolset


@_settings("tools")
@given(drawn=sessions())
def test_the_model_tools_render_every_stored_value(extremes: Extremes, drawn: tuple[str, list[Any]]) -> None:
    sid, records = drawn
    extremes.store(records)
    toolset = _toolset(extremes.harness)
    for name, arguments in _tool_calls(sid):
        text, failed = toolset.answer(name, arguments)
        assert not failed or "TOOL_FAILED" not in text, (name, text)
        assert name != "session_search" or not failed, text


@_settings("mcp")
@given(drawn=sessions())
def test_mcp_renders_every_stored_value(extremes: Extremes, drawn: tuple[str, list[Any]]) -> None:
    from mcp import Client
    from mcp_types import TextContent

    from backscroll.query.tools.mcp_server import build_server

    sid, records = drawn
    extremes.store(records)
    server = build_server(_toolset(extremes.harness))

    async def main() -> None:
        async with Client(server, mode="legacy") as client:
            for name, arguments in _tool_calls(sid):
                result = await client.call_tool(name, arguments)
                (block,) = result.content
                assert isinstance(block, TextContent)
                assert not result.is_error or "TOOL_FAILED" not in block.text, (name, block.text)

    anyio.run(main)


@pytest.fixture(scope="module")
def console_url(extremes: Extremes) -> Iterator[str]:
    from tests.console.conftest import grants, live_console

    with live_console(extremes.harness.backend, grants()) as url:
        yield url


@_settings("console")
@given(drawn=sessions())
def test_the_console_renders_every_stored_value(
    extremes: Extremes, console_url: str, drawn: tuple[str, list[Any]]
) -> None:
    from tests.console.conftest import FULL_TOKEN
    from tests.console.http import call

    sid, records = drawn
    stored = extremes.store(records)
    for path in (
        f"/search?q={WORD}&ws={WS}",
        f"/search?q={WORD}&session={sid}",
        f"/session/{sid}",
        "/health",
    ):
        reply = call(console_url + path, token=FULL_TOKEN)
        assert reply.status == 200 or (not stored and reply.status == 404), (
            path,
            reply.status,
            reply.body[-2000:],
        )
        assert "<script>alert" not in reply.body and 'onerror="alert' not in reply.body, path


def test_the_dead_letters_render(extremes: Extremes, console_url: str) -> None:
    """Records refused for their time, with hostile texts: the dead letters, the log's export and the
    console's health page (which lists the letters) render them."""
    from tests.console.conftest import FULL_TOKEN
    from tests.console.http import call

    sid = "x-dead"
    bad = [
        _event(sid, 0, time) | {"text": text}
        for time, text in zip(OUT_OF_RANGE_TIMES, TEXTS[3:], strict=False)
    ]
    assert HOSTILE_MARKUP in [record["text"] for record in bad]
    extremes.harness.send_raw([(sid.encode(), orjson.dumps(record)) for record in bad])
    assert extremes.harness.index().dead_lettered == len(bad)
    for as_json in ([], ["--json"]):
        assert extremes.cli("dlq", "list", *as_json).exit_code == 0
    assert extremes.cli("export", "-w", WS).exit_code == 0
    reply = call(console_url + "/health", token=FULL_TOKEN)
    assert reply.status == 200 and "x-dead" in reply.body
    assert "<script>alert" not in reply.body and 'onerror="alert' not in reply.body


def test_a_damaged_stored_time_still_shows_the_match(harness: Harness) -> None:
    """A document whose time is a number (OpenSearch takes epoch milliseconds) or, in the embedded
    file, whose ``time_us`` is past the range: the match is found and every output renders it."""
    sid = "x-damaged"
    harness.append_all([_event(sid, 0, "2026-01-01T00:00:00Z")])
    harness.index()
    harness.damage_event(sid, 0, time=253402300800000)  # the first millisecond of year 10000
    if harness.name == "embedded":
        with closing(sqlite3.connect(harness.path)) as conn, conn:  # type: ignore[attr-defined]
            conn.execute("UPDATE events SET time_us = ? WHERE session_id = ?", [2**63 - 1, sid])
            conn.execute(
                "INSERT INTO events (workspace_id, session_id, seq, type, time_us, has_text, surface_state,"
                " content_hash, log_offset, text, doc) SELECT workspace_id, session_id, 1, type, ?,"
                " has_text, surface_state, content_hash, 0, text, ? FROM events WHERE session_id = ?",
                [-(2**63), b"{}", sid],
            )
    result = harness.provider(Scope.workspace(WS)).search(SessionQueryRequest(query=WORD))
    assert result.matches and result.matches[0].session_id == sid
    toolset = _toolset(harness)
    for name, arguments in _tool_calls(sid):
        text, failed = toolset.answer(name, arguments)
        assert not failed or "TOOL_FAILED" not in text, (name, text)
