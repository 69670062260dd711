"""The asyncio API: an async provider (``asearch``) and async reads (``aread_event``, …) over the
same cores as the synchronous ones, never blocking the event loop.

* :class:`AsyncSearchProvider` drives :class:`~backscroll.query.provider.ProviderCore`'s search
  flow (the same validation, cursors, live merge and errors) over an :class:`AsyncSearchEngine`:
  :class:`AsyncOpenSearchEngine` on opensearch-py's ``AsyncOpenSearch`` client (the ``async``
  extra: aiohttp), or :class:`ThreadedEngine` running the embedded SQLite engine on a worker thread.
* :class:`AsyncSessionReader` makes any reader's reads awaitable by running each read's flow (the
  same code as the synchronous read) on a worker thread: the embedded SQLite reader, whose driver
  blocks. :class:`AsyncOpenSearchReader` runs the same flows on the loop and awaits each of their
  requests on ``AsyncOpenSearch``: no thread is involved.

Cancelling the awaiting task raises ``CancelledError`` as usual and stops the work behind it at
its next check (the SQLite statement is interrupted); ``signal=`` gives ``ABORTED`` as in the
synchronous API.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol, Self, TypeVar, Unpack

from backscroll.indexer.settings import OpenSearchSettings
from backscroll.query.contract import SessionQueryRequest, SessionQueryResult
from backscroll.query.deadline import AbortSignal, Deadline, check_signal
from backscroll.query.engine import EngineHit, EnginePage, EngineQuery, SearchEngine
from backscroll.query.errors import SessionQueryError
from backscroll.query.opensearch.access import OpenSearchAccess, translate_opensearch_error
from backscroll.query.opensearch.provider import SCAN_MAX_ROWS, OpenSearchEngine, opensearch_engine
from backscroll.query.opensearch.reader import DEFAULT_PAGE_SIZE, OpenSearchSessionReader
from backscroll.query.options import (
    OpenSearchProviderOptions,
    OpenSearchReaderOptions,
    ProviderOptions,
    SQLiteProviderOptions,
)
from backscroll.query.provider import EngineStep, ProviderCore, advance
from backscroll.query.reads import (
    EventRecordView,
    EventTraceResult,
    ReadEventResult,
    SessionRecord,
    SessionTrace,
    SurfaceRead,
)
from backscroll.query.reads.flow import ReadFlow, ReadStep, advance_read
from backscroll.query.reads.reader import ReaderBase
from backscroll.query.scope import Scope
from backscroll.query.sqlite.provider import sqlite_engine

if TYPE_CHECKING:
    from opensearchpy import AsyncOpenSearch

__all__ = [
    "AsyncOpenSearchEngine",
    "AsyncOpenSearchProvider",
    "AsyncOpenSearchReader",
    "AsyncSQLiteProvider",
    "AsyncSearchEngine",
    "AsyncSearchProvider",
    "AsyncSessionReader",
    "ThreadedEngine",
]

_T = TypeVar("_T")


class AsyncSearchEngine(Protocol):
    """:class:`~backscroll.query.engine.SearchEngine` with awaitable calls."""

    log_topic: str | None

    async def search(self, query: EngineQuery, deadline: Deadline) -> EnginePage: ...

    async def rank(self, query: EngineQuery, deadline: Deadline) -> list[EngineHit]: ...

    async def aclose(self) -> None: ...


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


class AsyncOpenSearchEngine:
    """The OpenSearch engine on an ``AsyncOpenSearch`` client: the requests and the parsing of the
    answers are :class:`~backscroll.query.opensearch.provider.OpenSearchEngine`'s."""

    log_topic: str | None = None

    def __init__(
        self,
        scope: Scope,
        access: OpenSearchAccess,
        client: AsyncOpenSearch | None = None,
        *,
        scan_max_rows: int = SCAN_MAX_ROWS,
    ) -> None:
        self.requests = OpenSearchEngine(scope, access, scan_max_rows=scan_max_rows)
        self.access = access
        self._client = client

    @property
    def client(self) -> AsyncOpenSearch:
        if self._client is None:
            self._client = async_client(self.access)
        return self._client

    async def search(self, query: EngineQuery, deadline: Deadline) -> EnginePage:
        request = self.requests.search_request(query)
        response = await self.access.acall(self.client, "msearch", deadline, body=request.lines)
        corpus, hits = self.access.parse(
            "the search", lambda: self.requests.parse_page(response, query, request, deadline)
        )
        if hits is None:  # more entries than a scan takes: the index, in a second request
            hits = await self.rank(query, deadline)
        return EnginePage(corpus, hits)

    async def rank(self, query: EngineQuery, deadline: Deadline) -> list[EngineHit]:
        scanned = self.requests.rescan(query, deadline)
        if scanned is not None:
            return scanned
        response = await self.access.acall(
            self.client, "search", deadline, **self.requests.rank_request(query)
        )
        return self.access.parse("the search", lambda: self.requests.parse_hits(response, query))

    async def aclose(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            await client.close()


def async_client(access: OpenSearchAccess) -> AsyncOpenSearch:
    """An ``AsyncOpenSearch`` client for ``access``'s settings; INVALID_CONFIG when the ``async``
    extra (aiohttp) is not installed."""
    try:
        from opensearchpy import AsyncOpenSearch

        from backscroll.query.opensearch.serializer import OrjsonSerializer

        return AsyncOpenSearch(**access.settings.client_kwargs(), serializer=OrjsonSerializer())
    except ImportError as err:
        raise SessionQueryError(
            "SESSION_QUERY_INVALID_CONFIG",
            f"the asyncio API on OpenSearch needs aiohttp: pip install 'backscroll-query[async]' ({err})",
        ) from None
    except Exception as err:
        typed = translate_opensearch_error(err, "SESSION_QUERY_INVALID_CONFIG", access.settings.url)
        raise (typed or err) from None


async def _cancellable(signal: AbortSignal, work: Awaitable[_T]) -> _T:
    """Await ``work``; when the task is cancelled, abort ``signal`` so the work behind it stops."""
    try:
        return await work
    except asyncio.CancelledError:
        signal.abort("the awaiting task was cancelled")
        raise


class AsyncSearchProvider(ProviderCore):
    """The asyncio provider: :class:`~backscroll.query.provider.ProviderCore`'s flow over an
    :class:`AsyncSearchEngine`. Same options, results and errors as the synchronous providers."""

    def __init__(self, scope: Scope, engine: AsyncSearchEngine, **options: Unpack[ProviderOptions]) -> None:
        super().__init__(scope, engine, **options)
        self.engine = engine

    async def asearch(
        self, request: SessionQueryRequest, *, signal: AbortSignal | None = None
    ) -> SessionQueryResult:
        """Run one search without blocking the loop; raises :class:`SessionQueryError` only (and
        ``CancelledError`` when the task is cancelled)."""
        own = AbortSignal(parent=check_signal(signal))
        flow = self._flow(request, own)
        outcome = advance(flow, None)
        while isinstance(outcome, EngineStep):
            outcome = advance(flow, await _cancellable(own, outcome.acall(self.engine)))
        return outcome

    async def aclose(self) -> None:
        """Refuse further searches and release the engine. Idempotent."""
        if not self._closed:
            self._closed = True
            await self.engine.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


class AsyncSQLiteProvider(AsyncSearchProvider):
    """:class:`~backscroll.query.sqlite.provider.SQLiteProvider`, awaitable (the engine runs on
    worker threads)."""

    def __init__(
        self, scope: Scope, path: str | os.PathLike[str], **options: Unpack[SQLiteProviderOptions]
    ) -> None:
        engine, rest = sqlite_engine(scope, path, options)
        super().__init__(scope, ThreadedEngine(engine), **rest)


class AsyncOpenSearchProvider(AsyncSearchProvider):
    """:class:`~backscroll.query.opensearch.provider.OpenSearchProvider` on ``AsyncOpenSearch``
    (``async_client``: a ready client; by default one is made from the settings on first use)."""

    def __init__(
        self,
        scope: Scope,
        settings: OpenSearchSettings | None = None,
        *,
        async_client: AsyncOpenSearch | None = None,
        **options: Unpack[OpenSearchProviderOptions],
    ) -> None:
        engine, rest = opensearch_engine(scope, settings, options)
        super().__init__(
            scope,
            AsyncOpenSearchEngine(scope, engine.access, async_client, scan_max_rows=engine.scan_max_rows),
            **rest,
        )


class AsyncSessionReader:
    """Any reader's reads, awaitable: each read's flow runs on a worker thread, never on the loop;
    a cancelled task aborts the read behind it. Closing closes the wrapped reader. Idempotent
    ``aclose()``; an async context manager."""

    def __init__(self, reader: ReaderBase) -> None:
        self.reader = reader

    async def _drive(self, flow: ReadFlow[_T], signal: AbortSignal) -> _T:
        """Run one read's flow to its result (on a worker thread here)."""
        return await asyncio.to_thread(self.reader.drive, flow, signal)

    async def _run(self, make: Callable[[ReaderBase], ReadFlow[_T]], signal: AbortSignal | None) -> _T:
        own = AbortSignal(parent=check_signal(signal))
        return await _cancellable(own, self._drive(make(self.reader), own))

    async def alist_sessions(
        self, filters: Sequence[Any] | None = None, *, signal: AbortSignal | None = None
    ) -> tuple[SessionRecord, ...]:
        """:meth:`~backscroll.query.reads.reader.ReaderBase.list_sessions`, awaitable."""
        return await self._run(lambda r: r.list_sessions_flow(filters), signal)

    async def alist_events(
        self, session_id: str, *, signal: AbortSignal | None = None
    ) -> tuple[EventRecordView, ...]:
        """:meth:`~backscroll.query.reads.reader.ReaderBase.list_events`, awaitable."""
        return await self._run(lambda r: r.list_events_flow(session_id), signal)

    async def afilter_events(
        self, session_id: str, filters: Sequence[Any], *, signal: AbortSignal | None = None
    ) -> tuple[EventRecordView, ...]:
        """:meth:`~backscroll.query.reads.reader.ReaderBase.filter_events`, awaitable."""
        return await self._run(lambda r: r.filter_events_flow(session_id, filters), signal)

    async def aread_surface(self, session_id: str, *, signal: AbortSignal | None = None) -> SurfaceRead:
        """:meth:`~backscroll.query.reads.reader.ReaderBase.read_surface`, awaitable."""
        return await self._run(lambda r: r.read_surface_flow(session_id), signal)

    async def aread_event(
        self, session_id: str, seq: int, before: int = 0, after: int = 0, *, signal: AbortSignal | None = None
    ) -> ReadEventResult:
        """:meth:`~backscroll.query.reads.reader.ReaderBase.read_event`, awaitable."""
        return await self._run(lambda r: r.read_event_flow(session_id, seq, before, after), signal)

    async def atrace_session(self, session_id: str, *, signal: AbortSignal | None = None) -> SessionTrace:
        """:meth:`~backscroll.query.reads.reader.ReaderBase.trace_session`, awaitable."""
        return await self._run(lambda r: r.trace_session_flow(session_id), signal)

    async def atrace_event(
        self, session_id: str, seq: int, *, signal: AbortSignal | None = None
    ) -> EventTraceResult:
        """:meth:`~backscroll.query.reads.reader.ReaderBase.trace_event`, awaitable."""
        return await self._run(lambda r: r.trace_event_flow(session_id, seq), signal)

    @property
    def closed(self) -> bool:
        return self.reader.closed

    async def aclose(self) -> None:
        """Refuse further reads and close the wrapped reader. Idempotent."""
        await asyncio.to_thread(self.reader.close)

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


class AsyncOpenSearchReader(AsyncSessionReader):
    """:class:`~backscroll.query.opensearch.reader.OpenSearchSessionReader` on ``AsyncOpenSearch``: the
    same read flows (validation, live merge, paging, log cache, errors), driven on the loop; each request is
    awaited on the async client with the read's remaining time as its timeout. No worker thread.

    ``async_client``: a ready client (closed by :meth:`aclose`); by default one is made from the
    settings on first use. Other arguments are :class:`OpenSearchSessionReader`'s.
    """

    reader: OpenSearchSessionReader

    def __init__(
        self,
        scope: Scope,
        settings: OpenSearchSettings | None = None,
        *,
        async_client: AsyncOpenSearch | None = None,
        page_size: int = DEFAULT_PAGE_SIZE,
        cache: bool = True,
        **options: Unpack[OpenSearchReaderOptions],
    ) -> None:
        super().__init__(
            OpenSearchSessionReader(scope, settings, page_size=page_size, cache=cache, **options)
        )
        self._client = async_client

    @property
    def client(self) -> AsyncOpenSearch:
        """The async client (made on first use)."""
        if self._client is None:
            self._client = async_client(self.reader.access)
        return self._client

    async def _drive(self, flow: ReadFlow[_T], signal: AbortSignal) -> _T:
        reader = self.reader
        reader._check_open()
        with reader.bounded(signal) as deadline:
            outcome = advance_read(flow, None)
            while isinstance(outcome, ReadStep):
                outcome = advance_read(flow, await self._request(outcome, deadline))
            return outcome[0]

    async def _request(self, step: ReadStep, deadline: Deadline) -> Any:
        access = self.reader.access
        return await access.acall(self.client, step.method, deadline, **step.kwargs)

    async def aclose(self) -> None:
        """Refuse further reads and close the async client. Idempotent."""
        self.reader.close()
        client, self._client = self._client, None
        if client is not None:
            await client.close()
