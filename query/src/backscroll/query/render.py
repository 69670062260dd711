"""Renders a search result as the text the model reads. Pure."""

from __future__ import annotations

from backscroll.query.contract import SessionQueryResult
from backscroll.query.moments import utc_text

__all__ = ["render_result"]

_ECHO_CHARS = 200


def _echo(query: str) -> str:
    """The query as echoed back: one line (control characters and whitespace runs become one
    space) and bounded, so a 10,000-character query cannot blow up the output."""
    flat = " ".join("".join(" " if not ch.isprintable() else ch for ch in query).split())
    return flat if len(flat) <= _ECHO_CHARS else flat[: _ECHO_CHARS - 1] + "…"


def render_result(result: SessionQueryResult, query: str, *, scope_noun: str = "session") -> str:
    """``K matches (searched N entries):`` then a ``[seq S, turn T, ROLE] score X.X · time`` line and
    the excerpt per match; the two empty texts keep the Go reference's meaning."""
    if not result.matches:
        if result.searched == 0:
            return f"No searchable history yet in this {scope_noun}."
        return f'No entries matched "{_echo(query)}" (searched {result.searched} entries).'
    count = len(result.matches)
    noun = "match" if count == 1 else "matches"
    if result.partial:
        header = f"No entry matched every word; {count} closest {noun} (searched {result.searched} entries):"
    else:
        header = f"{count} {noun} (searched {result.searched} entries):"
    lines = [header]
    # Across several sessions a seq alone is ambiguous: name the session.
    several = len({m.session_id for m in result.matches}) > 1 or scope_noun != "session"
    for match in result.matches:
        parts = [f"session {match.session_id}", f"seq {match.seq}"] if several else [f"seq {match.seq}"]
        if match.turn is not None:
            parts.append(f"turn {match.turn}")
        parts.append(match.role or match.kind)
        line = f"[{', '.join(parts)}] score {match.score:.1f}"
        if match.created_at is not None:
            line += f" · {utc_text(match.created_at)}"
        lines.extend(["", line, match.excerpt])
    if result.next_cursor:
        lines.extend(["", "(more matches exist; narrow the query to see others)"])
    return "\n".join(lines).rstrip("\n")
