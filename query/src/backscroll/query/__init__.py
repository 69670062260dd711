"""Query: scoped fuzzy search and exact reads over the projection, and the model-facing tool.

The core (contract, provider core, reads, tools, scope, errors) loads with the package; the names of
the backend folders (``opensearch/``, ``sqlite/``) load on first use, so importing this package (or
using the embedded provider and reader) loads neither the Kafka nor the OpenSearch client.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from backscroll.query.aio import AsyncSearchProvider
from backscroll.query.contract import (
    DEFAULT_EXCERPT_BYTES,
    DEFAULT_LIMIT,
    MAX_LIMIT,
    SessionMatch,
    SessionQuery,
    SessionQueryRequest,
    SessionQueryResult,
)
from backscroll.query.deadline import AbortSignal
from backscroll.query.engine import EngineHit, EnginePage, EngineQuery, SearchEngine
from backscroll.query.errors import ERROR_CODES, ErrorCode, SessionQueryError
from backscroll.query.provider import SearchProvider
from backscroll.query.reads import (
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
from backscroll.query.reads.async_reader import AsyncSessionReader
from backscroll.query.render import render_result
from backscroll.query.scope import Scope
from backscroll.query.tools.errors import ToolError
from backscroll.query.tools.search import TOOL_NAME, SessionQueryTool, session_query_tool

if TYPE_CHECKING:
    from backscroll.query.opensearch.async_provider import AsyncOpenSearchProvider
    from backscroll.query.opensearch.async_reader import AsyncOpenSearchReader
    from backscroll.query.opensearch.provider import OpenSearchProvider
    from backscroll.query.opensearch.reader import OpenSearchSessionReader
    from backscroll.query.sqlite.async_provider import AsyncSQLiteProvider
    from backscroll.query.sqlite.provider import SQLiteProvider
    from backscroll.query.sqlite.reader import SQLiteSessionReader

_WHERE = {
    "AsyncOpenSearchProvider": "opensearch.async_provider",
    "AsyncOpenSearchReader": "opensearch.async_reader",
    "AsyncSQLiteProvider": "sqlite.async_provider",
    "OpenSearchProvider": "opensearch.provider",
    "OpenSearchSessionReader": "opensearch.reader",
    "SQLiteProvider": "sqlite.provider",
    "SQLiteSessionReader": "sqlite.reader",
}

__all__ = [
    "DEFAULT_EXCERPT_BYTES",
    "DEFAULT_LIMIT",
    "ERROR_CODES",
    "MAX_LIMIT",
    "TOOL_NAME",
    "AbortSignal",
    "AsyncOpenSearchProvider",
    "AsyncOpenSearchReader",
    "AsyncSQLiteProvider",
    "AsyncSearchProvider",
    "AsyncSessionReader",
    "EngineHit",
    "EnginePage",
    "EngineQuery",
    "ErrorCode",
    "EventRecordView",
    "EventTraceResult",
    "LineageNode",
    "LiveSource",
    "OpenSearchProvider",
    "OpenSearchSessionReader",
    "ReadEventResult",
    "SQLiteProvider",
    "SQLiteSessionReader",
    "Scope",
    "SearchEngine",
    "SearchProvider",
    "SessionHeader",
    "SessionMatch",
    "SessionQuery",
    "SessionQueryError",
    "SessionQueryRequest",
    "SessionQueryResult",
    "SessionQueryTool",
    "SessionRecord",
    "SessionStats",
    "SessionTrace",
    "SurfaceRead",
    "ToolError",
    "render_result",
    "session_query_tool",
]


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'backscroll.query' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"backscroll.query.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
