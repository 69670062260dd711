"""The on-demand catch-up benchmark (benchmarks/bench_catch_up.py) runs each side in a process
of its own on a copy of the appended file, and puts the other checkout's code first when asked. A
tiny file, so the bulk path itself does not start; no timing is checked."""

from __future__ import annotations

from pathlib import Path

import pytest

from backscroll.cli.workload import demo_records
from backscroll.ingest.sqlite.log import SQLiteEntryLog
from benchmarks.bench_catch_up import main

ROOT = Path(__file__).resolve().parents[2]


def test_both_sides_catch_up_a_copy_and_the_file_stays_unindexed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    appended = tmp_path / "appended.db"
    records = list(demo_records(workspaces=1, sessions=2))
    with SQLiteEntryLog(appended) as log:
        log.append_many(records)
    before = appended.read_bytes()
    assert main([str(appended), "--runs", "1", "--against", str(ROOT)]) == 0
    out = capsys.readouterr().out.splitlines()
    events = sum(1 for record in records if record["kind"] == "event")
    assert [line.split()[0] for line in out[:2]] == ["against", "this"]
    assert all(f"({events} indexed" in line for line in out[:2])
    assert out[2].startswith(f"against: {ROOT}:") and out[3].startswith(f"this: {ROOT}:")
    assert appended.read_bytes() == before
