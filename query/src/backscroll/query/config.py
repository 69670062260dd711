"""Construction-time checks shared by every provider and reader: each bad setting is
``SESSION_QUERY_INVALID_CONFIG`` (never ``TypeError``/``ValueError``). Pure."""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

from backscroll.query.errors import SessionQueryError
from backscroll.query.scope import Scope

__all__ = [
    "MAX_CONFIG_LIMIT",
    "check_bool",
    "check_callable",
    "check_cursor_key",
    "check_int",
    "check_limits",
    "check_path",
    "check_scope",
    "check_timeout",
    "config_error",
]

#: The highest ``max_limit`` a provider accepts.
MAX_CONFIG_LIMIT: Final = 10_000


def config_error(message: str) -> SessionQueryError:
    return SessionQueryError("SESSION_QUERY_INVALID_CONFIG", message)


def check_scope(scope: object, what: str) -> Scope:
    if not isinstance(scope, Scope):
        raise SessionQueryError("SESSION_QUERY_INVALID_SCOPE", f"a {what} needs a Scope")
    return scope


def check_int(value: object, name: str, low: int, high: int | None = None) -> int:
    """An ``int`` (never a bool) in ``[low, high]``."""
    if (
        isinstance(value, bool)
        or not isinstance(value, int)
        or value < low
        or (high is not None and value > high)
    ):
        bounds = f"[{low}, {high}]" if high is not None else f">= {low}"
        raise config_error(f"{name} must be an integer {bounds}, got {value!r}")
    return value


def check_limits(default_limit: object, max_limit: object) -> tuple[int, int]:
    maximum = check_int(max_limit, "max_limit", 1, MAX_CONFIG_LIMIT)
    default = check_int(default_limit, "default_limit", 1, MAX_CONFIG_LIMIT)
    if default > maximum:
        raise config_error(f"need 1 <= default_limit <= max_limit <= {MAX_CONFIG_LIMIT}")
    return default, maximum


def check_timeout(value: object, name: str = "request_timeout_s") -> float:
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or value <= 0
    ):
        raise config_error(f"{name} must be a positive number, got {value!r}")
    return float(value)


def check_bool(value: object, name: str) -> bool:
    if not isinstance(value, bool):
        raise config_error(f"{name} must be true or false")
    return value


def check_cursor_key(value: object) -> bytes | None:
    if value is None:
        return None
    if not isinstance(value, bytes) or len(value) < 16:
        raise config_error("cursor_key must be at least 16 bytes")
    return value


def check_path(value: object) -> Path:
    if not isinstance(value, str | os.PathLike) or not str(value).strip():
        raise config_error("path must name the SQLite file")
    return Path(value).expanduser()


def check_callable(value: object, name: str) -> Callable[..., Any] | None:
    if value is not None and not callable(value):
        raise config_error(f"{name} must be callable")
    return value
