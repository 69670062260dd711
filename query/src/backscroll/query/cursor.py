"""Opaque, signed pagination cursors bound to one request shape and one corpus generation. Pure."""

from __future__ import annotations

import base64
import hashlib
import hmac
from typing import Any

import orjson

from backscroll.query.errors import SessionQueryError

__all__ = [
    "INVALID_CURSOR_MESSAGE",
    "MAX_PAGED",
    "decode_cursor",
    "derive_key",
    "encode_cursor",
    "open_cursor",
    "pack_seen",
    "request_fingerprint",
    "unpack_seen",
]

#: Entries a chain of pages may return in all; past it there is no next cursor (narrow the query).
MAX_PAGED = 1000
#: Why a cursor is refused, with the setting that lets processes share cursors.
INVALID_CURSOR_MESSAGE = (
    "cursor is not valid for this request: it was issued for another query or scope, or signed with "
    "another key (set the same BACKSCROLL_CURSOR_KEY in every process that must accept another's cursors)"
)


def _invalid() -> SessionQueryError:
    return SessionQueryError("SESSION_QUERY_INVALID_CURSOR", INVALID_CURSOR_MESSAGE)


def pack_seen(entry_ids: list[str]) -> list[Any]:
    """``["s1:3", "s1:4", "s2:0"]`` → ``["s1", 3, 4, "s2", 0]`` (compact for the cursor)."""
    out: list[Any] = []
    current = None
    for entry_id in entry_ids:
        session_id, _, seq = entry_id.rpartition(":")
        if session_id != current:
            out.append(session_id)
            current = session_id
        out.append(int(seq))
    return out


def unpack_seen(packed: list[Any]) -> list[str]:
    """The inverse of :func:`pack_seen`; INVALID_CURSOR on anything else (a session id without
    seqs, a negative or non-integer seq, more than :data:`MAX_PAGED` entries)."""
    out: list[str] = []
    session_id: str | None = None
    pending = False  # a session id not followed by a seq yet
    for item in packed:
        if isinstance(item, str) and item and not pending:
            session_id, pending = item, True
        elif type(item) is int and item >= 0 and session_id is not None:
            out.append(f"{session_id}:{item}")
            pending = False
        else:
            raise _invalid()
    if pending or len(out) > MAX_PAGED:
        raise _invalid()
    return out


def derive_key(secret: str) -> bytes:
    """The 32-byte signing key for a configured secret (``BACKSCROLL_CURSOR_KEY``), so that every
    process configured with it accepts the others' cursors; INVALID_CONFIG under 16 characters."""
    if len(secret) < 16:
        raise SessionQueryError(
            "SESSION_QUERY_INVALID_CONFIG",
            "the cursor key (BACKSCROLL_CURSOR_KEY) needs at least 16 characters",
        )
    return hashlib.sha256(b"backscroll-cursor-v1:" + secret.encode("utf-8")).digest()


def request_fingerprint(*parts: object) -> str:
    return hashlib.blake2b(orjson.dumps([str(p) for p in parts]), digest_size=12).hexdigest()


def encode_cursor(key: bytes, fingerprint: str, generation: int, after: list[Any], partial: bool) -> str:
    payload = orjson.dumps({"f": fingerprint, "g": generation, "a": after, "p": partial})
    mac = hmac.new(key, payload, hashlib.sha256).digest()[:16]
    return base64.urlsafe_b64encode(mac + payload).decode("ascii").rstrip("=")


def decode_cursor(key: bytes, cursor: str, fingerprint: str, generation: int) -> tuple[list[Any], bool]:
    """Return ``(search_after, partial)``; INVALID_CURSOR if tampered or for another request,
    STALE_CURSOR if the scope's corpus changed since the cursor was issued."""
    after, partial, issued = open_cursor(key, cursor, fingerprint)
    if issued != generation:
        raise SessionQueryError("SESSION_QUERY_STALE_CURSOR", "the searched corpus changed; search again")
    return after, partial


def open_cursor(key: bytes, cursor: str, fingerprint: str) -> tuple[list[Any], bool, int]:
    """Return ``(search_after, partial, generation)``; INVALID_CURSOR if tampered or for another
    request. The caller compares the generation with the corpus's current one (STALE_CURSOR)."""
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        mac, payload = raw[:16], raw[16:]
        valid = hmac.compare_digest(mac, hmac.new(key, payload, hashlib.sha256).digest()[:16])
        data = orjson.loads(payload) if valid else None
    except (ValueError, orjson.JSONDecodeError):
        data = None
    if not isinstance(data, dict) or data.get("f") != fingerprint or not isinstance(data.get("a"), list):
        raise _invalid()
    generation = data.get("g")
    if not isinstance(generation, int):
        raise _invalid()
    return list(data["a"]), bool(data.get("p")), generation
