"""Per-session sequencing: one :class:`SessionWriter` per session and process assigns contiguous seqs."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self

from sessionlog.ingest.errors import AppenderClosed, RecordRejected, SequenceError
from sessionlog.ingest.wire import WIRE_VERSION, EventRecord, HeaderRecord, parse_record

if TYPE_CHECKING:
    from sessionlog.ingest.appender import Appender, AppendHandle

__all__ = ["LastSeqLookup", "SessionWriter"]

#: ``(workspace_id, session_id) -> last seq written, or None when the session is unknown``.
LastSeqLookup = Callable[[str, str], "int | None"]


class SessionWriter:
    """The only writer of one session in this process (get one from :meth:`Appender.session`).

    ``append`` fills in ``v``, ``kind``, ``workspace_id``, ``session_id``, ``seq`` (the next one)
    and ``time`` (now, UTC) when they are missing; a given ``seq`` must be exactly the next one.
    The seq is taken only when the entry was accepted, so a rejected entry leaves no gap.
    """

    def __init__(
        self, appender: Appender, workspace_id: str, session_id: str, next_seq: int, generation: int
    ) -> None:
        self._appender = appender
        self.workspace_id = workspace_id
        self.session_id = session_id
        self._next_seq = next_seq
        self._generation = generation
        self._lock = threading.Lock()
        self._closed = False

    @property
    def next_seq(self) -> int:
        """The seq the next event of this session gets."""
        return self._next_seq

    @property
    def closed(self) -> bool:
        return self._closed

    def _fill(self, given: Mapping[str, Any] | None, fields: dict[str, Any], kind: str) -> dict[str, Any]:
        data: dict[str, Any] = {**(given or {}), **fields}
        for name, mine in (("workspace_id", self.workspace_id), ("session_id", self.session_id)):
            if data.setdefault(name, mine) != mine:
                raise RecordRejected(name, f"this writer owns {mine!r}, the record names {data[name]!r}")
        data.setdefault("v", WIRE_VERSION)
        if data.setdefault("kind", kind) != kind:
            raise RecordRejected("kind", f"must be {kind!r} here, got {data['kind']!r}")
        return data

    def append(self, event: EventRecord | Mapping[str, Any] | None = None, /, **fields: Any) -> AppendHandle:
        """Append one event of this session; returns the appender's handle."""
        with self._lock:
            self._check()
            if isinstance(event, EventRecord):
                if fields:
                    event = event.model_copy(update=fields)
                data = event.model_dump()
            else:
                data = self._fill(event, fields, "event")
            given = data.get("seq")
            if given is None:
                data["seq"] = self._next_seq
            elif given != self._next_seq:
                raise SequenceError(
                    f"session {self.session_id} expects seq {self._next_seq} next, the caller gave {given!r}"
                )
            if data.get("time") is None:
                data["time"] = datetime.now(UTC)
            record = parse_record(data)
            if not isinstance(record, EventRecord):
                raise RecordRejected("kind", "a session writer's append() takes events; use header()")
            for name in ("workspace_id", "session_id"):
                if getattr(record, name) != getattr(self, name):
                    raise RecordRejected(name, f"this writer owns {getattr(self, name)!r}")
            handle = self._appender._submit(record, writer=self)
            self._next_seq += 1
            return handle

    def header(
        self, header: HeaderRecord | Mapping[str, Any] | None = None, /, **fields: Any
    ) -> AppendHandle:
        """Append the session header (``created_at`` defaults to now, UTC)."""
        with self._lock:
            self._check()
            data = (
                header.model_dump()
                if isinstance(header, HeaderRecord)
                else self._fill(header, fields, "header")
            )
            if data.get("created_at") is None:
                data["created_at"] = datetime.now(UTC)
            record = parse_record(data)
            for name in ("workspace_id", "session_id"):
                if getattr(record, name) != getattr(self, name):
                    raise RecordRejected(name, f"this writer owns {getattr(self, name)!r}")
            return self._appender._submit(record, writer=self)

    def _check(self) -> None:
        if self._closed:
            raise AppenderClosed(f"the writer of session {self.session_id} was closed")
        if self._generation != self._appender._generation:
            raise AppenderClosed(
                f"the writer of session {self.session_id} belongs to the parent process (fork); "
                "open a new one with appender.session(...)"
            )

    def close(self) -> None:
        """Release the session so another writer may take it. Idempotent; does not flush."""
        with self._lock:
            if not self._closed:
                self._closed = True
                self._appender._release_writer(self)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"SessionWriter({self.workspace_id!r}, {self.session_id!r}, next_seq={self._next_seq})"
