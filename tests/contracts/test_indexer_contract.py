"""The indexer contract: replays are no-ops, conflicts and invalid records are dead-lettered with the
same envelope, and good records around them are indexed — on every backend."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import orjson

from backscroll.query import Scope, SessionQueryRequest

from .conftest import Harness

_T0 = datetime(2026, 11, 2, tzinfo=UTC)


def _event(sid: str, seq: int, text: str | None = None, ws: str = "ws-f", **extra: Any) -> dict[str, Any]:
    return {
        "v": 1,
        "kind": "event",
        "workspace_id": ws,
        "session_id": sid,
        "seq": seq,
        "type": "user/message",
        "role": "user",
        "surface": {"op": "append"},
        "time": (_T0 + timedelta(seconds=seq)).isoformat(),
        "text": text if text is not None else f"message {seq} of {sid}",
        **extra,
    }


def test_replay_is_a_noop_and_a_conflict_is_dead_lettered_with_both_versions(harness: Harness) -> None:
    original = _event("c-1", 0, "the original text")
    harness.append_all([original, _event("c-1", 1)])
    assert harness.index().indexed == 2
    harness.send_raw(
        [(b"c-1", orjson.dumps(original)), (b"c-1", orjson.dumps(_event("c-1", 0, "a different text")))]
    )
    stats = harness.index()
    assert (stats.indexed, stats.replays, stats.conflicts, stats.dead_lettered) == (0, 1, 1, 1)
    (letter,) = harness.dead_letters()
    assert letter["error_class"] == "conflict" and letter["field"] == "seq" and letter["http_status"] == 409
    assert orjson.loads(letter["value"])["text"] == "a different text"
    assert letter["existing"]["text"] == "the original text"
    assert letter["envelope"] == 1 and letter["indexer_version"]
    hits = harness.provider(Scope.session("c-1")).search(SessionQueryRequest(query="original"))
    assert [m.seq for m in hits.matches] == [0]
    assert harness.provider(Scope.session("c-1")).search(SessionQueryRequest(query="different")).matches == ()


def test_indexing_twice_changes_nothing(harness: Harness) -> None:
    harness.append_all([_event("i-1", seq) for seq in range(4)])
    assert harness.index().indexed == 4
    again = harness.index()
    assert (again.indexed, again.dead_lettered) == (0, 0)
    result = harness.provider(Scope.session("i-1")).search(SessionQueryRequest(query="", limit=50))
    assert [m.seq for m in result.matches] == [3, 2, 1, 0]


HEADER = {
    "v": 1,
    "kind": "header",
    "workspace_id": "ws-f",
    "session_id": "bad-1",
    "created_at": "2026-11-02T00:00:00Z",
}


def _bad_records() -> list[tuple[str, bytes | None, bytes | None, str]]:
    good = _event("bad-1", 0)

    def mutate(**changes: Any) -> bytes:
        record = {**good, **changes}
        return orjson.dumps({k: v for k, v in record.items() if v is not ...})

    return [
        ("not json", b"bad-1", b"{not json", "record"),
        ("not an object", b"bad-1", b"[1, 2, 3]", "record"),
        ("not utf-8", b"bad-1", b"\xff\xfe\x00garbage", "record"),
        ("tombstone", b"bad-1", None, "record"),
        ("unknown version", b"bad-1", mutate(v=2), "v"),
        ("unknown kind", b"bad-1", mutate(kind="snapshot"), "kind"),
        ("missing seq", b"bad-1", mutate(seq=...), "seq"),
        ("seq is a string", b"bad-1", mutate(seq="7"), "seq"),
        ("negative seq", b"bad-1", mutate(seq=-1), "seq"),
        ("time without offset", b"bad-1", mutate(time="2026-11-02T00:00:00"), "time"),
        ("bad session id", b"bad 1", mutate(session_id="bad 1"), "session_id"),
        ("id too long", b"x" * 129, mutate(session_id="x" * 129), "session_id"),
        ("surface missing on a message", b"bad-1", mutate(surface=...), "surface"),
        ("surface on turn/start", b"bad-1", mutate(type="turn/start"), "surface"),
        ("unknown field", b"bad-1", mutate(colour="red"), "colour"),
        ("text over 1 MiB", b"bad-1", mutate(text="x" * (1024 * 1024 + 1)), "text"),
        ("header with event fields", b"bad-1", orjson.dumps({**HEADER, "seq": 3}), "seq"),
        # over the record cap as spelled, under the input limit: read, then refused for what it is
        ("oversized record", b"bad-1", b'{"v":1,"pad":"' + b"y" * (3 * 1024 * 1024 + 10) + b'"}', "kind"),
        ("key is not the session", b"other", mutate(), "key"),
        ("no key", None, mutate(), "key"),
    ]


def test_invalid_records_are_dead_lettered_and_good_ones_indexed(harness: Harness) -> None:
    bad = _bad_records()
    goods = [_event("good-1", seq) for seq in range(len(bad) + 1)]
    items: list[tuple[bytes | None, bytes | None]] = []
    for i, (_, key, value, _) in enumerate(bad):
        items.append((b"good-1", orjson.dumps(goods[i])))
        items.append((key, value))
    items.append((b"good-1", orjson.dumps(goods[-1])))
    harness.send_raw(items)
    stats = harness.index()
    assert stats.indexed == len(goods)
    assert stats.dead_lettered == len(bad)
    letters = harness.dead_letters()
    assert len(letters) == len(bad)
    # A letter keeps a value of up to 2 MiB; a longer one only by its size.
    by_content = {(e["key"], e["value_bytes"] if e["value_truncated"] else e["value"]): e for e in letters}
    for why, key, value, field in bad:
        letter = by_content[(key, value if value is None or len(value) <= 2 * 1024 * 1024 else len(value))]
        assert letter["error_class"] == "invalid_record", why
        assert letter["field"] == field, (why, letter["reason"])
        assert letter["offset"] >= 0 and letter["partition"] >= 0 and letter["indexer_version"]
    result = harness.provider(Scope.session("good-1")).search(SessionQueryRequest(query="", limit=50))
    assert result.searched == len(goods)
