"""The embedded projection and indexer's own behaviour: position and documents in one transaction
(crash anywhere → all or nothing), several indexers taking turns, and the stored read model."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import orjson
import pytest

from backscroll.cli.workload import demo_records
from backscroll.indexer.document import fold_event
from backscroll.indexer.sqlite.runner import embedded_runner
from backscroll.indexer.sqlite.view import SQLiteView, clear_projection, index_tokens, time_us
from backscroll.ingest import parse_record
from backscroll.ingest.sqlite.log import SQLiteEntryLog
from backscroll.query import Scope, SessionQueryRequest
from backscroll.query.scoring import score_text
from backscroll.query.sqlite.provider import SQLiteProvider

RECORDS = list(demo_records(workspaces=3, sessions=6))


def _append(path: Path, records: list[dict[str, Any]]) -> None:
    with SQLiteEntryLog(path) as log:
        log.append_many(records)


def _state(path: Path) -> dict[str, Any]:
    """Everything the projection holds, comparable across runs (row ids excluded)."""
    conn = sqlite3.connect(path)
    try:
        events = conn.execute(
            "SELECT session_id || ':' || seq AS doc_id, surface_state, content_hash, text, doc "
            "FROM events ORDER BY doc_id"
        ).fetchall()
        sessions = conn.execute("SELECT session_id, doc FROM sessions ORDER BY session_id").fetchall()
        terms = conn.execute("SELECT ws, term FROM vocab ORDER BY ws, term").fetchall()
        indexed = conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'indexer_positions'").fetchone()
        position = conn.execute("SELECT offset FROM indexer_positions").fetchall() if indexed else []
        letters = conn.execute("SELECT count(*) FROM dead_letters").fetchone()[0] if indexed else 0
    finally:
        conn.close()
    return {"events": events, "sessions": sessions, "terms": terms, "position": position, "letters": letters}


def _events(path: Path) -> list[tuple[str, str, bytes]]:
    """Event documents without the log offsets (which differ when the log is written differently)."""
    out = []
    for doc_id, state, _, _, doc in _state(path)["events"]:
        body = orjson.loads(doc)
        body.pop("offset", None)
        body.pop("partition", None)
        out.append((doc_id, state, orjson.dumps(body, option=orjson.OPT_SORT_KEYS)))
    return out


def test_the_indexer_projects_the_log_and_stores_its_position(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    _append(path, RECORDS)
    with embedded_runner(path, batch_max=40) as indexer:
        assert indexer.source.lag() == {0: len(RECORDS)}
        stats = indexer.run_until_idle()
        assert indexer.source.lag() == {0: 0}
        assert stats.batches == -(-len(RECORDS) // 40)
        assert stats.consumed == len(RECORDS)
        assert indexer.step() == 0
    state = _state(path)
    events = [r for r in RECORDS if r["kind"] == "event"]
    assert len(state["events"]) == len(events)
    assert state["position"] == [(len(RECORDS),)]
    shadowed = {doc_id for doc_id, surface, *_ in state["events"] if surface == "shadowed"}
    assert shadowed, "the workload's compactions shadow earlier entries"


def test_a_failure_mid_batch_leaves_nothing_and_the_retry_completes(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    _append(path, RECORDS)
    with embedded_runner(path) as indexer:
        real_write = indexer.view.write

        def failing_write(actions: Any) -> Any:
            real_write(actions)  # the writes happen ...
            raise RuntimeError("power cut")  # ... and the batch dies before its commit

        indexer.view.write = failing_write  # type: ignore[method-assign]
        with pytest.raises(RuntimeError):
            indexer.step()
        assert _state(path)["events"] == [] and _state(path)["position"] == []
        indexer.view.write = real_write  # type: ignore[method-assign]
        indexer.run_until_idle()
    once = tmp_path / "once.db"
    _append(once, RECORDS)
    with embedded_runner(once) as indexer:
        indexer.run_until_idle()
    assert _events(path) == _events(once)


_CRASHER = textwrap.dedent(
    """
    import os, sys
    from backscroll.indexer.sqlite.runner import embedded_runner
    indexer = embedded_runner(sys.argv[1], batch_max=int(sys.argv[2]))
    indexer.step()  # one batch committed
    real = indexer.view.write
    def die(actions):
        real(actions)
        os._exit(9)  # killed after writing, before committing
    indexer.view.write = die
    indexer.step()
    """
)


def test_a_killed_indexer_loses_and_duplicates_nothing(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    _append(path, RECORDS)
    proc = subprocess.run([sys.executable, "-c", _CRASHER, str(path), "50"], timeout=120, check=False)
    assert proc.returncode == 9
    assert _state(path)["position"] == [(50,)]
    with embedded_runner(path) as indexer:
        stats = indexer.run_until_idle()
    assert stats.consumed == len(RECORDS) - 50 and stats.replays == 0 and stats.dead_lettered == 0
    once = tmp_path / "once.db"
    _append(once, RECORDS)
    with embedded_runner(once) as indexer:
        indexer.run_until_idle()
    assert _events(path) == _events(once)
    assert _state(path)["sessions"] == _state(once)["sessions"]


def test_indexers_taking_turns_restore_each_others_sessions(tmp_path: Path) -> None:
    path, once = tmp_path / "turns.db", tmp_path / "once.db"
    _append(path, RECORDS)
    _append(once, RECORDS)
    with embedded_runner(path, batch_max=7) as a, embedded_runner(path, batch_max=11) as b:
        while a.step() + b.step():
            pass
    with embedded_runner(once) as indexer:
        indexer.run_until_idle()
    assert _events(path) == _events(once)
    assert _state(path)["sessions"] == _state(once)["sessions"]


_INDEXER = textwrap.dedent(
    """
    import sys, time
    from backscroll.indexer.sqlite.runner import embedded_runner
    with embedded_runner(sys.argv[1], batch_max=5, busy_timeout_s=60) as indexer:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            indexer.run_until_idle()
            if indexer.source.position >= int(sys.argv[2]):
                break
            time.sleep(0.01)
    """
)


def test_concurrent_indexer_processes_while_appending(tmp_path: Path) -> None:
    path, once = tmp_path / "shared.db", tmp_path / "once.db"
    with SQLiteEntryLog(path) as log:
        log.end_offset()
    procs = [
        subprocess.Popen([sys.executable, "-c", _INDEXER, str(path), str(len(RECORDS))]) for _ in range(3)
    ]
    with SQLiteEntryLog(path) as log:
        for record in RECORDS:
            log.append(record)
    assert [p.wait(timeout=120) for p in procs] == [0, 0, 0]
    _append(once, RECORDS)
    with embedded_runner(once) as indexer:
        indexer.run_until_idle()
    assert _events(path) == _events(once)
    assert _state(path)["sessions"] == _state(once)["sessions"]
    assert _state(path)["letters"] == 0


def test_dead_letters_keep_the_envelope(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    with SQLiteEntryLog(path) as log:
        log.append_raw(b"x", b"{broken")
    with embedded_runner(path) as indexer:
        assert indexer.run_until_idle().dead_lettered == 1
        (letter,) = indexer.dead_letters.list()
    assert letter["topic"] == "log" and letter["offset"] == 1 and letter["partition"] == 0
    assert letter["value"] == b"{broken" and letter["key"] == b"x" and letter["dlq_offset"] == 1
    assert letter["error_class"] == "invalid_record" and letter["field"] == "record"


def test_write_records_equals_the_log_pipeline(tmp_path: Path) -> None:
    direct, piped = tmp_path / "direct.db", tmp_path / "piped.db"
    with SQLiteView(direct) as view:
        written = view.write_records(parse_record(r) for r in RECORDS)
        assert view.count_events() == sum(1 for r in RECORDS if r["kind"] == "event")
        assert written > view.count_events()  # plus the updates that shadow, plus the sessions
    _append(piped, RECORDS)
    with embedded_runner(piped) as indexer:
        indexer.run_until_idle()
    assert _events(direct) == _events(piped)


def test_forget_session_removes_its_documents_from_every_index(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    _append(path, RECORDS)
    with embedded_runner(path) as indexer:
        indexer.run_until_idle()
    with SQLiteProvider(Scope.workspace("ws-1"), path) as provider:
        assert provider.search(SessionQueryRequest(query="Paulo")).matches
    with SQLiteView(path) as view:
        assert view.forget_session("sess-001") == 24
        assert view.forget_session("sess-004") == 24
    with SQLiteProvider(Scope.workspace("ws-1"), path) as provider:
        result = provider.search(SessionQueryRequest(query="Paulo"))
        assert result.matches == () and result.searched == 0
    conn = sqlite3.connect(path)
    try:
        for table in ("events_words", "events_tri"):
            hits = conn.execute(f"SELECT count(*) FROM {table} WHERE {table} MATCH 'paulo'").fetchone()[0]
            assert hits == 0
    finally:
        conn.close()


def test_index_tokens_are_the_scoring_tokens() -> None:
    text = "Đơn hàng of acct_9931 — Ærøskøbing, ZÜRICH's café"
    tokens = index_tokens(text)
    assert tokens == ["don", "hang", "of", "acct", "9931", "aeroskobing", "zurich", "s", "cafe"]
    assert score_text(text, ["zurich"], ["zurich"]) is not None


def test_time_us_compares_instants() -> None:
    assert time_us("2026-11-01T08:00:00+05:00") < time_us("2026-11-01T06:00:00+00:00")
    assert time_us("2026-11-01T03:00:00+00:00") == time_us("2026-11-01T08:00:00+05:00")


@pytest.mark.parametrize(
    "source",
    [
        {"seq": 3, "type": "user/message", "surface_op": "append"},
        {
            "seq": 4,
            "type": "assistant/message",
            "surface_op": "replace",
            "replace_start": 1,
            "replace_end": 2,
            "sources": [1, 2],
        },
        {
            "seq": 5,
            "type": "tool/result",
            "surface_op": "append",
            "tool_name": "grep",
            "role": "tool",
            "attrs": {"call_id": "c1"},
        },
        {"seq": 6, "type": "turn/start"},
    ],
)
def test_stored_documents_map_to_fold_events(source: dict[str, Any]) -> None:
    """Both views restore session state through document.fold_event."""
    event = fold_event(source)
    assert (event.seq, event.type) == (source["seq"], source["type"])
    op = source.get("surface_op")
    expected = {"append": "append", None: None}.get(
        op, (source.get("replace_start"), source.get("replace_end"))
    )
    assert event.surface == expected
    assert (event.content_key is not None) == (source["type"] == "tool/result")


def test_every_vocabulary_term_has_its_trigram_row_once_whatever_the_cache_knew(tmp_path: Path) -> None:
    """Terms are added by set differences against a per-process cache: a second indexer (empty
    cache) meeting terms stored by the first adds each missing term once, with its trigram row,
    and a rolled-back batch's terms are written again by the next one."""
    path = tmp_path / "vocab.db"
    _append(path, RECORDS[: len(RECORDS) // 2])
    with embedded_runner(path, batch_max=7) as first:
        first.run(until_idle=True)
    _append(path, RECORDS[len(RECORDS) // 2 :])
    with SQLiteView(path) as view:
        with pytest.raises(RuntimeError), view.transaction():
            view._add_vocab({"w-rolled": {"kept"}})
            raise RuntimeError("rolled back")
        with view.transaction():
            view._add_vocab({"w-rolled": {"kept"}})
    with embedded_runner(path, batch_max=5) as second:
        second.run(until_idle=True)
    conn = sqlite3.connect(path)
    try:
        vocab = conn.execute("SELECT tid, ws, term FROM vocab ORDER BY tid").fetchall()
        pairs = [(ws, term) for _, ws, term in vocab]
        assert len(pairs) == len(set(pairs))
        words = {
            (str(r["workspace_id"]), w) for r in RECORDS if r.get("text") for w in index_tokens(r["text"])
        }
        assert set(pairs) == {w for w in words if len(w[1]) <= 66} | {("w-rolled", "kept")}
        for tid, _, term in vocab:
            found = conn.execute(
                "SELECT count(*) FROM vocab_tri WHERE vocab_tri MATCH ? AND rowid = ?",
                (f'"{f" {term} "[:3]}"', tid),
            ).fetchone()[0]
            assert found == 1, term
    finally:
        conn.close()


def test_an_indexer_running_through_another_process_rebuild_stores_every_term_again(tmp_path: Path) -> None:
    """A long-running indexer caches the terms it stored. Another process empties the projection
    and resets the position (``rebuild``): the indexer sees the position move, refreshes its
    view and stores every term again as it projects the log anew."""
    path = tmp_path / "rebuilt.db"
    _append(path, RECORDS)
    with embedded_runner(path, batch_max=7) as runner:
        runner.run(until_idle=True)
        conn = sqlite3.connect(path)
        try:
            before = set(conn.execute("SELECT ws, term FROM vocab").fetchall())
            with conn:
                clear_projection(conn)
                conn.execute("DELETE FROM indexer_positions WHERE name = 'default'")
            assert conn.execute("SELECT count(*) FROM vocab").fetchone()[0] == 0
            runner.run(until_idle=True)
            assert set(conn.execute("SELECT ws, term FROM vocab").fetchall()) == before
        finally:
            conn.close()
