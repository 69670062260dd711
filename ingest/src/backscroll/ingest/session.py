"""Per-session sequencing: one :class:`SessionWriter` per session and process assigns contiguous seqs."""

from __future__ import annotations

import re
import threading
import weakref
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime
from types import TracebackType
from typing import TYPE_CHECKING, Any, Protocol, Self

from backscroll.ingest.errors import (
    AppenderClosed,
    LogUnavailable,
    RecordRejected,
    SequenceError,
    SessionBusy,
)
from backscroll.ingest.wire import WIRE_VERSION, EventRecord, HeaderRecord, parse_record

if TYPE_CHECKING:
    from backscroll.ingest.records import AppendHandle

__all__ = ["LastSeqLookup", "SessionWriter", "WriterHost", "WriterRegistry", "resume_seq"]

#: ``(workspace_id, session_id) -> last seq written, or None when the session is unknown``.
LastSeqLookup = Callable[[str, str], "int | None"]


def resume_seq(
    known: list[int | None], lookup: LastSeqLookup | None, workspace_id: str, session_id: str
) -> int:
    """The seq a new writer of ``session_id`` starts at: one past the highest of what the log knows
    (``known``: this process, its spool or table) and what ``lookup`` says; 0 when nobody knows it."""
    seqs = [seq for seq in known if seq is not None]
    if lookup is not None:
        try:
            looked_up = lookup(workspace_id, session_id)
        except Exception as err:
            raise LogUnavailable(
                f"last_seq_lookup failed for session {session_id}: {err} (pass next_seq= to resume by hand)"
            ) from err
        if looked_up is not None:
            seqs.append(int(looked_up))
    return max(seqs) + 1 if seqs else 0


_ID = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")


class WriterHost(Protocol):
    """What a :class:`SessionWriter` needs of the log it writes to (both entry logs have it)."""

    @property
    def _generation(self) -> int:
        """Bumped in a forked child: writers of the parent stop working there."""
        ...

    def _submit(
        self, record: HeaderRecord | EventRecord, *, writer: SessionWriter | None
    ) -> AppendHandle: ...

    def _release_writer(self, writer: SessionWriter) -> None: ...


class WriterRegistry:
    """The open session writers of one log in this process (at most one per session)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self._writers: weakref.WeakValueDictionary[str, SessionWriter] = weakref.WeakValueDictionary()

    def owner(self, session_id: str, generation: int) -> SessionWriter | None:
        """The open writer of ``session_id`` of this process generation, if any."""
        if not self._writers:  # the common case of raw appends: no lookup in the weak mapping
            return None
        current = self._writers.get(session_id)
        if current is not None and not current.closed and current._generation == generation:
            return current
        return None

    def refuse_owned(self, session_ids: Iterable[str], generation: int, log_name: str) -> None:
        """Raise :class:`SessionBusy` for the first of ``session_ids`` that an open writer of this
        generation owns (nothing to look up while no writer is open). ``log_name`` is how the
        message names the caller's log (``log`` or ``appender``)."""
        if not self._writers:
            return
        for session_id in dict.fromkeys(session_ids):
            if self.owner(session_id, generation) is not None:
                raise SessionBusy(
                    f"session {session_id} is owned by a SessionWriter in this process; "
                    f"append through it ({log_name}.session(...)) or close it first"
                )

    def open(
        self,
        host: WriterHost,
        workspace_id: str,
        session_id: str,
        next_seq: int | None,
        resume: Callable[[str, str], int],
    ) -> SessionWriter:
        """Check the ids, refuse a second writer (:class:`SessionBusy`), and start the new writer
        at ``next_seq`` or at ``resume(workspace_id, session_id)``."""
        for name, value in (("workspace_id", workspace_id), ("session_id", session_id)):
            if not isinstance(value, str) or not _ID.match(value):
                raise RecordRejected(name, f"must match {_ID.pattern}, got {value!r}")
        if next_seq is not None and (
            isinstance(next_seq, bool) or not isinstance(next_seq, int) or not 0 <= next_seq < 2**53
        ):
            raise RecordRejected("seq", f"next_seq must be an int in [0, 2**53), got {next_seq!r}")
        with self.lock:
            current = self.owner(session_id, host._generation)
            if current is not None:
                raise SessionBusy(f"session {session_id} already has a writer in this process: {current!r}")
            start = next_seq if next_seq is not None else resume(workspace_id, session_id)
            writer = SessionWriter(host, workspace_id, session_id, start, host._generation)
            self._writers[session_id] = writer
            return writer

    def release(self, writer: SessionWriter) -> None:
        with self.lock:
            if self._writers.get(writer.session_id) is writer:
                del self._writers[writer.session_id]


class SessionWriter:
    """The only writer of one session in this process (get one from ``log.session(...)`` of any
    :class:`~backscroll.ingest.entry_log.EntryLog`).

    ``append`` fills in ``v``, ``kind``, ``workspace_id``, ``session_id``, ``seq`` (the next one)
    and ``time`` (now, UTC) when they are missing; a given ``seq`` must be exactly the next one.
    The seq is taken only when the entry was accepted, so a rejected entry leaves no gap.
    """

    def __init__(
        self, appender: WriterHost, workspace_id: str, session_id: str, next_seq: int, generation: int
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
