"""The OpenSearch-backed :class:`SessionQuery` provider, pinned to a :class:`Scope`."""

from __future__ import annotations

import re
import secrets
import threading
from datetime import datetime
from typing import Any

from opensearchpy import OpenSearch
from opensearchpy.exceptions import ConnectionError as OSConnectionError
from opensearchpy.exceptions import ConnectionTimeout, NotFoundError, TransportError

from sessionlog.indexer.document import events_alias, sessions_alias, watermarks_index
from sessionlog.indexer.os_security import item_failure, security_failure
from sessionlog.indexer.settings import OpenSearchSettings
from sessionlog.ingest.settings import describe_settings_error
from sessionlog.query.builder import QueryPlan, browse_body, count_body, search_body
from sessionlog.query.clients import shared_client
from sessionlog.query.contract import (
    DEFAULT_LIMIT,
    MAX_LIMIT,
    SessionMatch,
    SessionQueryRequest,
    SessionQueryResult,
)
from sessionlog.query.cursor import (
    MAX_PAGED,
    encode_cursor,
    open_cursor,
    pack_seen,
    request_fingerprint,
    unpack_seen,
)
from sessionlog.query.errors import SessionQueryError
from sessionlog.query.excerpt import excerpt
from sessionlog.query.live import live_feed, merge_live
from sessionlog.query.plan import MAX_QUERY_WORDS, excerpt_budget, plan_request
from sessionlog.query.scope import Scope
from sessionlog.query.scoring import score_text

__all__ = ["MAX_QUERY_WORDS", "OpenSearchProvider"]

_HIGHLIGHT = re.compile("\ue000(.*?)\ue001", re.S)


class OpenSearchProvider:
    """Scoped, typo- and accent-tolerant search over the OpenSearch projection.

    Cheap to construct (the HTTP client is shared per endpoint and created lazily), thread-safe,
    and ``close()`` is idempotent. Every request carries the scope as a server-side filter.
    """

    def __init__(
        self,
        scope: Scope,
        settings: OpenSearchSettings | None = None,
        *,
        hosts: str | None = None,
        index_prefix: str | None = None,
        client: OpenSearch | None = None,
        default_limit: int = DEFAULT_LIMIT,
        max_limit: int = MAX_LIMIT,
        request_timeout_s: float = 5.0,
        cursor_key: bytes | None = None,
        live: Any | None = None,
    ) -> None:
        if not isinstance(scope, Scope):
            raise SessionQueryError("SESSION_QUERY_INVALID_SCOPE", "a provider needs a Scope")
        if not (1 <= default_limit <= max_limit) or max_limit > 10_000:
            raise SessionQueryError(
                "SESSION_QUERY_INVALID_CONFIG", "need 1 <= default_limit <= max_limit <= 10000"
            )
        if request_timeout_s <= 0:
            raise SessionQueryError("SESSION_QUERY_INVALID_CONFIG", "request_timeout_s must be positive")
        overrides: dict[str, Any] = {}
        if hosts:
            overrides["url"] = hosts
        if index_prefix:
            overrides["index_prefix"] = index_prefix
        try:
            self.settings = (settings or OpenSearchSettings()).model_copy(update=overrides)
        except ValueError as err:
            raise SessionQueryError("SESSION_QUERY_INVALID_CONFIG", describe_settings_error(err)) from None
        self.scope = scope
        self.default_limit = default_limit
        self.max_limit = max_limit
        self.request_timeout_s = request_timeout_s
        self._client = client
        self._key = cursor_key or secrets.token_bytes(32)
        self._closed = False
        self._lock = threading.Lock()
        self.live = live_feed(live) if live is not None else None
        self.events_index = events_alias(self.settings.index_prefix)
        self.sessions_index = sessions_alias(self.settings.index_prefix)

    # -- lifecycle ------------------------------------------------------------------------------
    @property
    def client(self) -> OpenSearch:
        if self._closed:
            raise SessionQueryError("SESSION_QUERY_PROVIDER_CLOSED", "the provider was closed")
        if self._client is None:
            with self._lock:
                if self._client is None:
                    self._client = shared_client(self.settings)
        return self._client

    def close(self) -> None:
        """Stop accepting requests. The shared HTTP pool stays open for other providers."""
        self._closed = True

    def __enter__(self) -> OpenSearchProvider:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- validation -----------------------------------------------------------------------------
    def _plan(self, request: SessionQueryRequest) -> tuple[QueryPlan, str | None]:
        if self._closed:
            raise SessionQueryError("SESSION_QUERY_PROVIDER_CLOSED", "the provider was closed")
        return plan_request(request, self.scope, self.max_limit, self.default_limit)

    # -- search ---------------------------------------------------------------------------------
    def search(self, request: SessionQueryRequest) -> SessionQueryResult:
        """Run one search; raises :class:`SessionQueryError` and nothing else."""
        plan, session_id = self._plan(request)
        budget = excerpt_budget(request)
        routing = self._routing(session_id)
        fingerprint = request_fingerprint(
            self.scope.fingerprint(),
            session_id,
            plan.words,
            plan.kinds,
            plan.limit,
            budget,
            plan.exclude_tools,
        )
        after: list[Any] | None = None
        partial = False
        issued: int | None = None
        if request.cursor is not None:
            after, partial, issued = open_cursor(self._key, request.cursor, fingerprint)
        single = session_id is not None or (self.scope.kind == "sessions" and len(self.scope.ids) == 1)
        size = plan.limit + 1
        seen = unpack_seen(after or [])
        if plan.browse:
            body = browse_body(plan, size=size, single_session=single, exclude=seen)
        else:
            body = search_body(plan, size=size, partial=partial, exclude=seen)
        searched, generation, exists, hits = self._round_trip(plan, routing, session_id, body)
        if session_id is not None and not exists and self.scope.kind == "workspaces":
            raise SessionQueryError("SESSION_QUERY_SESSION_NOT_FOUND", f"no session {session_id!r}")
        if issued is not None and issued != generation:
            raise SessionQueryError("SESSION_QUERY_STALE_CURSOR", "the searched corpus changed; search again")
        if not plan.browse and not hits and after is None and len(plan.words) > 1:
            partial = True
            hits = self._search(search_body(plan, size=size, partial=True), routing)
        more = len(hits) > plan.limit
        hits = hits[: plan.limit]
        matches = [self._match(hit, plan, budget) for hit in hits]
        next_cursor = None
        if more and hits and len(seen) + len(hits) <= MAX_PAGED:
            returned = [*seen, *(hit["_id"] for hit in hits)]
            next_cursor = encode_cursor(self._key, fingerprint, generation, pack_seen(returned), partial)
        source = "persisted"
        if self.live is not None and request.cursor is None:
            live = self._live_matches(plan, session_id, budget, partial)
            if live:
                source = "persisted+live"
                searched += len(live[1])
                matches = merge_live(matches, live[0], plan.limit, browse=plan.browse, single=single)
        return SessionQueryResult(
            matches=tuple(matches),
            searched=searched,
            next_cursor=next_cursor,
            partial=partial and bool(matches),
            source=source,
        )

    def _live_matches(
        self, plan: QueryPlan, session_id: str | None, budget: int, partial: bool
    ) -> tuple[list[SessionMatch], list[Any]] | None:
        """Matches among this process's appended entries that the index does not show yet."""
        assert self.live is not None
        entries = []
        for sid in self.live.live_sessions():
            if session_id is not None and sid != session_id:
                continue
            if self.scope.kind == "sessions" and sid not in self.scope.ids:
                continue
            for entry in self.live.live_entries(sid):
                record = entry.record
                if self.scope.kind == "workspaces" and record.workspace_id not in self.scope.ids:
                    break
                if record.type not in plan.kinds or not (record.text or "").strip():
                    continue
                if plan.default_kinds and record.tool_name in plan.exclude_tools:
                    continue
                entries.append(record)
        if not entries:
            return None
        out = []
        for record in entries:
            text = record.text or ""
            score: float | None = 0.0
            if not plan.browse:
                weight = 0.75 if record.type == "tool/call" else 1.0
                score = score_text(text, plan.raw_words, plan.words, weight=weight, partial=partial)
            if score is None:
                continue
            out.append(
                SessionMatch(
                    session_id=record.session_id,
                    entry_id=f"{record.session_id}:{record.seq}",
                    seq=record.seq,
                    kind=record.type,
                    turn=record.turn,
                    role=record.role,
                    excerpt=excerpt(text, plan.words, budget),
                    created_at=record.time,
                    score=round(score, 4),
                )
            )
        return out, entries

    def _routing(self, session_id: str | None) -> str | None:
        return session_id if session_id is not None else self.scope.routing()

    def _call(self, fn: Any, **kwargs: Any) -> Any:
        try:
            return fn(**kwargs, request_timeout=self.request_timeout_s)
        except NotFoundError as err:
            raise SessionQueryError(
                "SESSION_QUERY_INDEX_FAILED", f"index missing ({err.error}); has the indexer run?"
            ) from None
        except (OSConnectionError, ConnectionTimeout) as err:
            if (line := security_failure(err, self.settings)) is not None:
                raise SessionQueryError("SESSION_QUERY_INVALID_CONFIG", line) from None
            raise SessionQueryError(
                "SESSION_QUERY_INDEX_FAILED",
                f"OpenSearch unreachable at {self.settings.url}: {type(err).__name__}",
            ) from None
        except TransportError as err:
            if (line := security_failure(err, self.settings)) is not None:
                raise SessionQueryError("SESSION_QUERY_INVALID_CONFIG", line) from None
            raise SessionQueryError(
                "SESSION_QUERY_INDEX_FAILED", f"OpenSearch failed ({err.status_code}): {err.error}"
            ) from None

    def _round_trip(
        self, plan: QueryPlan, routing: str | None, session_id: str | None, body: dict[str, Any]
    ) -> tuple[int, int, bool, list[dict[str, Any]]]:
        """One ``_msearch``: the count (searched, generation), the page, the session's existence
        (workspace scopes) and the searchability watermark (read-your-writes)."""
        header: dict[str, Any] = {"index": self.events_index}
        if routing:
            header["routing"] = routing
        lines: list[dict[str, Any]] = [header, count_body(plan), header, body]
        if session_id is not None and self.scope.kind == "workspaces":
            lines += [
                {"index": self.sessions_index, "routing": session_id},
                {"size": 0, "track_total_hits": True, "query": {"bool": {"filter": list(plan.filters)}}},
            ]
        if self.live is not None:
            lines += [
                {"index": watermarks_index(self.settings.index_prefix), "ignore_unavailable": True},
                {"size": 1000, "query": {"term": {"topic": self.live.topic}}},
            ]
        responses = self._call(self.client.msearch, body=lines)["responses"]
        if self.live is not None:
            for hit in responses.pop()["hits"]["hits"]:
                self.live.release_through(int(hit["_source"]["partition"]), int(hit["_source"]["offset"]))
        for response in responses:
            if "error" in response:
                if (line := item_failure(response["error"], self.settings)) is not None:
                    raise SessionQueryError("SESSION_QUERY_INVALID_CONFIG", line)
                raise SessionQueryError("SESSION_QUERY_INDEX_FAILED", f"count failed: {response['error']}")
        first = responses[0]
        total = int(first["hits"]["total"]["value"])
        searched = int(first["aggregations"]["searched"]["doc_count"])
        max_offset = first["aggregations"]["max_offset"].get("value") or 0
        generation = total * 1_000_003 + int(max_offset)
        exists = total > 0 or (len(responses) > 2 and int(responses[2]["hits"]["total"]["value"]) > 0)
        return searched, generation, exists, list(responses[1]["hits"]["hits"])

    def _search(self, body: dict[str, Any], routing: str | None) -> list[dict[str, Any]]:
        kwargs: dict[str, Any] = {"index": self.events_index, "body": body}
        if routing:
            kwargs["routing"] = routing
        response = self._call(self.client.search, **kwargs)
        return list(response["hits"]["hits"])

    def _match(self, hit: dict[str, Any], plan: QueryPlan, budget: int) -> SessionMatch:
        source = hit["_source"]
        text = source.get("text") or source.get("args") or ""
        hints = [
            m.group(1)
            for frags in (hit.get("highlight") or {}).values()
            for f in frags
            for m in _HIGHLIGHT.finditer(f)
        ]
        score = float(hit.get("_score") or 0.0) if not plan.browse else 0.0
        if score != score:  # NaN when sorting without scores
            score = 0.0
        return SessionMatch(
            session_id=source["session_id"],
            entry_id=hit["_id"],
            seq=int(source["seq"]),
            kind=source["type"],
            turn=source.get("turn"),
            role=source.get("role"),
            excerpt=excerpt(text, plan.words, budget, hints),
            created_at=datetime.fromisoformat(source["time"]) if source.get("time") else None,
            score=round(score, 4),
        )
