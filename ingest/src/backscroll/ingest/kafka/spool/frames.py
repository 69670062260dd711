"""The spool's on-disk format: segment magic, frames and their checksums (pure; no I/O).

A segment starts with the 8 magic bytes ``SLSPOOL1`` followed by frames::

    u32 length | u32 zlib.crc32(payload) | payload
    payload = i64 seq (-1 for a header record) | u16 key length | key (session id, UTF-8) | value
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from backscroll.ingest.wire import MAX_RECORD_BYTES

__all__ = [
    "FRAME",
    "HEAD",
    "MAGIC",
    "MAX_PAYLOAD",
    "Recovery",
    "SpoolRecord",
    "decode_payload",
    "encode_frame",
    "encode_frames",
    "scan_segment",
]

MAGIC: Final = b"SLSPOOL1"
FRAME: Final = struct.Struct(">II")
HEAD: Final = struct.Struct(">qH")
#: Longest payload a valid frame can carry: the record cap plus the key and the head.
MAX_PAYLOAD: Final = MAX_RECORD_BYTES + 64 * 1024


@dataclass(frozen=True, slots=True)
class SpoolRecord:
    """One spooled record: its id in the spool, the Kafka key and value, and the session seq."""

    rid: int
    key: bytes
    seq: int | None
    value: bytes
    ticket: int = -1

    @property
    def session_id(self) -> str:
        return self.key.decode("utf-8")


@dataclass(frozen=True, slots=True)
class Recovery:
    """What opening the spool found on disk."""

    segments: int
    records: int
    truncated_bytes: int
    truncated_segments: tuple[str, ...]
    quarantined: tuple[str, ...]


def encode_frame(key: bytes, seq: int | None, value: bytes) -> bytes:
    """One frame (length, CRC32, payload) exactly as it is written to a segment."""
    payload = HEAD.pack(-1 if seq is None else seq, len(key)) + key + value
    return FRAME.pack(len(payload), zlib.crc32(payload)) + payload


def encode_frames(entries: Sequence[tuple[bytes, int | None, bytes]]) -> list[bytes]:
    """:func:`encode_frame` of each (key, seq, value), with the lookups hoisted out of the loop."""
    head, frame, crc32 = HEAD.pack, FRAME.pack, zlib.crc32
    out: list[bytes] = []
    for key, seq, value in entries:
        payload = b"".join((head(-1 if seq is None else seq, len(key)), key, value))
        out.append(frame(len(payload), crc32(payload)) + payload)
    return out


def decode_payload(payload: bytes) -> tuple[bytes, int | None, bytes] | None:
    """(key, seq, value) of a frame's payload, or None when it is malformed."""
    if len(payload) < HEAD.size:
        return None
    seq, key_len = HEAD.unpack_from(payload)
    if HEAD.size + key_len > len(payload):
        return None
    key = payload[HEAD.size : HEAD.size + key_len]
    return key, (None if seq < 0 else seq), payload[HEAD.size + key_len :]


def scan_segment(data: bytes) -> tuple[list[int], list[tuple[bytes, int | None]], int]:
    """Offsets and (key, seq) of the valid frames of a segment, and where the valid part ends
    (the first frame that is cut short, impossible or fails its CRC ends it)."""
    offsets: list[int] = []
    keys: list[tuple[bytes, int | None]] = []
    pos = len(MAGIC)
    end = len(data)
    while end - pos >= FRAME.size:
        length, crc = FRAME.unpack_from(data, pos)
        start = pos + FRAME.size
        # a frame shorter than its head is never valid: the zeros after the last frame of a
        # preallocated segment (length 0, CRC 0, and crc32(b"") == 0) end the scan here
        if length < HEAD.size or length > MAX_PAYLOAD or start + length > end:
            break
        payload = data[start : start + length]
        if zlib.crc32(payload) != crc:
            break
        decoded = decode_payload(payload)
        if decoded is None:
            break
        offsets.append(pos)
        keys.append((decoded[0], decoded[1]))
        pos = start + length
    return offsets, keys, pos
