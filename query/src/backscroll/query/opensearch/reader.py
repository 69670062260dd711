"""The session reads on OpenSearch: :class:`OpenSearchReadEngine` (the read-engine port,
:mod:`backscroll.query.reads.engine`) and :class:`OpenSearchSessionReader`, the reads of
:class:`~backscroll.query.reads.reader.ReaderBase` over it.

A session's log comes from the OpenSearch projection, routed to the session's shard, sorted by seq
and paged with ``search_after``. Message text is fetched only for the events a read returns, so
surfaces and traces of long sessions move little data.

The scope is a server-side filter on every OpenSearch request, so a session outside it reads
exactly like a missing one; every failure of the projection is ``SESSION_QUERY_PERSISTENCE_FAILED``
(typed at this edge by :class:`~backscroll.query.opensearch.access.OpenSearchAccess`).

The skeletons of persisted logs (everything but text) and their fold are kept in a process-wide
cache (:mod:`backscroll.query.opensearch.log_cache`). Every read still asks the projection, in the
same single request as the scoped session document, how many events the session has and which come
after the cached ones; any other difference (a deleted session, a gap filled later) reloads the
whole log.

Each engine call is written once as a generator of client requests (:class:`ClientRequest`), run
by :func:`backscroll.query.driver.drive` on the pooled client and by
:func:`~backscroll.query.driver.adrive` on ``AsyncOpenSearch``
(:class:`~backscroll.query.opensearch.async_reader.AsyncOpenSearchReadEngine`).
"""

from __future__ import annotations

from collections.abc import Generator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Protocol, TypeAlias, TypeVar, Unpack

from backscroll.indexer.opensearch.mappings import events_alias, sessions_alias
from backscroll.indexer.settings import OpenSearchSettings
from backscroll.query.config import check_bool, check_int
from backscroll.query.deadline import Deadline
from backscroll.query.driver import drive
from backscroll.query.errors import SessionQueryError
from backscroll.query.opensearch.access import OpenSearchAccess, opensearch_access
from backscroll.query.opensearch.log_cache import LOG_CACHE, LOG_CACHE_ENTRIES, CachedLog, clear_log_cache
from backscroll.query.options import OpenSearchReaderOptions
from backscroll.query.reads import (
    LogEntry,
    SessionRecord,
    entry_from_source,
    record_from_source,
)
from backscroll.query.reads.engine import StoredLog
from backscroll.query.reads.reader import ReaderBase
from backscroll.query.scope import Scope

if TYPE_CHECKING:
    from opensearchpy import AsyncOpenSearch, OpenSearch

__all__ = [
    "DEFAULT_PAGE_SIZE",
    "LOG_CACHE_ENTRIES",
    "AsyncClientAccess",
    "ClientRequest",
    "OpenSearchReadEngine",
    "OpenSearchSessionReader",
    "clear_log_cache",
]

DEFAULT_PAGE_SIZE: Final = 5000
#: OpenSearch's default ``index.max_result_window``: a search_after page may not exceed it.
MAX_PAGE: Final = 10_000
_SKELETON: Final = [
    "schema", "session_id", "workspace_id", "seq", "type", "time", "turn", "role", "tool_name",
    "surface_op", "replace_start", "replace_end", "sources", "attrs",
]  # fmt: skip
_WITH_TEXT: Final = [*_SKELETON, "text", "args"]


_T = TypeVar("_T")


class AsyncClientAccess(Protocol):
    """Where a request runs on ``AsyncOpenSearch``: the client and the access whose edge types its
    errors (:class:`~backscroll.query.opensearch.async_reader.AsyncOpenSearchReadEngine`)."""

    @property
    def access(self) -> OpenSearchAccess: ...

    @property
    def client(self) -> AsyncOpenSearch: ...


@dataclass(frozen=True, slots=True)
class ClientRequest:
    """One request of an engine call: ``client.<method>(**kwargs)`` within ``deadline`` (the
    request's timeout is the time left); the answer is the response."""

    method: str
    kwargs: Mapping[str, Any]
    deadline: Deadline

    def call(self, access: OpenSearchAccess) -> Any:
        """The response, on the pooled client."""
        return access.call(self.method, self.deadline, **self.kwargs)

    async def acall(self, port: AsyncClientAccess) -> Any:
        """The response, on an ``AsyncOpenSearch`` client."""
        return await port.access.acall(port.client, self.method, self.deadline, **self.kwargs)


#: An engine call written without I/O: yields :class:`ClientRequest`\s, receives their responses.
Requests: TypeAlias = Generator[ClientRequest, Any, _T]


class OpenSearchReadEngine:
    """The OpenSearch :class:`~backscroll.query.reads.engine.ReadEngine` of one :class:`Scope`.

    ``page_size`` is the events fetched per ``search_after`` page; ``cache=False`` bypasses the
    log cache. The ``*_requests`` methods are the engine calls as generators of requests (the async
    engine runs the same ones); nothing here holds state between calls but the cache.
    """

    def __init__(self, scope: Scope, access: OpenSearchAccess, *, page_size: int, cache: bool) -> None:
        self.scope = scope
        self.access = access
        self.page_size = page_size
        self.cache = cache
        self.settings = access.settings
        self.events_index = events_alias(self.settings.index_prefix)
        self.sessions_index = sessions_alias(self.settings.index_prefix)

    # -- the port -----------------------------------------------------------------------------
    def log(self, session_id: str, with_text: bool, deadline: Deadline) -> StoredLog | None:
        """The session document and its event documents (``None`` if not in the scoped projection)."""
        return drive(self.shaped(self.log_requests(session_id, with_text, deadline)), self.access)

    def texts(self, session_id: str, seqs: Sequence[int], deadline: Deadline) -> dict[int, str]:
        """The text of the events ``seqs``, by seq."""
        return drive(self.shaped(self.texts_requests(session_id, seqs, deadline)), self.access)

    def listing(self, deadline: Deadline) -> list[SessionRecord]:
        """Every session document in scope."""
        return drive(self.shaped(self.listing_requests(deadline)), self.access)

    def close(self) -> None:
        """Nothing to release: the pooled client is shared per endpoint."""

    def shaped(self, requests: Requests[_T]) -> Requests[_T]:
        """``requests``, with a response of an unexpected shape typed as a failed read (the
        parsing happens inside the requests, between the responses)."""
        try:
            return (yield from requests)
        except (KeyError, IndexError, TypeError, ValueError, AttributeError) as err:
            raise SessionQueryError(
                self.access.code, f"unexpected OpenSearch response to a read: {type(err).__name__}: {err}"
            ) from None

    # -- the requests ---------------------------------------------------------------------------
    def _search(self, session_id: str, body: dict[str, Any], deadline: Deadline) -> ClientRequest:
        return ClientRequest(
            "search", {"index": self.events_index, "routing": session_id, "body": body}, deadline
        )

    def _filters(
        self, session_id: str, low: int | None = None, high: int | None = None
    ) -> list[dict[str, Any]]:
        """The scope, the session, and optionally the seqs ``low`` (inclusive) to ``high`` (exclusive)."""
        filters: list[dict[str, Any]] = [self.scope.filter(), {"term": {"session_id": session_id}}]
        if low is not None or high is not None:
            bounds = {"gte": low} if high is None else {"gte": low or 0, "lt": high}
            filters.append({"range": {"seq": bounds}})
        return filters

    def _events_body(
        self,
        session_id: str,
        fields: list[str],
        after: list[Any] | None,
        low: int | None = None,
        high: int | None = None,
    ) -> dict[str, Any]:
        body: dict[str, Any] = {
            "size": self.page_size,
            "query": {"bool": {"filter": self._filters(session_id, low, high)}},
            "sort": [{"seq": "asc"}],
            "track_total_hits": False,
            "_source": {"includes": fields},
        }
        if after is not None:
            body["search_after"] = after
        return body

    def _msearch(self, lines: list[dict[str, Any]], deadline: Deadline) -> Requests[list[dict[str, Any]]]:
        responses: list[dict[str, Any]] = (yield ClientRequest("msearch", {"body": lines}, deadline))[
            "responses"
        ]
        for response in responses:
            if "error" in response:
                raise self.access.item_error(response["error"], "projection read")
        return responses

    def _pages(
        self,
        session_id: str,
        hits: list[dict[str, Any]],
        fields: list[str],
        low: int | None,
        deadline: Deadline,
    ) -> Requests[list[LogEntry]]:
        """Parse a first page of event hits (seqs from ``low`` on) and fetch the following pages
        (``search_after`` on seq)."""
        with_text = "text" in fields
        entries: list[LogEntry] = []
        while True:
            entries.extend(entry_from_source(session_id, hit["_source"], with_text=with_text) for hit in hits)
            if len(hits) < self.page_size:
                return entries
            body = self._events_body(session_id, fields, list(hits[-1]["sort"]), low)
            response = yield self._search(session_id, body, deadline)
            hits = response["hits"]["hits"]

    def log_requests(
        self, session_id: str, with_text: bool, deadline: Deadline
    ) -> Requests[StoredLog | None]:
        """:meth:`log`'s requests. One ``msearch`` brings the session document, the session's event
        count and the events: when a skeleton is cached, those after it; otherwise two pages at
        once, seqs below ``page_size`` and the rest (OpenSearch runs them concurrently). Longer logs
        continue with ``search_after``. A load with text bypasses the cache.
        """
        key = (self.settings.url, self.settings.index_prefix, session_id)
        cached = LOG_CACHE.get(key) if self.cache and not with_text else None
        fields = _WITH_TEXT if with_text else _SKELETON
        if cached is not None:
            low = cached.entries[-1].seq + 1 if cached.entries else 0
            slices = [self._events_body(session_id, fields, None, low)]
        else:
            low = self.page_size
            slices = [
                self._events_body(session_id, fields, None, 0, self.page_size),
                self._events_body(session_id, fields, None, self.page_size),
            ]
        lines: list[dict[str, Any]] = [
            {"index": self.sessions_index, "routing": session_id},
            {
                "size": 1,
                "query": {"bool": {"filter": self._filters(session_id)}},
                "_source": {"excludes": ["violations"]},
            },
            {"index": self.events_index, "routing": session_id},
            {"size": 0, "track_total_hits": True, "query": {"bool": {"filter": self._filters(session_id)}}},
        ]
        for body in slices:
            lines += [{"index": self.events_index, "routing": session_id}, body]
        sessions, counted, *pages = yield from self._msearch(lines, deadline)
        found = sessions["hits"]["hits"]
        if not found:
            LOG_CACHE.drop(key)
            return None
        record = record_from_source(found[0]["_source"])
        count = int(counted["hits"]["total"]["value"])
        entries = [  # a bounded slice holds at most page_size seqs: only the open-ended last one pages on
            entry_from_source(session_id, hit["_source"], with_text=with_text)
            for page in pages[:-1]
            for hit in page["hits"]["hits"]
        ]
        entries += yield from self._pages(session_id, pages[-1]["hits"]["hits"], fields, low, deadline)
        if with_text:
            return StoredLog(record, entries)
        if cached is not None and len(cached.entries) + len(entries) != count:
            entries = yield from self._reload(
                session_id, fields, deadline
            )  # deleted or back-filled: start over
            cached = None
        log = CachedLog.build(entries, cached)
        if self.cache:
            LOG_CACHE.put(key, log)
        return StoredLog(record, list(log.entries), log.folded, log.events)

    def _reload(self, session_id: str, fields: list[str], deadline: Deadline) -> Requests[list[LogEntry]]:
        response = yield self._search(session_id, self._events_body(session_id, fields, None), deadline)
        return (yield from self._pages(session_id, response["hits"]["hits"], fields, None, deadline))

    def texts_requests(
        self, session_id: str, seqs: Sequence[int], deadline: Deadline
    ) -> Requests[dict[int, str]]:
        """:meth:`texts`' requests: the events by seq, ``page_size`` at a time."""
        texts: dict[int, str] = {}
        for start in range(0, len(seqs), self.page_size):
            chunk = list(seqs[start : start + self.page_size])
            body = {
                "size": len(chunk),
                "query": {"bool": {"filter": [*self._filters(session_id), {"terms": {"seq": chunk}}]}},
                "track_total_hits": False,
                "_source": {"includes": ["schema", "session_id", "seq", "type", "time", "text", "args"]},
            }
            response = yield self._search(session_id, body, deadline)
            for hit in response["hits"]["hits"]:
                entry = entry_from_source(session_id, hit["_source"], with_text=True)
                if entry.text is not None:
                    texts[entry.seq] = entry.text
        return texts

    def listing_requests(self, deadline: Deadline) -> Requests[list[SessionRecord]]:
        """:meth:`listing`'s requests: the session documents in scope, ``page_size`` at a time."""
        records: list[SessionRecord] = []
        after: list[Any] | None = None
        routing = self.scope.routing()
        while True:
            body: dict[str, Any] = {
                "size": self.page_size,
                "query": {"bool": {"filter": [self.scope.filter()]}},
                "sort": [{"session_id": "asc"}],
                "track_total_hits": False,
                "_source": {"excludes": ["violations"]},
            }
            if after is not None:
                body["search_after"] = after
            kwargs: dict[str, Any] = {"index": self.sessions_index, "body": body}
            if routing:
                kwargs["routing"] = routing
            hits = (yield ClientRequest("search", kwargs, deadline))["hits"]["hits"]
            records.extend(record_from_source(hit["_source"]) for hit in hits)
            if len(hits) < self.page_size:
                return records
            after = list(hits[-1]["sort"])


class OpenSearchSessionReader(ReaderBase):
    """Reads sessions of one :class:`Scope` from the OpenSearch projection and a live source.

    The public reads, their validation and the live merge are :class:`ReaderBase`'s (shared with the
    embedded ``SQLiteSessionReader``); its engine, :class:`OpenSearchReadEngine`, loads documents
    from OpenSearch.

    Cheap to construct (the HTTP client is shared per endpoint and created on first use), safe to
    share between threads, and ``close()`` is idempotent. Every method raises
    :class:`~backscroll.query.errors.SessionQueryError` (codes in ``docs/errors.md``) and returns
    detached frozen models.

    ``read_window_max`` bounds ``read_event``'s ``before``/``after``; ``live`` serves this process's
    own entries (see :class:`~backscroll.query.reads.LiveSource`); ``persistence=False`` reads live
    sessions only (the projection is "unmounted"); ``page_size`` is the events fetched per
    ``search_after`` page; ``request_timeout_s`` bounds each read; ``cache=False`` bypasses the log
    cache.
    """

    engine: OpenSearchReadEngine

    def __init__(
        self,
        scope: Scope,
        settings: OpenSearchSettings | None = None,
        *,
        page_size: int = DEFAULT_PAGE_SIZE,
        cache: bool = True,
        **options: Unpack[OpenSearchReaderOptions],
    ) -> None:
        access, rest = opensearch_access("SESSION_QUERY_PERSISTENCE_FAILED", settings, options)
        engine = OpenSearchReadEngine(
            scope,
            access,
            page_size=check_int(page_size, "page_size", 1, MAX_PAGE),
            cache=check_bool(cache, "cache"),
        )
        super().__init__(scope, engine, **rest)
        self.access = access
        self.settings = access.settings
        self.page_size = engine.page_size
        self.cache = engine.cache

    @property
    def client(self) -> OpenSearch:
        """The pooled client (made on first use)."""
        return self.access.client
