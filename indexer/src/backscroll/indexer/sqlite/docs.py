"""How an event document is stored in the embedded ``events`` table (pure, no I/O): the fields that
are columns of their own (filters, sort keys, the text) are not repeated in the ``doc`` JSON, nor
are the fields the columns give back exactly (a UTC ``time`` from ``time_us``; the log position
from ``log_offset``); all are put back when the document is read. A reader selects
:data:`EVENT_COLUMNS` (plus ``doc`` and, when it wants it, ``text``) and calls :func:`event_source`.

An event's id is not stored either: it is ``session_id:seq``
(:func:`~backscroll.ingest.wire.entry_id`), and the pair is the table's unique key.

Files written before this layout hold the whole document in ``doc`` (with a ``text_field`` key):
:func:`event_source` reads both, the columns having the same values as the old copies.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, Final

import orjson

__all__ = [
    "EVENT_COLUMNS",
    "event_instant",
    "event_source",
    "pack_event_doc",
    "split_entry_id",
    "text_field",
]

#: The columns :func:`event_source` reads, in this order, before ``doc``.
EVENT_COLUMNS: Final = (
    "workspace_id, session_id, seq, type, has_text, surface_state, content_hash, tool_name, "
    "time_us, log_offset"
)
_NAMES: Final = tuple(name.strip() for name in EVENT_COLUMNS.split(","))
# Not stored in ``doc``: the columns (tool_name only when present), the text and the old marker.
_LEFT_OUT: Final = frozenset((*_NAMES, "text", "args", "text_field"))
# ... and, by whether the columns give them back exactly: the time; the log position.
_LEFT_OUT_BY_CASE: Final = {
    (same_time, same_position): _LEFT_OUT
    | ({"time"} if same_time else set())
    | ({"partition", "offset"} if same_position else set())
    for same_time in (False, True)
    for same_position in (False, True)
}
_EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)
_MIN_US: Final = (datetime.min.replace(tzinfo=UTC) - _EPOCH) // timedelta(microseconds=1)
_MAX_US: Final = (datetime.max.replace(tzinfo=UTC) - _EPOCH) // timedelta(microseconds=1)
# What ``isoformat()`` writes for a UTC instant, and so exactly what ``event_instant`` gives back
# (a regular expression: formatting the instant again to compare cost six times as much).
_UTC_ISOFORMAT: Final = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.(?!000000)\d{6})?\+00:00")


def text_field(event_type: str) -> str:
    """The document field holding an event's text: a tool call's is its arguments."""
    return "args" if event_type == "tool/call" else "text"


def split_entry_id(doc_id: str) -> tuple[str, int]:
    """``(session_id, seq)`` of an event's id (:func:`~backscroll.ingest.wire.entry_id`); raises
    ``ValueError`` when it is not one."""
    session_id, _, seq = doc_id.rpartition(":")
    if not session_id:
        raise ValueError(f"not an event id: {doc_id!r}")
    return session_id, int(seq)


def event_instant(time_us: int) -> datetime:
    """The UTC instant of an ``events.time_us`` value; a value past years 0001 to 9999 (a row the
    indexer never writes) gives the nearest edge of that range rather than an error."""
    return _EPOCH + timedelta(microseconds=min(max(time_us, _MIN_US), _MAX_US))


def pack_event_doc(source: Mapping[str, Any], log_offset: int) -> bytes:
    """The ``doc`` column of an event document whose row has ``log_offset`` (and the ``time_us`` of
    its ``time``): every field that is not a column or the text, less those the columns give back
    exactly."""
    moment = source.get("time")
    same_time = isinstance(moment, str) and _UTC_ISOFORMAT.fullmatch(moment) is not None
    same_position = log_offset > 0 and source.get("offset") == log_offset and source.get("partition") == 0
    left_out = _LEFT_OUT_BY_CASE[same_time, same_position]
    return orjson.dumps({key: value for key, value in source.items() if key not in left_out})


def event_source(columns: Sequence[Any], doc: bytes | str, text: str | None = None) -> dict[str, Any]:
    """The event document from its :data:`EVENT_COLUMNS` values, its ``doc`` and (when given) its
    text, as OpenSearch would return its ``_source``."""
    source: dict[str, Any] = orjson.loads(doc)
    source.pop("text_field", None)
    workspace_id, session_id, seq, kind, has_text, surface_state, digest, tool_name, micros, offset = columns
    source.update(
        workspace_id=workspace_id,
        session_id=session_id,
        seq=int(seq),
        type=kind,
        has_text=bool(has_text),
        surface_state=surface_state,
        content_hash=digest,
    )
    if "time" not in source:
        source["time"] = event_instant(int(micros)).isoformat()
    if "offset" not in source and int(offset) > 0:
        source.update(partition=0, offset=int(offset))
    if tool_name is not None:
        source["tool_name"] = tool_name
    if text is not None:
        source[text_field(kind)] = text
    return source
