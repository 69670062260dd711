"""The read and trace tools: ``session_event_read``, ``session_trace``, ``session_event_trace``.

They take a reader pinned to a scope (any object with the reader's public ``read_event``,
``trace_session`` and ``trace_event``). The model may name a session; one outside the scope, a
missing one and a malformed id all get the same answer, so a guessed id leaks nothing.
"""

from __future__ import annotations

from typing import Any, Final, Protocol, runtime_checkable

from backscroll.query.errors import SessionQueryError
from backscroll.query.reads import EventTraceResult, ReadEventResult, SessionTrace
from backscroll.query.tools.args import optional_int, optional_str, required_int
from backscroll.query.tools.base import DEFAULT_MAX_OUTPUT_CHARS, ModelTool
from backscroll.query.tools.errors import invalid_arguments
from backscroll.query.tools.render import render_event_trace, render_read, render_session_trace

__all__ = ["EventReadTool", "EventTraceTool", "SessionReads", "SessionTraceTool"]

_SESSION_ARG: Final = {
    "type": "string",
    "description": "The session to read; omit for your own session. Session ids appear in search results.",
}
_SEQ_ARG: Final = {"type": "integer", "description": "The event's seq, as shown in search results."}


@runtime_checkable
class SessionReads(Protocol):
    """The part of a session reader the tools use (both backends' readers have it)."""

    def read_event(self, session_id: str, seq: int, before: int = 0, after: int = 0) -> ReadEventResult: ...

    def trace_session(self, session_id: str) -> SessionTrace: ...

    def trace_event(self, session_id: str, seq: int) -> EventTraceResult: ...


class _ReaderTool(ModelTool):
    def __init__(
        self,
        reader: SessionReads | None,
        *,
        session_id: str | None,
        name: str,
        description: str,
        max_output_chars: int,
    ) -> None:
        super().__init__(name=name, description=description, max_output_chars=max_output_chars)
        if session_id is not None and (not isinstance(session_id, str) or not session_id.strip()):
            raise SessionQueryError("SESSION_QUERY_INVALID_SCOPE", "session_id must be a non-blank string")
        self.reader = reader
        if session_id is None:
            # A one-session scope has an obvious default.
            scope = getattr(reader, "scope", None)
            ids: tuple[str, ...] = tuple(getattr(scope, "ids", ()))
            if getattr(scope, "kind", None) == "sessions" and len(ids) == 1:
                session_id = ids[0]
        #: The default session (the caller's own); the model may name another one in the scope.
        self.session_id = session_id

    @property
    def configured(self) -> bool:
        return self.reader is not None

    @property
    def window_max(self) -> int | None:
        value = getattr(self.reader, "read_window_max", None)
        return value if isinstance(value, int) else None

    def _session(self, data: dict[str, Any]) -> str:
        session_id = optional_str(data, "session_id")
        if session_id is None or not session_id.strip():
            if self.session_id is None:
                raise invalid_arguments("session_id is required (this scope has several sessions)")
            return self.session_id
        return session_id

    def _reader(self) -> SessionReads:
        assert self.reader is not None
        return self.reader


class EventReadTool(_ReaderTool):
    """``session_event_read``: one event in full and a window of neighbours (``before``/``after``)."""

    def __init__(
        self,
        reader: SessionReads | None,
        *,
        session_id: str | None = None,
        name: str = "session_event_read",
        max_text_chars: int = 16_000,
        max_output_chars: int = DEFAULT_MAX_OUTPUT_CHARS,
    ) -> None:
        super().__init__(
            reader,
            session_id=session_id,
            name=name,
            description=(
                "Read one event of a session exactly: its full text and details, plus a window of "
                "neighbouring events (before/after) as one-line summaries. Use it after a search to see "
                "the whole entry behind an excerpt, or the turns around it. A long text comes in pieces: "
                "read the next one with the offset the result names."
            ),
            max_output_chars=max_output_chars,
        )
        if isinstance(max_text_chars, bool) or not isinstance(max_text_chars, int) or max_text_chars < 1:
            raise SessionQueryError(
                "SESSION_QUERY_INVALID_CONFIG", "max_text_chars must be a positive integer"
            )
        self.max_text_chars = max_text_chars

    @property
    def parameters(self) -> dict[str, Any]:
        window = self.window_max
        bound = f" (0 to {window})" if window is not None else ""
        return {
            "type": "object",
            "properties": {
                "session_id": dict(_SESSION_ARG),
                "seq": dict(_SEQ_ARG),
                "before": {"type": "integer", "description": f"Events to show before it{bound}; default 0."},
                "after": {"type": "integer", "description": f"Events to show after it{bound}; default 0."},
                "offset": {
                    "type": "integer",
                    "description": (
                        f"Character offset into the event's text; default 0. A text longer than "
                        f"{self.max_text_chars} characters is shown one piece at a time, and the "
                        "result names the offset of the next piece."
                    ),
                },
            },
            "required": ["seq"],
        }

    def _call(self, data: dict[str, Any]) -> str:
        session_id = self._session(data)
        seq = required_int(data, "seq")
        before = optional_int(data, "before") or 0
        after = optional_int(data, "after") or 0
        offset = optional_int(data, "offset") or 0
        if offset < 0:
            raise invalid_arguments("offset must be 0 or more")
        result = self._reader().read_event(session_id, seq, before=before, after=after)
        if offset > len(result.target.text):
            raise invalid_arguments(
                f"offset is past the end of the event's text ({len(result.target.text)} characters)"
            )
        return render_read(result, max_text_chars=self.max_text_chars, offset=offset)


class SessionTraceTool(_ReaderTool):
    """``session_trace``: a session's ancestors and descendants within the scope."""

    def __init__(
        self,
        reader: SessionReads | None,
        *,
        session_id: str | None = None,
        name: str = "session_trace",
        max_output_chars: int = DEFAULT_MAX_OUTPUT_CHARS,
    ) -> None:
        super().__init__(
            reader,
            session_id=session_id,
            name=name,
            description=(
                "Trace a session's lineage: the sessions it was forked or delegated from (nearest "
                "first) and the sub-sessions started from it, as far as you may read them."
            ),
            max_output_chars=max_output_chars,
        )

    @property
    def parameters(self) -> dict[str, Any]:
        return {"type": "object", "properties": {"session_id": dict(_SESSION_ARG)}}

    def _call(self, data: dict[str, Any]) -> str:
        return render_session_trace(self._reader().trace_session(self._session(data)))


class EventTraceTool(_ReaderTool):
    """``session_event_trace``: what replaced an event (compaction, rewinds) and what it cites."""

    def __init__(
        self,
        reader: SessionReads | None,
        *,
        session_id: str | None = None,
        name: str = "session_event_trace",
        max_output_chars: int = DEFAULT_MAX_OUTPUT_CHARS,
    ) -> None:
        super().__init__(
            reader,
            session_id=session_id,
            name=name,
            description=(
                "Trace one event's provenance: which later event replaced it on the model's surface "
                "(for example a compaction summary) and the chain to the final replacement, which events "
                "it replaced itself, the events it cites and the later events citing it."
            ),
            max_output_chars=max_output_chars,
        )

    @property
    def parameters(self) -> dict[str, Any]:
        return {
            "type": "object",
            "properties": {"session_id": dict(_SESSION_ARG), "seq": dict(_SEQ_ARG)},
            "required": ["seq"],
        }

    def _call(self, data: dict[str, Any]) -> str:
        session_id = self._session(data)
        seq = required_int(data, "seq")
        return render_event_trace(self._reader().trace_event(session_id, seq))
