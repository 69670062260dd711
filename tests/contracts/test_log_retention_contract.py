"""The log retention contract: a log nothing was deleted from reports itself complete, with no
finite retention, and rebuilds without ``allow_truncated`` — on every backend (the embedded file
has no retention at all; a topic backscroll creates keeps every record)."""

from __future__ import annotations

from typing import Any

from backscroll.backends import LogRetention

from .conftest import Harness


def _records(session: str, events: int) -> list[dict[str, Any]]:
    header = {
        "v": 1,
        "kind": "header",
        "workspace_id": "ws-ret",
        "session_id": session,
        "created_at": "2026-11-05T10:00:00Z",
    }
    return [
        header,
        *(
            {
                "v": 1,
                "kind": "event",
                "workspace_id": "ws-ret",
                "session_id": session,
                "seq": seq,
                "type": "user/message",
                "role": "user",
                "surface": {"op": "append"},
                "time": f"2026-11-05T10:00:{seq:02d}Z",
                "text": f"line {seq} of {session}",
            }
            for seq in range(events)
        ),
    ]


def test_a_log_nothing_was_deleted_from_is_complete_and_kept_for_good(harness: Harness) -> None:
    harness.append_all(_records("s-ret", 3))
    retention = harness.backend.log_retention()
    assert retention == LogRetention()
    assert retention.complete and retention.warnings() == []


def test_a_complete_log_rebuilds_without_allow_truncated(harness: Harness) -> None:
    harness.append_all(_records("s-ret", 3))
    assert harness.index().indexed == 3
    rebuilt = harness.backend.rebuild()
    assert rebuilt.report.stats.indexed == 3 and "truncated" not in rebuilt.summary
