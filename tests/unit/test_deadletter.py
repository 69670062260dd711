"""Dead-letter envelopes: the original bytes survive the round trip, with why they were parked."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import orjson
import pytest

from backscroll.indexer.deadletter import (
    INDEXER_VERSION,
    MAX_ENVELOPE_VALUE,
    DeadLetter,
    decode_envelope,
    encode_envelope,
)

NOW = datetime(2024, 5, 1, 12, 0, 0, tzinfo=UTC)


def letter(key: bytes | None = b"sess-1", value: bytes | None = b'{"v": 1}', **fields: object) -> DeadLetter:
    base: dict[str, object] = {
        "topic": "backscroll.entries",
        "partition": 3,
        "offset": 1234,
        "key": key,
        "value": value,
        "error_class": "invalid_record",
        "reason": "seq: Input should be greater than or equal to 0",
    }
    return DeadLetter(**{**base, **fields})  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("key", "value"),
    [
        (b"sess-1", b'{"v":1,"kind":"event"}'),
        (b"\xff\xfe\x00", b"\x00\xff not json \x80"),  # arbitrary bytes, not UTF-8
        (None, None),  # a tombstone without a key
        (b"", b""),
        ("Đơn".encode(), '{"text": "tháng Bảy"}'.encode()),
    ],
)
def test_round_trip_keeps_the_exact_bytes(key: bytes | None, value: bytes | None) -> None:
    envelope = decode_envelope(encode_envelope(letter(key, value), now=NOW))
    assert envelope["key"] == key and envelope["value"] == value
    assert envelope["value_bytes"] == (None if value is None else len(value))
    assert envelope["value_truncated"] is False


def test_round_trip_keeps_the_coordinates_and_the_reason() -> None:
    existing = {"seq": 4, "text": "other content"}
    parked = letter(
        error_class="conflict",
        reason="same (session, seq) with different content",
        field="seq",
        http_status=409,
        attempts=3,
        existing=existing,
    )
    envelope = decode_envelope(encode_envelope(parked, now=NOW))
    assert envelope["envelope"] == 1
    assert (envelope["topic"], envelope["partition"], envelope["offset"]) == ("backscroll.entries", 3, 1234)
    assert envelope["error_class"] == "conflict" and envelope["reason"].startswith("same (session, seq)")
    assert (envelope["field"], envelope["http_status"], envelope["attempts"]) == ("seq", 409, 3)
    assert envelope["existing"] == existing
    assert envelope["indexer_version"] == INDEXER_VERSION
    assert envelope["time"] == "2024-05-01T12:00:00+00:00"


def test_envelope_is_plain_json_with_base64_bytes() -> None:
    raw = encode_envelope(letter(b"\xff", b"\x00"), now=NOW)
    data = orjson.loads(raw)
    assert data["key_b64"] == "/w==" and data["value_b64"] == "AA=="
    assert "key" not in data and "value" not in data


def test_defaults() -> None:
    envelope = decode_envelope(encode_envelope(letter()))
    assert envelope["field"] is None and envelope["http_status"] is None and envelope["existing"] is None
    assert envelope["attempts"] == 1
    when = datetime.fromisoformat(envelope["time"])
    assert when.utcoffset() == timedelta(0)
    assert abs(datetime.now(UTC) - when) < timedelta(minutes=1)


def test_time_keeps_the_given_offset() -> None:
    when = datetime(2024, 5, 1, 14, 0, tzinfo=timezone(timedelta(hours=2)))
    assert decode_envelope(encode_envelope(letter(), now=when))["time"] == "2024-05-01T14:00:00+02:00"


def test_oversize_values_are_truncated_with_their_full_size() -> None:
    value = bytes(range(256)) * (MAX_ENVELOPE_VALUE // 256) + b"tail"
    envelope = decode_envelope(encode_envelope(letter(value=value), now=NOW))
    assert envelope["value_truncated"] is True
    assert envelope["value_bytes"] == len(value)
    assert envelope["value"] == value[:MAX_ENVELOPE_VALUE]
    exact = decode_envelope(encode_envelope(letter(value=value[:MAX_ENVELOPE_VALUE]), now=NOW))
    assert exact["value_truncated"] is False and exact["value"] == value[:MAX_ENVELOPE_VALUE]


def test_dead_letter_is_immutable() -> None:
    parked = letter()
    with pytest.raises(AttributeError):
        parked.reason = "other"  # type: ignore[misc]
