"""The read-engine port: what the session reads (:mod:`backscroll.query.reads.reader`) need of a
backend, and nothing more. One implementation per backend:
:class:`~backscroll.query.opensearch.reader.OpenSearchReadEngine` and
:class:`~backscroll.query.sqlite.reader.SQLiteReadEngine`; and the awaitable twin,
:class:`AsyncReadEngine` (:class:`~backscroll.query.opensearch.reader.AsyncOpenSearchReadEngine`).

An engine is pinned to the reader's scope and applies it itself: a session outside the scope is
a missing one. Every method raises :class:`~backscroll.query.errors.SessionQueryError` only (the
engine translates its driver's errors) and honours the :class:`Deadline` it is given.

The reads ask the engine through :class:`ReadStep`\\ s, exactly as the provider core asks the
search engine through its steps; :mod:`backscroll.query.driver` answers them.
"""

from __future__ import annotations

from collections.abc import Generator, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol, TypeAlias, TypeVar

from backscroll.indexer.fold import FoldEvent, FoldResult
from backscroll.query.deadline import Deadline
from backscroll.query.reads.log import LogEntry
from backscroll.query.reads.models import SessionRecord

__all__ = ["AsyncReadEngine", "ReadAnswer", "ReadEngine", "ReadFlow", "ReadStep", "StoredLog"]

_T = TypeVar("_T")


@dataclass(frozen=True, slots=True)
class StoredLog:
    """One session as the projection holds it: its listing record and its log in seq order.

    Entries loaded without text have ``text=None`` (:meth:`ReadEngine.texts` loads it). An engine
    that keeps logs between reads may hand their fold along (``folded`` and the fold's ``events``);
    the entries are then shared and must not be changed.
    """

    record: SessionRecord
    entries: list[LogEntry]
    folded: FoldResult | None = None
    events: Sequence[FoldEvent] | None = None


class ReadEngine(Protocol):
    """A backend's session reads, each from one consistent view of its projection."""

    def log(self, session_id: str, with_text: bool, deadline: Deadline) -> StoredLog | None:
        """The session's record and log (``None`` when the session is not in the scoped
        projection); without ``with_text`` the entries may come without their text."""
        ...

    def texts(self, session_id: str, seqs: Sequence[int], deadline: Deadline) -> dict[int, str]:
        """The text of the session's events ``seqs`` (a tool call's arguments), by seq; a seq that
        is not there is left out."""
        ...

    def listing(self, deadline: Deadline) -> list[SessionRecord]:
        """Every session record of the scoped projection."""
        ...

    def close(self) -> None:
        """Release the engine's resources. Idempotent."""
        ...


class AsyncReadEngine(Protocol):
    """:class:`ReadEngine` with awaitable calls."""

    async def log(self, session_id: str, with_text: bool, deadline: Deadline) -> StoredLog | None:
        """:meth:`ReadEngine.log`."""
        ...

    async def texts(self, session_id: str, seqs: Sequence[int], deadline: Deadline) -> dict[int, str]:
        """:meth:`ReadEngine.texts`."""
        ...

    async def listing(self, deadline: Deadline) -> list[SessionRecord]:
        """:meth:`ReadEngine.listing`."""
        ...

    async def aclose(self) -> None:
        """Release the engine's resources. Idempotent."""
        ...


#: What a :class:`ReadStep` is answered with.
ReadAnswer: TypeAlias = StoredLog | dict[int, str] | list[SessionRecord] | None


@dataclass(frozen=True, slots=True)
class ReadStep:
    """One engine call a read flow asks its driver for: ``log`` of ``session_id`` (answered with a
    :class:`StoredLog` or ``None``), the ``texts`` of its ``seqs`` (a dict by seq), or the
    ``listing`` (a list of :class:`SessionRecord`)."""

    kind: Literal["log", "texts", "listing"]
    deadline: Deadline
    session_id: str = ""
    with_text: bool = False
    seqs: tuple[int, ...] = ()

    def call(self, engine: ReadEngine) -> ReadAnswer:
        """The answer of a blocking engine."""
        if self.kind == "log":
            return engine.log(self.session_id, self.with_text, self.deadline)
        if self.kind == "texts":
            return engine.texts(self.session_id, self.seqs, self.deadline)
        return engine.listing(self.deadline)

    async def acall(self, engine: AsyncReadEngine) -> ReadAnswer:
        """The answer of an async engine."""
        if self.kind == "log":
            return await engine.log(self.session_id, self.with_text, self.deadline)
        if self.kind == "texts":
            return await engine.texts(self.session_id, self.seqs, self.deadline)
        return await engine.listing(self.deadline)


#: A read written without I/O: yields :class:`ReadStep`\s, receives their answers, returns ``_T``.
ReadFlow: TypeAlias = Generator[ReadStep, Any, _T]
