"""A realistic multi-session agent workload for the demo and the end-to-end tests. Pure."""

from __future__ import annotations

import random
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

__all__ = ["demo_records"]

_TOPICS = [
    ("revenue forecast for Q3 came in at 4.2M, up 12% on the Zürich office", "finance"),
    ("the São Paulo warehouse reported 1,284 delayed orders (Đơn hàng trễ)", "ops"),
    ("run_sql returned 1,284 rows; top account by spend was acct_9931 at $41,208.55", "finance"),
    ("deploy of build v2.14.3 to eu-west-1 failed: ImagePullBackOff on worker pods", "infra"),
    ("Nguyễn Thị Hương approved the café menu change for the Kraków branch", "ops"),
    ("latency p99 regressed to 830 ms after enabling the new connection pooler", "infra"),
    ("customer churn was flat in October; Ærøskøbing pilot kept 97% of accounts", "finance"),
    ("migrated the billing cron to Kubernetes CronJob with concurrencyPolicy Forbid", "infra"),
]
_FILLER = [
    "Let me check the logs first.",
    "I will summarise what we found so far.",
    "Can you double-check the numbers before we send them?",
    "Looking at the dashboard now.",
    "That matches what the previous run showed.",
    "Please open a ticket for the follow-up.",
]


def demo_records(
    *, workspaces: int = 3, sessions: int = 9, events_per_session: int = 24, seed: int = 7
) -> Iterator[dict[str, Any]]:
    """Wire-format dicts: per session a header, then turns of user/assistant messages, tool calls
    and results, and one compaction that replaces the oldest messages with a summary."""
    rng = random.Random(seed)
    base = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
    for s in range(sessions):
        ws = f"ws-{s % workspaces}"
        sid = f"sess-{s:03d}"
        t = base + timedelta(minutes=7 * s)
        yield {
            "v": 1,
            "kind": "header",
            "workspace_id": ws,
            "session_id": sid,
            "created_at": t.isoformat(),
            "title": f"agent run {s}",
            "agent_preset": "analyst",
            **(
                {
                    "parent_session_id": f"sess-{s - workspaces:03d}",
                    "delegation_depth": 1,
                    "origin": "subagent",
                }
                if s >= workspaces
                else {}
            ),
        }
        fact, _area = _TOPICS[s % len(_TOPICS)]
        seq, turn = 0, 0
        surface: list[int] = []
        while seq < events_per_session:
            t += timedelta(seconds=rng.randint(2, 40))
            step = seq % 6
            ev: dict[str, Any] = {
                "v": 1,
                "kind": "event",
                "workspace_id": ws,
                "session_id": sid,
                "seq": seq,
                "time": t.isoformat(),
                "turn": turn,
            }
            if step == 0:
                ev.update(
                    type="user/message",
                    role="user",
                    surface={"op": "append"},
                    text=f"{rng.choice(_FILLER)} What happened with: {fact.split(';')[0]}?",
                )
            elif step == 1:
                ev.update(
                    type="tool/call",
                    role="assistant",
                    tool_name="run_sql",
                    text='{"sql": "select account, sum(spend) from billing group by 1"}',
                )
            elif step == 2:
                ev.update(
                    type="tool/result",
                    role="tool",
                    tool_name="run_sql",
                    surface={"op": "append"},
                    text=fact if rng.random() < 0.5 else f"{rng.choice(_FILLER)} {fact}",
                )
            elif step == 3:
                ev.update(
                    type="assistant/message",
                    role="assistant",
                    surface={"op": "append"},
                    text=f"Summary: {fact}. {rng.choice(_FILLER)}",
                )
            elif step == 4 and len(surface) >= 3 and seq > 12:
                ev.update(
                    type="assistant/message",
                    role="assistant",
                    surface={"op": "replace", "start": surface[0], "end": surface[2]},
                    sources=surface[:3],
                    text=f"Compacted earlier turns: {fact}",
                )
                surface = [seq, *surface[3:]]
                seq += 1
                yield ev
                continue
            else:
                ev.update(type="turn/end" if step == 5 else "step/start")
                if step == 5:
                    turn += 1
                seq += 1
                yield ev
                continue
            if "surface" in ev:
                surface.append(seq)
            seq += 1
            yield ev
