"""The OpenSearch provider on opensearch-py's ``AsyncOpenSearch`` client (the ``async`` extra:
aiohttp): the requests and the parsing of the answers are the synchronous engine's
(:class:`~backscroll.query.opensearch.provider.OpenSearchEngine`), each request awaited."""

from __future__ import annotations

from typing import TYPE_CHECKING, Unpack

from backscroll.indexer.settings import OpenSearchSettings
from backscroll.query.aio import AsyncSearchProvider
from backscroll.query.deadline import Deadline
from backscroll.query.engine import EngineHit, EnginePage, EngineQuery
from backscroll.query.opensearch.access import OpenSearchAccess, async_client
from backscroll.query.opensearch.provider import OpenSearchEngine, opensearch_engine
from backscroll.query.opensearch.scan import SCAN_MAX_ROWS
from backscroll.query.options import OpenSearchProviderOptions
from backscroll.query.scope import Scope

if TYPE_CHECKING:
    from opensearchpy import AsyncOpenSearch

__all__ = ["AsyncOpenSearchEngine", "AsyncOpenSearchProvider"]


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
        """The async client (made from the settings on first use)."""
        if self._client is None:
            self._client = async_client(self.access)
        return self._client

    async def search(self, query: EngineQuery, deadline: Deadline) -> EnginePage:
        """The corpus statistics and the page of ``query``, in one ``_msearch``."""
        request = self.requests.search_request(query)
        response = await self.access.acall(self.client, "msearch", deadline, body=request.lines)
        corpus, hits = self.access.parse(
            "the search", lambda: self.requests.parse_page(response, query, request, deadline)
        )
        if hits is None:  # more entries than a scan takes: the index, in a second request
            hits = await self.rank(query, deadline)
        return EnginePage(corpus, hits)

    async def rank(self, query: EngineQuery, deadline: Deadline) -> list[EngineHit]:
        """The page of ``query`` alone (a scanned scope's entries scored again, else the index)."""
        scanned = self.requests.rescan(query, deadline)
        if scanned is not None:
            return scanned
        response = await self.access.acall(
            self.client, "search", deadline, **self.requests.rank_request(query)
        )
        return self.access.parse("the search", lambda: self.requests.parse_hits(response, query))

    async def aclose(self) -> None:
        """Close the async client. Idempotent."""
        client, self._client = self._client, None
        if client is not None:
            await client.close()


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
