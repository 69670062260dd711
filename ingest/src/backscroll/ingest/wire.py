"""Wire format v1: the Kafka record every agent writes, in any language.

The key is the session id (UTF-8) so that a session's records stay in order on one partition.
The value is one JSON object; ``kind`` tells a session header from an event. This module is pure:
it validates and encodes, it never touches the network.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any, Final, Literal

import orjson
from pydantic import (
    AfterValidator,
    AwareDatetime,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StringConstraints,
    TypeAdapter,
    ValidationError,
    model_validator,
)
from pydantic_core import PydanticCustomError

from backscroll.ingest.errors import RecordRejected

__all__ = [
    "KNOWN_EVENT_TYPES",
    "MAX_ATTRS",
    "MAX_INPUT_BYTES",
    "MAX_OFFSET",
    "MAX_RECORD_BYTES",
    "MAX_TEXT_BYTES",
    "OFFSET_RANGE_MESSAGE",
    "SURFACE_TYPES",
    "TIME_RANGE_MESSAGE",
    "WIRE_VERSION",
    "AppendOp",
    "EventRecord",
    "HeaderRecord",
    "Record",
    "ReplaceOp",
    "decode_record",
    "encode_key",
    "encode_record",
    "entry_id",
    "parse_record",
]

WIRE_VERSION: Final = 1
MAX_TEXT_BYTES: Final = 1024 * 1024
#: The record cap, on the canonical encoding (:func:`encode_record`: what the log stores, non-ASCII
#: characters as UTF-8), however the input spelled it. Keep below the broker's
#: ``message.max.bytes`` (the local stack sets 4 MiB).
MAX_RECORD_BYTES: Final = 3 * 1024 * 1024
#: Longest raw JSON accepted for decoding, a memory bound only: any spelling of a record under
#: :data:`MAX_RECORD_BYTES` fits, since an escape (``\u00e9``, or ``\ud83d\ude00`` for the 4 bytes of
#: an emoji) is at most 6 times the UTF-8 bytes it stands for; the slack covers explicit nulls.
MAX_INPUT_BYTES: Final = 6 * MAX_RECORD_BYTES + 64 * 1024
MAX_ATTRS: Final = 32

SURFACE_TYPES: Final = frozenset({"user/message", "assistant/message", "tool/result"})
KNOWN_EVENT_TYPES: Final = frozenset(
    {
        "user/message",
        "assistant/message",
        "tool/call",
        "tool/result",
        "turn/start",
        "turn/end",
        "step/start",
        "step/end",
        "compaction/summary",
        "goal/set",
        "tool/disable",
        "model/change",
    }
)

Id = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9._:-]{1,128}$")]
EventType = Annotated[str, StringConstraints(pattern=r"^[a-z0-9_.-]{1,48}(/[a-z0-9_.-]{1,48}){0,3}$")]
AttrKey = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_.:-]{1,64}$")]
_INT_MIN: Final = -(2**63)
_INT_END: Final = 2**64


def _no_nul(text: str) -> str:
    # NUL ends strings in C-based consumers and terminals; the projection and queries refuse it too.
    if "\x00" in text:
        raise ValueError("must not contain NUL (U+0000)")
    return text


#: How the JSON Schema says "no NUL" (the models check it with a clearer message than a pattern's).
_NO_NUL_SCHEMA: Final = Field(json_schema_extra={"pattern": "^[^\\u0000]*$"})
ShortText = Annotated[str, StringConstraints(max_length=512), AfterValidator(_no_nul), _NO_NUL_SCHEMA]


def _exact_int(value: Any) -> Any:
    # Checked before the union: an out-of-range int would otherwise validate as a (lossy) float.
    if type(value) is int and not _INT_MIN <= value < _INT_END:
        raise ValueError("integer out of the 64-bit range [-2^63, 2^64) (send it as a string)")
    return value


#: Integers are bounded to what the JSON encoder can write (64 bits) and never turned into floats;
#: floats must be finite (JSON has no NaN or infinity, so the encoder would silently write ``null``).
AttrValue = Annotated[
    Annotated[str, StringConstraints(max_length=1024), AfterValidator(_no_nul), _NO_NUL_SCHEMA]
    | Annotated[int, Field(ge=_INT_MIN, lt=_INT_END)]
    | Annotated[float, Field(allow_inf_nan=False)]
    | bool
    | None,
    BeforeValidator(_exact_int),
]


def _parse_time(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return datetime.fromisoformat(value)
        except ValueError:
            raise ValueError("must be an RFC 3339 timestamp with a UTC offset") from None
    return value


def _in_range(value: datetime) -> datetime:
    # Every reader shows and sorts times in UTC: an instant that Python's datetime cannot hold in UTC
    # would be accepted here and then break every page that shows it. OpenSearch refuses offsets
    # past 18 hours, so such a time would be indexed by one backend and dead-lettered by the other.
    offset = value.utcoffset()
    if offset is not None and (abs(offset) > MAX_OFFSET or offset % timedelta(minutes=1)):
        raise PydanticCustomError("time_offset", OFFSET_RANGE_MESSAGE)
    try:
        value.astimezone(UTC)
    except OverflowError:
        raise PydanticCustomError("time_range", TIME_RANGE_MESSAGE) from None
    return value


#: Why a time whose UTC instant falls outside years 1 to 9999 is refused.
TIME_RANGE_MESSAGE: Final = "its UTC instant must lie within years 0001 to 9999"
#: The largest UTC offset a time may have (each way); offsets are whole minutes, as RFC 3339 writes them.
MAX_OFFSET: Final = timedelta(hours=18)
OFFSET_RANGE_MESSAGE: Final = "its UTC offset must be whole minutes within -18:00 to +18:00"
Time = Annotated[AwareDatetime, BeforeValidator(_parse_time), AfterValidator(_in_range)]


def _exact_version(value: Any) -> Any:
    if type(value) is not int:  # from JSON text, ``Literal[1]`` would take ``true`` and ``1.0`` too
        raise ValueError("the wire version must be the integer 1")
    return value


#: The wire version field: the integer 1, whether the record comes from a mapping or from JSON text.
Version = Annotated[Literal[1], BeforeValidator(_exact_version)]


def _no_nul_and_bounded(text: str) -> str:
    if len(text.encode("utf-8", errors="strict")) > MAX_TEXT_BYTES:
        raise ValueError(f"text is longer than {MAX_TEXT_BYTES} UTF-8 bytes")
    return _no_nul(text)


BoundedText = Annotated[str, AfterValidator(_no_nul_and_bounded), _NO_NUL_SCHEMA]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class AppendOp(_Strict):
    """Join the tail of the model-visible surface."""

    op: Literal["append"]


class ReplaceOp(_Strict):
    """Replace the current surface nodes ``start``..``end`` (inclusive) with this event."""

    op: Literal["replace"]
    start: int = Field(ge=0, lt=2**53)
    end: int = Field(ge=0, lt=2**53)


SurfaceOp = Annotated[AppendOp | ReplaceOp, Field(discriminator="op")]


class HeaderRecord(_Strict):
    """Session header: immutable facts about a session, written once before or with its events."""

    v: Version
    kind: Literal["header"]
    workspace_id: Id
    session_id: Id
    created_at: Time
    parent_session_id: Id | None = None
    seed_length: int | None = Field(default=None, ge=0, lt=2**53)
    delegation_depth: int = Field(default=0, ge=0, lt=2**53)
    origin: ShortText | None = None
    agent_preset: ShortText | None = None
    title: ShortText | None = None


def entry_id(session_id: str, seq: int) -> str:
    """An event's id, the same on every backend (its OpenSearch ``_id``): ``session_id:seq``."""
    return f"{session_id}:{seq}"


class EventRecord(_Strict):
    """One event of a session's raw log; ``seq`` is zero-based and contiguous per session."""

    v: Version
    kind: Literal["event"]
    workspace_id: Id
    session_id: Id
    seq: int = Field(ge=0, lt=2**53)
    type: EventType
    time: Time
    turn: int | None = Field(default=None, ge=0, lt=2**53)
    role: Literal["system", "user", "assistant", "tool"] | None = None
    text: BoundedText | None = None
    tool_name: ShortText | None = None
    surface: SurfaceOp | None = None
    sources: list[Annotated[int, Field(ge=0, lt=2**53)]] | None = Field(default=None, max_length=10_000)
    attrs: dict[AttrKey, AttrValue] | None = Field(default=None, max_length=MAX_ATTRS)

    @model_validator(mode="after")
    def _surface_matches_type(self) -> EventRecord:
        if self.type in SURFACE_TYPES and self.surface is None:
            raise ValueError(f"surface: required on {self.type} events")
        if self.type not in SURFACE_TYPES and self.surface is not None:
            raise ValueError(
                f"surface: not allowed on {self.type} (only on {', '.join(sorted(SURFACE_TYPES))})"
            )
        return self

    @property
    def doc_id(self) -> str:
        return entry_id(self.session_id, self.seq)


Record = Annotated[HeaderRecord | EventRecord, Field(discriminator="kind")]
_RECORD: Final[TypeAdapter[HeaderRecord | EventRecord]] = TypeAdapter(Record)


def _field(loc: tuple[int | str, ...]) -> str:
    """The record field an error location points at: ``seq``, ``surface.start``, ``attrs.KEY``,
    ``sources.3`` (without the kind tag, validator names, the surface op tag or attrs' value types)."""
    parts = [str(p) for p in loc[1:] if not str(p).startswith("function")]
    if parts[:1] == ["surface"] and len(parts) > 2:
        del parts[1]
    if parts[:1] == ["attrs"]:
        parts = parts[:2]
    return ".".join(parts)


def _describe(err: ValidationError) -> str:
    parts = []
    for item in err.errors(include_url=False):
        parts.append(f"{_field(item['loc']) or 'record'}: {item['msg']}")
    return "; ".join(parts)


def parse_record(data: Any) -> HeaderRecord | EventRecord:
    """Validate a decoded JSON value; raise :class:`RecordRejected` naming the failing field."""
    if not isinstance(data, dict):
        raise RecordRejected("record", f"value must be a JSON object, got {type(data).__name__}")
    version = data.get("v")
    if type(version) is not int or version != WIRE_VERSION:
        raise RecordRejected("v", f"unsupported wire version {version!r} (this build reads v{WIRE_VERSION})")
    kind = data.get("kind")
    if kind not in ("header", "event"):
        raise RecordRejected("kind", f"must be 'header' or 'event', got {kind!r}")
    try:
        return _RECORD.validate_python(data)
    except ValidationError as err:
        first = err.errors(include_url=False)[0]
        field = _field(first["loc"])
        if not field:
            # A cross-field rule of the model: its message starts with the field it is about.
            found = re.search(r"error, ([a-z_]+): (.*)", first["msg"])
            if found:
                return _raise(found.group(1), found.group(2))
            field = "record"
        raise RecordRejected(field, _describe(err)) from None


def _raise(field: str, reason: str) -> HeaderRecord | EventRecord:
    raise RecordRejected(field, reason)


def decode_record(value: bytes) -> HeaderRecord | EventRecord:
    """Decode raw record bytes; raise :class:`RecordRejected` for anything that is not a valid v1 record.

    Bytes over :data:`MAX_INPUT_BYTES` are refused unread. The record cap
    (:data:`MAX_RECORD_BYTES`) is measured on the canonical encoding, not on ``value``: a
    ``\\u``-escaped spelling may be several times longer than the record it holds. So a record
    written to the log by another client is held to the same cap as one appended by ours."""
    if len(value) > MAX_INPUT_BYTES:
        raise RecordRejected(
            "record", f"record is {len(value)} bytes, over the {MAX_INPUT_BYTES} byte input limit"
        )
    try:
        # Straight from the bytes: a quarter cheaper than a JSON parse and then validation, and it
        # accepts exactly the same records (tests/unit/test_ingest_wire_decode.py). Its errors do not
        # name fields the way callers read them, so a rejected record is decoded again below.
        return _within_cap(_RECORD.validate_json(value), len(value))
    except ValidationError:
        pass
    try:
        data = orjson.loads(value)
        if _big_float_attr(data):
            # orjson reads integers past 64 bits as floats; the standard parser keeps them exact, so
            # validation rejects them instead of storing a rounded number. Only attrs matter: every
            # other numeric field is a strict integer and rejects the float anyway.
            data = json.loads(value)
    except (orjson.JSONDecodeError, ValueError, RecursionError) as err:
        raise RecordRejected("record", f"not valid UTF-8 JSON: {err}") from None
    return _within_cap(parse_record(data), len(value))


def _within_cap(record: HeaderRecord | EventRecord, raw_size: int) -> HeaderRecord | EventRecord:
    """``record``, unless its canonical encoding is over the cap (only measured when the raw
    spelling is: escapes only ever make a spelling longer)."""
    if raw_size > MAX_RECORD_BYTES:
        size = len(encode_record(record))
        if size > MAX_RECORD_BYTES:
            raise RecordRejected("record", f"encoded record is {size} bytes, cap is {MAX_RECORD_BYTES}")
    return record


def _big_float_attr(data: Any) -> bool:
    """Whether a decoded record's attrs hold a float as large as a 64-bit integer."""
    attrs = data.get("attrs") if type(data) is dict else None
    if type(attrs) is not dict:
        return False
    return any(type(v) is float and not -(2.0**63) < v < 2.0**64 for v in attrs.values())


def encode_record(record: HeaderRecord | EventRecord) -> bytes:
    """Serialise a record to its canonical JSON bytes (absent optional fields are omitted).

    pydantic's own serializer writes the bytes directly: the same bytes as ``orjson.dumps`` of
    ``model_dump(mode="json")`` (tests/unit/test_ingest_wire_encoding.py) at a third of the cost."""
    return record.__pydantic_serializer__.to_json(record, exclude_none=True)


def encode_key(record: HeaderRecord | EventRecord) -> bytes:
    return record.session_id.encode("utf-8")
