"""The closed error taxonomy of the query side: the reference implementation's codes plus
INVALID_SCOPE and PROVIDER_CLOSED."""

from __future__ import annotations

from typing import Final, Literal, get_args

__all__ = ["ERROR_CODES", "ErrorCode", "SessionQueryError"]

ErrorCode = Literal[
    "SESSION_QUERY_ABORTED",
    "SESSION_QUERY_CORRUPT_SESSION",
    "SESSION_QUERY_EVENT_NOT_FOUND",
    "SESSION_QUERY_INDEX_FAILED",
    "SESSION_QUERY_INVALID_CONFIG",
    "SESSION_QUERY_INVALID_CURSOR",
    "SESSION_QUERY_INVALID_FILTER",
    "SESSION_QUERY_INVALID_LIMIT",
    "SESSION_QUERY_INVALID_QUERY",
    "SESSION_QUERY_INVALID_LINEAGE",
    "SESSION_QUERY_INVALID_SURFACE",
    "SESSION_QUERY_INVALID_WINDOW",
    "SESSION_QUERY_PERSISTENCE_FAILED",
    "SESSION_QUERY_SEARCH_DISABLED",
    "SESSION_QUERY_SESSION_NOT_FOUND",
    "SESSION_QUERY_STALE_CURSOR",
    "SESSION_QUERY_SOURCE_CONFLICT",
    "SESSION_QUERY_INVALID_SCOPE",
    "SESSION_QUERY_PROVIDER_CLOSED",
]
ERROR_CODES: Final[frozenset[str]] = frozenset(get_args(ErrorCode))

_RETRIABLE: Final = frozenset({"SESSION_QUERY_INDEX_FAILED", "SESSION_QUERY_PERSISTENCE_FAILED"})


class SessionQueryError(Exception):
    """Every failure of a query or read, with a ``code`` from the closed union :data:`ErrorCode`."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        if code not in ERROR_CODES:  # pragma: no cover - guarded by the type checker
            raise ValueError(f"unknown error code {code}")
        super().__init__(f"{code}: {message}")
        self.code: ErrorCode = code
        self.message = message

    @property
    def retriable(self) -> bool:
        return self.code in _RETRIABLE

    def to_json(self) -> dict[str, str]:
        return {"code": self.code, "message": self.message}
