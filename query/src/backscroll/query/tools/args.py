"""Arguments as a model or client sends them: any JSON (or none). Pure.

Every shape other than a JSON object (or nothing) is a :class:`ToolError`, never a Python error:
lists, numbers, strings, tuples, bytes that are not UTF-8 JSON. Unknown properties are ignored.
Text and mappings alike are refused over :data:`MAX_ARGUMENT_BYTES` (as JSON), before any work.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

import orjson

from backscroll.query.tools.errors import invalid_arguments

__all__ = ["optional_int", "optional_str", "parse_object", "required_int"]

#: A JSON text longer than this is refused before parsing (the arguments of our tools are tiny).
MAX_ARGUMENT_BYTES: Final = 64 * 1024


def _opaque(value: object) -> None:
    """A value JSON cannot hold (a host's own object) counts as ``null`` when measuring."""
    return None


def _json_size(data: dict[str, Any]) -> int:
    """The size of ``data`` as JSON text (stdlib's encoder for what orjson refuses: integers past
    64 bits, keys that are not text, nesting past 254 levels)."""
    try:
        return len(orjson.dumps(data, default=_opaque))
    except orjson.JSONEncodeError:
        pass
    try:
        text = json.dumps(data, default=_opaque, skipkeys=True, ensure_ascii=False, check_circular=True)
    except (RecursionError, ValueError):
        raise invalid_arguments("the arguments nest too deeply") from None
    return len(text.encode("utf-8", "surrogatepass"))


def parse_object(arguments: object) -> dict[str, Any]:
    """The argument object: ``None``, blank text and ``{}`` are an empty object; JSON text (str,
    bytes) must decode to an object; a mapping is copied."""
    if arguments is None:
        return {}
    if isinstance(arguments, Mapping):
        data = {key: value for key, value in arguments.items() if isinstance(key, str)}
        # The same cap as JSON text (a mapping arrives from MCP or an SDK already decoded), measured
        # before any work, so a 20 MB query is refused at once instead of searched.
        if _json_size(data) > MAX_ARGUMENT_BYTES:
            raise invalid_arguments(f"the arguments exceed {MAX_ARGUMENT_BYTES} bytes")
        return data
    if isinstance(arguments, bytes | bytearray | memoryview):
        raw = bytes(arguments)
    elif isinstance(arguments, str):
        raw = arguments.encode("utf-8", "surrogatepass")
    else:
        raise invalid_arguments("expected a JSON object")
    if len(raw) > MAX_ARGUMENT_BYTES:
        raise invalid_arguments(f"the arguments exceed {MAX_ARGUMENT_BYTES} bytes")
    if not raw.strip():
        return {}
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError:
        raise invalid_arguments("not valid JSON") from None
    if not isinstance(data, dict):
        raise invalid_arguments("expected a JSON object")
    return data


def optional_str(data: Mapping[str, Any], key: str) -> str | None:
    """A string property; absent or null is ``None``."""
    value = data.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise invalid_arguments(f"{key} must be a string")
    if "\x00" in value:
        raise invalid_arguments(f"{key} must not contain NUL characters")
    return value


def optional_int(data: Mapping[str, Any], key: str) -> int | None:
    """A whole-number property (``true``, ``2.0``, ``"2"`` are not); absent or null is ``None``."""
    value = data.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise invalid_arguments(f"{key} must be an integer")
    return value


def required_int(data: Mapping[str, Any], key: str) -> int:
    value = optional_int(data, key)
    if value is None:
        raise invalid_arguments(f"{key} is required")
    return value
