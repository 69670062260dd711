"""Opaque signed cursors: bound to one request shape and one generation."""

from __future__ import annotations

import base64
from typing import Any

import orjson
import pytest

from backscroll.query.cursor import decode_cursor, encode_cursor, request_fingerprint
from backscroll.query.errors import SessionQueryError

KEY = b"k" * 32
FP = request_fingerprint("sessions:s1", None, ("needle",), ("user/message",), 10, 600)
AFTER: list[Any] = [3.5, 17, "s1"]


def code_of(cursor: str, *, key: bytes = KEY, fingerprint: str = FP, generation: int = 7) -> str:
    with pytest.raises(SessionQueryError) as caught:
        decode_cursor(key, cursor, fingerprint, generation)
    return caught.value.code


@pytest.mark.parametrize("partial", [False, True])
def test_round_trip(partial: bool) -> None:
    cursor = encode_cursor(KEY, FP, 7, AFTER, partial)
    assert decode_cursor(KEY, cursor, FP, 7) == (AFTER, partial)


def test_cursor_is_url_safe_and_opaque() -> None:
    cursor = encode_cursor(KEY, FP, 7, AFTER, False)
    assert set(cursor) <= set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")


def test_tampered_cursor_is_invalid() -> None:
    cursor = encode_cursor(KEY, FP, 7, AFTER, False)
    raw = bytearray(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    for index in (0, 20, len(raw) - 1):  # the MAC, and two places in the payload
        forged = bytearray(raw)
        forged[index] ^= 1
        text = base64.urlsafe_b64encode(bytes(forged)).decode().rstrip("=")
        assert code_of(text) == "SESSION_QUERY_INVALID_CURSOR"


def test_a_rewritten_payload_without_the_key_is_invalid() -> None:
    payload = orjson.dumps({"f": FP, "g": 7, "a": [999], "p": False})
    forged = base64.urlsafe_b64encode(b"\x00" * 16 + payload).decode().rstrip("=")
    assert code_of(forged) == "SESSION_QUERY_INVALID_CURSOR"


def test_another_key_is_invalid() -> None:
    cursor = encode_cursor(KEY, FP, 7, AFTER, False)
    assert code_of(cursor, key=b"x" * 32) == "SESSION_QUERY_INVALID_CURSOR"


def test_another_request_fingerprint_is_invalid() -> None:
    cursor = encode_cursor(KEY, FP, 7, AFTER, False)
    other = request_fingerprint("sessions:s1", None, ("different",), ("user/message",), 10, 600)
    assert other != FP
    assert code_of(cursor, fingerprint=other) == "SESSION_QUERY_INVALID_CURSOR"


def test_another_generation_is_stale() -> None:
    cursor = encode_cursor(KEY, FP, 7, AFTER, False)
    assert code_of(cursor, generation=8) == "SESSION_QUERY_STALE_CURSOR"
    assert code_of(cursor, generation=6) == "SESSION_QUERY_STALE_CURSOR"


def test_a_stale_cursor_for_another_request_is_invalid_not_stale() -> None:
    cursor = encode_cursor(KEY, FP, 7, AFTER, False)
    assert code_of(cursor, fingerprint="other", generation=8) == "SESSION_QUERY_INVALID_CURSOR"


@pytest.mark.parametrize("garbage", ["not-json", "", "=", "!!!", "é", "a" * 5, "AAAA", "x" * 10_000])
def test_garbage_is_invalid(garbage: str) -> None:
    assert code_of(garbage) == "SESSION_QUERY_INVALID_CURSOR"


def test_fingerprint_is_deterministic_and_shape_sensitive() -> None:
    assert request_fingerprint("a", 1, ("x",)) == request_fingerprint("a", 1, ("x",))
    assert request_fingerprint("a", 1) != request_fingerprint("a", 2)
    assert request_fingerprint("a", ("x",)) != request_fingerprint("a", ("y",))
