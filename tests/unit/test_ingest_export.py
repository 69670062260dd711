"""``backscroll export`` on the embedded backend, and read commands that must not create the file."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from backscroll.ingest import LogNotFound, SQLiteEntryLog
from backscroll.ingest.export import LogExport
from backscroll.ingest.sqlite.export import export_sqlite


def _event(sid: str, seq: int, ws: str = "ws-x", text: str = "") -> dict[str, Any]:
    return {
        "v": 1,
        "kind": "event",
        "workspace_id": ws,
        "session_id": sid,
        "seq": seq,
        "type": "user/message",
        "role": "user",
        "surface": {"op": "append"},
        "time": "2026-11-02T10:00:00Z",
        "text": text or f"{sid} entry {seq} [/x] \u00e9",
    }


def _header(sid: str, ws: str = "ws-x") -> dict[str, Any]:
    return {
        "v": 1,
        "kind": "header",
        "workspace_id": ws,
        "session_id": sid,
        "created_at": "2026-11-02T09:00:00Z",
    }


def _cli(path: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("BACKSCROLL_") or k in ("BACKSCROLL_REQUIRE_STACK",)
    }
    env.update(BACKSCROLL_BACKEND="embedded", BACKSCROLL_SQLITE_PATH=str(path), NO_COLOR="1", COLUMNS="200")
    return subprocess.run(
        [sys.executable, "-m", "backscroll.cli.main", *args],
        env=env,
        cwd=cwd,
        capture_output=True,
        timeout=120,
    )


@pytest.fixture
def filled(tmp_path: Path) -> tuple[Path, list[bytes]]:
    path = tmp_path / "log.db"
    with SQLiteEntryLog(path) as log:
        log.append(_header("a"))
        log.append(_header("b"))
        for seq in range(3):
            log.append(_event("a", seq))
            log.append(_event("b", seq))
        log.append(_event("c", 0, ws="ws-other"))
        log.append_raw(b"a", b"not json")  # a foreign writer's garbage: skipped, counted
        stored = [r.value or b"" for r in log.read(0, 100)]
    return path, stored


def test_export_a_session_yields_its_original_bytes_in_log_order(filled: tuple[Path, list[bytes]]) -> None:
    path, stored = filled
    job = LogExport(session_id="a")
    records = list(export_sqlite(path, job))
    wanted = [v for v in stored if v.startswith(b"{") and orjson.loads(v)["session_id"] == "a"]
    assert [r.value for r in records] == wanted
    assert [r.offset for r in records] == sorted(r.offset for r in records)
    assert (job.exported, job.skipped) == (4, 1)


def test_export_a_workspace_interleaves_its_sessions_by_offset(filled: tuple[Path, list[bytes]]) -> None:
    path, _ = filled
    records = list(export_sqlite(path, LogExport(workspace_id="ws-x")))
    sessions = [orjson.loads(r.value or b"")["session_id"] for r in records]
    assert sessions == ["a", "b", "a", "b", "a", "b", "a", "b"]


def test_export_cli_round_trips_through_append(filled: tuple[Path, list[bytes]], tmp_path: Path) -> None:
    path, stored = filled
    done = _cli(path, tmp_path, "export", "a")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines == [v for v in stored if v.startswith(b"{") and orjson.loads(v)["session_id"] == "a"]
    assert b"exported 4 records of session a" in done.stderr and b"1 values" in done.stderr
    out = tmp_path / "ws.jsonl"
    done = _cli(path, tmp_path, "export", "--workspace", "ws-x", "--output", str(out))
    assert done.returncode == 0, done.stderr
    assert len(out.read_bytes().splitlines()) == 8
    copy = tmp_path / "copy.db"
    done = _cli(copy, tmp_path, "append", str(out))
    assert done.returncode == 0, done.stderr
    assert _cli(copy, tmp_path, "export", "--workspace", "ws-x").stdout == out.read_bytes()


def test_export_of_an_unknown_session_or_without_a_scope_fails(
    filled: tuple[Path, list[bytes]], tmp_path: Path
) -> None:
    path, _ = filled
    done = _cli(path, tmp_path, "export", "nope")
    assert done.returncode == 1 and b"no records of session nope" in done.stderr
    done = _cli(path, tmp_path, "export")
    assert done.returncode == 2 and b"--workspace" in done.stderr


def test_export_of_a_missing_file_is_an_error_and_creates_nothing(tmp_path: Path) -> None:
    path = tmp_path / "typo" / "log.db"
    with pytest.raises(LogNotFound):
        list(export_sqlite(path, LogExport(session_id="a")))
    assert not path.parent.exists()


@pytest.mark.parametrize(
    "args",
    [
        ("export", "s-1"),
        ("export", "--workspace", "w"),
        ("search", "hello", "--workspace", "w"),
        ("sessions", "--workspace", "w"),
        ("read", "s-1", "0"),
        ("trace", "s-1"),
    ],
)
def test_read_commands_never_create_the_file_or_its_folders(tmp_path: Path, args: tuple[str, ...]) -> None:
    path = tmp_path / "missing" / "dir" / "backscroll.db"
    done = _cli(path, tmp_path, *args)
    assert done.returncode != 0
    assert str(path).encode() in done.stderr.replace(b"\n", b"")
    assert b"Traceback" not in done.stderr
    assert not (tmp_path / "missing").exists()


def test_read_commands_refuse_another_applications_file_untouched(tmp_path: Path) -> None:
    import sqlite3

    path = tmp_path / "theirs.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE invoices (id INTEGER PRIMARY KEY)")
    conn.commit()
    conn.close()
    before = path.read_bytes()
    for args in (("export", "s"), ("search", "x", "-w", "w"), ("append", "-")):
        done = (
            _cli(path, tmp_path, *args)
            if args[0] != "append"
            else subprocess.run(
                [sys.executable, "-m", "backscroll.cli.main", "append", "-"],
                env={**os.environ, "BACKSCROLL_BACKEND": "embedded", "BACKSCROLL_SQLITE_PATH": str(path)},
                input=orjson.dumps(_event("s", 0)) + b"\n",
                capture_output=True,
                timeout=120,
            )
        )
        assert done.returncode != 0, args
        assert b"another application" in done.stderr.replace(b"\n", b" "), done.stderr
        assert b"Traceback" not in done.stderr
    assert path.read_bytes() == before
