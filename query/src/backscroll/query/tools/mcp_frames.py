"""One stdio frame (a line) of JSON-RPC checked before the MCP SDK sees it. Pure.

The SDK drops a frame it cannot read without a word, so the client would wait for its own timeout.
Here every malformed frame gets the JSON-RPC error reply it calls for:

* ``-32700`` parse error (``id`` null): not UTF-8, a byte order mark, not JSON (truncated, NUL
  bytes, ``NaN``, nesting too deep);
* ``-32600`` invalid request: longer than :data:`MAX_FRAME_BYTES`, duplicate member names, not an
  object (a number, a string, ``null``, an array: batches are not part of MCP), ``jsonrpc`` not
  ``"2.0"``, ``method`` not text, ``params`` neither object nor array, an ``id`` that is not text
  or an integer, or neither a request, a notification nor a response. The reply carries the
  frame's ``id`` when it has a valid one, else ``null``;
* ``-32602`` invalid params: ``params`` an array (MCP methods take named parameters).

Unknown methods (``-32601``) and parameters of the wrong shape for a method (``-32602``) are
answered by the SDK. A notification (no ``id``) that is well formed is never answered, even for a
method nobody knows, as JSON-RPC says; a blank line is skipped.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from typing import Any, Final

__all__ = [
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "MAX_FRAME_BYTES",
    "PARSE_ERROR",
    "Frame",
    "check_frame",
    "error_reply",
    "oversized",
]

PARSE_ERROR: Final = -32700
INVALID_REQUEST: Final = -32600
INVALID_PARAMS: Final = -32602
#: A frame (one line) longer than this is refused unread; tool arguments are capped far lower.
MAX_FRAME_BYTES: Final = 1024 * 1024
_BOM: Final = "\ufeff"


@dataclass(frozen=True, slots=True)
class Frame:
    """What to do with one line: hand ``message`` to the SDK, or write ``reply``, or neither."""

    message: dict[str, Any] | None = None
    reply: dict[str, Any] | None = None


class _Members(dict[str, Any]):
    """A decoded object that remembers which member names it saw twice."""

    duplicates: frozenset[str] = frozenset()


def error_reply(code: int, message: str, request_id: str | int | None = None) -> dict[str, Any]:
    """A JSON-RPC error response."""
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}


def oversized() -> Frame:
    """The answer to a frame longer than :data:`MAX_FRAME_BYTES` (its bytes are never parsed)."""
    return Frame(
        reply=error_reply(INVALID_REQUEST, f"Invalid request: the frame exceeds {MAX_FRAME_BYTES} bytes")
    )


def _valid_id(value: object) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def _decode(line: bytes) -> tuple[object, bool] | Frame:
    """The JSON value of ``line`` and whether any object in it repeats a member name, or the
    parse-error frame."""
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError:
        return Frame(reply=error_reply(PARSE_ERROR, "Parse error: the frame is not UTF-8"))
    if text.startswith(_BOM):
        return Frame(reply=error_reply(PARSE_ERROR, "Parse error: a byte order mark is not JSON"))
    repeated = False

    def members(pairs: list[tuple[str, Any]]) -> _Members:
        nonlocal repeated
        made = _Members(pairs)
        if len(made) != len(pairs):
            repeated = True
            counts = Counter(key for key, _ in pairs)
            made.duplicates = frozenset(key for key, count in counts.items() if count > 1)
        return made

    def constant(name: str) -> object:
        raise ValueError(f"{name} is not JSON")

    try:
        value = json.loads(text, object_pairs_hook=members, parse_constant=constant)
    except (ValueError, RecursionError):
        return Frame(reply=error_reply(PARSE_ERROR, "Parse error: the frame is not valid JSON"))
    return value, repeated


def check_frame(line: bytes) -> Frame:
    """The frame of one line (without its newline): a message for the SDK, or the error reply."""
    if len(line) > MAX_FRAME_BYTES:
        return oversized()
    if not line.strip():
        return Frame()
    decoded = _decode(line)
    if isinstance(decoded, Frame):
        return decoded
    value, repeated = decoded
    if isinstance(value, list):
        return Frame(reply=error_reply(INVALID_REQUEST, "Invalid request: batches are not supported"))
    if not isinstance(value, dict):
        return Frame(reply=error_reply(INVALID_REQUEST, "Invalid request: a frame must be a JSON object"))
    has_id = "id" in value
    known_id = value.get("id") if has_id and _valid_id(value.get("id")) else None
    if isinstance(value, _Members) and "id" in value.duplicates:
        known_id = None

    def invalid(why: str) -> Frame:
        return Frame(reply=error_reply(INVALID_REQUEST, f"Invalid request: {why}", known_id))

    if repeated:
        return invalid("a member name appears twice")
    if value.get("jsonrpc") != "2.0":
        return invalid('jsonrpc must be "2.0"')
    if has_id and known_id is None:
        return invalid("id must be a string or an integer")
    if "method" in value:
        if not isinstance(value["method"], str):
            return invalid("method must be a string")
        params = value.get("params", {})
        if not isinstance(params, dict | list):
            return invalid("params must be an object")
        if isinstance(params, list):
            if not has_id:
                return Frame()  # a notification is never answered
            return Frame(
                reply=error_reply(INVALID_PARAMS, "Invalid params: params must be an object", known_id)
            )
        return Frame(message=dict(value))
    if has_id and (("result" in value) != ("error" in value)):
        return Frame(message=dict(value))  # a response to a request of ours
    return invalid("neither a request, a notification nor a response")
