"""The embedded bulk catch-up: the same projection as the serial runner, and a hand-over to the
runner (nothing lost, nothing twice) at every case it leaves to it."""

from __future__ import annotations

import sqlite3
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest

from backscroll.cli.workload import demo_records
from backscroll.indexer.runner import Runner
from backscroll.indexer.sqlite import catchup as sqlite_catchup
from backscroll.indexer.sqlite.catchup import SQLiteCatchUp
from backscroll.indexer.sqlite.runner import embedded_runner
from backscroll.ingest.sqlite.log import SQLiteEntryLog


def _cjk_session() -> list[dict[str, Any]]:
    texts = ["東京の会議は月曜日です", "parse_config で 失敗した", "the 会議 moved to acct_571"]
    return [
        {
            "v": 1,
            "kind": "event",
            "workspace_id": "ws-cjk",
            "session_id": "cjk-1",
            "seq": seq,
            "time": f"2026-11-30T10:00:0{seq}+00:00",
            "turn": 0,
            "type": "user/message",
            "role": "user",
            "surface": {"op": "append"},
            "text": text,
        }
        for seq, text in enumerate(texts)
    ]


RECORDS = [*demo_records(workspaces=3, sessions=12), *_cjk_session()]
_FTS = ("events_words", "events_tri", "events_ident", "events_cjk", "vocab_tri")


def _append(path: Path, records: list[dict[str, Any]]) -> None:
    with SQLiteEntryLog(path) as log:
        log.append_many(records)


def _projection(path: Path) -> dict[str, Any]:
    """Every row the projection holds (event row ids included), the vocabulary as a set and each
    full-text index as its terms with their documents and occurrences."""
    conn = sqlite3.connect(path)
    try:
        out: dict[str, Any] = {
            "events": conn.execute("SELECT * FROM events ORDER BY rid").fetchall(),
            "sessions": conn.execute("SELECT * FROM sessions ORDER BY session_id").fetchall(),
            "vocab": sorted(conn.execute("SELECT ws, term, len, rterm FROM vocab").fetchall()),
            "position": conn.execute("SELECT name, offset FROM indexer_positions").fetchall(),
            "letters": conn.execute(
                "SELECT log_offset, error_class FROM dead_letters ORDER BY log_offset"
            ).fetchall(),
        }
        for table in _FTS:
            conn.execute(f"CREATE VIRTUAL TABLE temp.v_{table} USING fts5vocab(main, {table}, 'row')")
            out[table] = conn.execute(f"SELECT term, doc, cnt FROM temp.v_{table} ORDER BY term").fetchall()
    finally:
        conn.close()
    return out


def _serial(path: Path) -> dict[str, Any]:
    with embedded_runner(path, batch_max=40) as runner:
        runner.run(until_idle=True)
    return _projection(path)


def _bulk_runner(path: Path, batch_max: int = 40) -> tuple[Runner, SQLiteCatchUp]:
    runner = embedded_runner(path, batch_max=batch_max)
    bulk = SQLiteCatchUp(path, runner.view.conn, batch_max=batch_max, min_backlog=0)  # type: ignore[attr-defined]
    runner.bulk = bulk
    return runner, bulk


def _twins(tmp_path: Path, prepare: Callable[[Path], None]) -> tuple[Path, Path]:
    a, b = tmp_path / "bulk.db", tmp_path / "serial.db"
    for path in (a, b):
        _append(path, RECORDS)
        prepare(path)
    return a, b


def _raw(path: Path, sql: str, *params: Any) -> None:
    conn = sqlite3.connect(path)
    try:
        conn.execute(sql, params)
        conn.commit()
    finally:
        conn.close()


def test_the_catch_up_writes_what_the_serial_runner_writes(tmp_path: Path) -> None:
    bulk_path, serial_path = _twins(tmp_path, lambda _: None)
    seen: list[int] = []
    runner, bulk = _bulk_runner(bulk_path)
    with runner:
        real_step = runner._advance

        def step() -> int:
            moved = real_step()
            assert moved == 0, "the runner's own loop had something left to project"
            return moved

        runner._advance = step  # type: ignore[method-assign]
        stats = runner.run(until_idle=True, on_batch=lambda s: seen.append(s.consumed))
    assert bulk.stopped is None
    assert stats.consumed == len(RECORDS) and stats.indexed == sum(r["kind"] == "event" for r in RECORDS)
    assert seen and seen[-1] == len(RECORDS) and seen == sorted(seen)
    # one observation per committed batch, each with the time its write took
    registry = runner.metrics.registry
    batches = registry.get_sample_value("backscroll_indexer_batch_seconds_count")
    assert batches == stats.batches == -(-len(RECORDS) // 40)
    assert (registry.get_sample_value("backscroll_indexer_batch_seconds_sum") or 0.0) > 0.0
    got, expected = _projection(bulk_path), _serial(serial_path)
    assert got["events_cjk"] and got["events_ident"], "the workload covers every full-text table"
    assert got == expected


def test_a_batch_s_events_in_several_statements_keep_their_rowids(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sqlite_catchup, "_ROWS_CHUNK", 7)  # 40-record batches: 5 full chunks and a rest
    bulk_path, serial_path = _twins(tmp_path, lambda _: None)
    runner, bulk = _bulk_runner(bulk_path)
    with runner:
        runner.run(until_idle=True)
    assert bulk.stopped is None
    assert _projection(bulk_path) == _serial(serial_path)


def test_a_build_with_few_bound_parameters_gets_shorter_statements(tmp_path: Path) -> None:
    bulk_path, serial_path = _twins(tmp_path, lambda _: None)
    runner, bulk = _bulk_runner(bulk_path)
    conn: sqlite3.Connection = runner.view.conn  # type: ignore[attr-defined]
    # 40 parameters: three 13-column event rows or ten vocabulary rows a statement
    conn.setlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER, 40)
    with runner:
        runner.run(until_idle=True)
    assert bulk.stopped is None
    assert _projection(bulk_path) == _serial(serial_path)


def test_the_checkpoint_settings_are_restored_and_the_wal_checkpointed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "s.db"
    _append(path, RECORDS)
    runner, bulk = _bulk_runner(path)
    conn: sqlite3.Connection = runner.view.conn  # type: ignore[attr-defined]

    def settings() -> list[int]:
        names = ("wal_autocheckpoint", "journal_size_limit")
        return [conn.execute(f"PRAGMA {name}").fetchone()[0] for name in names]

    own, during = settings(), []
    real_write = sqlite_catchup._write

    def write(*args: Any) -> None:
        during.append(settings())
        real_write(*args)

    monkeypatch.setattr(sqlite_catchup, "_write", write)
    with runner:
        runner.run(until_idle=True)
        after = settings()
        busy, frames, copied = conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
    assert bulk.stopped is None and during
    assert all(seen == [sqlite_catchup.CATCH_UP_CHECKPOINT_PAGES, -1] for seen in during)
    assert after == own and own[1] > 0  # the indexer's connection cuts its WAL file back
    assert busy == 0 and frames == copied  # nothing left uncopied in the WAL


def test_the_switch_interval_is_restored(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    _append(path, RECORDS)
    before = sys.getswitchinterval()
    runner, _ = _bulk_runner(path)
    with runner:
        runner.run(until_idle=True)
    assert sys.getswitchinterval() == before


def test_a_short_backlog_is_left_to_the_runner(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    _append(path, RECORDS)
    with embedded_runner(path, batch_max=40) as runner:
        bulk = SQLiteCatchUp(path, runner.view.conn, min_backlog=len(RECORDS) + 1)  # type: ignore[attr-defined]
        bulk.run(threading.Event(), lambda consumed, indexed, seconds: pytest.fail("nothing is projected"))
        assert bulk.stopped is None and runner.source.lag() == {0: len(RECORDS)}


def _invalid(path: Path) -> None:
    with SQLiteEntryLog(path) as log:
        log.append_raw(b"x", b"{broken")
    _append(path, _cjk_session()[:1])  # more records after it


def _replay(path: Path) -> None:
    _raw(path, "INSERT INTO log (session_id, key, value, time_ms) SELECT session_id, key, value, time_ms "
               "FROM log WHERE offset = 7")  # fmt: skip


def _conflict(path: Path) -> None:
    conn = sqlite3.connect(path)
    try:
        sid, key, value, ms = conn.execute(
            "SELECT session_id, key, value, time_ms FROM log WHERE offset = 9"
        ).fetchone()
        body = orjson.loads(value)
        body["text"] = "a different text under the same seq"
        conn.execute("INSERT INTO log (session_id, key, value, time_ms) VALUES (?, ?, ?, ?)",
                     (sid, key, orjson.dumps(body), ms))  # fmt: skip
        conn.commit()
    finally:
        conn.close()


@pytest.mark.parametrize(
    ("prepare", "reason"),
    [(_invalid, "an invalid record"), (_replay, "already exists"), (_conflict, "already exists")],
    ids=["invalid record", "replay", "conflict"],
)
def test_the_runner_takes_over_where_the_catch_up_stops(
    tmp_path: Path, prepare: Callable[[Path], None], reason: str
) -> None:
    bulk_path, serial_path = _twins(tmp_path, prepare)
    runner, bulk = _bulk_runner(bulk_path)
    with runner:
        stats = runner.run(until_idle=True)
    assert bulk.stopped is not None and reason in bulk.stopped
    assert stats.consumed == len(RECORDS) + 1 + (prepare is _invalid)
    got, expected = _projection(bulk_path), _serial(serial_path)
    assert got == expected
    assert got["letters"] or prepare is _replay


def test_a_write_that_fails_mid_way_loses_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bulk_path, serial_path = _twins(tmp_path, lambda _: None)
    real, calls = sqlite_catchup._write, []

    def flaky(conn: sqlite3.Connection, *args: Any) -> None:
        calls.append(1)
        if len(calls) == 3:
            conn.execute("BEGIN IMMEDIATE")
            conn.execute("DELETE FROM indexer_positions")  # undone with the batch
            conn.execute("ROLLBACK")
            raise sqlite3.OperationalError("disk I/O error")
        real(conn, *args)

    monkeypatch.setattr(sqlite_catchup, "_write", flaky)
    runner, bulk = _bulk_runner(bulk_path)
    with runner:
        stats = runner.run(until_idle=True)
    assert bulk.stopped is not None and "disk I/O error" in bulk.stopped
    assert stats.consumed == len(RECORDS) and stats.replays == 0
    assert _projection(bulk_path) == _serial(serial_path)


def test_a_position_moved_by_another_indexer_hands_over(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bulk_path, serial_path = _twins(tmp_path, lambda _: None)
    real, calls = sqlite_catchup._write, []

    def racing(*args: Any) -> None:
        calls.append(1)
        if len(calls) == 2:  # another indexer commits a batch first
            with embedded_runner(bulk_path, batch_max=10) as other:
                assert other.step() == 10
        real(*args)

    monkeypatch.setattr(sqlite_catchup, "_write", racing)
    runner, bulk = _bulk_runner(bulk_path)
    with runner:
        runner.run(until_idle=True)
    assert bulk.stopped == "another indexer moved the position"
    got, expected = _projection(bulk_path), _serial(serial_path)
    assert got == expected


def test_a_stop_keeps_what_was_committed(tmp_path: Path) -> None:
    bulk_path, serial_path = _twins(tmp_path, lambda _: None)
    stop = threading.Event()
    runner, _ = _bulk_runner(bulk_path, batch_max=20)

    def halt(consumed: int, indexed: int, seconds: float) -> None:
        stop.set()

    with runner:
        runner.bulk.run(stop, halt)  # type: ignore[union-attr]
        assert 0 < runner.source.position < len(RECORDS)  # type: ignore[attr-defined]
        runner.bulk = None
        runner.run(until_idle=True)
    assert _projection(bulk_path) == _serial(serial_path)


def test_the_commands_indexer_starts_with_the_catch_up(tmp_path: Path) -> None:
    from backscroll.backends import EmbeddedBackend

    path = tmp_path / "s.db"
    _append(path, RECORDS)
    with EmbeddedBackend(path).open_indexer() as runner:
        assert isinstance(runner.bulk, SQLiteCatchUp)
        # Larger batches than the runner's own: fewer full-text segments to merge.
        assert runner.bulk.batch_max == sqlite_catchup.CATCH_UP_BATCH_MAX > runner.batch_max
    with embedded_runner(path) as runner:
        assert runner.bulk is None
    with embedded_runner(path, bulk_catch_up=True, catch_up_batch_max=7) as runner:
        assert isinstance(runner.bulk, SQLiteCatchUp) and runner.bulk.batch_max == 7
    with pytest.raises(ValueError, match="catch_up_batch_max"):
        embedded_runner(path, bulk_catch_up=True, catch_up_batch_max=0)


def test_a_fault_before_the_catch_up_is_left_to_the_loop(tmp_path: Path) -> None:
    from backscroll.indexer.errors import SourceUnavailable

    path = tmp_path / "s.db"
    _append(path, RECORDS)
    runner, bulk = _bulk_runner(path)
    real_open, calls = runner.source.open, []

    def flaky_open() -> None:
        calls.append(1)
        if len(calls) == 1:
            raise SourceUnavailable("locked for a moment")
        real_open()

    runner.source.open = flaky_open  # type: ignore[method-assign]
    with runner:
        stats = runner.run(until_idle=True)
    assert len(calls) == 2 and stats.consumed == len(RECORDS) and bulk.stopped is None


def test_records_appended_during_the_catch_up_are_projected_once(tmp_path: Path) -> None:
    half = len(RECORDS) // 2
    bulk_path, serial_path = tmp_path / "bulk.db", tmp_path / "serial.db"
    _append(bulk_path, RECORDS[:half])
    _append(serial_path, RECORDS)
    appended = threading.Event()

    def append_the_rest() -> None:
        with SQLiteEntryLog(bulk_path) as log:
            for record in RECORDS[half:]:
                log.append_many([record])
        appended.set()

    runner, _ = _bulk_runner(bulk_path, batch_max=5)
    writer = threading.Thread(target=append_the_rest)
    with runner:
        writer.start()
        runner.run(until_idle=True)
        writer.join()
        assert appended.is_set()
        runner.run(until_idle=True)  # whatever came after the first run's end
    assert _projection(bulk_path) == _serial(serial_path)
