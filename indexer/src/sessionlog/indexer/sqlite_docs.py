"""How an event document is stored in the embedded ``events`` table (pure, no I/O): the fields that
are columns of their own (filters, sort keys, the text) are not repeated in the ``doc`` JSON, and
are put back when the document is read. A reader selects :data:`EVENT_COLUMNS` (plus ``doc`` and,
when it wants it, ``text``) and calls :func:`event_source`.

Files written before this layout hold the whole document in ``doc`` (with a ``text_field`` key):
:func:`event_source` reads both, the columns having the same values as the old copies.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

import orjson

__all__ = ["EVENT_COLUMNS", "event_source", "pack_event_doc", "text_field"]

#: The columns :func:`event_source` reads, in this order, before ``doc``.
EVENT_COLUMNS: Final = "workspace_id, session_id, seq, type, has_text, surface_state, content_hash, tool_name"
_NAMES: Final = tuple(name.strip() for name in EVENT_COLUMNS.split(","))
# Not stored in ``doc``: the columns (tool_name only when present), the text and the old marker.
_LEFT_OUT: Final = frozenset((*_NAMES, "text", "args", "text_field"))


def text_field(event_type: str) -> str:
    """The document field holding an event's text: a tool call's is its arguments."""
    return "args" if event_type == "tool/call" else "text"


def pack_event_doc(source: Mapping[str, Any]) -> bytes:
    """The ``doc`` column of an event document: every field that is not a column or the text."""
    return orjson.dumps({key: value for key, value in source.items() if key not in _LEFT_OUT})


def event_source(columns: Sequence[Any], doc: bytes | str, text: str | None = None) -> dict[str, Any]:
    """The event document from its :data:`EVENT_COLUMNS` values, its ``doc`` and (when given) its
    text, as OpenSearch would return its ``_source``."""
    source: dict[str, Any] = orjson.loads(doc)
    source.pop("text_field", None)
    workspace_id, session_id, seq, kind, has_text, surface_state, digest, tool_name = columns
    source.update(
        workspace_id=workspace_id,
        session_id=session_id,
        seq=int(seq),
        type=kind,
        has_text=bool(has_text),
        surface_state=surface_state,
        content_hash=digest,
    )
    if tool_name is not None:
        source["tool_name"] = tool_name
    if text is not None:
        source[text_field(kind)] = text
    return source
