"""An identifier's parts tier on the embedded backend: starting from the rarest parts finds exactly
what the intersection in SQL finds, and narrowing to the other words' entries never leaks into
closest matches."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from backscroll.indexer.sqlite.runner import embedded_runner
from backscroll.ingest.sqlite.log import SQLiteEntryLog
from backscroll.query import Scope, SessionQueryRequest
from backscroll.query.sqlite import parts as sqlite_parts
from backscroll.query.sqlite.candidates import PARTS, WordArms
from backscroll.query.sqlite.parts import parts_rowids
from backscroll.query.sqlite.provider import SQLiteProvider

T0 = datetime(2026, 11, 4, tzinfo=UTC)
WS = "ws-parts"


def _event(session: str, seq: int, text: str) -> dict[str, Any]:
    return {
        "v": 1, "kind": "event", "workspace_id": WS, "session_id": session, "seq": seq,
        "type": "user/message", "time": (T0 + timedelta(seconds=seq)).isoformat(), "text": text,
        "surface": {"op": "append"},
    }  # fmt: skip


TEXTS = [
    *(f"charged acct_{n} for the call" for n in range(40)),  # 0..39: acct and call everywhere
    "the test harness rings the call bell",  # 40: test and call, apart
    "a call to test_call_later was made",  # 41: the identifier itself
    "zzrare appears only here",  # 42
    "contest recall",  # 43: test and call inside longer words
    "acct 17 was closed",  # 44: both parts of acct_17, apart
    "tests calls",  # 45
]


@pytest.fixture(scope="module")
def path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("parts") / "parts.db"
    header = {"v": 1, "kind": "header", "workspace_id": WS, "session_id": "s-1", "created_at": T0.isoformat()}
    with SQLiteEntryLog(path) as log:
        log.append_many([header, *(_event("s-1", seq, text) for seq, text in enumerate(TEXTS))])
    with embedded_runner(path) as indexer:
        indexer.run_until_idle()
    return path


@pytest.fixture
def conn(path: Path) -> Iterator[sqlite3.Connection]:
    conn = sqlite3.connect(path)
    try:
        yield conn
    finally:
        conn.close()


def _arm(conn: sqlite3.Connection, word: str) -> Any:
    arms = WordArms(word)
    arms.expand(conn, [WS])
    (arm,) = arms.arms(PARTS)
    return arm


def _in_sql(conn: sqlite3.Connection, arm: Any) -> set[int]:
    return {rid for (rid,) in conn.execute(f"SELECT rowid FROM ({arm.sql})", arm.params)}


WORDS = ["acct_17", "test_call", "acct_99", "call_test_for", "zzrare_acct", "tests_calls"]


@pytest.mark.parametrize("word", WORDS)
@pytest.mark.parametrize(("small", "seeks"), [(2_000, 400), (3, 400), (3, 0), (0, 10_000), (0, 0)])
def test_the_rarest_parts_first_find_what_the_sql_intersection_finds(
    conn: sqlite3.Connection, monkeypatch: pytest.MonkeyPatch, word: str, small: int, seeks: int
) -> None:
    # Every branch: parts read whole, some parts common (asked by seeks, or read whole), all common.
    monkeypatch.setattr(sqlite_parts, "SMALL", small)
    monkeypatch.setattr(sqlite_parts, "SEEKS_MAX", seeks)
    arm = _arm(conn, word)
    expected = _in_sql(conn, arm)
    assert set(parts_rowids(conn, arm)) == expected
    everything = {rid for (rid,) in conn.execute("SELECT rid FROM events")}
    some = set(sorted(everything)[::2])
    assert set(parts_rowids(conn, arm, only=some)) == expected & some
    lo, hi = min(everything), min(everything) + 30
    within = set(parts_rowids(conn, arm, " WHERE rowid BETWEEN ? AND ?", (lo, hi)))
    assert within == {rid for rid in expected if lo <= rid <= hi}


def test_parts_narrowed_to_the_other_words_never_leak_into_closest_matches(path: Path) -> None:
    with SQLiteProvider(Scope.workspace(WS), path, scan_max_rows=0) as provider:
        # Every word: only the entry with zzrare could hold both, and it has no test or call.
        both = provider.search(SessionQueryRequest(query="zzrare test_call", limit=10))
        assert both.partial  # no entry has both: closest matches, which must include the parts
        seqs = {m.seq for m in both.matches}
        assert {41, 42, 40} <= seqs
        # The same words again on the same data (the engine's hits are reused).
        again = provider.search(SessionQueryRequest(query="zzrare test_call", limit=10))
        assert [m.seq for m in again.matches] == [m.seq for m in both.matches]
        plain = provider.search(SessionQueryRequest(query="test_call", limit=10))
        assert {41, 40, 43} <= {m.seq for m in plain.matches}
