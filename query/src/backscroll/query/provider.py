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
from typing import Any, Literal, Self, TypeVar, Unpack

import backscroll.query.typo_readings as readings
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
from backscroll.query.driver import drive
from backscroll.query.engine import (
    AsyncSearchEngine,
    Corpus,
    EngineHit,
    EnginePage,
    EngineQuery,
    SearchEngine,
)
from backscroll.query.errors import SessionQueryError
from backscroll.query.excerpt import excerpt
from backscroll.query.live import LiveFeed, live_feed, live_matches, merge_live
from backscroll.query.options import ProviderOptions
from backscroll.query.plan import QueryPlan, excerpt_budget, plan_request
from backscroll.query.scope import Scope

__all__ = ["EngineStep", "ProviderCore", "Resumed", "SearchFlow", "SearchProvider"]

_T = TypeVar("_T")


@dataclass(frozen=True, slots=True)
class EngineStep:
    """One engine call the search flow asks its driver for: ``search`` (answered with an
    :class:`EnginePage`) or ``rank`` (answered with a list of :class:`EngineHit`)."""

    kind: Literal["search", "rank"]
    query: EngineQuery
    deadline: Deadline

    def call(self, engine: SearchEngine) -> EnginePage | list[EngineHit]:
        """The answer of a blocking engine."""
        if self.kind == "search":
            return engine.search(self.query, self.deadline)
        return engine.rank(self.query, self.deadline)

    async def acall(self, engine: AsyncSearchEngine) -> EnginePage | list[EngineHit]:
        """The answer of an awaitable engine."""
        if self.kind == "search":
            return await engine.search(self.query, self.deadline)
        return await engine.rank(self.query, self.deadline)


#: The search flow: yields engine calls, receives their answers, returns the result.
SearchFlow = Generator[EngineStep, EnginePage | list[EngineHit] | None, SessionQueryResult]
#: A part of the search flow that returns ``_T`` (its engine calls go through the same driver).
Steps = Generator[EngineStep, EnginePage | list[EngineHit] | None, _T]


@dataclass(frozen=True, slots=True)
class Resumed:
    """Where a request's cursor left off: the entries earlier pages returned (``seen``), whether
    they were closest matches (``partial``), and the corpus generation the cursor was issued on
    (``issued``; ``None``: a first page, no cursor)."""

    seen: tuple[str, ...] = ()
    partial: bool = False
    issued: int | None = None


class ProviderCore:
    """The configuration and the search flow of a provider pinned to a :class:`Scope`, over one
    backend's engine (:class:`SearchProvider` drives it synchronously,
    :class:`~backscroll.query.aio.AsyncSearchProvider` with ``await``).

    Thread-safe when the engine is; ``close()`` is idempotent. ``default_limit``/``max_limit`` bound
    request limits; ``request_timeout_s`` bounds every call, waits included (exceeding it is the
    retriable ``INDEX_FAILED``); ``cursor_key`` signs cursors (random per instance by default, so a
    cursor is valid for the provider that issued it); ``live`` merges this process's appended
    entries the index does not show yet; ``search_enabled=False`` refuses every search with
    ``SEARCH_DISABLED``.
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
        """Whether :meth:`close` (or ``aclose``) was called: every search is then refused."""
        return self._closed

    # -- search ---------------------------------------------------------------------------------
    def _plan(self, request: SessionQueryRequest) -> tuple[QueryPlan, str | None]:
        """The validated plan of ``request`` and its narrowing session id."""
        return plan_request(request, self.scope, self.max_limit, self.default_limit)

    def _flow(self, request: SessionQueryRequest, signal: AbortSignal | None) -> SearchFlow:
        """The whole search, written once, without I/O: the driver (sync or async) answers each
        :class:`EngineStep` it yields."""
        deadline = self._start(signal)
        plan, session_id = self._plan(request)
        budget = excerpt_budget(request)
        fingerprint = self._fingerprint(plan, session_id, budget)
        resumed = self._resume(request.cursor, fingerprint)
        query = self._engine_query(plan, session_id, resumed)
        page = yield EngineStep("search", query, deadline)
        assert isinstance(page, EnginePage)
        self._check_corpus(page.corpus, session_id, resumed)
        hits, partial = yield from _ranked(query, page.hits, resumed, deadline, page.corpus.searched)
        # A chain of pages returns at most MAX_PAGED entries: the last page is cut to what is left.
        take = min(plan.limit, MAX_PAGED - len(resumed.seen))
        more = len(hits) > take
        hits = hits[:take]
        matches = [_match(hit, plan, budget) for hit in hits]
        next_cursor = self._next_cursor(fingerprint, page.corpus, resumed, hits, partial) if more else None
        matches, searched, source = self._with_live(request, query, page.corpus, matches, budget, partial)
        return SessionQueryResult(
            matches=tuple(matches),
            searched=searched,
            next_cursor=next_cursor,
            partial=partial and bool(matches),
            source=source,
        )

    def _start(self, signal: AbortSignal | None) -> Deadline:
        """The search's deadline, once the provider is known open and searching is enabled."""
        if self._closed:
            raise SessionQueryError("SESSION_QUERY_PROVIDER_CLOSED", "the provider was closed")
        if not self.search_enabled:
            raise SessionQueryError("SESSION_QUERY_SEARCH_DISABLED", "searching is disabled by configuration")
        deadline = Deadline(self.request_timeout_s, "SESSION_QUERY_INDEX_FAILED", check_signal(signal))
        deadline.check()
        return deadline

    def _fingerprint(self, plan: QueryPlan, session_id: str | None, budget: int) -> str:
        """What a cursor is bound to: the scope and every part of the request that shapes its
        pages (a cursor of another request is INVALID_CURSOR)."""
        return request_fingerprint(
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

    def _resume(self, cursor: str | None, fingerprint: str) -> Resumed:
        """Where ``cursor`` left off (INVALID_CURSOR when it was not issued for this request)."""
        if cursor is None:
            return Resumed()
        after, partial, issued = open_cursor(self._key, cursor, fingerprint)
        return Resumed(tuple(unpack_seen(after)), partial, issued)

    def _engine_query(self, plan: QueryPlan, session_id: str | None, resumed: Resumed) -> EngineQuery:
        """The engine's query for the page: one more hit than the limit (to know whether there is
        a next page), without the entries earlier pages returned."""
        single = session_id is not None or (self.scope.kind == "sessions" and len(self.scope.ids) == 1)
        return EngineQuery(
            plan=plan,
            session_id=session_id,
            single=single,
            size=plan.limit + 1,
            exclude=resumed.seen,
            partial=resumed.partial,
            live_topic=self.live.topic if self.live is not None else None,
        )

    def _check_corpus(self, corpus: Corpus, session_id: str | None, resumed: Resumed) -> None:
        """SESSION_NOT_FOUND for a missing session of a workspace scope; STALE_CURSOR when the
        searched corpus changed since the cursor was issued."""
        if session_id is not None and not corpus.exists and self.scope.kind == "workspaces":
            raise SessionQueryError("SESSION_QUERY_SESSION_NOT_FOUND", f"no session {session_id!r}")
        if resumed.issued is not None and resumed.issued != corpus.generation:
            raise SessionQueryError("SESSION_QUERY_STALE_CURSOR", "the searched corpus changed; search again")

    def _next_cursor(
        self, fingerprint: str, corpus: Corpus, resumed: Resumed, hits: list[EngineHit], partial: bool
    ) -> str | None:
        """The signed cursor of the page after ``hits``; ``None`` once the chain has returned
        :data:`MAX_PAGED` entries."""
        if not hits or len(resumed.seen) + len(hits) >= MAX_PAGED:
            return None
        returned = pack_seen([*resumed.seen, *(hit.entry_id for hit in hits)])
        return encode_cursor(self._key, fingerprint, corpus.generation, returned, partial)

    def _with_live(
        self,
        request: SessionQueryRequest,
        query: EngineQuery,
        corpus: Corpus,
        matches: list[SessionMatch],
        budget: int,
        partial: bool,
    ) -> tuple[list[SessionMatch], int, str]:
        """The page's matches with the entries this process appended that the index does not show
        yet merged in (on a first page: read-your-writes), the entries searched, and the source.

        Appended entries the index now shows leave the live feed first."""
        searched = corpus.searched
        if self.live is None:
            return matches, searched, "persisted"
        for partition, offset in corpus.watermarks.items():
            self.live.release_through(partition, offset)
        if request.cursor is not None:
            return matches, searched, "persisted"
        plan = query.plan
        live, considered = live_matches(self.live, self.scope, plan, query.session_id, budget, partial)
        searched += considered
        if not live:
            return matches, searched, "persisted"
        merged = merge_live(matches, live, plan.limit, browse=plan.browse, single=query.single)
        return merged, searched, "persisted+live"


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
        return drive(self._flow(request, signal), self.engine)


def _ranked(
    query: EngineQuery, hits: list[EngineHit], resumed: Resumed, deadline: Deadline, searched: int
) -> Steps[tuple[list[EngineHit], bool]]:
    """The page's ``hits`` in ranking order with the readings of typos spread (:func:`_readings`),
    and whether they are closest matches: on a first page of several words where no entry holds
    every word, the entries holding some of them instead, and the result says so (asked of the
    engine only when it ``searched`` any entry)."""
    plan, partial = query.plan, resumed.partial
    if not plan.browse and not partial and (hits or resumed.seen):  # a later page may hold only readings
        hits = yield from _readings(query, hits, deadline)
    if not plan.browse and not hits and resumed.issued is None and len(plan.words) > 1:
        partial = True
        deadline.check()
        if searched:
            ranked = yield EngineStep("rank", replace(query, partial=True), deadline)
            assert isinstance(ranked, list)
            hits = ranked
    return hits, partial


def _readings(query: EngineQuery, hits: list[EngineHit], deadline: Deadline) -> Steps[list[EngineHit]]:
    """The page of ``hits`` (the engine's, in ranking order) with each reading of a typo before a
    second entry of any, the entries of a reading inside longer words included
    (:mod:`backscroll.query.typo_readings`)."""
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
