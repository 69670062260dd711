"""Read-your-writes: the entries this process appended, merged with what the index returns.

A provider built with ``live=`` (an entry log of either backend, its live view, or a bare
:class:`~backscroll.ingest.live.LiveLog`) asks the engine for the projection's searchability
watermark in the same read as the search, releases the live entries the index now shows, and
scores the rest in Python with the same tiers. A live match wins over an indexed one with the same
(session, seq).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from backscroll.query.contract import SessionMatch
from backscroll.query.excerpt import excerpt
from backscroll.query.plan import QueryPlan
from backscroll.query.scope import Scope
from backscroll.query.scoring import score_text

__all__ = [
    "AppenderLiveSource",
    "LiveFeed",
    "live_feed",
    "live_matches",
    "live_source",
    "merge_live",
]

_FEED_METHODS = ("live_sessions", "live_entries", "release_through")


class LiveFeed(Protocol):
    """What the provider needs of a live source (``backscroll.ingest``'s entry logs provide it)."""

    topic: str

    def live_sessions(self) -> list[str]: ...

    def live_entries(self, session_id: str) -> Sequence[Any]: ...

    def release_through(self, partition: int, offset: int) -> int: ...


class _Feed:
    """A live store (``live_sessions``/``live_entries``/``release_through``) and its log's name."""

    def __init__(self, store: Any, topic: str) -> None:
        self._store = store
        self.topic = topic

    def live_sessions(self) -> list[str]:
        return list(self._store.live_sessions())

    def live_entries(self, session_id: str) -> Sequence[Any]:
        return list(self._store.live_entries(session_id))

    def release_through(self, partition: int, offset: int) -> int:
        return int(self._store.release_through(partition, offset))


def _topic_of(source: Any) -> str | None:
    topic = getattr(source, "topic", None)
    if isinstance(topic, str):
        return topic
    settings = getattr(source, "settings", None)
    topic = getattr(settings, "topic", None)
    return topic if isinstance(topic, str) else None


def live_feed(source: Any, default_topic: str | None = None) -> LiveFeed:
    """Adapt an entry log (Kafka appender: ``.settings.topic``; SQLite log: ``.topic``), a live
    view, or a bare live store (then ``default_topic``, the engine's own log, names its log).
    Raises ``TypeError`` for anything else."""
    topic = _topic_of(source) or default_topic
    if all(callable(getattr(source, name, None)) for name in _FEED_METHODS):
        store = source
    else:
        store = getattr(source, "live", None)
        if not all(callable(getattr(store, name, None)) for name in _FEED_METHODS):
            store = None
    if store is None or topic is None:
        raise TypeError(
            "live= needs an entry log, its live view, or a live store "
            "(live_sessions/live_entries/release_through) on a backend that names its log"
        )
    return _Feed(store, topic)


def live_matches(
    feed: LiveFeed,
    scope: Scope,
    plan: QueryPlan,
    session_id: str | None,
    budget: int,
    partial: bool,
) -> tuple[list[SessionMatch], int]:
    """Matches among the live entries in scope (and ``session_id``), and how many were searched."""
    records = []
    for sid in feed.live_sessions():
        if session_id is not None and sid != session_id:
            continue
        if scope.kind == "sessions" and sid not in scope.ids:
            continue
        for entry in feed.live_entries(sid):
            record = getattr(entry, "record", entry)
            if scope.kind == "workspaces" and record.workspace_id not in scope.ids:
                break
            if record.type not in plan.kinds or not (record.text or "").strip():
                continue
            if plan.default_kinds and record.tool_name in plan.exclude_tools:
                continue
            if (plan.since is not None and record.time < plan.since) or (
                plan.until is not None and record.time > plan.until
            ):
                continue
            records.append(record)
    out = []
    for record in records:
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
                entry_id=record.doc_id,
                seq=record.seq,
                kind=record.type,
                turn=record.turn,
                role=record.role,
                excerpt=excerpt(text, plan.words, budget),
                created_at=record.time,
                score=round(score, 4),
            )
        )
    return out, len(records)


def merge_live(
    indexed: list[SessionMatch], live: list[SessionMatch], limit: int, *, browse: bool, single: bool
) -> list[SessionMatch]:
    """Merge live matches into an indexed page; live wins per (session, seq).

    A browse page is re-sorted by recency. A search page keeps the indexed matches in the order the
    provider gave them (which is not always by score: the readings of a typo are interleaved
    within their tier) and places each live match before the first indexed match it outranks
    (score, then the newer entry first)."""
    by_key = {(m.session_id, m.seq): m for m in indexed}
    for match in live:
        by_key[(match.session_id, match.seq)] = match
    if browse:
        merged = list(by_key.values())
        if single:
            merged.sort(key=lambda m: (-m.seq, m.session_id))
        else:
            merged.sort(
                key=lambda m: (-(m.created_at.timestamp() if m.created_at else 0), -m.seq, m.session_id)
            )
        return merged[:limit]
    fresh = {(m.session_id, m.seq) for m in live}
    kept = [m for m in indexed if (m.session_id, m.seq) not in fresh]
    pending = sorted((by_key[key] for key in fresh), key=_rank)
    out: list[SessionMatch] = []
    placed = 0
    for match in kept:
        while placed < len(pending) and _rank(pending[placed]) < _rank(match):
            out.append(pending[placed])
            placed += 1
        out.append(match)
    out.extend(pending[placed:])
    return out[:limit]


def _rank(match: SessionMatch) -> tuple[float, int, str]:
    return (-match.score, -match.seq, match.session_id)


class AppenderLiveSource:
    """The reads' :class:`~backscroll.query.reads.LiveSource` over an entry log's live view.

    Sessions are listed with the headers this process wrote; a live session whose header it did not
    write is read with the persisted header, else a placeholder (``has_header=False``)."""

    def __init__(self, appender: Any) -> None:
        self._appender = appender

    def sessions(self) -> list[Any]:
        headers = getattr(self._appender, "live_headers", None)
        return list(headers()) if headers is not None else []

    def events(self, session_id: str) -> list[Any] | None:
        events = list(self._appender.live_events(session_id))
        return events or None


def live_source(source: Any) -> Any:
    """Adapt an entry log (or live store) to the reads' live protocol; a ready ``LiveSource``
    passes through."""
    if hasattr(source, "events") and hasattr(source, "sessions"):
        return source
    if hasattr(source, "live_events"):
        return AppenderLiveSource(source)
    raise TypeError("live= needs an entry log or an object with sessions() and events()")
