"""What the embedded engine reuses between calls (counts, typo candidates, placed entries,
scores) is dropped as soon as another connection commits, and an idle catch-up never waits."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from backscroll.backends import EmbeddedBackend
from backscroll.indexer.sqlite.runner import embedded_runner
from backscroll.ingest.sqlite.log import SQLiteEntryLog
from backscroll.query import Scope, SessionQueryRequest
from backscroll.query.bounded import Bounded
from backscroll.query.engine import Corpus
from backscroll.query.sqlite import provider as sqlite_provider
from backscroll.query.sqlite.memo import SnapshotMemo
from backscroll.query.sqlite.provider import SQLiteProvider

T0 = datetime(2026, 11, 4, tzinfo=UTC)


def _event(session: str, seq: int, text: str, ws: str = "ws-a") -> dict[str, Any]:
    return {
        "v": 1, "kind": "event", "workspace_id": ws, "session_id": session, "seq": seq,
        "type": "user/message", "time": (T0 + timedelta(seconds=seq)).isoformat(), "text": text,
        "surface": {"op": "append"},
    }  # fmt: skip


def _header(session: str, ws: str = "ws-a") -> dict[str, Any]:
    return {"v": 1, "kind": "header", "workspace_id": ws, "session_id": session, "created_at": T0.isoformat()}


def _index(path: Path) -> None:
    with embedded_runner(path) as indexer:
        indexer.run_until_idle()


def test_bounded_forgets_the_oldest_and_a_new_data_version_forgets_everything() -> None:
    bounded: Bounded[int] = Bounded(2)
    bounded.put("a", 1)
    bounded.put("b", 2)
    bounded.put("a", 3)  # refreshed: now the newest
    bounded.put("c", 4)
    assert (bounded.get("a"), bounded.get("b"), bounded.get("c")) == (3, None, 4)
    memo = SnapshotMemo()
    memo.check((1, 7))
    memo.scores("q")[5] = 1.5
    memo.placed("f")[5] = (1, "s", False)
    memo.counts.put("k", Corpus(1, 1, 1, True, {}))
    memo.lengths.put(("ws", 6), ["abcdef"])
    memo.check((1, 7))
    assert memo.scores("q") == {5: 1.5} and memo.placed("f") and memo.counts.get("k") is not None
    assert memo.lengths.get(("ws", 6)) == ["abcdef"]
    memo.check((1, 8))
    assert memo.scores("q") == {} and memo.placed("f") == {} and memo.counts.get("k") is None
    assert memo.lengths.get(("ws", 6)) is None


def test_a_write_by_another_connection_is_seen_by_the_next_search(tmp_path: Path) -> None:
    path = tmp_path / "memo.db"
    with SQLiteEntryLog(path) as log:
        log.append_many([_header("s-1"), *(_event("s-1", i, f"ledger entry {i} ledger") for i in range(30))])
    _index(path)
    request = SessionQueryRequest(query="ledger", limit=5)
    typo = SessionQueryRequest(query="ledgr entry", limit=5)
    # scan_max_rows=0: the index path, which keeps counts, candidates and scores between calls.
    with SQLiteProvider(Scope.workspace("ws-a"), path, scan_max_rows=0) as provider:
        first = provider.search(request)
        assert first.searched == 30 and len(first.matches) == 5
        assert provider.search(typo).matches
        with SQLiteEntryLog(path) as log:
            log.append_many(
                [_header("s-2"), *(_event("s-2", 100 + i, "ledger ledger ledger ledgers") for i in range(3))]
            )
        _index(path)
        second = provider.search(request)
        assert second.searched == 33
        # Three occurrences outrank two: the new entries come first, scored afresh.
        assert [m.session_id for m in second.matches[:3]] == ["s-2"] * 3
        assert second.matches[0].score > first.matches[0].score
        assert provider.search(typo).searched == 33


def test_an_idle_catch_up_does_not_wait_for_a_poll_interval(tmp_path: Path) -> None:
    path = tmp_path / "idle.db"
    with SQLiteEntryLog(path) as log:
        log.append_many([_header("s-1"), _event("s-1", 0, "hello")])
    slept: list[float] = []
    with embedded_runner(path, sleep=slept.append) as indexer:
        assert indexer.catch_up() == 2
        assert indexer.catch_up() == 0
        with SQLiteEntryLog(path) as log:
            log.append(_event("s-1", 1, "again"))
        assert indexer.catch_up() == 1
    assert slept == []
    # The backend's providers catch up before each read the same way.
    with EmbeddedBackend(path).open_provider(Scope.workspace("ws-a")) as provider:
        assert provider.search(SessionQueryRequest(query="again")).matches


def _three_workspaces(tmp_path: Path) -> Path:
    """Three workspaces of three sessions, each entry holding one of five near words."""
    path = tmp_path / "members.db"
    words = ("ledger", "ledgers", "hedge", "legend", "edger")
    records: list[dict[str, Any]] = []
    for ws in ("ws-a", "ws-b", "ws-c"):
        for s in range(3):
            session = f"{ws}-s{s}"
            records.append(_header(session, ws))
            records += [_event(session, i, f"{words[(i + s) % 5]} note {i}", ws) for i in range(40)]
    with SQLiteEntryLog(path) as log:
        log.append_many(records)
    _index(path)
    return path


def test_narrowing_hits_to_the_workspace_s_entries_gives_the_same_pages(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A common word's hits span every workspace; once placing them costs more than reading the
    # scope's entries, those are read and the hits narrowed to them (_narrow_to_scope). Forced on
    # and off: same pages.
    path = _three_workspaces(tmp_path)
    pages: dict[str, list[list[tuple[str, int]]]] = {}
    for name, most, cost in (("lookups", 0, 2), ("members", 10**9, 10**9)):
        monkeypatch.setattr(sqlite_provider, "_MEMBERS_MAX", most)
        monkeypatch.setattr(sqlite_provider, "_LOOKUP_COST", cost)
        with SQLiteProvider(Scope.workspace("ws-b"), path, scan_max_rows=0) as provider:
            results = [
                provider.search(SessionQueryRequest(query=q, limit=7))
                for q in ("ledger", "ledgr", "note", "edgre note", "hedge 12")
            ]
            pages[name] = [[(m.session_id, m.seq) for m in result.matches] for result in results]
            members = provider.engine._memo.members.get(("ws-b",))
            assert members is not None or name == "lookups"
            if members is not None:  # every hit kept is in the scope
                kept = list(provider.engine._memo.hits._items.values())
                assert kept and all(hits.members is members for hits in kept)
                assert all(set(best) <= members for hits in kept for best in hits.best)
    assert pages["members"] == pages["lookups"]
    assert all(page and all(sid.startswith("ws-b-") for sid, _ in page) for page in pages["members"])


def test_a_workspace_s_entries_are_read_once_the_lookups_would_pay_for_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Rent or buy: a first search places its hits one by one; once those lookups and the next
    # search's hits would cost more than reading the scope's entries, the entries are read.
    path = _three_workspaces(tmp_path)
    monkeypatch.setattr(sqlite_provider, "_LOOKUP_COST", 1)
    with SQLiteProvider(Scope.workspace("ws-b"), path, scan_max_rows=0) as provider:
        memo = provider.engine._memo
        first = provider.search(SessionQueryRequest(query="hedge", limit=5))
        size = memo.sizes.get(("scope", None))
        assert size is not None and first.matches
        assert memo.members.get(("ws-b",)) is None
        placed_first = memo.lookups  # the file's "hedge" entries, every workspace's
        assert 0 < placed_first < size
        provider.search(SessionQueryRequest(query="legend", limit=5))
        members = memo.members.get(("ws-b",))
        assert members is not None and len(members) == size
        lookups = memo.lookups
        again = provider.search(SessionQueryRequest(query="ledger", limit=5))
        assert again.matches and all(m.session_id.startswith("ws-b-") for m in again.matches)
        # As many "ledger" entries as "hedge" ones in the file, but only the scope's are placed.
        assert 0 < memo.lookups - lookups < placed_first
