"""A small history the SDK adapter tests search: session ``s-1`` of workspace ``ws-agents``."""

from __future__ import annotations

from typing import Any

WS = "ws-agents"


def history() -> list[dict[str, Any]]:
    """A header and two messages; seq 0 holds the Zürich forecast."""

    def event(seq: int, role: str, text: str) -> dict[str, Any]:
        return {
            "v": 1,
            "kind": "event",
            "workspace_id": WS,
            "session_id": "s-1",
            "seq": seq,
            "type": f"{role}/message",
            "role": role,
            "surface": {"op": "append"},
            "time": f"2026-11-30T10:00:{seq:02d}Z",
            "text": text,
        }

    header = {
        "v": 1,
        "kind": "header",
        "workspace_id": WS,
        "session_id": "s-1",
        "created_at": "2026-11-30T10:00:00Z",
    }
    return [
        header,
        event(0, "user", "The revenue forecast for Zürich is 4.1M."),
        event(1, "assistant", "Certificate rotation is scheduled for Friday."),
    ]
