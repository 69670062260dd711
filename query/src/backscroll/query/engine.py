"""The search-engine port: what the provider core (:mod:`backscroll.query.provider`) needs of a
backend, and nothing more. One implementation per backend:
:class:`~backscroll.query.opensearch.provider.OpenSearchEngine` and
:class:`~backscroll.query.sqlite.provider.SQLiteEngine`; and its awaitable twin,
:class:`AsyncSearchEngine` (:class:`~backscroll.query.opensearch.async_provider.AsyncOpenSearchEngine`,
or :class:`~backscroll.query.aio.ThreadedEngine` over any synchronous engine).

An engine runs a validated :class:`EngineQuery` (the plan, the scope narrowing, the page size and
the entries earlier pages returned) and answers with engine-neutral :class:`EngineHit`\\ s carrying
the entry's text; the core makes excerpts, merges live entries and signs cursors. Every method
raises :class:`~backscroll.query.errors.SessionQueryError` only (driver errors are translated in
the engine) and honours the :class:`~backscroll.query.deadline.Deadline` it is given.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from backscroll.query.deadline import Deadline
from backscroll.query.plan import QueryPlan

__all__ = [
    "AsyncSearchEngine",
    "Corpus",
    "EngineHit",
    "EnginePage",
    "EngineQuery",
    "SearchEngine",
    "generation_of",
]


@dataclass(frozen=True, slots=True)
class EngineQuery:
    """One page of one search.

    ``session_id`` narrows the scope to one session; ``single`` says the search covers one session
    (browse order is then seq descending); ``size`` hits are wanted (the core asks one more than the
    limit to know whether there is a next page); ``exclude`` lists the entry ids earlier pages
    returned; ``partial`` asks for closest matches (any word) instead of every word;
    ``live_topic`` asks for the searchability watermark of that log; ``skip`` leaves out the
    entries holding any of these folded words (the crowded readings of a first window of readings,
    :func:`backscroll.query.typo_readings.crowded`); ``inside`` lists query words looked for inside
    longer words only, without their typo tiers (a typo's reading, whose entries holding it whole
    are in ``skip``: :func:`backscroll.query.typo_readings.add_inside`). An engine that scores every
    entry of a small scope may still score their typos; the core reads the texts.

    ``scratch`` is the engine's own state between the calls of one search: the core derives every
    further call's query from the first with :func:`dataclasses.replace`, which keeps the same
    dictionary (the OpenSearch engine keeps a scanned scope's entries there, so that the wider
    window and the closest-matches ranking score them again instead of asking the server).
    """

    plan: QueryPlan
    session_id: str | None
    single: bool
    size: int
    exclude: tuple[str, ...] = ()
    partial: bool = False
    live_topic: str | None = None
    skip: frozenset[str] = frozenset()
    inside: frozenset[str] = frozenset()
    scratch: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class EngineHit:
    """One entry of a page, with its full text (or a tool call's arguments) for the excerpt and
    the spellings the engine matched (``hints``: highlights, typo candidates)."""

    session_id: str
    entry_id: str
    seq: int
    kind: str
    text: str
    turn: int | None = None
    role: str | None = None
    created_at: datetime | None = None
    score: float = 0.0
    hints: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Corpus:
    """What the scope holds at the time of the page: ``searched`` in-scope entries of the requested
    kinds with text; ``total`` in-scope entries and ``max_offset`` the highest log offset among
    them (together the cursor generation); ``exists`` whether the narrowing session exists;
    ``watermarks`` the log position the projection shows per partition (for the live merge)."""

    searched: int
    total: int
    max_offset: int
    exists: bool
    watermarks: dict[int, int] = field(default_factory=dict)

    @property
    def generation(self) -> int:
        return generation_of(self.total, self.max_offset)


@dataclass(frozen=True, slots=True)
class EnginePage:
    corpus: Corpus
    hits: list[EngineHit]


def generation_of(total: int, max_offset: int) -> int:
    """The scope's corpus generation: changes when an entry is added or removed, or re-indexed
    from a later log position."""
    return total * 1_000_003 + max_offset


class SearchEngine(Protocol):
    """A backend's search: one consistent read of the corpus statistics and the first page, and
    further rankings (the closest-matches fallback)."""

    #: The name of the log whose positions :attr:`Corpus.watermarks` are (``None``: any topic, as
    #: the OpenSearch watermark index records one per Kafka topic).
    log_topic: str | None

    def search(self, query: EngineQuery, deadline: Deadline) -> EnginePage:
        """The corpus statistics and the page of ``query``, from one consistent view."""
        ...

    def rank(self, query: EngineQuery, deadline: Deadline) -> list[EngineHit]:
        """The page of ``query`` alone."""
        ...

    def close(self) -> None:
        """Release the engine's resources. Idempotent."""
        ...


class AsyncSearchEngine(Protocol):
    """:class:`SearchEngine` with awaitable calls."""

    log_topic: str | None

    async def search(self, query: EngineQuery, deadline: Deadline) -> EnginePage:
        """The corpus statistics and the page of ``query``, from one consistent view."""
        ...

    async def rank(self, query: EngineQuery, deadline: Deadline) -> list[EngineHit]:
        """The page of ``query`` alone."""
        ...

    async def aclose(self) -> None:
        """Release the engine's resources. Idempotent."""
        ...
