"""The asyncio API: an async provider (``asearch``) and async reads (``aread_event``, …) over the
same cores as the synchronous ones, never blocking the event loop.

* :class:`AsyncSearchProvider` drives :class:`~backscroll.query.provider.ProviderCore`'s search
  flow (the same validation, cursors, live merge and errors) over an
  :class:`~backscroll.query.engine.AsyncSearchEngine`: on OpenSearch,
  :class:`~backscroll.query.opensearch.async_provider.AsyncOpenSearchProvider` (opensearch-py's
  ``AsyncOpenSearch`` client, the ``async`` extra: aiohttp); embedded,
  :class:`~backscroll.query.sqlite.async_provider.AsyncSQLiteProvider`, whose
  :class:`ThreadedEngine` runs the SQLite engine on worker threads.
* The async session readers are :mod:`backscroll.query.reads.async_reader`'s
  :class:`~backscroll.query.reads.async_reader.AsyncSessionReader` (any reader's read flows, each
  engine call on a worker thread: the embedded SQLite reader) and
  :class:`~backscroll.query.opensearch.async_reader.AsyncOpenSearchReader` (each request awaited
  on ``AsyncOpenSearch``). Both cores run on :func:`backscroll.query.driver.adrive`.

Cancelling the awaiting task raises ``CancelledError`` as usual and stops the work behind it at
its next check (the SQLite statement is interrupted); ``signal=`` gives ``ABORTED`` as in the
synchronous API.
"""

from __future__ import annotations

import asyncio
from typing import Self, Unpack

from backscroll.query.contract import SessionQueryRequest, SessionQueryResult
from backscroll.query.deadline import AbortSignal, Deadline, check_signal
from backscroll.query.driver import adrive
from backscroll.query.engine import AsyncSearchEngine, EngineHit, EnginePage, EngineQuery, SearchEngine
from backscroll.query.options import ProviderOptions
from backscroll.query.provider import ProviderCore
from backscroll.query.scope import Scope

__all__ = ["AsyncSearchProvider", "ThreadedEngine"]


class ThreadedEngine:
    """A synchronous engine's calls on worker threads (the embedded engine: SQLite blocks)."""

    def __init__(self, engine: SearchEngine) -> None:
        self.engine = engine
        self.log_topic = engine.log_topic

    async def search(self, query: EngineQuery, deadline: Deadline) -> EnginePage:
        return await asyncio.to_thread(self.engine.search, query, deadline)

    async def rank(self, query: EngineQuery, deadline: Deadline) -> list[EngineHit]:
        return await asyncio.to_thread(self.engine.rank, query, deadline)

    async def aclose(self) -> None:
        await asyncio.to_thread(self.engine.close)


class AsyncSearchProvider(ProviderCore):
    """The asyncio provider: :class:`~backscroll.query.provider.ProviderCore`'s flow over an
    :class:`~backscroll.query.engine.AsyncSearchEngine`. Same options, results and errors as the
    synchronous providers."""

    def __init__(self, scope: Scope, engine: AsyncSearchEngine, **options: Unpack[ProviderOptions]) -> None:
        super().__init__(scope, engine, **options)
        self.engine = engine

    async def asearch(
        self, request: SessionQueryRequest, *, signal: AbortSignal | None = None
    ) -> SessionQueryResult:
        """Run one search without blocking the loop; raises :class:`SessionQueryError` only (and
        ``CancelledError`` when the task is cancelled)."""
        own = AbortSignal(parent=check_signal(signal))
        return await adrive(self._flow(request, own), self.engine, own)

    async def aclose(self) -> None:
        """Refuse further searches and release the engine. Idempotent."""
        if not self._closed:
            self._closed = True
            await self.engine.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
