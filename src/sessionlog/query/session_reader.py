"""``SessionReader``: exact reads, surfaces, event traces and lineage of sessions (spec 3.5–3.8).

Each read loads one session's log (the OpenSearch projection, routed to the session's shard, sorted
by seq and paged with ``search_after``, merged with the process's own live entries) and hands it to
the pure logic in :mod:`sessionlog.query.reads`. Message text is fetched only for the events a read
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
import math
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final

from opensearchpy import OpenSearch
from opensearchpy.exceptions import ConnectionError as OSConnectionError
from opensearchpy.exceptions import ConnectionTimeout, NotFoundError, OpenSearchException, TransportError
from pydantic import ValidationError

from sessionlog.indexer.document import events_alias, sessions_alias
from sessionlog.indexer.fold import FoldEvent, FoldResult, SurfaceState
from sessionlog.indexer.settings import OpenSearchSettings
from sessionlog.query.clients import shared_client
from sessionlog.query.errors import SessionQueryError
from sessionlog.query.live import live_source
from sessionlog.query.reads import (
    DEFAULT_READ_WINDOW_MAX,
    EventRecordView,
    EventTraceResult,
    LiveSource,
    LogEntry,
    ReadEventResult,
    SessionHeader,
    SessionRecord,
    SessionTrace,
    SurfaceRead,
    apply_event_filters,
    apply_session_filters,
    build_read_event,
    build_surface_read,
    build_trace_event,
    check_compatible,
    check_fold,
    check_read_window_max,
    check_session_id,
    check_window,
    entry_from_record,
    entry_from_source,
    event_view,
    fold_log,
    header_from_live,
    locate_index,
    merge_listing,
    merge_logs,
    parse_event_filters,
    parse_session_filters,
    preferred_header,
    record_from_source,
    scope_admits,
    trace_session,
    window_bounds,
)
from sessionlog.query.scope import Scope

__all__ = ["DEFAULT_PAGE_SIZE", "LOG_CACHE_ENTRIES", "SessionReader", "clear_log_cache"]

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


@dataclass(slots=True)
class _Loaded:
    """One session's header and log; ``folded`` is its fold when already known (cached)."""

    header: SessionHeader
    entries: list[LogEntry]
    folded: FoldResult | None = None
    events: Sequence[FoldEvent] | None = None

    def fold(self) -> FoldResult:
        return self.folded if self.folded is not None else fold_log(self.entries)

    def fold_strict(self) -> FoldResult:
        return check_fold(self.header.session_id, self.fold())


def _config_error(message: str) -> SessionQueryError:
    return SessionQueryError("SESSION_QUERY_INVALID_CONFIG", message)


def _not_found(session_id: str) -> SessionQueryError:
    return SessionQueryError("SESSION_QUERY_SESSION_NOT_FOUND", f"no session {session_id!r}")


class SessionReader:
    """Reads sessions of one :class:`Scope` from the OpenSearch projection and a live source.

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
        hosts: str | None = None,
        index_prefix: str | None = None,
        client: OpenSearch | None = None,
        read_window_max: int = DEFAULT_READ_WINDOW_MAX,
        live: LiveSource | None = None,
        persistence: bool = True,
        page_size: int = DEFAULT_PAGE_SIZE,
        request_timeout_s: float = 5.0,
        cache: bool = True,
    ) -> None:
        if not isinstance(scope, Scope):
            raise SessionQueryError("SESSION_QUERY_INVALID_SCOPE", "a reader needs a Scope")
        self.read_window_max = check_read_window_max(read_window_max)
        if isinstance(page_size, bool) or not isinstance(page_size, int) or not 0 < page_size <= MAX_PAGE:
            raise _config_error(f"page_size must be an integer in [1, {MAX_PAGE}], got {page_size!r}")
        if (
            isinstance(request_timeout_s, bool)
            or not isinstance(request_timeout_s, int | float)
            or not math.isfinite(request_timeout_s)
            or request_timeout_s <= 0
        ):
            raise _config_error(f"request_timeout_s must be a positive number, got {request_timeout_s!r}")
        if not isinstance(persistence, bool) or not isinstance(cache, bool):
            raise _config_error("persistence and cache must be true or false")
        if live is not None:
            try:
                live = live_source(live)
            except TypeError:
                raise _config_error(
                    "live must be an Appender or provide sessions() and events(session_id)"
                ) from None
        overrides: dict[str, Any] = {}
        if hosts:
            overrides["url"] = hosts
        if index_prefix:
            overrides["index_prefix"] = index_prefix
        try:
            base = settings or OpenSearchSettings()
            merged = base.model_copy(update=overrides)
            # model_copy does not validate the overrides; validating the merged values does.
            self.settings = type(merged).model_validate(merged.model_dump())
        except (ValidationError, ValueError) as err:
            raise _config_error(f"invalid OpenSearch settings: {err}") from None
        self.scope = scope
        self.page_size = page_size
        self.request_timeout_s = float(request_timeout_s)
        self.persistence = persistence
        self.cache = cache
        self.events_index = events_alias(self.settings.index_prefix)
        self.sessions_index = sessions_alias(self.settings.index_prefix)
        self._live = live
        self._client = client
        self._lock = threading.Lock()
        self._closed = False

    # -- lifecycle ------------------------------------------------------------------------------
    @property
    def client(self) -> OpenSearch:
        if self._client is None:
            with self._lock:
                if self._client is None:
                    self._client = shared_client(self.settings)
        return self._client

    def close(self) -> None:
        """Refuse further reads (``SESSION_QUERY_PROVIDER_CLOSED``); the shared HTTP pool stays open."""
        self._closed = True

    @property
    def closed(self) -> bool:
        return self._closed

    def __enter__(self) -> SessionReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _check_open(self) -> None:
        if self._closed:
            raise SessionQueryError("SESSION_QUERY_PROVIDER_CLOSED", "the reader was closed")

    # -- public reads ---------------------------------------------------------------------------
    def list_sessions(self, filters: Sequence[Any] | None = None) -> tuple[SessionRecord, ...]:
        """Sessions in scope, newest first (then id): persisted ones overlaid by live ones.

        ``filters`` are session clauses (spec 3.7, see :func:`reads.parse_session_filters`).
        """
        self._check_open()
        parsed = parse_session_filters(filters)
        return tuple(apply_session_filters(self._listing(), parsed))

    def list_events(self, session_id: str) -> tuple[EventRecordView, ...]:
        """Every event of the session in seq order, classified by the fold (INVALID_SURFACE if the
        log breaks a surface rule)."""
        self._check_open()
        loaded = self._load(session_id, with_text=True)
        folded = loaded.fold_strict()
        sid = loaded.header.session_id
        return tuple(event_view(sid, entry, folded) for entry in loaded.entries)

    def filter_events(self, session_id: str, filters: Sequence[Any]) -> tuple[EventRecordView, ...]:
        """The session's events with text that match every clause (spec 3.7), in seq order.

        Filters are validated before the session is loaded; the log must fold (INVALID_SURFACE).
        """
        self._check_open()
        parsed = parse_event_filters(filters)
        loaded = self._load(session_id, with_text=True)
        folded = loaded.fold_strict()
        sid = loaded.header.session_id
        return tuple(apply_event_filters((event_view(sid, e, folded) for e in loaded.entries), parsed))

    def read_surface(self, session_id: str) -> SurfaceRead:
        """The model's current surface in model-history order and the last raw seq it covers."""
        self._check_open()
        loaded = self._load(session_id, with_text=False)
        folded = loaded.fold_strict()
        nodes = set(folded.nodes)
        wanted = [i for i, entry in enumerate(loaded.entries) if entry.seq in nodes]
        entries = self._with_text(loaded.header.session_id, loaded.entries, wanted)
        return build_surface_read(loaded.header, entries, folded)

    def read_event(self, session_id: str, seq: int, before: int = 0, after: int = 0) -> ReadEventResult:
        """The event ``seq`` and up to ``before``/``after`` neighbours (clamped at the log's edges).

        The window is validated first (INVALID_WINDOW even for a missing session). The surface fold
        is not enforced, so an event of a surface-invalid log can still be read.
        """
        self._check_open()
        before, after = check_window(before, after, self.read_window_max)
        loaded = self._load(session_id, with_text=False)
        index = locate_index(loaded.entries, seq)
        if index is None:
            raise SessionQueryError(
                "SESSION_QUERY_EVENT_NOT_FOUND", f"no event {seq!r} in session {loaded.header.session_id!r}"
            )
        lo, hi = window_bounds(len(loaded.entries), index, before, after)
        entries = self._with_text(loaded.header.session_id, loaded.entries, range(lo, hi + 1))
        return build_read_event(loaded.header, entries, loaded.fold(), index, (lo, hi))

    def trace_session(self, session_id: str) -> SessionTrace:
        """Ancestors and descendants of the session within the scope (one listing)."""
        self._check_open()
        sid = check_session_id(session_id)
        return trace_session(sid, self._listing())

    def trace_event(self, session_id: str, seq: int) -> EventTraceResult:
        """Replacement and citation edges of one event. EVENT_NOT_FOUND is checked before the log is
        validated (INVALID_SURFACE)."""
        self._check_open()
        loaded = self._load(session_id, with_text=False)
        sid = loaded.header.session_id
        index = locate_index(loaded.entries, seq)
        if index is None:
            raise SessionQueryError("SESSION_QUERY_EVENT_NOT_FOUND", f"no event {seq!r} in session {sid!r}")
        folded = loaded.fold_strict()
        entries = self._with_text(sid, loaded.entries, [index])
        return build_trace_event(loaded.header, entries, folded, index, loaded.events)

    # -- loading --------------------------------------------------------------------------------
    def _live_session(self, session_id: str) -> tuple[SessionHeader, list[LogEntry]] | None:
        if self._live is None:
            return None
        records = self._live.events(session_id)
        if records is None:
            return None
        entries = merge_logs((), (entry_from_record(r) for r in records if r.session_id == session_id))
        header = next(
            (h for h in map(header_from_live, self._live.sessions()) if h.session_id == session_id), None
        )
        if header is None:
            workspace = entries[0].workspace_id if entries else None
            header = SessionHeader(session_id=session_id, workspace_id=workspace, has_header=False)
        return header, entries

    def _load(self, session_id: str, *, with_text: bool) -> _Loaded:
        """One session's header and log (spec 3.5 ``load``), live entries winning per seq."""
        sid = check_session_id(session_id)
        live = self._live_session(sid)
        if live is not None and scope_admits(self.scope, live[0]):
            header, entries = live
            if (entries and entries[0].seq == 0) or not self.persistence:
                return _Loaded(header, entries)  # the complete log: OpenSearch is not consulted
            stored = self._persisted(sid, with_text=with_text)
            if stored is None:
                return _Loaded(header, entries)
            check_compatible(header, stored[0].header)
            return _Loaded(preferred_header(header, stored[0].header), merge_logs(stored[1].entries, entries))
        if not self.persistence:
            raise _not_found(sid)
        stored = self._persisted(sid, with_text=with_text)
        if stored is None:
            raise _not_found(sid)
        record, persisted = stored
        live = self._live_session(sid)  # it may have gone live meanwhile, or be live outside the scope
        if live is not None:
            check_compatible(live[0], record.header)
            return _Loaded(preferred_header(live[0], record.header), merge_logs(persisted.entries, live[1]))
        return persisted

    def _call(self, fn: Callable[..., Any], **kwargs: Any) -> Any:
        try:
            return fn(**kwargs, request_timeout=self.request_timeout_s)
        except NotFoundError as err:
            message = f"projection index missing ({err.error}); has the indexer run?"
            raise SessionQueryError("SESSION_QUERY_PERSISTENCE_FAILED", message) from None
        except (OSConnectionError, ConnectionTimeout) as err:
            raise SessionQueryError(
                "SESSION_QUERY_PERSISTENCE_FAILED",
                f"OpenSearch unreachable at {self.settings.url}: {type(err).__name__}",
            ) from None
        except TransportError as err:
            raise SessionQueryError(
                "SESSION_QUERY_PERSISTENCE_FAILED", f"OpenSearch failed ({err.status_code}): {err.error}"
            ) from None
        except OpenSearchException as err:
            raise SessionQueryError("SESSION_QUERY_PERSISTENCE_FAILED", f"OpenSearch failed: {err}") from None

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

    def _msearch(self, lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
        responses: list[dict[str, Any]] = self._call(self.client.msearch, body=lines)["responses"]
        for response in responses:
            if "error" in response:
                error = response["error"]
                reason = error.get("type", error) if isinstance(error, dict) else error
                message = f"projection read failed: {reason}"
                raise SessionQueryError("SESSION_QUERY_PERSISTENCE_FAILED", message)
        return responses

    def _pages(
        self, session_id: str, hits: list[dict[str, Any]], fields: list[str], low: int | None
    ) -> list[LogEntry]:
        """Parse a first page of event hits (seqs from ``low`` on) and fetch the following pages
        (``search_after`` on seq)."""
        with_text = "text" in fields
        entries: list[LogEntry] = []
        while True:
            entries.extend(entry_from_source(session_id, hit["_source"], with_text=with_text) for hit in hits)
            if len(hits) < self.page_size:
                return entries
            body = self._events_body(session_id, fields, list(hits[-1]["sort"]), low)
            response = self._call(self.client.search, index=self.events_index, routing=session_id, body=body)
            hits = response["hits"]["hits"]

    def _persisted(self, session_id: str, *, with_text: bool) -> tuple[SessionRecord, _Loaded] | None:
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
        sessions, counted, *pages = self._msearch(lines)
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
        entries += self._pages(session_id, pages[-1]["hits"]["hits"], fields, low)
        if with_text:
            return record, _Loaded(record.header, entries)
        if cached is not None and len(cached.entries) + len(entries) != count:
            entries = self._reload(session_id, fields)  # deleted or back-filled events: start over
            cached = None
        log = _CachedLog.build(entries, cached)
        if self.cache:
            _LOG_CACHE.put(key, log)
        return record, _Loaded(record.header, list(log.entries), log.folded, log.events)

    def _reload(self, session_id: str, fields: list[str]) -> list[LogEntry]:
        body = self._events_body(session_id, fields, None)
        response = self._call(self.client.search, index=self.events_index, routing=session_id, body=body)
        return self._pages(session_id, response["hits"]["hits"], fields, None)

    def _with_text(self, session_id: str, entries: list[LogEntry], wanted: Sequence[int]) -> list[LogEntry]:
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
            response = self._call(self.client.search, index=self.events_index, routing=session_id, body=body)
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

    def _listing(self) -> list[SessionRecord]:
        """The corpus listing: persisted sessions in scope overlaid by live ones (spec 3.5)."""
        persisted = self._persisted_listing() if self.persistence else []
        live = [header_from_live(item) for item in self._live.sessions()] if self._live is not None else []
        return merge_listing(persisted, live, self.scope)

    def _persisted_listing(self) -> list[SessionRecord]:
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
            hits = self._call(self.client.search, **kwargs)["hits"]["hits"]
            records.extend(record_from_source(hit["_source"]) for hit in hits)
            if len(hits) < self.page_size:
                return records
            after = list(hits[-1]["sort"])
