"""Building wire records from transcript lines: sessions, contiguous seqs, the surface, caps.

A :class:`Batch` is the work of one pass over one transcript: the format modules call
:meth:`Batch.event` for each entry a line holds, and the batch gives the entry the next seq of its
session (the first entry of a session brings its header), keeps the session's surface (what the
model sees) so a compaction can replace it and cite what it replaced, and cuts text and attrs to
the wire format's caps, saying so in the entry's attrs.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Any, Final, Literal

from backscroll.capture.settings import CaptureSettings

__all__ = [
    "MAX_CAPTURED_TEXT_BYTES",
    "Batch",
    "Parent",
    "SessionState",
    "clean_id",
    "cut_text",
    "parse_time",
    "workspace_for",
]

#: Text kept of one entry (under the wire's 1 MiB, room left for the rest of the record).
MAX_CAPTURED_TEXT_BYTES: Final = 1024 * 1024 - 1024
#: Calls whose tool name is remembered per session until their result arrives.
_MAX_PENDING_CALLS: Final = 512
_MAX_ATTRS: Final = 32
_MAX_SOURCES: Final = 10_000
_MAX_ATTR_CHARS: Final = 1024
_BAD_ID: Final = re.compile(r"[^A-Za-z0-9._:-]+")
_BAD_KEY: Final = re.compile(r"[^A-Za-z0-9_.:-]+")
_BAD_TYPE: Final = re.compile(r"[^a-z0-9_.-]+")

Surface = Literal["append", "compact"] | None


def clean_id(value: str, fallback: str = "unknown") -> str:
    """``value`` as a wire id: other characters become ``-``, at most 128 characters."""
    cleaned = _BAD_ID.sub("-", value).strip("-")[:128]
    return cleaned or fallback


def clean_type(value: str) -> str:
    """One segment of an event type (lower case, ``a-z 0-9 _ . -``, 1-48 characters)."""
    cleaned = _BAD_TYPE.sub("_", value.lower()).strip("_")[:48]
    return cleaned or "unknown"


def workspace_for(cwd: str | None, settings: CaptureSettings, fallback: str = "default") -> str:
    """The workspace of a session started in ``cwd``: the longest mapped folder containing it,
    else the folder's name."""
    if cwd:
        folder = cwd.rstrip("/") or "/"
        best: tuple[int, str] | None = None
        for prefix, workspace in settings.workspaces.items():
            root = prefix.rstrip("/") or "/"
            if (folder == root or folder.startswith(root + "/") or root == "/") and (
                best is None or len(root) > best[0]
            ):
                best = (len(root), workspace)
        if best is not None:
            return best[1]
        return clean_id(folder.rsplit("/", 1)[-1], fallback)
    return fallback


def parse_time(value: Any) -> datetime | None:
    """An RFC 3339 timestamp with an offset, else None (a naive time is taken as UTC)."""
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("z", "Z"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


def _clean_text(text: str) -> str:
    # NUL is refused by the wire format, lone surrogates cannot be encoded: both become U+FFFD.
    text = text.replace("\x00", "\ufffd")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = text.encode("utf-8", "surrogatepass").decode("utf-8", "replace")
    return text


def cut_text(text: str, limit: int = MAX_CAPTURED_TEXT_BYTES) -> tuple[str, int | None]:
    """``text`` cut to at most ``limit`` UTF-8 bytes (on a character boundary), and its original
    size in bytes when it was cut."""
    text = _clean_text(text)
    if len(text) * 4 <= limit:
        return text, None
    raw = text.encode("utf-8")
    if len(raw) <= limit:
        return text, None
    return raw[:limit].decode("utf-8", "ignore"), len(raw)


def _attr_value(value: Any) -> str | int | float | bool | None:
    if value is None or isinstance(value, bool | str):
        return _clean_text(value)[:_MAX_ATTR_CHARS] if isinstance(value, str) else value
    if isinstance(value, int):
        return value if -(2**63) <= value < 2**64 else str(value)
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    import orjson

    try:
        encoded = orjson.dumps(value, default=str).decode("utf-8")
    except (TypeError, ValueError):
        encoded = repr(value)
    return _clean_text(encoded)[:_MAX_ATTR_CHARS]


def clean_attrs(attrs: Mapping[str, Any]) -> dict[str, Any]:
    """At most 32 flat attrs with valid keys; objects and lists as (cut) JSON text."""
    out: dict[str, Any] = {}
    for key, value in attrs.items():
        if len(out) >= _MAX_ATTRS:
            break
        name = _BAD_KEY.sub("_", key)[:64] or "_"
        if name not in out:
            out[name] = _attr_value(value)
    return out


@dataclass
class Parent:
    """Where a child session comes from: the parent session, how many of its entries seeded it,
    and why it exists (``subagent``, ``resume``)."""

    session_id: str
    origin: str
    seed_length: int | None = None
    depth: int = 1


@dataclass
class SessionState:
    """What capture remembers of one session between runs."""

    workspace_id: str
    next_seq: int = 0
    turn: int = 0
    surface: list[int] = field(default_factory=list)
    calls: dict[str, str] = field(default_factory=dict)
    last_time: str | None = None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> SessionState:
        return cls(
            workspace_id=str(data["workspace_id"]),
            next_seq=int(data.get("next_seq", 0)),
            turn=int(data.get("turn", 0)),
            surface=[int(s) for s in data.get("surface", [])],
            calls={str(k): str(v) for k, v in dict(data.get("calls", {})).items()},
            last_time=data.get("last_time"),
        )

    def remember_call(self, call_id: str, tool_name: str) -> None:
        self.calls[call_id] = tool_name
        while len(self.calls) > _MAX_PENDING_CALLS:
            self.calls.pop(next(iter(self.calls)))


#: Loads a session's state from the progress store (None: a new session).
Loader = Callable[[str], SessionState | None]


class Batch:
    """The records one pass over a transcript produces, and the sessions they touched."""

    def __init__(self, settings: CaptureSettings, load: Loader, *, fallback_time: datetime) -> None:
        self.settings = settings
        self._load = load
        self.sessions: dict[str, SessionState] = {}
        self.records: list[dict[str, Any]] = []
        self.fallback_time = fallback_time

    def known(self, session_id: str) -> SessionState | None:
        """The session's state, loaded once per batch (None when capture never saw it)."""
        state = self.sessions.get(session_id)
        if state is None:
            state = self._load(session_id)
            if state is not None:
                self.sessions[session_id] = state
        return state

    def session(
        self,
        session_id: str,
        *,
        workspace_id: str,
        time: datetime | None,
        parent: Parent | None = None,
        origin: str | None = None,
        title: str | None = None,
    ) -> SessionState:
        """The session's state; a new session's header is appended first."""
        state = self.known(session_id)
        if state is not None:
            return state
        state = SessionState(workspace_id=workspace_id)
        self.sessions[session_id] = state
        header: dict[str, Any] = {
            "v": 1,
            "kind": "header",
            "workspace_id": workspace_id,
            "session_id": session_id,
            "created_at": (time or self.fallback_time).isoformat(),
            "origin": (parent.origin if parent else origin),
        }
        if parent is not None:
            header.update(
                parent_session_id=parent.session_id,
                seed_length=parent.seed_length,
                delegation_depth=parent.depth,
            )
        if title:
            header["title"] = cut_text(title, 512)[0][:512]
        self.records.append(header)
        return state

    def event(
        self,
        session_id: str,
        type_: str,
        *,
        time: datetime | None,
        role: str | None = None,
        text: str | None = None,
        tool_name: str | None = None,
        surface: Surface = None,
        attrs: Mapping[str, Any] | None = None,
    ) -> int:
        """Append one event to ``session_id`` (already opened with :meth:`session`); its seq."""
        state = self.sessions[session_id]
        seq = state.next_seq
        state.next_seq += 1
        when = time or parse_time(state.last_time) or self.fallback_time
        state.last_time = when.isoformat()
        extra: dict[str, Any] = dict(attrs or {})
        record: dict[str, Any] = {
            "v": 1,
            "kind": "event",
            "workspace_id": state.workspace_id,
            "session_id": session_id,
            "seq": seq,
            "type": type_,
            "time": when.isoformat(),
            "turn": state.turn,
        }
        if role is not None:
            record["role"] = role
        if text is not None:
            kept, original = cut_text(text)
            record["text"] = kept
            if original is not None:
                extra = {"truncated": True, "text_bytes": original, **extra}
        if tool_name is not None:
            record["tool_name"] = _clean_text(tool_name)[:512]
        if surface == "compact" and 0 < len(state.surface) <= _MAX_SOURCES:
            replaced = state.surface
            record["surface"] = {"op": "replace", "start": replaced[0], "end": replaced[-1]}
            record["sources"] = list(replaced)
            state.surface = [seq]
        elif surface is not None:
            record["surface"] = {"op": "append"}
            state.surface.append(seq)
        if extra:
            record["attrs"] = clean_attrs(extra)
        self.records.append(record)
        return seq
