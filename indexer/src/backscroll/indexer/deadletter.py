"""Dead-letter envelopes: a record the indexer could not project, with exactly why. Pure."""

from __future__ import annotations

import base64
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import orjson

__all__ = ["INDEXER_VERSION", "DeadLetter", "decode_envelope", "encode_envelope"]

INDEXER_VERSION = "backscroll-indexer/0.1.0"
#: Values above this are stored truncated (with their full size): the original stays at its
#: topic/partition/offset, and an envelope must fit the broker's message size limit.
MAX_ENVELOPE_VALUE = 2 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class DeadLetter:
    """One parked record: its original bytes and coordinates, and the reason it was parked."""

    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    error_class: str
    reason: str
    field: str | None = None
    http_status: int | None = None
    attempts: int = 1
    existing: dict[str, Any] | None = None

    def to_json(self, now: datetime | None = None) -> dict[str, Any]:
        def b64(data: bytes | None) -> str | None:
            return None if data is None else base64.b64encode(data).decode("ascii")

        return {
            "envelope": 1,
            "topic": self.topic,
            "partition": self.partition,
            "offset": self.offset,
            "key_b64": b64(self.key),
            "value_b64": b64(self.value[:MAX_ENVELOPE_VALUE] if self.value else self.value),
            "value_bytes": None if self.value is None else len(self.value),
            "value_truncated": self.value is not None and len(self.value) > MAX_ENVELOPE_VALUE,
            "error_class": self.error_class,
            "reason": self.reason,
            "field": self.field,
            "http_status": self.http_status,
            "attempts": self.attempts,
            "existing": self.existing,
            "indexer_version": INDEXER_VERSION,
            "time": (now or datetime.now(UTC)).isoformat(),
        }


def encode_envelope(letter: DeadLetter, now: datetime | None = None) -> bytes:
    return orjson.dumps(letter.to_json(now))


def decode_envelope(data: bytes) -> dict[str, Any]:
    """Decode an envelope; ``key``/``value`` come back as bytes."""
    envelope: dict[str, Any] = orjson.loads(data)
    for name in ("key", "value"):
        raw = envelope.get(f"{name}_b64")
        envelope[name] = None if raw is None else base64.b64decode(raw)
    return envelope
