"""What the model reads from the read, trace and cross-session tools. Pure.

Plain text built for a model: one line per event or session, seqs always shown (so the model can
follow up with an exact read), user text flattened to one line and bounded, lists capped with a
line that says how many were left out.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Final

import orjson

from backscroll.query.contract import SessionMatch
from backscroll.query.moments import utc_text
from backscroll.query.reads import (
    EventRecordView,
    EventTraceResult,
    ReadEventResult,
    SessionHeader,
    SessionTrace,
)

__all__ = [
    "flat",
    "render_event_trace",
    "render_grouped",
    "render_read",
    "render_session_trace",
]

SUMMARY_CHARS: Final = 160
MAX_LIST_ITEMS: Final = 200
MAX_LINEAGE_LINES: Final = 200


def flat(text: str | None, limit: int = SUMMARY_CHARS) -> str:
    """One line: control characters and whitespace runs become one space, cut with "…"."""
    if not text:
        return ""
    line = " ".join("".join(ch if ch.isprintable() else " " for ch in text[: limit * 4]).split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _time(value: datetime | None) -> str:
    return utc_text(value) if value is not None else "time unknown"


def _numbers(values: Sequence[int]) -> str:
    if not values:
        return "none"
    shown = ", ".join(str(v) for v in values[:MAX_LIST_ITEMS])
    more = len(values) - MAX_LIST_ITEMS
    return shown + (f", … ({more} more)" if more > 0 else "")


def _event_line(event: EventRecordView) -> str:
    who = f" ({event.role})" if event.role else ""
    tool = f" [{flat(event.tool_name, 64)}]" if event.tool_name else ""
    turn = f", turn {event.turn}" if event.turn is not None else ""
    head = f"[seq {event.seq}{turn}] {event.type}{who}{tool} · {event.surface} · {_time(event.time)}"
    text = flat(event.text)
    return f"{head} — {text}" if text else head


def _session_line(header: SessionHeader) -> str:
    parts = [f"session {header.session_id}"]
    if header.created_at is not None:
        parts.append(f"created {_time(header.created_at)}")
    if header.title:
        parts.append(f"title {flat(header.title, 80)!r}")
    if header.agent_preset:
        parts.append(f"agent {flat(header.agent_preset, 40)}")
    return ", ".join(parts)


def _piece(text: str, offset: int, max_text_chars: int) -> int:
    """Where the piece of ``text`` from ``offset`` ends: at most ``max_text_chars`` characters, and
    fewer when JSON escapes (control characters, quotes) would make it longer than that."""
    end = min(len(text), offset + max_text_chars)
    while end - offset > 1:
        escaped = len(orjson.dumps(text[offset:end]).decode("utf-8")) - 2
        if escaped <= max_text_chars:
            break
        end = offset + max(1, (end - offset) * max_text_chars // escaped)
    return end


def render_read(result: ReadEventResult, *, max_text_chars: int, offset: int = 0) -> str:
    """The window as one summary line per event, then the full target as fenced JSON. A text longer
    than ``max_text_chars`` is shown one piece at a time, from character ``offset``; a line before
    the JSON says which characters are shown and the ``offset`` that reads the next piece."""
    header = result.header
    target = result.target
    lines = [
        f"Session {header.session_id}: events {result.start_seq}–{result.end_seq} around seq {target.seq}.",
        "",
    ]
    lines.extend(("→ " if event.seq == target.seq else "  ") + _event_line(event) for event in result.events)
    document = target.model_dump(mode="json", exclude_none=True)
    text = target.text
    end = _piece(text, offset, max_text_chars)
    piece_note = ""
    if offset > 0 or end < len(text):
        document["text"] = text[offset:end]
        more = len(text) - end
        piece_note = f"Text: characters {offset} to {end} of {len(text)} shown"
        if more:
            document["text_cut"] = f"{more} more characters not shown; read on with offset={end}"
            piece_note += f"; {more} more: call again with offset={end} to read the next piece."
        else:
            piece_note += "; this is the end of the text."
    body = orjson.dumps(document, option=orjson.OPT_INDENT_2).decode("utf-8")
    lines.append("")
    if piece_note:
        lines.append(piece_note)
    lines.extend([f"Event seq {target.seq} in full:", "```json", body.replace("```", "`\u200b``"), "```"])
    return "\n".join(lines)


def _lineage_lines(trace: SessionTrace) -> list[str]:
    lines: list[str] = []
    for node in trace.descendants:
        if len(lines) >= MAX_LINEAGE_LINES:
            lines.append(f"  … ({len(trace.descendants) - MAX_LINEAGE_LINES} more descendants)")
            break
        lines.append("  " * node.depth + "- " + _session_line(node.session.header))
    return lines


def render_session_trace(trace: SessionTrace) -> str:
    """Ancestors nearest first, whether the lineage is complete, and the descendant tree. A parent
    outside the scope is a boundary: its id is never shown."""
    target = trace.target.header
    lines = [f"Lineage of {_session_line(target)}.", ""]
    if trace.ancestors:
        lines.append("Ancestors (nearest first):")
        lines.extend(f"  {i}. {_session_line(a.header)}" for i, a in enumerate(trace.ancestors, 1))
    else:
        lines.append("Ancestors: none you can read.")
    if trace.complete:
        root = trace.root.header.session_id if trace.root is not None else target.session_id
        lines.append(f"The lineage is complete; its root is session {root}.")
    else:
        lines.append(
            "The lineage continues beyond what you can read (a parent session is missing or outside "
            "your scope)."
        )
    lines.append("")
    if trace.descendants:
        lines.append(f"Descendants ({len(trace.descendants)}, children sorted by creation time):")
        lines.extend(_lineage_lines(trace))
    else:
        lines.append("Descendants: none.")
    return "\n".join(lines)


def render_event_trace(result: EventTraceResult) -> str:
    """Replacement edges and citation edges of one event, kept apart."""
    target = result.target
    chain = " → ".join(str(seq) for seq in result.replacement_chain[:MAX_LIST_ITEMS])
    lines = [
        f"Session {result.header.session_id}, event:",
        _event_line(target),
        "",
        f"Replaced by: {'seq ' + str(result.replaced_by) if result.replaced_by is not None else 'nothing'}",
    ]
    if result.replacement_chain:
        lines.append(f"Replacement chain to the final replacement: {chain}")
    lines.extend(
        [
            f"Events this one replaced: {_numbers(result.replaced_event_seqs)}",
            f"Sources it cites: {_numbers(result.source_event_seqs)}",
            f"Later events citing it directly: {_numbers(result.derived_event_seqs)}",
        ]
    )
    return "\n".join(lines)


def _match_head(match: SessionMatch) -> str:
    parts = [f"seq {match.seq}"]
    if match.turn is not None:
        parts.append(f"turn {match.turn}")
    parts.append(match.role or match.kind)
    head = f"{', '.join(parts)} · score {match.score:.1f}"
    if match.created_at is not None:
        head += f" · {_time(match.created_at)}"
    return head


def render_grouped(
    groups: Iterable[tuple[str, Sequence[SessionMatch]]],
    *,
    query_echo: str,
    searched: int,
    partial: bool,
    capped: bool,
    noun: str = "workspace",
) -> str:
    """Sessions in order of their best hit: hit count, the best hit's line and excerpt."""
    groups = list(groups)
    if not groups:
        if searched == 0:
            return f"No searchable history yet in this {noun}."
        return f'No other session has entries matching "{query_echo}" (searched {searched} entries).'
    total = sum(len(matches) for _, matches in groups)
    sessions = "session" if len(groups) == 1 else "sessions"
    if partial:
        header = (
            f"No entry matched every word; closest matches in {len(groups)} {sessions} "
            f"(searched {searched} entries):"
        )
    else:
        hits = "match" if total == 1 else "matches"
        header = f"{total} {hits} in {len(groups)} {sessions} (searched {searched} entries):"
    lines = [header]
    for session_id, matches in groups:
        best = matches[0]
        count = "1 match" if len(matches) == 1 else f"{len(matches)} matches"
        others = ", ".join(str(m.seq) for m in matches[1:6])
        more = f"; also seq {others}{' …' if len(matches) > 6 else ''}" if others else ""
        lines.extend(
            ["", f"[session {session_id}] {count}{more}", f"best: {_match_head(best)}", best.excerpt]
        )
    lines.append("")
    if capped:
        lines.append("(result cap reached — narrow the query to see the rest)")
    lines.append("Read one with session_event_read (session_id, seq, before, after).")
    return "\n".join(lines)
