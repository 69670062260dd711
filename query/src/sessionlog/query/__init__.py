"""Query: scoped fuzzy search and exact reads over the projection, and the model-facing tool."""

from sessionlog.query.contract import (
    DEFAULT_EXCERPT_BYTES,
    DEFAULT_LIMIT,
    MAX_LIMIT,
    SessionMatch,
    SessionQuery,
    SessionQueryRequest,
    SessionQueryResult,
)
from sessionlog.query.errors import ERROR_CODES, ErrorCode, SessionQueryError
from sessionlog.query.opensearch_provider import OpenSearchProvider
from sessionlog.query.reads import (
    EventRecordView,
    EventTraceResult,
    LineageNode,
    LiveSource,
    ReadEventResult,
    SessionHeader,
    SessionRecord,
    SessionStats,
    SessionTrace,
    SurfaceRead,
)
from sessionlog.query.render import render_result
from sessionlog.query.scope import Scope
from sessionlog.query.session_reader import SessionReader
from sessionlog.query.sqlite_reader import SQLiteSessionReader
from sessionlog.query.tool import TOOL_NAME, SessionQueryTool, ToolError, session_query_tool

__all__ = [
    "DEFAULT_EXCERPT_BYTES",
    "DEFAULT_LIMIT",
    "ERROR_CODES",
    "MAX_LIMIT",
    "TOOL_NAME",
    "ErrorCode",
    "EventRecordView",
    "EventTraceResult",
    "LineageNode",
    "LiveSource",
    "OpenSearchProvider",
    "ReadEventResult",
    "SQLiteSessionReader",
    "Scope",
    "SessionHeader",
    "SessionMatch",
    "SessionQuery",
    "SessionQueryError",
    "SessionQueryRequest",
    "SessionQueryResult",
    "SessionQueryTool",
    "SessionReader",
    "SessionRecord",
    "SessionStats",
    "SessionTrace",
    "SurfaceRead",
    "ToolError",
    "render_result",
    "session_query_tool",
]
