"""Live versus persisted reads, identical on every backend: a reader given a live source (the
appender's unflushed tail) merges it with the projection, refuses headers that disagree, reads live
sessions whatever the projection's health, and types every way the projection can fail."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import timedelta
from typing import Any

import pytest

from backscroll.ingest import EventRecord, HeaderRecord, parse_record
from backscroll.query import Scope, SessionHeader, SessionQueryError

from .conftest import _PARAMS, Harness, make_harness
from .test_reads_contract import AUTO, T0, R, code_of, hdr, reader, session

#: Every harness test runs with the synchronous and the asyncio API (conftest).
BOTH_APIS = True

RECORDS = [
    *session(
        "ws-merge", "shared", 3, [("user/message", "persisted zero"), ("assistant/message", "persisted")]
    ),
    *session("ws-merge", "durable", 2, [("user/message", "durable content")]),
    hdr("ws-conf", "dd", 1, delegation_depth=1),
    *session("ws-conf", "dd", 1, [("user/message", "x")])[1:],
    hdr("ws-conf", "meta", 1, origin="main", agent_preset="p1"),
    *session("ws-conf", "meta", 1, [("user/message", "y")])[1:],
    *session("ws-corrupt", "corrupt", 0, [("user/message", "fine"), ("user/message", "also fine")]),
]
EVENT_COUNT = sum(1 for r in RECORDS if r["kind"] == "event")


@pytest.fixture(scope="module", params=_PARAMS)
def reads(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Harness]:
    """A pipeline holding :data:`RECORDS`, appended and indexed (shared by this module's tests)."""
    with make_harness(request.param, tmp_path_factory.mktemp(f"live-{request.param}")) as made:
        made.append_all(RECORDS)
        assert made.index().indexed == EVENT_COUNT
        yield made


class FakeLive:
    """An in-memory live source, as the appender's unflushed tail would be."""

    def __init__(self, headers: Sequence[HeaderRecord | SessionHeader], logs: dict[str, list[EventRecord]]):
        self.headers = list(headers)
        self.logs = logs

    def sessions(self) -> list[HeaderRecord | SessionHeader]:
        return list(self.headers)

    def events(self, session_id: str) -> list[EventRecord] | None:
        log = self.logs.get(session_id)
        return None if log is None else list(log)


def live_header(sid: str, ws: str, hours: int = 3, **kw: Any) -> HeaderRecord:
    record = parse_record(hdr(ws, sid, hours, **kw))
    assert isinstance(record, HeaderRecord)
    return record


def live_event(ws: str, sid: str, seq: int, text: str, surface: Any = AUTO, **kw: Any) -> EventRecord:
    record = parse_record(
        {
            "v": 1,
            "kind": "event",
            "workspace_id": ws,
            "session_id": sid,
            "seq": seq,
            "type": "assistant/message" if seq % 2 else "user/message",
            "text": text,
            "time": (T0 + timedelta(seconds=seq)).isoformat(),
            "surface": {"op": "append"} if surface is AUTO else surface,
            **kw,
        }
    )
    assert isinstance(record, EventRecord)
    return record


def live_log(sid: str, ws: str) -> list[EventRecord]:
    """A whole session from seq 0, its last event replacing the first two."""
    return [
        live_event(ws, sid, 0, "live zero"),
        live_event(ws, sid, 1, "live one"),
        live_event(ws, sid, 2, "live summary", surface=R(0, 1), sources=[0, 1]),
    ]


def test_live_and_persisted_merge_in_order(reads: Harness) -> None:
    tail = FakeLive(
        [live_header("shared", "ws-merge")], {"shared": [live_event("ws-merge", "shared", 1, "live")]}
    )
    r = reader(reads, "ws-merge", live=tail)
    assert [(s.header.session_id, s.live, s.persisted) for s in r.list_sessions()] == [
        ("shared", True, True), ("durable", False, True)]  # fmt: skip
    one = r.read_event("shared", 1, before=1)
    assert (one.target.text, one.target.live) == ("live", True)
    assert [(e.text, e.live) for e in one.events] == [("persisted zero", False), ("live", True)]
    assert [e.text for e in r.read_surface("durable").events] == ["durable content"]
    # A live tail beyond the projection extends the log.
    longer = FakeLive(tail.headers, {"shared": [live_event("ws-merge", "shared", 2, "newer")]})
    events = reader(reads, "ws-merge", live=longer).list_events("shared")
    assert [(e.seq, e.text, e.live) for e in events] == [
        (0, "persisted zero", False), (1, "persisted", False), (2, "newer", True)]  # fmt: skip
    # Live entries already released (the projection holds them): the projection serves the log.
    released = reader(reads, "ws-merge", live=FakeLive(tail.headers, {"shared": []}))
    assert released.read_event("shared", 1).target.text == "persisted"
    first = released.list_sessions()[0]
    assert (first.header.session_id, first.live, first.persisted) == ("shared", True, True)
    # A live tail the projection has never seen: the log has a gap until the indexer catches up.
    unseen = FakeLive(
        [live_header("fresh", "ws-merge")], {"fresh": [live_event("ws-merge", "fresh", 3, "x")]}
    )
    r = reader(reads, "ws-merge", live=unseen)
    assert code_of(r.list_events, "fresh") == "SESSION_QUERY_INVALID_SURFACE"
    assert code_of(r.read_event, "fresh", 3) == "SESSION_QUERY_EVENT_NOT_FOUND"
    assert [s.header.session_id for s in r.list_sessions()] == ["fresh", "shared", "durable"]
    # A live log from seq 0 is the whole session: the projection is not consulted for it.
    whole = FakeLive(tail.headers, {"shared": live_log("shared", "ws-merge")})
    untouched = reads.untouchable_reader(Scope.workspace("ws-merge"), live=whole)
    assert untouched.read_event("shared", 1).target.text == "live one"


def test_live_headers_that_disagree_are_a_source_conflict(reads: Harness) -> None:
    moved = FakeLive(
        [live_header("shared", "conflict")], {"shared": [live_event("conflict", "shared", 1, "x")]}
    )
    for scope in (Scope.sessions(["shared", "durable"]), Scope.workspace("ws-merge")):
        assert code_of(reader(reads, scope, live=moved).list_sessions) == "SESSION_QUERY_SOURCE_CONFLICT"
    moved_reader = reader(reads, "ws-merge", live=moved)
    assert code_of(moved_reader.read_event, "shared", 1) == "SESSION_QUERY_SOURCE_CONFLICT"
    depth = FakeLive([live_header("dd", "ws-conf", 1)], {})  # persisted delegation_depth 1, live none
    assert code_of(reader(reads, "ws-conf", live=depth).list_sessions) == "SESSION_QUERY_SOURCE_CONFLICT"
    # Origin and preset are not immutable: the live header's win.
    meta = FakeLive([live_header("meta", "ws-conf", 1, origin="subagent", agent_preset="other")], {})
    listing = {s.header.session_id: s for s in reader(reads, "ws-conf", live=meta).list_sessions()}
    assert (listing["meta"].live, listing["meta"].persisted) == (True, True)
    assert listing["meta"].header.origin == "subagent"


def test_without_persistence_only_live_sessions_exist(reads: Harness) -> None:
    live = FakeLive([live_header("shared", "ws-merge")], {"shared": live_log("shared", "ws-merge")})
    r = reader(reads, "ws-merge", live=live, persistence=False)
    assert [(s.header.session_id, s.live, s.persisted) for s in r.list_sessions()] == [
        ("shared", True, False)
    ]
    assert code_of(r.read_surface, "durable") == "SESSION_QUERY_SESSION_NOT_FOUND"
    assert code_of(reader(reads, "ws-corrupt", persistence=False).read_event, "corrupt", 0) == (
        "SESSION_QUERY_SESSION_NOT_FOUND"
    )


def test_live_reads_do_not_need_the_projection(reads: Harness) -> None:
    live = FakeLive([live_header("live", "ws-merge")], {"live": live_log("live", "ws-merge")})
    scope = Scope.workspace("ws-merge")
    for broken in (reads.unreachable_reader(scope, live=live), reads.untouchable_reader(scope, live=live)):
        assert [e.surface for e in broken.list_events("live")] == ["shadowed", "shadowed", "current"]
        assert broken.trace_event("live", 1).replaced_by == 2
        assert broken.read_event("live", 1).target.text == "live one"
    failing = reads.unreachable_reader(scope, live=live)
    assert code_of(failing.list_sessions) == "SESSION_QUERY_PERSISTENCE_FAILED"
    assert code_of(failing.list_events, "durable") == "SESSION_QUERY_PERSISTENCE_FAILED"
    assert code_of(failing.read_event, "durable", 0, 1, 1) == "SESSION_QUERY_PERSISTENCE_FAILED"
    # A lineage needs the listing, even for a live session.
    assert code_of(failing.trace_session, "live") == "SESSION_QUERY_PERSISTENCE_FAILED"
    assert code_of(failing.trace_session, "durable") == "SESSION_QUERY_PERSISTENCE_FAILED"


def test_a_damaged_event_document_is_a_corrupt_session(harness: Harness) -> None:
    harness.append_all(
        session("ws-corrupt", "corrupt", 0, [("user/message", "fine"), ("user/message", "ok")])
    )
    harness.index()
    harness.damage_event("corrupt", 1, schema=99)
    with pytest.raises(SessionQueryError) as caught:
        reader(harness, "ws-corrupt").list_events("corrupt")
    assert caught.value.code == "SESSION_QUERY_CORRUPT_SESSION" and "schema" in str(caught.value)


def test_an_unreachable_or_missing_projection_fails_persistence(reads: Harness) -> None:
    scope = Scope.workspace("ws-corrupt")
    assert (
        code_of(reads.unreachable_reader(scope).list_events, "corrupt") == "SESSION_QUERY_PERSISTENCE_FAILED"
    )
    never_built = reads.unprojected_reader(scope)
    assert code_of(never_built.read_event, "corrupt", 0) == "SESSION_QUERY_PERSISTENCE_FAILED"
    assert code_of(never_built.list_sessions) == "SESSION_QUERY_PERSISTENCE_FAILED"


def test_reads_merge_the_logs_own_appends(harness: Harness) -> None:
    """The entry log this process appends through is itself a live source: its appends read before
    the indexer has them, merged with the projection."""
    header = hdr("ws-ryw", "ryw-1", 0)
    first, second = session(
        "ws-ryw", "ryw-1", 0, [("user/message", "persisted first"), ("user/message", "live")]
    )[1:]
    harness.append_all([header, first])
    harness.index()
    log = harness.log()
    log.append(header).result(timeout=30)  # the agent announces its session again after a restart
    log.append(second).result(timeout=30)
    log.flush(timeout=30)
    r = reader(harness, "ws-ryw", live=log)
    window = r.read_event("ryw-1", 1, before=1)
    assert [e.seq for e in window.events] == [0, 1] and window.target.text == "live"
    assert [e.seq for e in r.list_events("ryw-1")] == [0, 1]
    (record,) = r.list_sessions()
    assert record.live and record.persisted
