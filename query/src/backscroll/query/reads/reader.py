"""The backend-independent half of a session reader (spec 3.5–3.8).

:class:`ReaderBase` holds the public read API (``list_sessions``, ``list_events``,
``filter_events``, ``read_surface``, ``read_event``, ``trace_session``, ``trace_event``), the
validation order, the live + persisted merge (spec 3.5) and the lifecycle. A backend supplies three
loads from its projection, each applying the reader's scope itself:

* :meth:`ReaderBase._persisted` — one session's document and event documents (``None`` when the
  session is not in the scoped projection);
* :meth:`ReaderBase._with_text` — the text of some entries of a log loaded without it;
* :meth:`ReaderBase._persisted_listing` — every session document in scope.

Every read is written once, sans I/O, as a *flow*: a generator that yields the client requests it
needs (:class:`ReadStep`) and receives their answers. The loads are flows too. :meth:`ReaderBase.drive`
runs a flow synchronously, answering each step with :meth:`ReaderBase._perform`; the asyncio reader
on OpenSearch (:class:`~backscroll.query.aio.AsyncOpenSearchReader`) runs the same flows and
awaits each request on ``AsyncOpenSearch`` instead. A backend whose driver blocks (SQLite) does its
I/O inside the flow and never yields; its async reader runs the whole flow on a worker thread.

:class:`~backscroll.query.opensearch.reader.OpenSearchSessionReader` implements the loads over OpenSearch,
:class:`~backscroll.query.sqlite.reader.SQLiteSessionReader` over the embedded SQLite file. Everything
else is the pure logic of :mod:`backscroll.query.reads`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Final, Self, TypeVar

from backscroll.indexer.fold import FoldEvent, FoldResult
from backscroll.query.config import check_bool, check_int, check_scope, check_timeout, config_error
from backscroll.query.deadline import AbortSignal, Deadline, check_signal
from backscroll.query.errors import SessionQueryError
from backscroll.query.live import live_source
from backscroll.query.reads import (
    DEFAULT_READ_WINDOW_MAX,
    EventRecordView,
    EventTraceResult,
    LiveSource,
    LogEntry,
    ReadEventResult,
    SessionHeader,
    SessionRecord,
    SessionTrace,
    SurfaceRead,
    apply_event_filters,
    apply_session_filters,
    build_read_event,
    build_surface_read,
    build_trace_event,
    check_compatible,
    check_fold,
    check_read_window_max,
    check_session_id,
    check_window,
    entry_from_record,
    event_view,
    fold_log,
    header_from_live,
    locate_index,
    merge_listing,
    merge_logs,
    parse_event_filters,
    parse_session_filters,
    preferred_header,
    scope_admits,
    trace_session,
    window_bounds,
)
from backscroll.query.reads.flow import ReadFlow, ReadStep, advance_read
from backscroll.query.scope import Scope

__all__ = [
    "DEFAULT_INSPECT_CONCURRENCY",
    "Loaded",
    "ReaderBase",
    "config_error",
    "not_found",
]

#: Default of ``persisted_inspect_concurrency`` (spec §3.9).
DEFAULT_INSPECT_CONCURRENCY: Final = 4
_MAX_SAFE_INTEGER: Final = 2**53 - 1
#: The deadline of the read in progress on this thread or task (see :meth:`ReaderBase._bounded`).
_CALL: ContextVar[Deadline | None] = ContextVar("backscroll_read_deadline", default=None)
_T = TypeVar("_T")


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


def not_found(session_id: str) -> SessionQueryError:
    return SessionQueryError("SESSION_QUERY_SESSION_NOT_FOUND", f"no session {session_id!r}")


class ReaderBase(ABC):
    """Reads sessions of one :class:`Scope` from a projection (the subclass) and a live source.

    Every public method raises :class:`SessionQueryError` (codes in ``docs/errors.md``) and returns
    detached frozen models. ``read_window_max`` bounds ``read_event``'s ``before``/``after``;
    ``live`` serves this process's own entries (see :class:`LiveSource`); ``persistence=False``
    reads live sessions only (the projection is "unmounted"); ``request_timeout_s`` bounds each
    read, every wait included (exceeding it is the retriable ``PERSISTENCE_FAILED``);
    ``persisted_inspect_concurrency`` (a positive integer, spec §3.9) bounds how many persisted
    sessions a batch read may load at once (validated; no read loads several yet). Every read
    takes an optional ``signal`` (:class:`~backscroll.query.deadline.AbortSignal`) that cancels it
    (``ABORTED``).
    """

    def __init__(
        self,
        scope: Scope,
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
        self.persistence = persistence
        self._closed = False

    # -- the projection (implemented per backend) -------------------------------------------------
    @abstractmethod
    def _persisted(
        self, session_id: str, *, with_text: bool
    ) -> ReadFlow[tuple[SessionRecord, Loaded] | None]:
        """The session's record and log from the scoped projection, or ``None`` if not there.
        Without ``with_text`` entries may come with ``text=None`` (see :meth:`_with_text`)."""

    @abstractmethod
    def _with_text(
        self, session_id: str, entries: list[LogEntry], wanted: Sequence[int]
    ) -> ReadFlow[list[LogEntry]]:
        """``entries`` with the text of the entries at indices ``wanted`` loaded, as new entries
        (the ones passed in may be shared). Live entries always have their text."""

    @abstractmethod
    def _persisted_listing(self) -> ReadFlow[list[SessionRecord]]:
        """Every session record of the scoped projection."""

    def _perform(self, step: ReadStep, deadline: Deadline) -> Any:
        """Answer one request of a flow synchronously (a backend whose loads yield requests)."""
        raise NotImplementedError(f"{type(self).__name__} issues no client requests ({step.method})")

    # -- lifecycle ------------------------------------------------------------------------------
    def close(self) -> None:
        """Refuse further reads (``SESSION_QUERY_PROVIDER_CLOSED``). Idempotent."""
        self._closed = True

    @property
    def closed(self) -> bool:
        return self._closed

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _check_open(self) -> None:
        if self._closed:
            raise SessionQueryError("SESSION_QUERY_PROVIDER_CLOSED", "the reader was closed")

    @contextmanager
    def bounded(self, signal: AbortSignal | None) -> Iterator[Deadline]:
        """The deadline of one public read (nested reads share the outer one)."""
        current = _CALL.get()
        if current is not None:
            yield current
            return
        deadline = Deadline(self.request_timeout_s, "SESSION_QUERY_PERSISTENCE_FAILED", check_signal(signal))
        token = _CALL.set(deadline)
        try:
            deadline.check()
            yield deadline
        finally:
            _CALL.reset(token)

    def drive(self, flow: ReadFlow[_T], signal: AbortSignal | None = None) -> _T:
        """Run one read's flow synchronously within the read's deadline (the public reads do)."""
        self._check_open()
        with self.bounded(signal) as deadline:
            outcome = advance_read(flow, None)
            while isinstance(outcome, ReadStep):
                outcome = advance_read(flow, self._perform(outcome, deadline))
            return outcome[0]

    def _deadline(self) -> Deadline:
        """The deadline of the read in progress (a fresh one outside a public read)."""
        return _CALL.get() or Deadline(self.request_timeout_s, "SESSION_QUERY_PERSISTENCE_FAILED")

    # -- public reads ---------------------------------------------------------------------------
    def list_sessions(
        self, filters: Sequence[Any] | None = None, *, signal: AbortSignal | None = None
    ) -> tuple[SessionRecord, ...]:
        """Sessions in scope, newest first (then id): persisted ones overlaid by live ones.

        ``filters`` are session clauses (spec 3.7, see :func:`reads.parse_session_filters`).
        """
        return self.drive(self.list_sessions_flow(filters), signal)

    def list_events(
        self, session_id: str, *, signal: AbortSignal | None = None
    ) -> tuple[EventRecordView, ...]:
        """Every event of the session in seq order, classified by the fold (INVALID_SURFACE if the
        log breaks a surface rule)."""
        return self.drive(self.list_events_flow(session_id), signal)

    def filter_events(
        self, session_id: str, filters: Sequence[Any], *, signal: AbortSignal | None = None
    ) -> tuple[EventRecordView, ...]:
        """The session's events with text that match every clause (spec 3.7), in seq order.

        Filters are validated before the session is loaded; the log must fold (INVALID_SURFACE).
        """
        return self.drive(self.filter_events_flow(session_id, filters), signal)

    def read_surface(self, session_id: str, *, signal: AbortSignal | None = None) -> SurfaceRead:
        """The model's current surface in model-history order and the last raw seq it covers."""
        return self.drive(self.read_surface_flow(session_id), signal)

    def read_event(
        self, session_id: str, seq: int, before: int = 0, after: int = 0, *, signal: AbortSignal | None = None
    ) -> ReadEventResult:
        """The event ``seq`` and up to ``before``/``after`` neighbours (clamped at the log's edges).

        The window is validated first (INVALID_WINDOW even for a missing session). The surface fold
        is not enforced, so an event of a surface-invalid log can still be read.
        """
        return self.drive(self.read_event_flow(session_id, seq, before, after), signal)

    def trace_session(self, session_id: str, *, signal: AbortSignal | None = None) -> SessionTrace:
        """Ancestors and descendants of the session within the scope (one listing)."""
        return self.drive(self.trace_session_flow(session_id), signal)

    def trace_event(
        self, session_id: str, seq: int, *, signal: AbortSignal | None = None
    ) -> EventTraceResult:
        """Replacement and citation edges of one event. EVENT_NOT_FOUND is checked before the log is
        validated (INVALID_SURFACE)."""
        return self.drive(self.trace_event_flow(session_id, seq), signal)

    # -- the reads' flows (one per public read, driven by drive() or an async driver) ------------
    def list_sessions_flow(self, filters: Sequence[Any] | None) -> ReadFlow[tuple[SessionRecord, ...]]:
        parsed = parse_session_filters(filters)
        listing = yield from self._listing()
        return tuple(apply_session_filters(listing, parsed))

    def list_events_flow(self, session_id: str) -> ReadFlow[tuple[EventRecordView, ...]]:
        loaded = yield from self._load(session_id, with_text=True)
        folded = loaded.fold_strict()
        sid = loaded.header.session_id
        return tuple(event_view(sid, entry, folded) for entry in loaded.entries)

    def filter_events_flow(
        self, session_id: str, filters: Sequence[Any]
    ) -> ReadFlow[tuple[EventRecordView, ...]]:
        parsed = parse_event_filters(filters)
        loaded = yield from self._load(session_id, with_text=True)
        folded = loaded.fold_strict()
        sid = loaded.header.session_id
        return tuple(apply_event_filters((event_view(sid, e, folded) for e in loaded.entries), parsed))

    def read_surface_flow(self, session_id: str) -> ReadFlow[SurfaceRead]:
        loaded = yield from self._load(session_id, with_text=False)
        folded = loaded.fold_strict()
        nodes = set(folded.nodes)
        wanted = [i for i, entry in enumerate(loaded.entries) if entry.seq in nodes]
        entries = yield from self._with_text(loaded.header.session_id, loaded.entries, wanted)
        return build_surface_read(loaded.header, entries, folded)

    def read_event_flow(
        self, session_id: str, seq: int, before: int, after: int
    ) -> ReadFlow[ReadEventResult]:
        before, after = check_window(before, after, self.read_window_max)
        loaded = yield from self._load(session_id, with_text=False)
        index = locate_index(loaded.entries, seq)
        if index is None:
            raise SessionQueryError(
                "SESSION_QUERY_EVENT_NOT_FOUND",
                f"no event {seq!r} in session {loaded.header.session_id!r}",
            )
        lo, hi = window_bounds(len(loaded.entries), index, before, after)
        entries = yield from self._with_text(loaded.header.session_id, loaded.entries, range(lo, hi + 1))
        return build_read_event(loaded.header, entries, loaded.fold(), index, (lo, hi))

    def trace_session_flow(self, session_id: str) -> ReadFlow[SessionTrace]:
        sid = check_session_id(session_id)
        listing = yield from self._listing()
        return trace_session(sid, listing)

    def trace_event_flow(self, session_id: str, seq: int) -> ReadFlow[EventTraceResult]:
        loaded = yield from self._load(session_id, with_text=False)
        sid = loaded.header.session_id
        index = locate_index(loaded.entries, seq)
        if index is None:
            raise SessionQueryError("SESSION_QUERY_EVENT_NOT_FOUND", f"no event {seq!r} in session {sid!r}")
        folded = loaded.fold_strict()
        entries = yield from self._with_text(sid, loaded.entries, [index])
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

    def _load(self, session_id: str, *, with_text: bool) -> ReadFlow[Loaded]:
        """One session's header and log (spec 3.5 ``load``), live entries winning per seq."""
        sid = check_session_id(session_id)
        live = self._live_session(sid)
        if live is not None and scope_admits(self.scope, live[0]):
            header, entries = live
            if (entries and entries[0].seq == 0) or not self.persistence:
                return Loaded(header, entries)  # the complete log: the projection is not consulted
            stored = yield from self._persisted(sid, with_text=with_text)
            if stored is None:
                return Loaded(header, entries)
            check_compatible(header, stored[0].header)
            return Loaded(preferred_header(header, stored[0].header), merge_logs(stored[1].entries, entries))
        if not self.persistence:
            raise not_found(sid)
        stored = yield from self._persisted(sid, with_text=with_text)
        if stored is None:
            raise not_found(sid)
        record, persisted = stored
        live = self._live_session(sid)  # it may have gone live meanwhile, or be live outside the scope
        if live is not None:
            check_compatible(live[0], record.header)
            return Loaded(preferred_header(live[0], record.header), merge_logs(persisted.entries, live[1]))
        return persisted

    def _listing(self) -> ReadFlow[list[SessionRecord]]:
        """The corpus listing: persisted sessions in scope overlaid by live ones (spec 3.5)."""
        persisted = (yield from self._persisted_listing()) if self.persistence else []
        live = [header_from_live(item) for item in self._live.sessions()] if self._live is not None else []
        return merge_listing(persisted, live, self.scope)
