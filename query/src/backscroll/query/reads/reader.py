"""The session reads, written once for every backend.

:class:`ReaderBase` holds the public read API (``list_sessions``, ``list_events``,
``filter_events``, ``read_surface``, ``read_event``, ``trace_session``, ``trace_event``), the
validation order, the live + persisted merge and the lifecycle, over a backend's read engine
(:class:`~backscroll.query.reads.engine.ReadEngine`: a session's log, the texts of some of its
events, the listing; each applying the reader's scope itself).

Every read is a *flow* without I/O, like the provider core's search: a generator that yields the
engine calls it needs (:class:`~backscroll.query.reads.engine.ReadStep`) and receives their
answers. The synchronous reads run it with :func:`backscroll.query.driver.drive`; the asyncio
readers (:class:`~backscroll.query.reads.async_reader.AsyncSessionReader`) run the same flows with
:func:`backscroll.query.driver.adrive`, on an async engine or on worker threads.

:class:`~backscroll.query.opensearch.reader.OpenSearchSessionReader` reads the OpenSearch
projection, :class:`~backscroll.query.sqlite.reader.SQLiteSessionReader` the embedded SQLite file.
Everything else is the pure logic of :mod:`backscroll.query.reads`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Final, Self

from backscroll.indexer.fold import FoldEvent, FoldResult
from backscroll.query.config import check_bool, check_int, check_scope, check_timeout, config_error
from backscroll.query.deadline import AbortSignal, Deadline, check_signal
from backscroll.query.driver import drive
from backscroll.query.errors import SessionQueryError
from backscroll.query.live import live_source
from backscroll.query.reads.engine import ReadEngine, ReadFlow, ReadStep, StoredLog
from backscroll.query.reads.filters import (
    apply_event_filters,
    apply_session_filters,
    parse_event_filters,
    parse_session_filters,
)
from backscroll.query.reads.log import (
    LogEntry,
    check_compatible,
    entry_from_record,
    header_from_live,
    merge_listing,
    merge_logs,
    preferred_header,
    scope_admits,
)
from backscroll.query.reads.models import (
    DEFAULT_READ_WINDOW_MAX,
    EventRecordView,
    EventTraceResult,
    LiveSource,
    ReadEventResult,
    SessionHeader,
    SessionRecord,
    SessionTrace,
    SurfaceRead,
)
from backscroll.query.reads.views import (
    build_read_event,
    build_surface_read,
    build_trace_event,
    check_fold,
    check_read_window_max,
    check_session_id,
    check_window,
    event_view,
    fold_log,
    locate_index,
    trace_session,
    window_bounds,
)
from backscroll.query.scope import Scope

__all__ = [
    "DEFAULT_INSPECT_CONCURRENCY",
    "Loaded",
    "ReaderBase",
    "config_error",
    "not_found",
]

#: Default of ``persisted_inspect_concurrency``.
DEFAULT_INSPECT_CONCURRENCY: Final = 4
_MAX_SAFE_INTEGER: Final = 2**53 - 1


@dataclass(slots=True)
class Loaded:
    """One session's header and log; ``folded`` is its fold when already known (cached)."""

    header: SessionHeader
    entries: list[LogEntry]
    folded: FoldResult | None = None
    events: Sequence[FoldEvent] | None = None

    def fold(self) -> FoldResult:
        return self.folded if self.folded is not None else fold_log(self.entries)

    def fold_strict(self) -> FoldResult:
        return check_fold(self.header.session_id, self.fold())

    @classmethod
    def stored(cls, stored: StoredLog) -> Loaded:
        """A log as the engine loaded it."""
        return cls(stored.record.header, stored.entries, stored.folded, stored.events)


def not_found(session_id: str) -> SessionQueryError:
    return SessionQueryError("SESSION_QUERY_SESSION_NOT_FOUND", f"no session {session_id!r}")


class ReaderBase:
    """Reads sessions of one :class:`Scope` from a projection (its :class:`ReadEngine`) and a live
    source.

    Every public method raises :class:`SessionQueryError` (codes in ``docs/errors.md``) and returns
    detached frozen models. ``read_window_max`` bounds ``read_event``'s ``before``/``after``;
    ``live`` serves this process's own entries (see :class:`LiveSource`); ``persistence=False``
    reads live sessions only (the projection is "unmounted"); ``request_timeout_s`` bounds each
    read, every wait included (exceeding it is the retriable ``PERSISTENCE_FAILED``);
    ``persisted_inspect_concurrency`` (a positive integer) bounds how many persisted
    sessions a batch read may load at once (validated; no read loads several yet). Every read
    takes an optional ``signal`` (:class:`~backscroll.query.deadline.AbortSignal`) that cancels it
    (``ABORTED``).
    """

    def __init__(
        self,
        scope: Scope,
        engine: ReadEngine,
        *,
        read_window_max: int = DEFAULT_READ_WINDOW_MAX,
        live: LiveSource | object | None = None,
        persistence: bool = True,
        request_timeout_s: float = 5.0,
        persisted_inspect_concurrency: int = DEFAULT_INSPECT_CONCURRENCY,
    ) -> None:
        check_scope(scope, "reader")
        self.read_window_max = check_read_window_max(read_window_max)
        check_bool(persistence, "persistence")
        self.request_timeout_s = check_timeout(request_timeout_s)
        self.persisted_inspect_concurrency = check_int(
            persisted_inspect_concurrency, "persisted_inspect_concurrency", 1, _MAX_SAFE_INTEGER
        )
        self._live: LiveSource | None = None
        if live is not None:
            try:
                self._live = live_source(live)
            except TypeError:
                raise config_error(
                    "live must be an Appender or provide sessions() and events(session_id)"
                ) from None
        self.scope = scope
        self.engine = engine
        self.persistence = persistence
        self._closed = False

    # -- lifecycle ------------------------------------------------------------------------------
    def close(self) -> None:
        """Refuse further reads (``SESSION_QUERY_PROVIDER_CLOSED``) and release the engine.
        Idempotent."""
        if not self._closed:
            self._closed = True
            self.engine.close()

    @property
    def closed(self) -> bool:
        return self._closed

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _start(self, signal: AbortSignal | None) -> Deadline:
        """The deadline of one read, checked (a closed reader, a bad or aborted signal)."""
        if self._closed:
            raise SessionQueryError("SESSION_QUERY_PROVIDER_CLOSED", "the reader was closed")
        deadline = Deadline(self.request_timeout_s, "SESSION_QUERY_PERSISTENCE_FAILED", check_signal(signal))
        deadline.check()
        return deadline

    # -- public reads ---------------------------------------------------------------------------
    def list_sessions(
        self, filters: Sequence[Any] | None = None, *, signal: AbortSignal | None = None
    ) -> tuple[SessionRecord, ...]:
        """Sessions in scope, newest first (then id): persisted ones overlaid by live ones.

        ``filters`` are session clauses (see :func:`reads.parse_session_filters`).
        """
        return drive(self.list_sessions_flow(filters, signal), self.engine)

    def list_events(
        self, session_id: str, *, signal: AbortSignal | None = None
    ) -> tuple[EventRecordView, ...]:
        """Every event of the session in seq order, classified by the fold (INVALID_SURFACE if the
        log breaks a surface rule)."""
        return drive(self.list_events_flow(session_id, signal), self.engine)

    def filter_events(
        self, session_id: str, filters: Sequence[Any], *, signal: AbortSignal | None = None
    ) -> tuple[EventRecordView, ...]:
        """The session's events with text that match every clause, in seq order.

        Filters are validated before the session is loaded; the log must fold (INVALID_SURFACE).
        """
        return drive(self.filter_events_flow(session_id, filters, signal), self.engine)

    def read_surface(self, session_id: str, *, signal: AbortSignal | None = None) -> SurfaceRead:
        """The model's current surface in model-history order and the last raw seq it covers."""
        return drive(self.read_surface_flow(session_id, signal), self.engine)

    def read_event(
        self, session_id: str, seq: int, before: int = 0, after: int = 0, *, signal: AbortSignal | None = None
    ) -> ReadEventResult:
        """The event ``seq`` and up to ``before``/``after`` neighbours (clamped at the log's edges).

        The window is validated first (INVALID_WINDOW even for a missing session). The surface fold
        is not enforced, so an event of a surface-invalid log can still be read.
        """
        return drive(self.read_event_flow(session_id, seq, before, after, signal), self.engine)

    def trace_session(self, session_id: str, *, signal: AbortSignal | None = None) -> SessionTrace:
        """Ancestors and descendants of the session within the scope (one listing)."""
        return drive(self.trace_session_flow(session_id, signal), self.engine)

    def trace_event(
        self, session_id: str, seq: int, *, signal: AbortSignal | None = None
    ) -> EventTraceResult:
        """Replacement and citation edges of one event. EVENT_NOT_FOUND is checked before the log is
        validated (INVALID_SURFACE)."""
        return drive(self.trace_event_flow(session_id, seq, signal), self.engine)

    # -- the reads' flows (one per public read, run by drive() or adrive()) ------------------------
    def list_sessions_flow(
        self, filters: Sequence[Any] | None, signal: AbortSignal | None = None
    ) -> ReadFlow[tuple[SessionRecord, ...]]:
        deadline = self._start(signal)
        parsed = parse_session_filters(filters)
        listing = yield from self._listing(deadline)
        return tuple(apply_session_filters(listing, parsed))

    def list_events_flow(
        self, session_id: str, signal: AbortSignal | None = None
    ) -> ReadFlow[tuple[EventRecordView, ...]]:
        deadline = self._start(signal)
        loaded = yield from self._load(session_id, True, deadline)
        folded = loaded.fold_strict()
        sid = loaded.header.session_id
        return tuple(event_view(sid, entry, folded) for entry in loaded.entries)

    def filter_events_flow(
        self, session_id: str, filters: Sequence[Any], signal: AbortSignal | None = None
    ) -> ReadFlow[tuple[EventRecordView, ...]]:
        deadline = self._start(signal)
        parsed = parse_event_filters(filters)
        loaded = yield from self._load(session_id, True, deadline)
        folded = loaded.fold_strict()
        sid = loaded.header.session_id
        return tuple(apply_event_filters((event_view(sid, e, folded) for e in loaded.entries), parsed))

    def read_surface_flow(self, session_id: str, signal: AbortSignal | None = None) -> ReadFlow[SurfaceRead]:
        deadline = self._start(signal)
        loaded = yield from self._load(session_id, False, deadline)
        folded = loaded.fold_strict()
        nodes = set(folded.nodes)
        wanted = [i for i, entry in enumerate(loaded.entries) if entry.seq in nodes]
        entries = yield from self._with_text(loaded, wanted, deadline)
        return build_surface_read(loaded.header, entries, folded)

    def read_event_flow(
        self, session_id: str, seq: int, before: int, after: int, signal: AbortSignal | None = None
    ) -> ReadFlow[ReadEventResult]:
        deadline = self._start(signal)
        before, after = check_window(before, after, self.read_window_max)
        loaded = yield from self._load(session_id, False, deadline)
        index = locate_index(loaded.entries, seq)
        if index is None:
            raise SessionQueryError(
                "SESSION_QUERY_EVENT_NOT_FOUND",
                f"no event {seq!r} in session {loaded.header.session_id!r}",
            )
        lo, hi = window_bounds(len(loaded.entries), index, before, after)
        entries = yield from self._with_text(loaded, range(lo, hi + 1), deadline)
        return build_read_event(loaded.header, entries, loaded.fold(), index, (lo, hi))

    def trace_session_flow(
        self, session_id: str, signal: AbortSignal | None = None
    ) -> ReadFlow[SessionTrace]:
        deadline = self._start(signal)
        sid = check_session_id(session_id)
        listing = yield from self._listing(deadline)
        return trace_session(sid, listing)

    def trace_event_flow(
        self, session_id: str, seq: int, signal: AbortSignal | None = None
    ) -> ReadFlow[EventTraceResult]:
        deadline = self._start(signal)
        loaded = yield from self._load(session_id, False, deadline)
        sid = loaded.header.session_id
        index = locate_index(loaded.entries, seq)
        if index is None:
            raise SessionQueryError("SESSION_QUERY_EVENT_NOT_FOUND", f"no event {seq!r} in session {sid!r}")
        folded = loaded.fold_strict()
        entries = yield from self._with_text(loaded, [index], deadline)
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

    def _load(self, session_id: str, with_text: bool, deadline: Deadline) -> ReadFlow[Loaded]:
        """One session's header and log, live entries winning per seq. Without ``with_text``,
        persisted entries may come without their text (:meth:`_with_text`)."""
        sid = check_session_id(session_id)
        live = self._live_session(sid)
        if live is not None and scope_admits(self.scope, live[0]):
            header, entries = live
            if (entries and entries[0].seq == 0) or not self.persistence:
                return Loaded(header, entries)  # the complete log: the projection is not consulted
            stored: StoredLog | None = yield ReadStep("log", deadline, sid, with_text)
            if stored is None:
                return Loaded(header, entries)
            check_compatible(header, stored.record.header)
            return Loaded(preferred_header(header, stored.record.header), merge_logs(stored.entries, entries))
        if not self.persistence:
            raise not_found(sid)
        stored = yield ReadStep("log", deadline, sid, with_text)
        if stored is None:
            raise not_found(sid)
        live = self._live_session(sid)  # it may have gone live meanwhile, or be live outside the scope
        if live is not None:
            check_compatible(live[0], stored.record.header)
            return Loaded(
                preferred_header(live[0], stored.record.header), merge_logs(stored.entries, live[1])
            )
        return Loaded.stored(stored)

    def _with_text(
        self, loaded: Loaded, wanted: Sequence[int], deadline: Deadline
    ) -> ReadFlow[list[LogEntry]]:
        """``loaded``'s entries with the text of those at indices ``wanted`` loaded, as new entries
        (the ones loaded may be shared with an engine's cache). Live entries always have their text."""
        entries = loaded.entries
        missing = {entries[i].seq: i for i in wanted if entries[i].text is None}
        if not missing:
            return entries
        sid = loaded.header.session_id
        texts: dict[int, str] = yield ReadStep("texts", deadline, sid, seqs=tuple(sorted(missing)))
        unfilled = [seq for seq in missing if seq not in texts]
        if unfilled:
            raise SessionQueryError(
                "SESSION_QUERY_PERSISTENCE_FAILED",
                f"session {sid!r} changed while it was read (events {unfilled[:5]} vanished)",
            )
        out = list(entries)
        for seq, index in missing.items():
            out[index] = replace(entries[index], text=texts[seq])
        return out

    def _listing(self, deadline: Deadline) -> ReadFlow[list[SessionRecord]]:
        """The corpus listing: persisted sessions in scope overlaid by live ones."""
        persisted: list[SessionRecord] = (yield ReadStep("listing", deadline)) if self.persistence else []
        live = [header_from_live(item) for item in self._live.sessions()] if self._live is not None else []
        return merge_listing(persisted, live, self.scope)
