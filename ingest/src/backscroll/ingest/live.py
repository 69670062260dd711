"""The live view: events this process appended that the index may not show yet (read-your-writes).

The appender adds every event it accepts; the broker's acknowledgement attaches the event's
(partition, offset). The indexer/query side later drives :meth:`LiveLog.release_through` with its
searchability watermark (or :meth:`LiveLog.release_session_through` with a per-session seq), which
drops what the index now shows. Bounded: at most ``max_per_session`` entries per session (the
oldest go first) and ``max_total`` in all (the least recently appended sessions lose their oldest
entries first); a session that lost entries this way reports :meth:`LiveLog.truncated`.

An entry is kept as its encoded bytes and decoded when it is read. A process that only appends never
reads its live view, and without a watermark to release them it holds ``max_total`` events: as
models (each with its nested models, dicts and sets, about seven objects the garbage collector
tracks) every full collection walked them all, ~90 ms each and a quarter of the appender's CPU in
``benchmarks/bench_append.py``. A tuple of bytes and integers is not tracked at all.
"""

from __future__ import annotations

import threading
from collections import OrderedDict, deque
from collections.abc import Iterable
from dataclasses import dataclass

from backscroll.ingest.wire import EventRecord, HeaderRecord, decode_record, encode_record

__all__ = ["LiveEntry", "LiveLog", "LiveTail"]

#: How many sessions' headers a log remembers for its live view (the oldest are forgotten first).
LIVE_HEADERS_MAX = 100_000


@dataclass(slots=True)
class LiveEntry:
    """One live event and, once acknowledged, where it is in the log."""

    record: EventRecord
    partition: int | None = None
    offset: int | None = None


#: One kept event: its encoded record, then its partition and offset once acknowledged, then the
#: decoded record once something read it (reads keep it, so a view that is searched decodes once).
_Kept = tuple[bytes, int | None, int | None, EventRecord | None]


class _Session:
    __slots__ = ("ascending", "entries")

    def __init__(self) -> None:
        self.entries: dict[int, _Kept] = {}
        # Whether ``entries`` was filled in increasing seq order (a writer's usual order): then its
        # first key is its lowest seq, and dropping the oldest costs O(1) instead of a scan.
        self.ascending = True

    def put(self, seq: int, entry: _Kept) -> bool:
        """Keep ``entry`` (replacing one with the same seq); whether it is a new seq."""
        new = seq not in self.entries
        if new and self.entries and self.ascending and seq < next(reversed(self.entries)):
            self.ascending = False
        self.entries[seq] = entry
        return new

    def oldest(self) -> int:
        return next(iter(self.entries)) if self.ascending else min(self.entries)


class LiveLog:
    """Thread-safe, bounded store of appended-but-maybe-not-yet-searchable events."""

    def __init__(self, max_per_session: int = 2_000, max_total: int = 50_000) -> None:
        self.max_per_session = max_per_session
        self.max_total = max_total
        self._lock = threading.Lock()
        self._sessions: OrderedDict[str, _Session] = OrderedDict()
        self._by_partition: dict[int, deque[tuple[int, str, int]]] = {}
        self._truncated: OrderedDict[str, None] = OrderedDict()
        self._indexed = 0
        self._total = 0

    def __len__(self) -> int:
        return self._total

    def add(self, record: EventRecord, encoded: bytes | None = None) -> None:
        """Keep ``record`` until a watermark passes it (replaces an entry with the same seq);
        ``encoded``: its bytes (:func:`~backscroll.ingest.wire.encode_record`) when the caller has
        them."""
        if self.max_per_session <= 0 or self.max_total <= 0:
            return
        kept: _Kept = (encode_record(record) if encoded is None else encoded, None, None, None)
        with self._lock:
            session = self._sessions.get(record.session_id)
            if session is None:
                session = self._sessions[record.session_id] = _Session()
            else:
                self._sessions.move_to_end(record.session_id)
            if session.put(record.seq, kept):
                self._total += 1
            while len(session.entries) > self.max_per_session:
                self._drop_oldest(record.session_id, session)
            while self._total > self.max_total:
                oldest_id, oldest = next(iter(self._sessions.items()))
                self._drop_oldest(oldest_id, oldest)

    def _drop_oldest(self, session_id: str, session: _Session) -> None:
        seq = session.oldest()
        del session.entries[seq]
        self._total -= 1
        self._truncated[session_id] = None
        self._truncated.move_to_end(session_id)
        while len(self._truncated) > max(self.max_total, 1024):
            self._truncated.popitem(last=False)
        if not session.entries:
            del self._sessions[session_id]

    def acknowledged(self, session_id: str, seq: int, partition: int, offset: int) -> None:
        """Record where the broker put an event (called from the producer's callback)."""
        self.acknowledged_many([(session_id, seq, partition, offset)])

    def acknowledged_many(self, acks: Iterable[tuple[str, int, int, int]]) -> None:
        """:meth:`acknowledged` for many (session_id, seq, partition, offset) under one lock."""
        if self.max_per_session <= 0 or self.max_total <= 0:
            return  # nothing is kept
        with self._lock:
            sessions, by_partition = self._sessions, self._by_partition
            for session_id, seq, partition, offset in acks:
                session = sessions.get(session_id)
                entry = session.entries.get(seq) if session is not None else None
                if session is None or entry is None:
                    continue
                session.entries[seq] = (entry[0], partition, offset, entry[3])
                queue = by_partition.get(partition)
                if queue is None:
                    queue = by_partition[partition] = deque()
                queue.append((offset, session_id, seq))
                self._indexed += 1
            if self._indexed > 2 * max(self.max_total, 1024):
                self._compact()

    def discard(self, session_id: str, seq: int) -> None:
        """Forget an entry the broker refused for good."""
        with self._lock:
            session = self._sessions.get(session_id)
            if session and session.entries.pop(seq, None) is not None:
                self._total -= 1
                if not session.entries:
                    del self._sessions[session_id]

    def release_through(self, partition: int, offset: int) -> int:
        """Drop every acknowledged entry at or below ``offset`` on ``partition``; return how many."""
        released = 0
        with self._lock:
            queue = self._by_partition.get(partition)
            while queue and queue[0][0] <= offset:
                at, session_id, seq = queue.popleft()
                self._indexed -= 1
                session = self._sessions.get(session_id)
                entry = session.entries.get(seq) if session else None
                if session is not None and entry is not None and entry[1] == partition and entry[2] == at:
                    del session.entries[seq]
                    self._total -= 1
                    released += 1
                    if not session.entries:
                        del self._sessions[session_id]
        return released

    def release_session_through(self, session_id: str, seq: int) -> int:
        """Drop the entries of ``session_id`` with a seq at or below ``seq``; return how many."""
        with self._lock:
            session = self._sessions.get(session_id)
            if session is None:
                return 0
            doomed = [s for s in session.entries if s <= seq]
            for s in doomed:
                del session.entries[s]
            self._total -= len(doomed)
            if not session.entries:
                del self._sessions[session_id]
            return len(doomed)

    def _compact(self) -> None:
        for partition, queue in list(self._by_partition.items()):
            kept = deque(
                item
                for item in queue
                if (s := self._sessions.get(item[1])) is not None
                and (e := s.entries.get(item[2])) is not None
                and e[2] == item[0]
            )
            self._by_partition[partition] = kept
        self._indexed = sum(len(q) for q in self._by_partition.values())

    def live_sessions(self) -> list[str]:
        """Sessions with live entries, least recently appended first."""
        with self._lock:
            return [sid for sid, s in self._sessions.items() if s.entries]

    def live_events(self, session_id: str) -> list[EventRecord]:
        """The live events of ``session_id`` in seq order."""
        with self._lock:
            session = self._sessions.get(session_id)
            if session is None:
                return []
            return [self._decoded(session, seq)[3] for seq in sorted(session.entries)]

    def live_entries(self, session_id: str) -> list[LiveEntry]:
        """Like :meth:`live_events` with each event's position (None until acknowledged)."""
        with self._lock:
            session = self._sessions.get(session_id)
            if session is None:
                return []
            return [
                LiveEntry(record, partition, offset)
                for _, partition, offset, record in (
                    self._decoded(session, seq) for seq in sorted(session.entries)
                )
            ]

    @staticmethod
    def _decoded(session: _Session, seq: int) -> tuple[bytes, int | None, int | None, EventRecord]:
        """The kept event of ``seq`` with its record decoded (and kept decoded from now on)."""
        encoded, partition, offset, record = session.entries[seq]
        if record is None:
            decoded = decode_record(encoded)
            assert isinstance(decoded, EventRecord)  # only events are added
            record = decoded
            session.entries[seq] = (encoded, partition, offset, record)
        return encoded, partition, offset, record

    def truncated(self, session_id: str) -> bool:
        """Whether the caps dropped entries of ``session_id`` before a watermark released them."""
        with self._lock:
            return session_id in self._truncated

    def clear(self) -> None:
        with self._lock:
            self._sessions.clear()
            self._by_partition.clear()
            self._truncated.clear()
            self._indexed = 0
            self._total = 0


class LiveTail:
    """The live-view half of an :class:`~backscroll.ingest.entry_log.EntryLog`, shared by both logs:
    what this process appended that the search view does not show yet. A log sets ``live`` and
    ``_live_headers`` in its constructor and calls :meth:`_remember_header` for each header."""

    live: LiveLog
    _live_headers: dict[str, HeaderRecord]

    def _remember_header(self, header: HeaderRecord) -> None:
        self._live_headers[header.session_id] = header
        if len(self._live_headers) > LIVE_HEADERS_MAX:
            self._live_headers.pop(next(iter(self._live_headers)), None)

    def live_sessions(self) -> list[str]:
        """Sessions with entries this process appended that a watermark has not released yet."""
        return self.live.live_sessions()

    def live_headers(self) -> list[HeaderRecord]:
        """Headers this log wrote for sessions that still have live (unindexed) events."""
        live = set(self.live.live_sessions())
        return [h for sid, h in list(self._live_headers.items()) if sid in live]

    def live_events(self, session_id: str) -> list[EventRecord]:
        """Those entries of ``session_id`` in seq order (see :class:`LiveLog`)."""
        return self.live.live_events(session_id)

    def live_entries(self, session_id: str) -> list[LiveEntry]:
        """Like :meth:`live_events`, each with its position once the log acknowledged it."""
        return self.live.live_entries(session_id)

    def release_through(self, partition: int, offset: int) -> int:
        """The searchability watermark of ``partition`` reached ``offset``: drop what it covers."""
        return self.live.release_through(partition, offset)

    def release_session_through(self, session_id: str, seq: int) -> int:
        """The index shows ``session_id`` up to ``seq``: drop those live entries."""
        return self.live.release_session_through(session_id, seq)
