"""The corpus every contract suite loads: three workspaces, nine sessions, planted needles, and the
entries the default kinds must not search (non-message types, empty text, the search tool's own
calls and results). Pure; expectations are computed from it, never hard-coded twice."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

from backscroll.indexer.document import DEFAULT_KINDS

WORKSPACES = 3
SESSIONS = 9
EVENTS = 30
BASE = datetime(2026, 11, 1, tzinfo=UTC)
#: One session writes its times with a +05:00 offset: ordering must compare instants, not strings.
OFFSET_SESSION = 3

VOCAB = [
    "report",
    "deploy",
    "cluster",
    "metrics",
    "invoice",
    "budget",
    "backlog",
    "sprint",
    "review",
    "pipeline",
    "staging",
    "customer",
    "account",
    "balance",
    "migration",
    "schema",
    "rollout",
    "incident",
    "postmortem",
    "latency",
]

#: (session index, seq) -> text; every distinctive word occurs exactly once in the corpus.
NEEDLES = {
    (1, 17): "the quarterly forecast mentions Zürich and the Kraków warehouse",
    (4, 12): "Nguyễn approved the reconciliation spreadsheet yesterday",
    (6, 21): "restarted the gateway after certificate rotation in São Paulo",
    (7, 25): "the café ledger shows a discrepancy in Ærøskøbing",
}
#: Text only the non-default kinds carry (a turn marker and the search tool's own entries).
HIDDEN_WORD = "zanzibarquery"


def session(i: int) -> tuple[str, str]:
    """(workspace id, session id) of session ``i``."""
    return f"ws-{i % WORKSPACES}", f"s-{i:02d}"


def _time(i: int, seq: int) -> str:
    moment = BASE + timedelta(hours=i, seconds=seq)
    if i == OFFSET_SESSION:
        return moment.astimezone(timezone(timedelta(hours=5))).isoformat()
    return moment.isoformat()


def event(i: int, seq: int, text: str | None, *, kind: str = "user/message", **extra: Any) -> dict[str, Any]:
    ws, sid = session(i)
    record: dict[str, Any] = {
        "v": 1,
        "kind": "event",
        "workspace_id": ws,
        "session_id": sid,
        "seq": seq,
        "type": kind,
        "time": _time(i, seq),
        "turn": seq // 4,
    }
    if kind in ("user/message", "assistant/message", "tool/result"):
        record["surface"] = {"op": "append"}
    if text is not None:
        record["text"] = text
    record.update(extra)
    return record


def _event_for(i: int, seq: int, rng: random.Random) -> dict[str, Any]:
    if (i, seq) in NEEDLES:
        return event(i, seq, NEEDLES[(i, seq)], role="user")
    if seq == 5:
        return event(
            i,
            seq,
            '{"sql": "select account, sum(spend) from billing"}',
            kind="tool/call",
            role="assistant",
            tool_name="run_sql",
        )
    if seq == 6:
        return event(
            i,
            seq,
            f"run_sql returned {100 + i} rows for acct_99{i:02d}",
            kind="tool/result",
            role="tool",
            tool_name="run_sql",
        )
    if seq == 7:
        return event(i, seq, f"{HIDDEN_WORD} turn marker", kind="turn/start")
    if seq == 8:
        return event(
            i, seq, f"{HIDDEN_WORD} ledger", kind="tool/call", role="assistant", tool_name="session_query"
        )
    if seq == 9:
        return event(
            i, seq, f"{HIDDEN_WORD} results", kind="tool/result", role="tool", tool_name="session_query"
        )
    if seq == 10:
        return event(i, seq, "   ", role="user")
    role = "user" if seq % 2 == 0 else "assistant"
    return event(i, seq, " ".join(rng.choice(VOCAB) for _ in range(8)), kind=f"{role}/message", role=role)


def records() -> list[dict[str, Any]]:
    rng = random.Random(42)
    out: list[dict[str, Any]] = []
    for i in range(SESSIONS):
        ws, sid = session(i)
        out.append(
            {
                "v": 1,
                "kind": "header",
                "workspace_id": ws,
                "session_id": sid,
                "created_at": (BASE + timedelta(hours=i)).isoformat(),
                "title": f"session {i}",
            }
        )
        out.extend(_event_for(i, seq, rng) for seq in range(EVENTS))
    return out


def searchable(record: dict[str, Any]) -> bool:
    """What the default kinds search: message-bearing types with text, not the search tool's."""
    return (
        record["kind"] == "event"
        and record["type"] in DEFAULT_KINDS
        and bool((record.get("text") or "").strip())
        and record.get("tool_name") != "session_query"
    )


def instant(record: dict[str, Any]) -> datetime:
    return datetime.fromisoformat(record["time"])
