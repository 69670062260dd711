"""The OpenSearch-backed :class:`SessionQuery` provider: the provider core over
:class:`OpenSearchEngine`, pinned to a :class:`Scope`."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Unpack

from backscroll.indexer.opensearch.mappings import events_alias, sessions_alias, watermarks_index
from backscroll.indexer.settings import OpenSearchSettings
from backscroll.query.config import check_int, check_scope
from backscroll.query.deadline import Deadline
from backscroll.query.engine import Corpus, EngineHit, EnginePage, EngineQuery
from backscroll.query.errors import SessionQueryError
from backscroll.query.moments import stored_time
from backscroll.query.opensearch.access import OpenSearchAccess, opensearch_access
from backscroll.query.opensearch.body import browse_body, count_body, scan_body, search_body
from backscroll.query.opensearch.scan import SCAN_MAX_ROWS, Oversized, fits, scan_top
from backscroll.query.options import OpenSearchProviderOptions
from backscroll.query.plan import MAX_QUERY_WORDS
from backscroll.query.provider import SearchProvider
from backscroll.query.scope import Scope
from backscroll.query.typo_hints import typo_hints

if TYPE_CHECKING:
    from opensearchpy import OpenSearch

__all__ = [
    "MAX_QUERY_WORDS",
    "OVERSIZED",
    "SCAN_MAX_ROWS",
    "OpenSearchEngine",
    "OpenSearchProvider",
    "PageRequest",
    "opensearch_engine",
]


@dataclass(frozen=True, slots=True)
class PageRequest:
    """The ``_msearch`` lines of a page: count, then the page (or, ``scan``, the scope's entries
    to score here), then the session's existence (``existence``) and the watermarks when asked."""

    lines: list[dict[str, Any]]
    existence: bool
    scan: bool


#: Scopes too big to score here, for every engine of the process (a provider is cheap to make per
#: request, so each would otherwise ask for a big session's entries again).
OVERSIZED = Oversized()
_SCANNED = "opensearch.scanned"


def _index_missing(error: object) -> bool:
    """Whether one failed ``_msearch`` item only says the index does not exist (nothing indexed)."""
    return isinstance(error, dict) and error.get("type") == "index_not_found_exception"


class OpenSearchEngine:
    """The OpenSearch :class:`~backscroll.query.engine.SearchEngine`: one ``_msearch`` per page
    (count, page, session existence, watermarks); the scope is a server-side filter on each.

    A search of sessions (a session scope, or a search narrowed to a session) asks for their
    entries instead of the page and ranks them here when they are at most ``scan_max_rows``
    (:mod:`backscroll.query.opensearch.scan`; 0: never): the same ranking, without the fuzzy queries'
    walk over the shard's term dictionary."""

    log_topic: str | None = None

    def __init__(self, scope: Scope, access: OpenSearchAccess, *, scan_max_rows: int = SCAN_MAX_ROWS) -> None:
        self.scope = check_scope(scope, "provider")
        self.access = access
        self.scan_max_rows = check_int(scan_max_rows, "scan_max_rows", 0, 10_000)
        prefix = access.settings.index_prefix
        self.events_index = events_alias(prefix)
        self.sessions_index = sessions_alias(prefix)
        self.watermarks_index = watermarks_index(prefix)

    def close(self) -> None:
        """Nothing to release: the HTTP pool is shared with the process's other providers."""

    def _routing(self, session_id: str | None) -> str | None:
        return session_id if session_id is not None else self.scope.routing()

    def _body(self, query: EngineQuery) -> dict[str, Any]:
        plan = query.plan
        if plan.browse:
            return browse_body(plan, size=query.size, single_session=query.single, exclude=query.exclude)
        return search_body(
            plan,
            size=query.size,
            partial=query.partial,
            exclude=query.exclude,
            skip=query.skip,
            inside=query.inside,
        )

    def search(self, query: EngineQuery, deadline: Deadline) -> EnginePage:
        request = self.search_request(query)
        response = self.access.call("msearch", deadline, body=request.lines)
        corpus, hits = self.access.parse(
            "the search", lambda: self.parse_page(response, query, request, deadline)
        )
        if hits is None:  # more entries than a scan takes: the index, in a second request
            hits = self.rank(query, deadline)
        return EnginePage(corpus, hits)

    def rank(self, query: EngineQuery, deadline: Deadline) -> list[EngineHit]:
        scanned = self.rescan(query, deadline)
        if scanned is not None:
            return scanned
        response = self.access.call("search", deadline, **self.rank_request(query))
        return self.access.parse("the search", lambda: self.parse_hits(response, query))

    # -- requests and answers (shared with the async engine) -------------------------------------
    def _scan_key(self, query: EngineQuery) -> tuple[object, ...]:
        return (self.events_index, self.scope.fingerprint(), query.session_id, query.plan.kinds)

    def _scans(self, query: EngineQuery) -> bool:
        """Whether the page is ranked here from the scope's entries (a search of sessions not known
        to be too big)."""
        if query.plan.browse or not self.scan_max_rows:
            return False
        if query.session_id is None and self.scope.kind != "sessions":
            return False
        return self._scan_key(query) not in OVERSIZED

    def search_request(self, query: EngineQuery) -> PageRequest:
        """The ``_msearch`` lines of a page."""
        plan, session_id = query.plan, query.session_id
        header: dict[str, Any] = {"index": self.events_index}
        routing = self._routing(session_id)
        if routing:
            header["routing"] = routing
        scan = self._scans(query)
        if scan:
            body = scan_body(plan, size=self.scan_max_rows + 1, exclude=query.exclude)
        else:
            body = self._body(query)
        lines: list[dict[str, Any]] = [header, count_body(plan), header, body]
        existence = session_id is not None and self.scope.kind == "workspaces"
        if existence:
            lines += [
                {"index": self.sessions_index, "routing": session_id},
                {"size": 0, "track_total_hits": True, "query": {"bool": {"filter": list(plan.filters)}}},
            ]
        if query.live_topic is not None:
            lines += [
                {"index": self.watermarks_index, "ignore_unavailable": True},
                {"size": 1000, "query": {"term": {"topic": query.live_topic}}},
            ]
        return PageRequest(lines, existence, scan)

    def parse_page(
        self, response: Any, query: EngineQuery, request: PageRequest, deadline: Deadline
    ) -> tuple[Corpus, list[EngineHit] | None]:
        """The corpus and the page; ``None`` for the page when the scope's entries were asked for
        and are too many to score here (the caller then asks the index: :meth:`rank`)."""
        responses = list(response["responses"])
        watermarks: dict[int, int] = {}
        if query.live_topic is not None:
            for hit in responses.pop()["hits"]["hits"]:
                watermarks[int(hit["_source"]["partition"])] = int(hit["_source"]["offset"])
        errors = [one["error"] for one in responses if "error" in one]
        if errors and all(_index_missing(error) for error in errors):
            # The indexer has not created the index yet: an empty history, not an outage.
            return Corpus(searched=0, total=0, max_offset=0, exists=False, watermarks=watermarks), []
        for error in errors:
            raise self.access.item_error(error, "search")
        first = responses[0]
        total = int(first["hits"]["total"]["value"])
        exists = total > 0 or (request.existence and int(responses[2]["hits"]["total"]["value"]) > 0)
        corpus = Corpus(
            searched=int(first["aggregations"]["searched"]["doc_count"]),
            total=total,
            max_offset=int(first["aggregations"]["max_offset"].get("value") or 0),
            exists=exists,
            watermarks=watermarks,
        )
        found: list[dict[str, Any]] = responses[1]["hits"]["hits"]
        if not request.scan:
            return corpus, [self._hit(hit, query) for hit in found]
        if not fits(found, self.scan_max_rows):
            OVERSIZED.add(self._scan_key(query))
            return corpus, None
        query.scratch[_SCANNED] = (frozenset(query.exclude), found)
        scanned = self.rescan(query, deadline)
        assert scanned is not None
        return corpus, scanned

    def rescan(self, query: EngineQuery, deadline: Deadline) -> list[EngineHit] | None:
        """The page ranked from the scope's entries this search already has, else ``None``."""
        scanned: tuple[frozenset[str], list[dict[str, Any]]] | None = query.scratch.get(_SCANNED)
        if scanned is None:
            return None
        fetched_without, found = scanned
        if not fetched_without.issubset(query.exclude):  # entries the scan did not fetch are asked for
            return None
        if len(query.exclude) > len(fetched_without):
            excluded = set(query.exclude)
            found = [hit for hit in found if hit["_id"] not in excluded]
        top = scan_top(found, query.plan, query.partial, query.size, deadline.check, query.skip)
        return [self._hit(hit, query, score) for hit, score in top]

    def rank_request(self, query: EngineQuery) -> dict[str, Any]:
        kwargs: dict[str, Any] = {"index": self.events_index, "body": self._body(query)}
        routing = self._routing(query.session_id)
        if routing:
            kwargs["routing"] = routing
        return kwargs

    def parse_hits(self, response: Any, query: EngineQuery) -> list[EngineHit]:
        return [self._hit(hit, query) for hit in response["hits"]["hits"]]

    @staticmethod
    def _hit(hit: dict[str, Any], query: EngineQuery, scored: float | None = None) -> EngineHit:
        source = hit["_source"]
        text = source.get("text") or source.get("args") or ""
        score = float(hit.get("_score") or 0.0) if scored is None else scored
        if query.plan.browse:
            score = 0.0
        return EngineHit(
            session_id=source["session_id"],
            entry_id=hit["_id"],
            seq=int(source["seq"]),
            kind=source["type"],
            text=text,
            turn=source.get("turn"),
            role=source.get("role"),
            created_at=stored_time(source.get("time")),
            score=score if math.isfinite(score) else 0.0,  # NaN when sorting without scores
            hints=typo_hints(text, query.plan.words) if not query.plan.browse else (),
        )


def opensearch_engine(
    scope: Scope, settings: OpenSearchSettings | None, options: Mapping[str, Any]
) -> tuple[OpenSearchEngine, dict[str, Any]]:
    """The engine for ``settings`` (its :class:`~backscroll.query.options.OpenSearchTarget`
    options and ``scan_max_rows`` taken from ``options``), and the provider options left."""
    access, rest = opensearch_access("SESSION_QUERY_INDEX_FAILED", settings, options)
    scan_max_rows = rest.pop("scan_max_rows", SCAN_MAX_ROWS)
    return OpenSearchEngine(scope, access, scan_max_rows=scan_max_rows), rest


class OpenSearchProvider(SearchProvider):
    """Scoped, typo- and accent-tolerant search over the OpenSearch projection.

    Cheap to construct (the HTTP client is shared per endpoint and created lazily), thread-safe,
    and ``close()`` is idempotent. Every request carries the scope as a server-side filter.
    ``settings`` and the :class:`~backscroll.query.options.OpenSearchTarget` options say where the
    projection is; ``live`` is this process's appender (or its live view), whose entries the index
    does not show yet are merged (read-your-writes). ``scan_max_rows``: a search of sessions holding
    at most this many entries ranks them itself instead of running the fuzzy queries (default
    :data:`~backscroll.query.opensearch.scan.SCAN_MAX_ROWS`; 0: never). The other options are
    :class:`~backscroll.query.provider.SearchProvider`'s.
    """

    engine: OpenSearchEngine

    def __init__(
        self,
        scope: Scope,
        settings: OpenSearchSettings | None = None,
        **options: Unpack[OpenSearchProviderOptions],
    ) -> None:
        engine, rest = opensearch_engine(scope, settings, options)
        super().__init__(scope, engine, **rest)

    @property
    def settings(self) -> OpenSearchSettings:
        return self.engine.access.settings

    @property
    def client(self) -> OpenSearch:
        if self.closed:
            raise SessionQueryError("SESSION_QUERY_PROVIDER_CLOSED", "the provider was closed")
        return self.engine.access.client

    @property
    def events_index(self) -> str:
        return self.engine.events_index
