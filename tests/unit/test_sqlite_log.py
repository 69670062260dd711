"""The embedded entry log's own behaviour (the shared surface is in tests/contracts): one WAL file,
offsets in commit order, atomic multi-record appends, several threads and processes at once."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import Any

import orjson
import pytest

from backscroll.ingest import LogUnavailable, Position, RecordRejected
from backscroll.ingest.sqlite.log import SQLiteEntryLog, connect, read_log


def _event(sid: str, seq: int, **extra: Any) -> dict[str, Any]:
    return {
        "v": 1,
        "kind": "event",
        "workspace_id": "ws",
        "session_id": sid,
        "seq": seq,
        "type": "user/message",
        "role": "user",
        "surface": {"op": "append"},
        "time": "2026-11-02T10:00:00Z",
        "text": f"t{seq}",
        **extra,
    }


def _rows(path: Path) -> list[tuple[int, str | None, bytes | None, bytes | None]]:
    conn = sqlite3.connect(path)
    try:
        return conn.execute("SELECT offset, session_id, key, value FROM log ORDER BY offset").fetchall()
    finally:
        conn.close()


def test_one_wal_file_with_offsets_from_one(tmp_path: Path) -> None:
    path = tmp_path / "nested" / "dir" / "log.db"
    with SQLiteEntryLog(path) as log:
        handles = [log.append(_event("s", seq)) for seq in range(3)]
        assert all(h.done() and h.exception() is None for h in handles)
        assert [h.result() for h in handles] == [Position(0, 1), Position(0, 2), Position(0, 3)]
        assert log.end_offset() == 3
        assert [r.offset for r in log.read(after=1)] == [2, 3]
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    finally:
        conn.close()
    rows = _rows(path)
    assert [(o, sid, key) for o, sid, key, _ in rows] == [(1, "s", b"s"), (2, "s", b"s"), (3, "s", b"s")]
    assert rows[0][3] is not None and orjson.loads(rows[0][3])["seq"] == 0


def test_append_many_is_validated_first_and_committed_whole(tmp_path: Path) -> None:
    path = tmp_path / "log.db"
    with SQLiteEntryLog(path) as log:
        with pytest.raises(RecordRejected):
            log.append_many([_event("s", 0), {**_event("s", 1), "seq": "x"}, _event("s", 2)])
        assert log.end_offset() == 0
        handles = log.append_many([_event("s", 0), _event("s", 1)])
        assert [h.result().offset for h in handles] == [1, 2]


def test_batch_offsets_match_the_rows_across_processes_batches_and_raw_appends(tmp_path: Path) -> None:
    path = tmp_path / "log.db"
    with SQLiteEntryLog(path) as first, SQLiteEntryLog(path, live_max_per_session=0) as second:
        handles = first.append_many([_event("a", seq) for seq in range(3)])
        handles += second.append_many([_event("b", seq) for seq in range(4)])
        handles.append(first.append(_event("a", 3)))
        raw = second.append_raw(b"x", b"{}")
        handles += first.append_many([_event("c", 0), _event("a", 4)])
        assert not second.live.live_sessions()  # no live view kept: nothing to read back
        assert sorted(first.live.live_sessions()) == ["a", "c"]
    rows = _rows(path)
    by_offset = {o: (sid, orjson.loads(value or b"{}").get("seq")) for o, sid, _, value in rows}
    assert raw.offset == 9 and by_offset[9] == ("x", None)
    expected = [
        ("a", 0),
        ("a", 1),
        ("a", 2),
        ("b", 0),
        ("b", 1),
        ("b", 2),
        ("b", 3),
        ("a", 3),
        ("c", 0),
        ("a", 4),
    ]
    assert [by_offset[h.result().offset] for h in handles] == expected


def test_raw_appends_keep_any_bytes(tmp_path: Path) -> None:
    path = tmp_path / "log.db"
    with SQLiteEntryLog(path) as log:
        assert log.append_raw(b"\xff\xfe", b"not json") == Position(0, 1)
        assert log.append_raw(None, None) == Position(0, 2)
    conn = connect(path)
    try:
        records = read_log(conn, 0)
    finally:
        conn.close()
    assert [(r.key, r.value, r.topic, r.partition) for r in records] == [
        (b"\xff\xfe", b"not json", "log", 0),
        (None, None, "log", 0),
    ]
    assert _rows(path)[0][1] is None  # a key that is not UTF-8 has no session id


def test_a_locked_file_is_log_unavailable_after_the_busy_timeout(tmp_path: Path) -> None:
    path = tmp_path / "log.db"
    with SQLiteEntryLog(path, busy_timeout_s=0.05) as log:
        log.append(_event("s", 0))
        holder = connect(path)
        try:
            holder.execute("BEGIN IMMEDIATE")
            with pytest.raises(LogUnavailable):
                log.append(_event("s", 1))
            holder.execute("ROLLBACK")
        finally:
            holder.close()
        assert log.append(_event("s", 1)).result().offset == 2


def test_threads_share_one_log(tmp_path: Path) -> None:
    path = tmp_path / "log.db"
    errors: list[BaseException] = []
    with SQLiteEntryLog(path) as log:

        def work(n: int) -> None:
            try:
                for seq in range(50):
                    log.append(_event(f"t{n}", seq))
            except BaseException as err:  # pragma: no cover - reported below
                errors.append(err)

        threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert errors == []
    assert [r[0] for r in _rows(path)] == list(range(1, 201))


_WRITER = textwrap.dedent(
    """
    import sys
    from backscroll.ingest.sqlite.log import SQLiteEntryLog
    path, sid, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
    with SQLiteEntryLog(path, busy_timeout_s=60) as log:
        for seq in range(count):
            log.append({"v": 1, "kind": "event", "workspace_id": "ws", "session_id": sid, "seq": seq,
                        "type": "user/message", "role": "user", "surface": {"op": "append"},
                        "time": "2026-11-02T10:00:00Z", "text": f"process {sid} entry {seq}"})
    """
)


def test_several_processes_append_to_one_file(tmp_path: Path) -> None:
    path = tmp_path / "log.db"
    with SQLiteEntryLog(path) as log:  # create the file first, as an installed agent host would
        log.end_offset()
    procs = [subprocess.Popen([sys.executable, "-c", _WRITER, str(path), f"p{n}", "150"]) for n in range(4)]
    assert [p.wait(timeout=120) for p in procs] == [0, 0, 0, 0]
    rows = _rows(path)
    assert [r[0] for r in rows] == list(range(1, 601))  # contiguous: commit order is offset order
    for n in range(4):
        seqs = [orjson.loads(r[3] or b"")["seq"] for r in rows if r[1] == f"p{n}"]
        assert seqs == list(range(150))
