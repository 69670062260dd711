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
from sessionlog.query.render import render_result
from sessionlog.query.scope import Scope

__all__ = [
    "DEFAULT_EXCERPT_BYTES",
    "DEFAULT_LIMIT",
    "ERROR_CODES",
    "MAX_LIMIT",
    "ErrorCode",
    "OpenSearchProvider",
    "Scope",
    "SessionMatch",
    "SessionQuery",
    "SessionQueryError",
    "SessionQueryRequest",
    "SessionQueryResult",
    "render_result",
]
