"""Session reads: the result models and the pure logic behind the session readers.

No I/O and no clock. The readers (:mod:`backscroll.query.reads.reader` and its backends) load headers
and logs and call into these modules for everything else:

* :mod:`~backscroll.query.reads.models` — the frozen result models and :class:`LiveSource`;
* :mod:`~backscroll.query.reads.log` — log entries from live records and projection documents, the
  live + persisted merge of logs and listings and its conflict rule;
* :mod:`~backscroll.query.reads.views` — window and id validation, surface classification through
  the fold, event and session traces;
* :mod:`~backscroll.query.reads.filters` — session and event filters.

This module re-exports all of them, the import path the rest of the project and users know.

The readers themselves: :mod:`~backscroll.query.reads.engine` (the read-engine port a backend
implements and the steps the reads ask it through), :mod:`~backscroll.query.reads.reader` (the
reads, written once as flows of those steps) and :mod:`~backscroll.query.reads.async_reader`
(the same flows, awaited).
"""

from __future__ import annotations

from backscroll.query.reads.filters import (
    EVENT_FILTER_KINDS,
    SESSION_FILTER_KINDS,
    EventFilter,
    SessionFilter,
    apply_event_filters,
    apply_session_filters,
    parse_event_filters,
    parse_session_filters,
)
from backscroll.query.reads.log import (
    LogEntry,
    SurfaceMarker,
    check_compatible,
    entry_from_record,
    entry_from_source,
    header_from_live,
    header_from_source,
    merge_listing,
    merge_logs,
    preferred_header,
    record_from_source,
    scope_admits,
    sort_sessions,
)
from backscroll.query.reads.models import (
    DEFAULT_READ_WINDOW_MAX,
    Availability,
    EventRecordView,
    EventTraceResult,
    LineageNode,
    LiveSource,
    ReadEventResult,
    SessionHeader,
    SessionRecord,
    SessionStats,
    SessionTrace,
    SurfaceClass,
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
    fold_log_strict,
    locate_index,
    trace_session,
    window_bounds,
)

__all__ = [
    "DEFAULT_READ_WINDOW_MAX",
    "EVENT_FILTER_KINDS",
    "SESSION_FILTER_KINDS",
    "Availability",
    "EventFilter",
    "EventRecordView",
    "EventTraceResult",
    "LineageNode",
    "LiveSource",
    "LogEntry",
    "ReadEventResult",
    "SessionFilter",
    "SessionHeader",
    "SessionRecord",
    "SessionStats",
    "SessionTrace",
    "SurfaceClass",
    "SurfaceMarker",
    "SurfaceRead",
    "apply_event_filters",
    "apply_session_filters",
    "build_read_event",
    "build_surface_read",
    "build_trace_event",
    "check_compatible",
    "check_fold",
    "check_read_window_max",
    "check_session_id",
    "check_window",
    "entry_from_record",
    "entry_from_source",
    "event_view",
    "fold_log",
    "fold_log_strict",
    "header_from_live",
    "header_from_source",
    "locate_index",
    "merge_listing",
    "merge_logs",
    "parse_event_filters",
    "parse_session_filters",
    "preferred_header",
    "record_from_source",
    "scope_admits",
    "sort_sessions",
    "trace_session",
    "window_bounds",
]
