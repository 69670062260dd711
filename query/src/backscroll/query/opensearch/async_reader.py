"""The session reads on opensearch-py's ``AsyncOpenSearch`` client (the ``async`` extra: aiohttp):
the requests and the parsing of the answers are the synchronous engine's
(:class:`~backscroll.query.opensearch.reader.OpenSearchReadEngine`), each request awaited with
the read's remaining time as its timeout. No worker thread."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Unpack

from backscroll.indexer.settings import OpenSearchSettings
from backscroll.query.deadline import Deadline
from backscroll.query.driver import adrive
from backscroll.query.opensearch.access import async_client
from backscroll.query.opensearch.reader import (
    DEFAULT_PAGE_SIZE,
    OpenSearchReadEngine,
    OpenSearchSessionReader,
)
from backscroll.query.options import OpenSearchReaderOptions
from backscroll.query.reads import SessionRecord
from backscroll.query.reads.async_reader import AsyncSessionReader
from backscroll.query.reads.engine import StoredLog
from backscroll.query.scope import Scope

if TYPE_CHECKING:
    from opensearchpy import AsyncOpenSearch

__all__ = ["AsyncOpenSearchReadEngine", "AsyncOpenSearchReader"]


class AsyncOpenSearchReadEngine:
    """:class:`~backscroll.query.opensearch.reader.OpenSearchReadEngine`'s calls on an
    ``AsyncOpenSearch`` client (``client``: a ready one; by default one is made from the settings
    on first use)."""

    def __init__(self, engine: OpenSearchReadEngine, client: AsyncOpenSearch | None = None) -> None:
        self.requests = engine
        self.access = engine.access
        self._client = client

    @property
    def client(self) -> AsyncOpenSearch:
        """The async client (made on first use)."""
        if self._client is None:
            self._client = async_client(self.access)
        return self._client

    async def log(self, session_id: str, with_text: bool, deadline: Deadline) -> StoredLog | None:
        """:meth:`OpenSearchReadEngine.log`, awaited."""
        return await adrive(
            self.requests.shaped(self.requests.log_requests(session_id, with_text, deadline)), self
        )

    async def texts(self, session_id: str, seqs: Sequence[int], deadline: Deadline) -> dict[int, str]:
        """:meth:`OpenSearchReadEngine.texts`, awaited."""
        return await adrive(
            self.requests.shaped(self.requests.texts_requests(session_id, seqs, deadline)), self
        )

    async def listing(self, deadline: Deadline) -> list[SessionRecord]:
        """:meth:`OpenSearchReadEngine.listing`, awaited."""
        return await adrive(self.requests.shaped(self.requests.listing_requests(deadline)), self)

    async def aclose(self) -> None:
        """Close the async client. Idempotent."""
        client, self._client = self._client, None
        if client is not None:
            await client.close()


class AsyncOpenSearchReader(AsyncSessionReader):
    """:class:`~backscroll.query.opensearch.reader.OpenSearchSessionReader` on ``AsyncOpenSearch``:
    the same read flows (validation, live merge, paging, log cache, errors) on the loop, each
    request awaited on the async client with the read's remaining time as its timeout.

    ``async_client``: a ready client (closed by :meth:`aclose`); by default one is made from the
    settings on first use. Other arguments are :class:`OpenSearchSessionReader`'s.
    """

    reader: OpenSearchSessionReader
    engine: AsyncOpenSearchReadEngine

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
        reader = OpenSearchSessionReader(scope, settings, page_size=page_size, cache=cache, **options)
        super().__init__(reader, AsyncOpenSearchReadEngine(reader.engine, async_client))

    @property
    def client(self) -> AsyncOpenSearch:
        """The async client (made on first use)."""
        return self.engine.client
