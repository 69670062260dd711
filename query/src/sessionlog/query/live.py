"""Read-your-writes: the entries this process appended, merged with what the index returns.

A provider built with ``live=appender`` (or anything with the same small surface) asks the index
for the indexer's searchability watermark on every search (in the same round trip), releases the
live entries the index now shows, and scores the rest in Python with the same tiers. A live
match wins over an indexed one with the same (session, seq).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from sessionlog.query.contract import SessionMatch

__all__ = ["AppenderLiveSource", "LiveFeed", "live_feed", "live_source", "merge_live"]


class LiveFeed(Protocol):
    """What the provider needs of a live source (``sessionlog.ingest``'s appender provides it)."""

    topic: str

    def live_sessions(self) -> list[str]: ...

    def live_entries(self, session_id: str) -> Sequence[Any]: ...

    def release_through(self, partition: int, offset: int) -> int: ...


class _AppenderFeed:
    def __init__(self, log: Any, topic: str) -> None:
        self._log = log
        self.topic = topic

    def live_sessions(self) -> list[str]:
        return list(self._log.live_sessions())

    def live_entries(self, session_id: str) -> Sequence[Any]:
        return list(self._log.live_entries(session_id))

    def release_through(self, partition: int, offset: int) -> int:
        return int(self._log.release_through(partition, offset))


def live_feed(source: Any) -> LiveFeed:
    """Adapt an appender (``.live`` + ``.settings.topic``) or a ready feed."""
    log = getattr(source, "live", None)
    if log is not None and hasattr(source, "settings"):
        return _AppenderFeed(log, source.settings.topic)
    if all(hasattr(source, name) for name in ("topic", "live_sessions", "live_entries", "release_through")):
        return source  # type: ignore[no-any-return]
    raise TypeError(
        "live= needs an Appender or an object with topic/live_sessions/live_entries/release_through"
    )


def merge_live(
    indexed: list[SessionMatch], live: list[SessionMatch], limit: int, *, browse: bool, single: bool
) -> list[SessionMatch]:
    """Merge live matches into an indexed page; live wins per (session, seq); same ordering rules."""
    by_key = {(m.session_id, m.seq): m for m in indexed}
    for match in live:
        by_key[(match.session_id, match.seq)] = match
    merged = list(by_key.values())
    if browse:
        if single:
            merged.sort(key=lambda m: (-m.seq, m.session_id))
        else:
            merged.sort(
                key=lambda m: (-(m.created_at.timestamp() if m.created_at else 0), -m.seq, m.session_id)
            )
    else:
        merged.sort(key=lambda m: (-m.score, -m.seq, m.session_id))
    return merged[:limit]


class AppenderLiveSource:
    """The reads' :class:`~sessionlog.query.reads.LiveSource` over an appender's live view.

    Sessions are listed with the headers this appender wrote; a live session whose header it did not
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
    """Adapt an appender to the reads' live protocol; a ready ``LiveSource`` passes through."""
    if hasattr(source, "events") and hasattr(source, "sessions"):
        return source
    if hasattr(source, "live_events"):
        return AppenderLiveSource(source)
    raise TypeError("live= needs an Appender or an object with sessions() and events()")
