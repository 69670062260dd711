"""The provider core: one search pipeline for every backend.

plan (validation, :mod:`backscroll.query.plan`) → engine search (a :class:`SearchEngine` per
backend) → excerpts → live merge (read-your-writes) → signed cursor. The backends differ only in
their engine; configuration checks, the search-disabled switch, deadlines and cancellation,
the closest-matches fallback, cursor binding and staleness are written once, here.
"""

from __future__ import annotations

import secrets
from collections.abc import Generator
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Literal, Self, Unpack

from backscroll.query import readings
from backscroll.query.config import (
    check_bool,
    check_cursor_key,
    check_limits,
    check_scope,
    check_timeout,
    config_error,
)
from backscroll.query.contract import (
    DEFAULT_LIMIT,
    MAX_LIMIT,
    SessionMatch,
    SessionQueryRequest,
    SessionQueryResult,
)
from backscroll.query.cursor import (
    MAX_PAGED,
    encode_cursor,
    open_cursor,
    pack_seen,
    request_fingerprint,
    unpack_seen,
)
from backscroll.query.deadline import AbortSignal, Deadline, check_signal
from backscroll.query.engine import EngineHit, EnginePage, EngineQuery, SearchEngine
from backscroll.query.errors import SessionQueryError
from backscroll.query.excerpt import excerpt
from backscroll.query.live import LiveFeed, live_feed, live_matches, merge_live
from backscroll.query.opensearch.body import QueryPlan
from backscroll.query.options import ProviderOptions
from backscroll.query.plan import excerpt_budget, plan_request
from backscroll.query.scope import Scope

if TYPE_CHECKING:
    from backscroll.query.aio import AsyncSearchEngine

__all__ = ["EngineStep", "ProviderCore", "SearchFlow", "SearchProvider", "advance"]


@dataclass(frozen=True, slots=True)
class EngineStep:
    """One engine call the search flow asks its driver for: ``search`` (answered with an
    :class:`EnginePage`) or ``rank`` (answered with a list of :class:`EngineHit`)."""

    kind: Literal["search", "rank"]
    query: EngineQuery
    deadline: Deadline

    def call(self, engine: SearchEngine) -> EnginePage | list[EngineHit]:
        if self.kind == "search":
            return engine.search(self.query, self.deadline)
        return engine.rank(self.query, self.deadline)

    async def acall(self, engine: AsyncSearchEngine) -> EnginePage | list[EngineHit]:
        if self.kind == "search":
            return await engine.search(self.query, self.deadline)
        return await engine.rank(self.query, self.deadline)


#: The search flow: yields engine calls, receives their answers, returns the result.
SearchFlow = Generator[EngineStep, EnginePage | list[EngineHit] | None, SessionQueryResult]


def advance(flow: SearchFlow, answer: EnginePage | list[EngineHit] | None) -> EngineStep | SessionQueryResult:
    """Send ``answer`` into ``flow``: its next engine call, or its result."""
    try:
        return flow.send(answer)
    except StopIteration as done:
        result: SessionQueryResult = done.value
        return result


class ProviderCore:
    """The configuration and the search flow of a provider pinned to a :class:`Scope`, over one
    backend's engine (:class:`SearchProvider` drives it synchronously,
    :class:`~backscroll.query.aio.AsyncSearchProvider` with ``await``).

    Thread-safe when the engine is; ``close()`` is idempotent. ``default_limit``/``max_limit`` bound
    request limits (D7); ``request_timeout_s`` bounds every call, waits included (exceeding it is the
    retriable ``INDEX_FAILED``); ``cursor_key`` signs cursors (random per instance by default, so a
    cursor is valid for the provider that issued it); ``live`` merges this process's appended
    entries the index does not show yet; ``search_enabled=False`` refuses every search with
    ``SEARCH_DISABLED`` (spec scenario 60).
    """

    def __init__(
        self,
        scope: Scope,
        engine: SearchEngine | AsyncSearchEngine,
        *,
        default_limit: int = DEFAULT_LIMIT,
        max_limit: int = MAX_LIMIT,
        request_timeout_s: float = 5.0,
        cursor_key: bytes | None = None,
        live: Any | None = None,
        search_enabled: bool = True,
    ) -> None:
        self.scope = check_scope(scope, "provider")
        self.default_limit, self.max_limit = check_limits(default_limit, max_limit)
        self.request_timeout_s = check_timeout(request_timeout_s)
        self.search_enabled = check_bool(search_enabled, "search_enabled")
        self._key = check_cursor_key(cursor_key) or secrets.token_bytes(32)
        self.live: LiveFeed | None = None
        if live is not None:
            try:
                self.live = live_feed(live, engine.log_topic)
            except TypeError as err:
                raise config_error(str(err)) from None
        self._closed = False

    # -- lifecycle ------------------------------------------------------------------------------
    @property
    def closed(self) -> bool:
        return self._closed

    # -- search ---------------------------------------------------------------------------------
    def _plan(self, request: SessionQueryRequest) -> tuple[QueryPlan, str | None]:
        """The validated plan of ``request`` and its narrowing session id."""
        return plan_request(request, self.scope, self.max_limit, self.default_limit)

    def _flow(self, request: SessionQueryRequest, signal: AbortSignal | None) -> SearchFlow:
        """The whole search, written once, without I/O: the driver (sync or async) answers each
        :class:`EngineStep` it yields."""
        if self._closed:
            raise SessionQueryError("SESSION_QUERY_PROVIDER_CLOSED", "the provider was closed")
        if not self.search_enabled:
            raise SessionQueryError("SESSION_QUERY_SEARCH_DISABLED", "searching is disabled by configuration")
        deadline = Deadline(self.request_timeout_s, "SESSION_QUERY_INDEX_FAILED", check_signal(signal))
        deadline.check()
        plan, session_id = self._plan(request)
        budget = excerpt_budget(request)
        fingerprint = request_fingerprint(
            self.scope.fingerprint(),
            session_id,
            plan.words,
            plan.kinds,
            plan.limit,
            budget,
            plan.exclude_tools,
            None if plan.since is None else plan.since.isoformat(),
            None if plan.until is None else plan.until.isoformat(),
        )
        seen: list[str] = []
        partial = False
        issued: int | None = None
        if request.cursor is not None:
            after, partial, issued = open_cursor(self._key, request.cursor, fingerprint)
            seen = unpack_seen(after)
        single = session_id is not None or (self.scope.kind == "sessions" and len(self.scope.ids) == 1)
        query = EngineQuery(
            plan=plan,
            session_id=session_id,
            single=single,
            size=plan.limit + 1,
            exclude=tuple(seen),
            partial=partial,
            live_topic=self.live.topic if self.live is not None else None,
        )
        page = yield EngineStep("search", query, deadline)
        assert isinstance(page, EnginePage)
        corpus = page.corpus
        if session_id is not None and not corpus.exists and self.scope.kind == "workspaces":
            raise SessionQueryError("SESSION_QUERY_SESSION_NOT_FOUND", f"no session {session_id!r}")
        if issued is not None and issued != corpus.generation:
            raise SessionQueryError("SESSION_QUERY_STALE_CURSOR", "the searched corpus changed; search again")
        hits = page.hits
        if not plan.browse and not partial and (hits or seen):  # a later page may hold only readings
            hits = yield from _readings(query, hits, deadline)
        if not plan.browse and not hits and issued is None and len(plan.words) > 1:
            partial = True  # no entry has every word: the closest matches, said so (D2)
            deadline.check()
            ranked = yield EngineStep("rank", replace(query, partial=True), deadline)
            assert isinstance(ranked, list)
            hits = ranked
        more = len(hits) > plan.limit
        hits = hits[: plan.limit]
        matches = [_match(hit, plan, budget) for hit in hits]
        next_cursor = None
        if more and hits and len(seen) + len(hits) <= MAX_PAGED:
            returned = pack_seen([*seen, *(hit.entry_id for hit in hits)])
            next_cursor = encode_cursor(self._key, fingerprint, corpus.generation, returned, partial)
        searched = corpus.searched
        source = "persisted"
        if self.live is not None:
            for partition, offset in corpus.watermarks.items():
                self.live.release_through(partition, offset)
            if request.cursor is None:
                live, considered = live_matches(self.live, self.scope, plan, session_id, budget, partial)
                searched += considered
                if live:
                    source = "persisted+live"
                    matches = merge_live(matches, live, plan.limit, browse=plan.browse, single=single)
        return SessionQueryResult(
            matches=tuple(matches),
            searched=searched,
            next_cursor=next_cursor,
            partial=partial and bool(matches),
            source=source,
        )


class SearchProvider(ProviderCore):
    """The synchronous provider: :class:`ProviderCore`'s flow over a :class:`SearchEngine`."""

    def __init__(self, scope: Scope, engine: SearchEngine, **options: Unpack[ProviderOptions]) -> None:
        super().__init__(scope, engine, **options)
        self.engine = engine

    def close(self) -> None:
        """Refuse further searches (``PROVIDER_CLOSED``) and release the engine. Idempotent."""
        if not self._closed:
            self._closed = True
            self.engine.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def search(
        self, request: SessionQueryRequest, *, signal: AbortSignal | None = None
    ) -> SessionQueryResult:
        """Run one search; raises :class:`SessionQueryError` and nothing else.

        ``signal`` lets the caller cancel it (or give it a shorter cooperative timeout with
        :meth:`AbortSignal.timeout`): the search then stops at its next check with ``ABORTED``."""
        flow = self._flow(request, signal)
        outcome = advance(flow, None)
        while isinstance(outcome, EngineStep):
            outcome = advance(flow, outcome.call(self.engine))
        return outcome


def _readings(
    query: EngineQuery, hits: list[EngineHit], deadline: Deadline
) -> Generator[EngineStep, EnginePage | list[EngineHit] | None, list[EngineHit]]:
    """The page of ``hits`` (the engine's, in D2's order) with each reading of a typo before a
    second entry of any, the entries of a reading inside longer words included
    (:mod:`backscroll.query.readings`)."""
    plan = query.plan
    known: readings.Known = {}
    pool, window, asked = hits, hits, query.size
    wide = max(readings.WINDOW, query.size)
    if readings.window_needed(plan, hits, query.size):
        deadline.check()
        asked = wide
        answer = yield EngineStep("rank", replace(query, size=wide), deadline)
        assert isinstance(answer, list)
        pool = window = answer
        crowd = readings.crowded(plan, window, known)
        if crowd:  # a common reading fills the window: the others' best entries too
            deadline.check()
            rest = yield EngineStep("rank", replace(query, size=readings.WINDOW, skip=crowd), deadline)
            assert isinstance(rest, list)
            pool = readings.merge(window, rest)
    full = len(window) >= asked
    if readings.inside_needed(plan, window, full):
        last = window[-1] if full else None
        first = window
        if query.exclude:  # an entry holding a reading whole may be on an earlier page: read them all
            deadline.check()
            answer = yield EngineStep("rank", replace(query, exclude=(), size=wide), deadline)
            assert isinstance(answer, list)
            first = answer
        for index, term in readings.inside_readings(plan, first, known):
            deadline.check()
            read = replace(
                query,
                plan=readings.read_as(plan, index, term),
                size=readings.WINDOW,
                skip=frozenset({term}),
                inside=frozenset({term}),
            )
            found = yield EngineStep("rank", read, deadline)
            assert isinstance(found, list)
            pool = readings.add_inside(plan, index, term, pool, found, last, known)
    return readings.diversify(plan, pool, known)[: query.size]


def _match(hit: EngineHit, plan: QueryPlan, budget: int) -> SessionMatch:
    return SessionMatch(
        session_id=hit.session_id,
        entry_id=hit.entry_id,
        seq=hit.seq,
        kind=hit.kind,
        turn=hit.turn,
        role=hit.role,
        excerpt=excerpt(hit.text, plan.words, budget, hit.hints),
        created_at=hit.created_at,
        score=round(hit.score, 4) if not plan.browse else 0.0,
    )
