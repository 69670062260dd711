"""``OpenSearchSessionReader``: exact reads, surfaces, event traces and lineage of sessions (spec 3.5–3.8).

Each read loads one session's log (the OpenSearch projection, routed to the session's shard, sorted
by seq and paged with ``search_after``, merged with the process's own live entries) and hands it to
the pure logic in :mod:`backscroll.query.reads`. Message text is fetched only for the events a read
returns, so surfaces and traces of long sessions move little data.

The scope (D10) is a server-side filter on every OpenSearch request, and a live session outside it
is ignored: a session outside the scope reads exactly like a missing one. A live session whose live
entries start at seq 0 is read without touching OpenSearch at all (spec 3.5), so a broken projection
never blocks it; every other failure of the projection is ``SESSION_QUERY_PERSISTENCE_FAILED``.

Event documents are append-only (the indexer ``create``\\s them; later updates touch only the
surface state, which reads recompute), so the skeletons of persisted logs (everything but text) and
their fold are kept in a process-wide cache bounded by :data:`LOG_CACHE_ENTRIES`. Every read still
asks the projection, in the same single request as the scoped session document, how many events the
session has and which come after the cached ones; any other difference (a deleted session, a gap
filled later) reloads the whole log.
"""

from __future__ import annotations

import dataclasses
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Unpack

from backscroll.indexer.document import events_alias, sessions_alias
from backscroll.indexer.fold import FoldEvent, FoldResult, SurfaceState
from backscroll.indexer.settings import OpenSearchSettings
from backscroll.query.config import check_bool, check_int
from backscroll.query.deadline import Deadline
from backscroll.query.errors import SessionQueryError
from backscroll.query.opensearch.access import opensearch_access
from backscroll.query.options import OpenSearchReaderOptions
from backscroll.query.reads import (
    LogEntry,
    SessionRecord,
    entry_from_source,
    record_from_source,
)
from backscroll.query.reads.flow import ReadFlow, ReadStep
from backscroll.query.reads.reader import Loaded, ReaderBase
from backscroll.query.scope import Scope

if TYPE_CHECKING:
    from opensearchpy import OpenSearch

__all__ = ["DEFAULT_PAGE_SIZE", "LOG_CACHE_ENTRIES", "OpenSearchSessionReader", "clear_log_cache"]

DEFAULT_PAGE_SIZE: Final = 5000
#: OpenSearch's default ``index.max_result_window``: a search_after page may not exceed it.
MAX_PAGE: Final = 10_000
#: Event skeletons the process-wide log cache keeps, over all sessions (least recently read go first).
LOG_CACHE_ENTRIES: Final = 100_000
_SKELETON: Final = [
    "schema", "session_id", "workspace_id", "seq", "type", "time", "turn", "role", "tool_name",
    "surface_op", "replace_start", "replace_end", "sources", "attrs",
]  # fmt: skip
_WITH_TEXT: Final = [*_SKELETON, "text", "args"]


@dataclass(frozen=True, slots=True)
class _CachedLog:
    """A persisted log without text and its fold. Shared between reads: never mutated."""

    entries: tuple[LogEntry, ...]
    events: tuple[FoldEvent, ...]
    state: SurfaceState
    folded: FoldResult

    @classmethod
    def build(cls, entries: Sequence[LogEntry], base: _CachedLog | None = None) -> _CachedLog:
        """The log ``base.entries + entries`` (or ``entries``), folded incrementally from ``base``."""
        state = base.state.copy() if base is not None else SurfaceState()
        events = tuple(entry.fold_event() for entry in entries)
        for event in events:
            state.apply(event)
        if base is not None:
            return cls((*base.entries, *entries), (*base.events, *events), state, state.result())
        return cls(tuple(entries), events, state, state.result())


class _LogCache:
    """Process-wide LRU of :class:`_CachedLog`, bounded by the total number of entries."""

    def __init__(self, max_entries: int) -> None:
        self.max_entries = max_entries
        self._lock = threading.Lock()
        self._logs: OrderedDict[tuple[str, ...], _CachedLog] = OrderedDict()
        self._total = 0

    def get(self, key: tuple[str, ...]) -> _CachedLog | None:
        with self._lock:
            log = self._logs.get(key)
            if log is not None:
                self._logs.move_to_end(key)
            return log

    def put(self, key: tuple[str, ...], log: _CachedLog) -> None:
        with self._lock:
            old = self._logs.pop(key, None)
            if old is not None:
                self._total -= len(old.entries)
            if len(log.entries) > self.max_entries:
                return
            self._logs[key] = log
            self._total += len(log.entries)
            while self._total > self.max_entries:
                _, evicted = self._logs.popitem(last=False)
                self._total -= len(evicted.entries)

    def drop(self, key: tuple[str, ...]) -> None:
        with self._lock:
            old = self._logs.pop(key, None)
            if old is not None:
                self._total -= len(old.entries)

    def clear(self) -> None:
        with self._lock:
            self._logs.clear()
            self._total = 0


_LOG_CACHE: Final = _LogCache(LOG_CACHE_ENTRIES)


def clear_log_cache() -> None:
    """Forget every cached log skeleton (tests and benchmarks measuring cold reads)."""
    _LOG_CACHE.clear()


class OpenSearchSessionReader(ReaderBase):
    """Reads sessions of one :class:`Scope` from the OpenSearch projection and a live source.

    The public reads, their validation and the live merge are :class:`ReaderBase`'s (shared with the
    embedded ``SQLiteSessionReader``); this class loads documents from OpenSearch.

    Cheap to construct (the HTTP client is shared per endpoint and created on first use), safe to
    share between threads, and ``close()`` is idempotent. Every method raises
    :class:`SessionQueryError` (codes in ``docs/errors.md``) and returns detached frozen models.

    ``read_window_max`` bounds ``read_event``'s ``before``/``after``; ``live`` serves this process's
    own entries (see :class:`LiveSource`); ``persistence=False`` reads live sessions only (the
    projection is "unmounted"); ``page_size`` is the events fetched per ``search_after`` page;
    ``request_timeout_s`` bounds each OpenSearch request; ``cache=False`` bypasses the log cache.
    """

    def __init__(
        self,
        scope: Scope,
        settings: OpenSearchSettings | None = None,
        *,
        page_size: int = DEFAULT_PAGE_SIZE,
        cache: bool = True,
        **options: Unpack[OpenSearchReaderOptions],
    ) -> None:
        self.access, rest = opensearch_access("SESSION_QUERY_PERSISTENCE_FAILED", settings, options)
        super().__init__(scope, **rest)
        self.page_size = check_int(page_size, "page_size", 1, MAX_PAGE)
        self.cache = check_bool(cache, "cache")
        self.settings = self.access.settings
        self.events_index = events_alias(self.settings.index_prefix)
        self.sessions_index = sessions_alias(self.settings.index_prefix)

    # -- OpenSearch requests ----------------------------------------------------------------------
    # The loads are flows: they yield each request as a ReadStep and parse the response they are
    # sent back. drive() answers on the pooled client; AsyncOpenSearchReader awaits AsyncOpenSearch.
    @property
    def client(self) -> OpenSearch:
        return self.access.client

    def _perform(self, step: ReadStep, deadline: Deadline) -> Any:
        return self.access.call(step.method, deadline, **step.kwargs)

    def _search(self, session_id: str, body: dict[str, Any]) -> ReadStep:
        return ReadStep("search", {"index": self.events_index, "routing": session_id, "body": body})

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

    def _msearch(self, lines: list[dict[str, Any]]) -> ReadFlow[list[dict[str, Any]]]:
        responses: list[dict[str, Any]] = (yield ReadStep("msearch", {"body": lines}))["responses"]
        for response in responses:
            if "error" in response:
                raise self.access.item_error(response["error"], "projection read")
        return responses

    def _pages(
        self, session_id: str, hits: list[dict[str, Any]], fields: list[str], low: int | None
    ) -> ReadFlow[list[LogEntry]]:
        """Parse a first page of event hits (seqs from ``low`` on) and fetch the following pages
        (``search_after`` on seq)."""
        with_text = "text" in fields
        entries: list[LogEntry] = []
        while True:
            entries.extend(entry_from_source(session_id, hit["_source"], with_text=with_text) for hit in hits)
            if len(hits) < self.page_size:
                return entries
            body = self._events_body(session_id, fields, list(hits[-1]["sort"]), low)
            response = yield self._search(session_id, body)
            hits = response["hits"]["hits"]

    def _persisted(
        self, session_id: str, *, with_text: bool
    ) -> ReadFlow[tuple[SessionRecord, Loaded] | None]:
        """The session document and its event documents (``None`` if not in the scoped projection).

        One ``msearch`` brings the session document, the session's event count and the events: when
        a skeleton is cached, those after it; otherwise two pages at once, seqs below ``page_size``
        and the rest (OpenSearch runs them concurrently). Longer logs continue with ``search_after``.
        A load with text bypasses the cache.
        """
        key = (self.settings.url, self.settings.index_prefix, session_id)
        cached = _LOG_CACHE.get(key) if self.cache and not with_text else None
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
        sessions, counted, *pages = yield from self._msearch(lines)
        found = sessions["hits"]["hits"]
        if not found:
            _LOG_CACHE.drop(key)
            return None
        record = record_from_source(found[0]["_source"])
        count = int(counted["hits"]["total"]["value"])
        entries = [  # a bounded slice holds at most page_size seqs: only the open-ended last one pages on
            entry_from_source(session_id, hit["_source"], with_text=with_text)
            for page in pages[:-1]
            for hit in page["hits"]["hits"]
        ]
        entries += yield from self._pages(session_id, pages[-1]["hits"]["hits"], fields, low)
        if with_text:
            return record, Loaded(record.header, entries)
        if cached is not None and len(cached.entries) + len(entries) != count:
            entries = yield from self._reload(session_id, fields)  # deleted or back-filled events: start over
            cached = None
        log = _CachedLog.build(entries, cached)
        if self.cache:
            _LOG_CACHE.put(key, log)
        return record, Loaded(record.header, list(log.entries), log.folded, log.events)

    def _reload(self, session_id: str, fields: list[str]) -> ReadFlow[list[LogEntry]]:
        response = yield self._search(session_id, self._events_body(session_id, fields, None))
        return (yield from self._pages(session_id, response["hits"]["hits"], fields, None))

    def _with_text(
        self, session_id: str, entries: list[LogEntry], wanted: Sequence[int]
    ) -> ReadFlow[list[LogEntry]]:
        """``entries`` with the text of the entries at indices ``wanted`` loaded (as new entries: the
        ones passed in may be shared with the cache). Live entries always have their text."""
        missing = {entries[i].seq: i for i in wanted if entries[i].text is None}
        if not missing:
            return entries
        out = list(entries)
        pending = sorted(missing)
        for start in range(0, len(pending), self.page_size):
            chunk = pending[start : start + self.page_size]
            body = {
                "size": len(chunk),
                "query": {"bool": {"filter": [*self._filters(session_id), {"terms": {"seq": chunk}}]}},
                "track_total_hits": False,
                "_source": {"includes": ["schema", "session_id", "seq", "type", "time", "text", "args"]},
            }
            response = yield self._search(session_id, body)
            for hit in response["hits"]["hits"]:
                source = hit["_source"]
                index = missing.get(source.get("seq"))
                if index is not None:
                    text = entry_from_source(session_id, source, with_text=True).text
                    out[index] = dataclasses.replace(entries[index], text=text)
        unfilled = [seq for seq, index in missing.items() if out[index].text is None]
        if unfilled:
            raise SessionQueryError(
                "SESSION_QUERY_PERSISTENCE_FAILED",
                f"session {session_id!r} changed while it was read (events {unfilled[:5]} vanished)",
            )
        return out

    def _persisted_listing(self) -> ReadFlow[list[SessionRecord]]:
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
            hits = (yield ReadStep("search", kwargs))["hits"]["hits"]
            records.extend(record_from_source(hit["_source"]) for hit in hits)
            if len(hits) < self.page_size:
                return records
            after = list(hits[-1]["sort"])
