"""The OpenSearch-backed :class:`SessionQuery` provider: the provider core over
:class:`OpenSearchEngine`, pinned to a :class:`Scope`."""

from __future__ import annotations

import math
from datetime import datetime
from typing import TYPE_CHECKING, Any, Unpack

from sessionlog.indexer.document import events_alias, sessions_alias, watermarks_index
from sessionlog.indexer.settings import OpenSearchSettings
from sessionlog.query.builder import browse_body, count_body, search_body
from sessionlog.query.config import check_scope
from sessionlog.query.deadline import Deadline
from sessionlog.query.engine import Corpus, EngineHit, EnginePage, EngineQuery
from sessionlog.query.errors import SessionQueryError
from sessionlog.query.opensearch_access import OpenSearchAccess, opensearch_access
from sessionlog.query.options import OpenSearchProviderOptions
from sessionlog.query.plan import MAX_QUERY_WORDS
from sessionlog.query.provider import SearchProvider
from sessionlog.query.scope import Scope
from sessionlog.query.typo_hints import typo_hints

if TYPE_CHECKING:
    from opensearchpy import OpenSearch

__all__ = ["MAX_QUERY_WORDS", "OpenSearchEngine", "OpenSearchProvider"]


class OpenSearchEngine:
    """The OpenSearch :class:`~sessionlog.query.engine.SearchEngine`: one ``_msearch`` per page
    (count, page, session existence, watermarks); the scope is a server-side filter on each."""

    log_topic: str | None = None

    def __init__(self, scope: Scope, access: OpenSearchAccess) -> None:
        self.scope = check_scope(scope, "provider")
        self.access = access
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
        return search_body(plan, size=query.size, partial=query.partial, exclude=query.exclude)

    def search(self, query: EngineQuery, deadline: Deadline) -> EnginePage:
        lines, existence = self.search_request(query)
        response = self.access.call("msearch", deadline, body=lines)
        return self.access.parse("the search", lambda: self.parse_page(response, query, existence))

    def rank(self, query: EngineQuery, deadline: Deadline) -> list[EngineHit]:
        response = self.access.call("search", deadline, **self.rank_request(query))
        return self.access.parse("the search", lambda: self.parse_hits(response, query))

    # -- requests and answers (shared with the async engine) -------------------------------------
    def search_request(self, query: EngineQuery) -> tuple[list[dict[str, Any]], bool]:
        """The ``_msearch`` lines of a page (count, page, session existence, watermarks), and
        whether the existence line is there."""
        plan, session_id = query.plan, query.session_id
        header: dict[str, Any] = {"index": self.events_index}
        routing = self._routing(session_id)
        if routing:
            header["routing"] = routing
        lines: list[dict[str, Any]] = [header, count_body(plan), header, self._body(query)]
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
        return lines, existence

    def parse_page(self, response: Any, query: EngineQuery, existence: bool) -> EnginePage:
        responses = list(response["responses"])
        watermarks: dict[int, int] = {}
        if query.live_topic is not None:
            for hit in responses.pop()["hits"]["hits"]:
                watermarks[int(hit["_source"]["partition"])] = int(hit["_source"]["offset"])
        for one in responses:
            if "error" in one:
                raise self.access.item_error(one["error"], "search")
        first = responses[0]
        total = int(first["hits"]["total"]["value"])
        exists = total > 0 or (existence and int(responses[2]["hits"]["total"]["value"]) > 0)
        corpus = Corpus(
            searched=int(first["aggregations"]["searched"]["doc_count"]),
            total=total,
            max_offset=int(first["aggregations"]["max_offset"].get("value") or 0),
            exists=exists,
            watermarks=watermarks,
        )
        return EnginePage(corpus, [self._hit(hit, query) for hit in responses[1]["hits"]["hits"]])

    def rank_request(self, query: EngineQuery) -> dict[str, Any]:
        kwargs: dict[str, Any] = {"index": self.events_index, "body": self._body(query)}
        routing = self._routing(query.session_id)
        if routing:
            kwargs["routing"] = routing
        return kwargs

    def parse_hits(self, response: Any, query: EngineQuery) -> list[EngineHit]:
        return [self._hit(hit, query) for hit in response["hits"]["hits"]]

    @staticmethod
    def _hit(hit: dict[str, Any], query: EngineQuery) -> EngineHit:
        source = hit["_source"]
        text = source.get("text") or source.get("args") or ""
        score = float(hit.get("_score") or 0.0) if not query.plan.browse else 0.0
        return EngineHit(
            session_id=source["session_id"],
            entry_id=hit["_id"],
            seq=int(source["seq"]),
            kind=source["type"],
            text=text,
            turn=source.get("turn"),
            role=source.get("role"),
            created_at=datetime.fromisoformat(source["time"]) if source.get("time") else None,
            score=score if math.isfinite(score) else 0.0,  # NaN when sorting without scores
            hints=typo_hints(text, query.plan.words) if not query.plan.browse else (),
        )


class OpenSearchProvider(SearchProvider):
    """Scoped, typo- and accent-tolerant search over the OpenSearch projection.

    Cheap to construct (the HTTP client is shared per endpoint and created lazily), thread-safe,
    and ``close()`` is idempotent. Every request carries the scope as a server-side filter.
    ``settings`` and the :class:`~sessionlog.query.options.OpenSearchTarget` options say where the
    projection is; ``live`` is this process's appender (or its live view), whose entries the index
    does not show yet are merged (read-your-writes). The other options are
    :class:`~sessionlog.query.provider.SearchProvider`'s.
    """

    engine: OpenSearchEngine

    def __init__(
        self,
        scope: Scope,
        settings: OpenSearchSettings | None = None,
        **options: Unpack[OpenSearchProviderOptions],
    ) -> None:
        access, rest = opensearch_access("SESSION_QUERY_INDEX_FAILED", settings, options)
        super().__init__(scope, OpenSearchEngine(scope, access), **rest)

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
