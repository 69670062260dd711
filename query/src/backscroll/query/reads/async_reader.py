"""The asyncio session reads: :class:`AsyncSessionReader` runs a reader's read flows (the same
code as the synchronous reads) with :func:`backscroll.query.driver.adrive`, never blocking the
event loop: on an async read engine, each engine call awaited
(:class:`~backscroll.query.opensearch.async_reader.AsyncOpenSearchReader` on ``AsyncOpenSearch``),
or else on the reader's own engine, each call on a worker thread (the embedded SQLite reader,
whose driver blocks).

Cancelling the awaiting task raises ``CancelledError`` as usual and stops the work behind it at
its next check (the SQLite statement is interrupted); ``signal=`` gives ``ABORTED`` as in the
synchronous API.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any, Self, TypeVar

from backscroll.query.deadline import AbortSignal, check_signal
from backscroll.query.driver import OnThread, adrive
from backscroll.query.reads.engine import AsyncReadEngine, ReadEngine, ReadFlow
from backscroll.query.reads.models import (
    EventRecordView,
    EventTraceResult,
    ReadEventResult,
    SessionRecord,
    SessionTrace,
    SurfaceRead,
)
from backscroll.query.reads.reader import ReaderBase

__all__ = ["AsyncSessionReader"]

_T = TypeVar("_T")


class AsyncSessionReader:
    """A reader's reads, awaitable: its flows on ``engine`` (an async read engine) when given, else
    on the reader's engine with each call on a worker thread. A cancelled task aborts the read
    behind it. Closing closes the reader (and ``engine``). Idempotent ``aclose()``; an async context
    manager."""

    def __init__(self, reader: ReaderBase, engine: AsyncReadEngine | None = None) -> None:
        self.reader = reader
        self.engine = engine
        self._port: AsyncReadEngine | OnThread[ReadEngine] = (
            engine if engine is not None else OnThread(reader.engine)
        )

    async def _run(self, read: Callable[[AbortSignal], ReadFlow[_T]], signal: AbortSignal | None) -> _T:
        own = AbortSignal(parent=check_signal(signal))
        return await adrive(read(own), self._port, own)

    async def alist_sessions(
        self, filters: Sequence[Any] | None = None, *, signal: AbortSignal | None = None
    ) -> tuple[SessionRecord, ...]:
        """:meth:`~backscroll.query.reads.reader.ReaderBase.list_sessions`, awaitable."""
        return await self._run(lambda own: self.reader.list_sessions_flow(filters, own), signal)

    async def alist_events(
        self, session_id: str, *, signal: AbortSignal | None = None
    ) -> tuple[EventRecordView, ...]:
        """:meth:`~backscroll.query.reads.reader.ReaderBase.list_events`, awaitable."""
        return await self._run(lambda own: self.reader.list_events_flow(session_id, own), signal)

    async def afilter_events(
        self, session_id: str, filters: Sequence[Any], *, signal: AbortSignal | None = None
    ) -> tuple[EventRecordView, ...]:
        """:meth:`~backscroll.query.reads.reader.ReaderBase.filter_events`, awaitable."""
        return await self._run(lambda own: self.reader.filter_events_flow(session_id, filters, own), signal)

    async def aread_surface(self, session_id: str, *, signal: AbortSignal | None = None) -> SurfaceRead:
        """:meth:`~backscroll.query.reads.reader.ReaderBase.read_surface`, awaitable."""
        return await self._run(lambda own: self.reader.read_surface_flow(session_id, own), signal)

    async def aread_event(
        self, session_id: str, seq: int, before: int = 0, after: int = 0, *, signal: AbortSignal | None = None
    ) -> ReadEventResult:
        """:meth:`~backscroll.query.reads.reader.ReaderBase.read_event`, awaitable."""
        return await self._run(
            lambda own: self.reader.read_event_flow(session_id, seq, before, after, own), signal
        )

    async def atrace_session(self, session_id: str, *, signal: AbortSignal | None = None) -> SessionTrace:
        """:meth:`~backscroll.query.reads.reader.ReaderBase.trace_session`, awaitable."""
        return await self._run(lambda own: self.reader.trace_session_flow(session_id, own), signal)

    async def atrace_event(
        self, session_id: str, seq: int, *, signal: AbortSignal | None = None
    ) -> EventTraceResult:
        """:meth:`~backscroll.query.reads.reader.ReaderBase.trace_event`, awaitable."""
        return await self._run(lambda own: self.reader.trace_event_flow(session_id, seq, own), signal)

    @property
    def closed(self) -> bool:
        return self.reader.closed

    async def aclose(self) -> None:
        """Refuse further reads, close the reader and release the async engine. Idempotent."""
        if self.engine is None:
            await asyncio.to_thread(self.reader.close)  # closing SQLite may wait for its lock
            return
        self.reader.close()
        await self.engine.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
