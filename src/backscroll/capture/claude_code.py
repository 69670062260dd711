"""Claude Code transcripts (``~/.claude/projects/<project>/<session>.jsonl``) as entries.

A line is one JSON object with ``type`` ``user``, ``assistant``, ``system``, ``summary`` or
another kind, and (for messages) ``uuid``, ``parentUuid``, ``sessionId``, ``timestamp``, ``cwd``,
``isSidechain`` and ``message`` (``role``, ``content``: text or a list of blocks ``text``,
``thinking``, ``tool_use``, ``tool_result``, ``image``, …). How each becomes entries:

* user text → ``user/message``; each ``tool_result`` block → ``tool/result`` with the tool's name
  (from its call) and ``attrs.call_id``, ``attrs.is_error``; a compaction summary
  (``isCompactSummary``) → a ``user/message`` that replaces the whole surface and cites every
  entry it replaced in ``sources``;
* assistant text → ``assistant/message``; ``tool_use`` → ``tool/call`` (arguments as JSON text);
  ``thinking`` → ``assistant/thinking`` (its text only with ``BACKSCROLL_CAPTURE_THINKING``);
* ``system`` with ``subtype: compact_boundary`` → ``compaction/boundary`` (trigger and tokens in
  attrs); other system lines → ``system/message``; ``summary`` lines → ``session/summary``;
* images and other blocks → counted and named in the entry's attrs; any other line type →
  ``claude/<type>`` holding the line's JSON (nothing is dropped);
* sidechain (subagent) lines → a child session ``<session>:agent-<agentId>`` whose header names
  the parent; a session resumed from another (its first line continues a line captured in another
  session) names that session as its parent (origin ``resume``). A line already captured (same
  ``uuid``, e.g. copied into a resumed session's file) is not captured again.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

import orjson

from backscroll.capture.context import Context, find_transcripts
from backscroll.capture.entries import Parent, clean_id, clean_type, parse_time

__all__ = ["ClaudeCode", "line_json"]

#: Text kept of a line stored whole as metadata.
_META_TEXT_BYTES: Final = 64 * 1024
_KNOWN: Final = frozenset(
    [
        "type",
        "uuid",
        "parentUuid",
        "logicalParentUuid",
        "sessionId",
        "timestamp",
        "cwd",
        "isSidechain",
        "agentId",
        "message",
        "toolUseResult",
        "isCompactSummary",
        "isMeta",
        "subtype",
        "compactMetadata",
        "content",
        "level",
        "summary",
        "leafUuid",
        "userType",
        "version",
        "gitBranch",
        "requestId",
        "slug",
        "isVisibleInTranscriptOnly",
    ]
)


def line_json(obj: Any) -> str:
    """A line's JSON as text (for lines kept whole as metadata)."""
    return orjson.dumps(obj, default=str).decode("utf-8")


def _blocks(content: Any) -> list[Any]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if isinstance(content, list):
        return content
    return [] if content is None else [content]


def _result_text(content: Any) -> tuple[str | None, int]:
    """A tool result's text and the number of images in it."""
    if content is None:
        return None, 0
    if isinstance(content, str):
        return content, 0
    texts: list[str] = []
    images = 0
    for block in _blocks(content):
        if isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str):
            texts.append(block["text"])
        elif isinstance(block, dict) and block.get("type") == "image":
            images += 1
        else:
            texts.append(line_json(block))
    return "\n".join(texts), images


class ClaudeCode:
    """The Claude Code transcript format."""

    name = "claude-code"

    def default_dir(self) -> Path:
        return Path.home() / ".claude" / "projects"

    def transcripts(self, root: Path) -> list[Path]:
        return find_transcripts(root, "*.jsonl")

    def default_session(self, path: Path) -> str:
        # <project>/<session>/subagents/agent-<id>.jsonl belongs to <session>'s subagent.
        if path.parent.name == "subagents" and path.stem.startswith("agent-"):
            return f"{clean_id(path.parent.parent.name)}:{clean_id(path.stem)}"
        return clean_id(path.stem)

    def map_line(self, ctx: Context, number: int, obj: dict[str, Any], notes: dict[str, Any]) -> None:
        uuid = obj.get("uuid") if isinstance(obj.get("uuid"), str) else None
        if uuid is not None and ctx.seen(uuid) is not None:
            ctx.duplicates += 1
            return
        session_id, parent = self._session(ctx, obj, uuid)
        batch = ctx.batch
        time = parse_time(obj.get("timestamp"))
        cwd = obj.get("cwd") if isinstance(obj.get("cwd"), str) else None
        workspace = ctx.workspace(cwd)
        if parent is not None and (known := batch.known(parent.session_id)) is not None:
            workspace = known.workspace_id
        state = batch.session(
            session_id, workspace_id=workspace, time=time, parent=parent, origin="claude-code"
        )
        first = state.next_seq
        attrs: dict[str, Any] = {**notes, "line": number}
        for key, name in (("uuid", "uuid"), ("parentUuid", "parent_uuid"), ("version", "version")):
            if obj.get(key) is not None:
                attrs[name] = obj[key]
        attrs.update({f"x.{k}": v for k, v in obj.items() if k not in _KNOWN})
        kind = obj.get("type")
        if kind == "user":
            self._user(ctx, session_id, obj, time, attrs)
        elif kind == "assistant":
            self._assistant(ctx, session_id, obj, time, attrs)
        elif kind == "system":
            self._system(ctx, session_id, obj, time, attrs)
        elif kind == "summary":
            leaf = obj.get("leafUuid")
            found = ctx.seen(leaf) if isinstance(leaf, str) else None
            extra = {"leaf_uuid": leaf, **({"leaf_seq": found[1]} if found else {})}
            text = obj.get("summary")
            batch.event(session_id, "session/summary", time=time, text=str(text), attrs={**attrs, **extra})
        if state.next_seq == first:  # an unknown type, or a line with nothing to say: kept whole
            text = line_json(obj)
            type_ = f"claude/{clean_type(str(kind))}"
            batch.event(session_id, type_, time=time, text=_meta_text(text, attrs), attrs=attrs)
        if uuid is not None:
            ctx.remember(uuid, session_id, first)

    def _session(self, ctx: Context, obj: dict[str, Any], uuid: str | None) -> tuple[str, Parent | None]:
        given = obj.get("sessionId")
        base = clean_id(given) if isinstance(given, str) and given else ctx.default_session.split(":")[0]
        if obj.get("isSidechain") is True:
            agent = obj.get("agentId")
            if isinstance(agent, str) and agent:
                child = f"{base}:agent-{clean_id(agent)}"
            elif ":" in ctx.default_session:
                child = ctx.default_session
            else:
                child = f"{base}:sidechain"
            return child, Parent(base, "subagent")
        if ctx.batch.known(base) is None:
            previous = obj.get("parentUuid") or obj.get("logicalParentUuid") or obj.get("leafUuid")
            found = ctx.seen(previous) if isinstance(previous, str) else None
            if found is not None and found[0] != base:
                return base, Parent(found[0], "resume", seed_length=found[1] + 1, depth=0)
        return base, None

    def _user(self, ctx: Context, sid: str, obj: dict[str, Any], time: Any, attrs: dict[str, Any]) -> None:
        batch = ctx.batch
        state = batch.sessions[sid]
        content = (obj.get("message") or {}).get("content") if isinstance(obj.get("message"), dict) else None
        texts: list[str] = []
        results: list[dict[str, Any]] = []
        images: list[str] = []
        others: list[str] = []
        for block in _blocks(content):
            kind = block.get("type") if isinstance(block, dict) else None
            if kind == "text" and isinstance(block.get("text"), str):
                texts.append(block["text"])
            elif kind == "tool_result":
                results.append(block)
            elif kind == "image":
                source = block.get("source") if isinstance(block.get("source"), dict) else {}
                images.append(str(source.get("media_type") or source.get("type") or "image"))
            else:
                others.append(str(kind or type(block).__name__))
        compact = obj.get("isCompactSummary") is True
        meta: dict[str, Any] = {}
        if images:
            meta.update(images=len(images), image_types=",".join(images))
        if others:
            meta["other_blocks"] = ",".join(others)
        if obj.get("isMeta") is True:
            meta["is_meta"] = True
        if compact:
            meta["compact_summary"] = True
        if texts or images or others or not results:
            if texts and not compact and obj.get("isMeta") is not True:
                state.turn += 1
            batch.event(
                sid,
                "user/message",
                time=time,
                role="user",
                text="\n\n".join(texts) if texts else None,
                surface="compact" if compact else "append",
                attrs={**meta, **attrs},
            )
        for result in results:
            call_id = result.get("tool_use_id")
            text, result_images = _result_text(result.get("content"))
            extra: dict[str, Any] = {"call_id": call_id, "is_error": result.get("is_error") is True}
            if result_images:
                extra["images"] = result_images
            batch.event(
                sid,
                "tool/result",
                time=time,
                role="tool",
                text=text,
                tool_name=state.calls.pop(str(call_id), None),
                surface="append",
                attrs={**extra, **attrs},
            )

    def _assistant(
        self, ctx: Context, sid: str, obj: dict[str, Any], time: Any, attrs: dict[str, Any]
    ) -> None:
        batch = ctx.batch
        state = batch.sessions[sid]
        given = obj.get("message")
        message: dict[str, Any] = given if isinstance(given, dict) else {}
        base = dict(attrs)
        for key, name in (("id", "message_id"), ("model", "model")):
            if message.get(key) is not None:
                base[name] = message[key]
        texts: list[str] = []

        def flush_text() -> None:
            if texts:
                joined = "\n\n".join(texts)
                texts.clear()
                batch.event(
                    sid,
                    "assistant/message",
                    time=time,
                    role="assistant",
                    text=joined,
                    surface="append",
                    attrs=base,
                )

        for block in _blocks(message.get("content")):
            kind = block.get("type") if isinstance(block, dict) else None
            if kind == "text" and isinstance(block.get("text"), str):
                texts.append(block["text"])
                continue
            flush_text()
            if kind in ("thinking", "redacted_thinking"):
                thought = block.get("thinking") if ctx.settings.thinking else None
                batch.event(
                    sid,
                    "assistant/thinking",
                    time=time,
                    role="assistant",
                    text=thought if isinstance(thought, str) else None,
                    attrs={"thinking_kept": isinstance(thought, str), "block": kind, **base},
                )
            elif kind == "tool_use":
                name = str(block.get("name") or "unknown")
                call_id = str(block.get("id") or "")
                if call_id:
                    state.remember_call(call_id, name)
                batch.event(
                    sid,
                    "tool/call",
                    time=time,
                    role="assistant",
                    tool_name=name,
                    text=line_json(block.get("input")),
                    attrs={"call_id": call_id, **base},
                )
            else:
                text = line_json(block)
                batch.event(
                    sid,
                    f"assistant/{clean_type(str(kind or 'block'))}",
                    time=time,
                    role="assistant",
                    text=_meta_text(text, base),
                    attrs={"block": str(kind), **base},
                )
        flush_text()

    def _system(self, ctx: Context, sid: str, obj: dict[str, Any], time: Any, attrs: dict[str, Any]) -> None:
        content = obj.get("content")
        text = content if isinstance(content, str) else (None if content is None else line_json(content))
        extra: dict[str, Any] = {"subtype": obj.get("subtype"), "level": obj.get("level")}
        if obj.get("subtype") == "compact_boundary":
            found = obj.get("compactMetadata")
            metadata: dict[str, Any] = found if isinstance(found, dict) else {}
            extra.update(
                trigger=metadata.get("trigger"),
                pre_tokens=metadata.get("preTokens"),
                logical_parent_uuid=obj.get("logicalParentUuid"),
            )
            ctx.batch.event(
                sid, "compaction/boundary", time=time, role="system", text=text, attrs={**extra, **attrs}
            )
            return
        ctx.batch.event(sid, "system/message", time=time, role="system", text=text, attrs={**extra, **attrs})


def _meta_text(text: str, attrs: dict[str, Any]) -> str:
    raw = text.encode("utf-8")
    if len(raw) <= _META_TEXT_BYTES:
        return text
    attrs["truncated"] = True
    attrs["text_bytes"] = len(raw)
    return raw[:_META_TEXT_BYTES].decode("utf-8", "ignore")
