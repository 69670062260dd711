"""The batch processor's counters: seq gaps as they open, and the bytes of the projected values."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from backscroll.indexer.sqlite.runner import embedded_runner
from backscroll.ingest.sqlite.log import SQLiteEntryLog


def _event(seq: int, session: str = "s-1") -> dict[str, Any]:
    return {
        "v": 1,
        "kind": "event",
        "workspace_id": "ws-1",
        "session_id": session,
        "seq": seq,
        "time": f"2026-11-30T10:00:{seq:02d}+00:00",
        "type": "user/message",
        "role": "user",
        "surface": {"op": "append"},
        "text": f"entry {seq}",
    }


def test_gaps_are_counted_as_they_open_and_value_bytes_once_per_event(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    # Seqs 0, 3 (a gap of 2), 1 (fills part of it: no new gap), 7 (a gap of 3), 3 again (a replay).
    records = [_event(0), _event(3), _event(1), _event(7), _event(3), _event(0, "s-2")]
    with SQLiteEntryLog(path) as log:
        log.append_many(records)
    with embedded_runner(path, batch_max=2) as runner:
        stats = runner.run(until_idle=True)
        registry = runner.metrics.registry
        assert stats.consumed == len(records)
        assert registry.get_sample_value("backscroll_indexer_seq_gaps_total") == 5
    conn = sqlite3.connect(path)
    try:
        size = sum(len(value) for (value,) in conn.execute("SELECT value FROM log"))
    finally:
        conn.close()
    assert registry.get_sample_value("backscroll_indexer_bulk_bytes_total") == size
