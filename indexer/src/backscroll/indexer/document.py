"""The event and session documents of the read model, shared by every view. Pure; no I/O.

The OpenSearch index names, settings and mappings that hold these documents are in
:mod:`backscroll.indexer.opensearch.mappings`; the embedded tables in :mod:`backscroll.indexer.sqlite.schema`.
"""

from __future__ import annotations

import hashlib
from typing import Any, Final, Literal

from backscroll.indexer.fold import CALL_ID_ATTR, FoldEvent
from backscroll.ingest.wire import EventRecord, HeaderRecord, ReplaceOp, encode_record

__all__ = [
    "DEFAULT_KINDS",
    "MESSAGE_TYPES",
    "SURFACE_STATES",
    "SurfaceLabel",
    "content_hash",
    "event_document",
    "fold_event",
    "session_document",
]

SurfaceLabel = Literal["current", "shadowed", "log-only"]
SURFACE_STATES: Final[tuple[SurfaceLabel, ...]] = ("current", "shadowed", "log-only")

#: Message-bearing event types, searched by default.
MESSAGE_TYPES: Final = ("user/message", "assistant/message", "tool/call", "tool/result")
DEFAULT_KINDS: Final = MESSAGE_TYPES
SCHEMA_VERSION: Final = 1


def content_hash(record: EventRecord) -> str:
    """Stable digest of a record's content: equal records are a replay, different ones a conflict."""
    return hashlib.blake2b(encode_record(record), digest_size=16).hexdigest()


def event_document(
    record: EventRecord,
    *,
    surface_state: SurfaceLabel,
    partition: int | None = None,
    offset: int | None = None,
) -> dict[str, Any]:
    """Project one event record into its search document (``_id`` = ``session:seq``)."""
    text = record.text or ""
    doc: dict[str, Any] = {
        "schema": SCHEMA_VERSION,
        "workspace_id": record.workspace_id,
        "session_id": record.session_id,
        "seq": record.seq,
        "type": record.type,
        "time": record.time.isoformat(),
        "has_text": bool(text.strip()),
        "text_bytes": len(text) if text.isascii() else len(text.encode("utf-8")),
        "surface_state": surface_state,
        "content_hash": content_hash(record),
    }
    if record.type == "tool/call":
        doc["args"] = text
    else:
        doc["text"] = text
    if record.turn is not None:
        doc["turn"] = record.turn
    if record.role is not None:
        doc["role"] = record.role
    if record.tool_name is not None:
        doc["tool_name"] = record.tool_name
    if record.surface is not None:
        doc["surface_op"] = record.surface.op
        if isinstance(record.surface, ReplaceOp):
            doc["replace_start"] = record.surface.start
            doc["replace_end"] = record.surface.end
    if record.sources is not None:
        doc["sources"] = list(record.sources)
    if record.attrs:
        doc["attrs"] = dict(record.attrs)
    if partition is not None:
        doc["partition"] = partition
    if offset is not None:
        doc["offset"] = offset
    return doc


def session_document(header: HeaderRecord) -> dict[str, Any]:
    """Fields of the session document that come from its header."""
    doc: dict[str, Any] = {
        "workspace_id": header.workspace_id,
        "session_id": header.session_id,
        "created_at": header.created_at.isoformat(),
        "delegation_depth": header.delegation_depth,
        "has_header": True,
        "parent_session_id": header.parent_session_id,
    }
    for name in ("seed_length", "origin", "agent_preset", "title"):
        value = getattr(header, name)
        if value is not None:
            doc[name] = value
    return doc


def fold_event(source: dict[str, Any]) -> FoldEvent:
    """The fold's view of a stored event document (both views restore session state with it)."""
    op = source.get("surface_op")
    surface: Any
    if op == "append":
        surface = "append"
    elif op == "replace":
        surface = (int(source["replace_start"]), int(source["replace_end"]))
    else:
        surface = None
    sources = source.get("sources")
    content_key = None
    if source["type"] == "tool/result":
        call_id = (source.get("attrs") or {}).get(CALL_ID_ATTR)
        content_key = repr((source.get("tool_name"), source.get("role"), call_id))
    return FoldEvent(
        int(source["seq"]),
        source["type"],
        surface,
        None if sources is None else tuple(int(s) for s in sources),
        content_key,
    )
