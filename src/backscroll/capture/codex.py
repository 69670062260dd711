"""Codex rollouts (``~/.codex/sessions/YYYY/MM/DD/rollout-<time>-<session>.jsonl``) as entries.

A line is ``{"timestamp", "type", "payload"}`` with ``type``:

* ``session_meta`` (id, cwd, originator, cli_version, …) → the session's header, and a
  ``codex/session_meta`` entry with the scalar fields in attrs;
* ``response_item`` with ``payload.type`` ``message`` (role user → ``user/message``, assistant →
  ``assistant/message``, developer/system → ``system/message``), ``function_call`` /
  ``custom_tool_call`` / ``local_shell_call`` → ``tool/call``, ``function_call_output`` /
  ``custom_tool_call_output`` → ``tool/result`` (the call's tool name, ``attrs.call_id``),
  ``reasoning`` → ``assistant/thinking`` (its summary text only with
  ``BACKSCROLL_CAPTURE_THINKING``);
* ``compacted`` → a ``user/message`` holding the summary that replaces the whole surface and cites
  what it replaced;
* ``event_msg`` → ``codex/event/<kind>``, ``turn_context`` → ``codex/turn_context`` (each user
  message starts a turn),
  anything else → ``codex/<type>``: the scalar fields in attrs, the message text when there is one.

Older rollouts without ``payload`` (a bare first line with ``id``, items at the top level) are read
the same way.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Final

from backscroll.capture.claude_code import line_json
from backscroll.capture.context import Context, find_transcripts
from backscroll.capture.entries import clean_id, clean_type, parse_time

__all__ = ["Codex"]

_SESSION_IN_NAME: Final = re.compile(r"([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$", re.I)
_CALLS: Final = frozenset(("function_call", "custom_tool_call", "local_shell_call"))
_OUTPUTS: Final = frozenset(("function_call_output", "custom_tool_call_output"))
_ITEMS: Final = frozenset(("message", "reasoning", *_CALLS, *_OUTPUTS))


def _scalars(payload: dict[str, Any], skip: frozenset[str] = frozenset()) -> dict[str, Any]:
    return {
        k: v for k, v in payload.items() if k not in skip and (v is None or isinstance(v, str | int | float))
    }


def _content_text(content: Any) -> tuple[str | None, int]:
    """The text blocks of a Codex message (``input_text``/``output_text``) and its image count."""
    if isinstance(content, str):
        return content, 0
    texts: list[str] = []
    images = 0
    for block in content if isinstance(content, list) else []:
        if not isinstance(block, dict):
            continue
        if isinstance(block.get("text"), str):
            texts.append(block["text"])
        elif "image" in str(block.get("type")):
            images += 1
    return ("\n\n".join(texts) if texts else None), images


def _output_text(output: Any) -> str | None:
    if output is None or isinstance(output, str):
        return output
    if isinstance(output, dict) and isinstance(output.get("content"), str):
        return str(output["content"])
    return line_json(output)


class Codex:
    """The Codex rollout format."""

    name = "codex"

    def default_dir(self) -> Path:
        return Path.home() / ".codex" / "sessions"

    def transcripts(self, root: Path) -> list[Path]:
        return find_transcripts(root, "rollout-*.jsonl")

    def default_session(self, path: Path) -> str:
        found = _SESSION_IN_NAME.search(path.stem)
        return found.group(1).lower() if found else clean_id(path.stem)

    def map_line(self, ctx: Context, number: int, obj: dict[str, Any], notes: dict[str, Any]) -> None:
        kind, payload = obj.get("type"), obj.get("payload")
        if not isinstance(payload, dict):  # an older rollout: the item itself is the line
            payload = obj
            if kind in _ITEMS:
                kind, payload = "response_item", obj
            elif kind is None and "id" in obj:
                kind = "session_meta"
        time = parse_time(obj.get("timestamp")) or parse_time(payload.get("timestamp"))
        sid = ctx.default_session
        cwd = payload.get("cwd") if kind == "session_meta" and isinstance(payload.get("cwd"), str) else None
        batch = ctx.batch
        state = batch.session(sid, workspace_id=ctx.workspace(cwd), time=time, origin="codex")
        first = state.next_seq
        attrs: dict[str, Any] = {**notes, "line": number}
        if kind == "response_item":
            self._item(ctx, sid, payload, time, attrs)
        elif kind == "compacted":
            text = payload.get("message")
            batch.event(
                sid,
                "user/message",
                time=time,
                role="user",
                text=text if isinstance(text, str) else None,
                surface="compact",
                attrs={"compact_summary": True, **attrs},
            )
        elif kind == "turn_context":
            batch.event(sid, "codex/turn_context", time=time, attrs={**_scalars(payload), **attrs})
        elif kind == "event_msg":
            message = payload.get("message")
            batch.event(
                sid,
                f"codex/event/{clean_type(str(payload.get('type')))}",
                time=time,
                text=message if isinstance(message, str) else None,
                attrs={**_scalars(payload, frozenset(("message",))), **attrs},
            )
        elif kind == "session_meta":
            batch.event(
                sid,
                "codex/session_meta",
                time=time,
                attrs={**_scalars(payload, frozenset(("instructions",))), **attrs},
            )
        if state.next_seq == first:
            batch.event(
                sid,
                f"codex/{clean_type(str(kind))}",
                time=time,
                text=line_json(obj)[: 64 * 1024],
                attrs=attrs,
            )

    def _item(self, ctx: Context, sid: str, item: dict[str, Any], time: Any, attrs: dict[str, Any]) -> None:
        batch = ctx.batch
        state = batch.sessions[sid]
        kind = item.get("type")
        if kind == "message":
            text, images = _content_text(item.get("content"))
            extra = {"images": images} if images else {}
            role = item.get("role")
            if role in ("user", "assistant"):
                if role == "user" and text:
                    state.turn += 1
                batch.event(
                    sid,
                    f"{role}/message",
                    time=time,
                    role=str(role),
                    text=text,
                    surface="append",
                    attrs={**extra, **attrs},
                )
            else:
                batch.event(
                    sid,
                    "system/message",
                    time=time,
                    role="system",
                    text=text,
                    attrs={"codex_role": role, **extra, **attrs},
                )
        elif kind in _CALLS:
            name = str(item.get("name") or ("local_shell" if kind == "local_shell_call" else "unknown"))
            call_id = str(item.get("call_id") or item.get("id") or "")
            if call_id:
                state.remember_call(call_id, name)
            arguments = item.get("arguments", item.get("input", item.get("action")))
            text = arguments if isinstance(arguments, str) else line_json(arguments)
            batch.event(
                sid,
                "tool/call",
                time=time,
                role="assistant",
                tool_name=name,
                text=text,
                attrs={"call_id": call_id, **attrs},
            )
        elif kind in _OUTPUTS:
            call_id = str(item.get("call_id") or "")
            output = item.get("output")
            failed = isinstance(output, dict) and output.get("success") is False
            batch.event(
                sid,
                "tool/result",
                time=time,
                role="tool",
                text=_output_text(output),
                tool_name=state.calls.pop(call_id, None),
                surface="append",
                attrs={"call_id": call_id, "is_error": failed, **attrs},
            )
        elif kind == "reasoning":
            summary = item.get("summary")
            texts = (
                [s.get("text") for s in summary if isinstance(s, dict)] if isinstance(summary, list) else []
            )
            kept = "\n\n".join(t for t in texts if isinstance(t, str)) if ctx.settings.thinking else None
            batch.event(
                sid,
                "assistant/thinking",
                time=time,
                role="assistant",
                text=kept or None,
                attrs={"thinking_kept": bool(kept), **attrs},
            )
        else:
            batch.event(
                sid,
                f"codex/{clean_type(str(kind))}",
                time=time,
                text=line_json(item)[: 64 * 1024],
                attrs={**_scalars(item), **attrs},
            )
