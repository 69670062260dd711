"""A conversation memory on the append-only entry log: one event per item, tombstones for pops
and clears. No SDK is imported here; the SDK adapters say how their items map to events.

An item is a JSON object. When one of its string fields is the readable text (a message's
content), the event's ``text`` is that string and ``attrs["item.shape"]`` the rest of the item, so
the text is searched like any message; otherwise ``text`` is the item's JSON. Either way the item
comes back equal to what was added. Popped and cleared items stay in the log (and in searches):
only the memory forgets them.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Final, Protocol

import orjson

from backscroll.ingest.errors import RecordRejected
from backscroll.ingest.wire import WIRE_VERSION, parse_record
from backscroll.query.errors import SessionQueryError

if TYPE_CHECKING:
    from backscroll.ingest.entry_log import EntryLog
    from backscroll.ingest.session import SessionWriter
    from backscroll.query.reads.models import EventRecordView

__all__ = ["CLEAR_TYPE", "MAX_SHAPE_CHARS", "POP_TYPE", "EventLister", "ItemEvent", "ItemLog"]

#: The event types of the tombstones (not searched by default; surface forbidden).
POP_TYPE: Final = "memory/pop"
CLEAR_TYPE: Final = "memory/clear"
#: ``attrs`` values are at most 1,024 characters: a longer shape keeps the item as JSON text.
MAX_SHAPE_CHARS: Final = 1024
_MAX_TEXT_BYTES: Final = 1024 * 1024
_SURFACE_TYPES: Final = frozenset({"user/message", "assistant/message", "tool/result"})
_FORM: Final = "item.form"
_SHAPE: Final = "item.shape"
_TARGET: Final = "item.seq"

Path = tuple[str | int, ...]


class EventLister(Protocol):
    """What the memory reads: every event of a session in seq order (a session reader)."""

    def list_events(self, session_id: str) -> Sequence[EventRecordView]: ...


@dataclass(frozen=True)
class ItemEvent:
    """How one item is logged: its event ``type`` and ``role``, ``tool_name`` and ``call_id``
    when it is a tool call or result, and the path of its readable text (``None``: no text)."""

    type: str
    role: str | None = None
    tool_name: str | None = None
    call_id: str | None = None
    text_path: Path | None = None


def _dumps(value: object) -> str:
    return orjson.dumps(value).decode()


def _get(item: Any, path: Path) -> Any:
    for step in path:
        if isinstance(step, int):
            if not isinstance(item, list) or not 0 <= step < len(item):
                return None
        elif not isinstance(item, dict) or step not in item:
            return None
        item = item[step]
    return item


def _put(item: Any, path: Path, value: Any) -> None:
    for step in path[:-1]:
        item = item[step]
    item[path[-1]] = value


def encode(item: Mapping[str, Any], how: ItemEvent) -> dict[str, Any]:
    """The event fields (``type``, ``role``, ``text``, ``attrs``, …) that keep ``item``;
    :class:`~backscroll.ingest.errors.RecordRejected` (field ``item``) when it is not JSON."""
    try:
        data = orjson.loads(orjson.dumps(item))  # a detached plain copy
    except orjson.JSONEncodeError as err:
        raise RecordRejected("item", f"not a JSON object: {err}") from None
    fields: dict[str, Any] = {"type": how.type, "role": how.role, "tool_name": how.tool_name}
    attrs: dict[str, Any] = {}
    text = _get(data, how.text_path) if how.text_path else None
    shape = None
    if (
        isinstance(text, str)
        and "\x00" not in text
        and len(text.encode()) <= _MAX_TEXT_BYTES
        and how.text_path
    ):
        _put(data, how.text_path, None)
        shape = _dumps({"path": list(how.text_path), "item": data})
    if shape is not None and len(shape) <= MAX_SHAPE_CHARS:
        fields["text"] = text
        attrs[_FORM] = "text"
        attrs[_SHAPE] = shape
    else:
        fields["text"] = _dumps(item)
        attrs[_FORM] = "json"
    if how.call_id is not None and len(how.call_id) <= 1024:
        attrs["call_id"] = how.call_id
    if how.type in _SURFACE_TYPES:
        fields["surface"] = {"op": "append"}
    fields["attrs"] = attrs
    return fields


def decode(event: EventRecordView) -> dict[str, Any] | None:
    """The item an event keeps, or ``None`` when the event is not an item of the memory."""
    attrs = event.attrs or {}
    form = attrs.get(_FORM)
    try:
        if form == "json":
            item = orjson.loads(event.text)
        elif form == "text" and isinstance(attrs.get(_SHAPE), str):
            shape = orjson.loads(str(attrs[_SHAPE]))
            item = shape["item"]
            _put(item, tuple(shape["path"]), event.text)
        else:
            return None
    except (orjson.JSONDecodeError, KeyError, IndexError, TypeError):
        return None  # written by someone else: not an item we can give back
    return item if isinstance(item, dict) else None


class ItemLog:
    """The items of one session: :meth:`items`, :meth:`add`, :meth:`pop` and :meth:`clear`.

    ``log`` is where entries are appended; ``reader`` must see this process's appends (the
    embedded reader does; on Kafka, open it with ``live=log``). The session's header is written
    with the first item when the log does not know the session. One memory per session and
    process: it holds the session's writer until :meth:`close`. Errors are the log's
    (:class:`~backscroll.ingest.errors.IngestError`) and the reader's
    (:class:`~backscroll.query.errors.SessionQueryError`).
    """

    def __init__(
        self,
        log: EntryLog,
        reader: EventLister,
        *,
        workspace_id: str,
        session_id: str,
        origin: str | None = None,
        ack_timeout_s: float = 30.0,
    ) -> None:
        self.log = log
        self.reader = reader
        self.workspace_id = workspace_id
        self.session_id = session_id
        self.origin = origin
        self.ack_timeout_s = ack_timeout_s
        self._writer: SessionWriter | None = None
        self._lock = threading.RLock()

    # -- reading ------------------------------------------------------------------------------------
    def _events(self) -> Sequence[EventRecordView] | None:
        try:
            return self.reader.list_events(self.session_id)
        except SessionQueryError as err:
            if err.code == "SESSION_QUERY_SESSION_NOT_FOUND":
                return None
            raise

    def items(self, limit: int | None = None) -> list[tuple[int, dict[str, Any]]]:
        """The remembered items as ``(seq, item)``, oldest first; the latest ``limit`` when given
        (none for a limit of zero or less)."""
        kept: dict[int, dict[str, Any]] = {}
        for event in self._events() or ():
            attrs = event.attrs or {}
            target = attrs.get(_TARGET)
            if event.type == POP_TYPE and isinstance(target, int):
                kept.pop(target, None)
            elif event.type == CLEAR_TYPE and isinstance(target, int):
                kept = {seq: item for seq, item in kept.items() if seq > target}
            else:
                item = decode(event)
                if item is not None:
                    kept[event.seq] = item
        listed = list(kept.items())
        if limit is None:
            return listed
        return listed[-limit:] if limit > 0 else []

    # -- writing ------------------------------------------------------------------------------------
    def _session(self) -> SessionWriter:
        if self._writer is None or self._writer.closed:
            events = self._events()
            next_seq = None if not events else events[-1].seq + 1
            writer = self.log.session(self.workspace_id, self.session_id, next_seq=next_seq)
            if events is None:
                try:
                    writer.header(created_at=datetime.now(UTC), origin=self.origin).result(self.ack_timeout_s)
                except BaseException:
                    writer.close()
                    raise
            self._writer = writer
        return self._writer

    def _append(self, records: Sequence[dict[str, Any]]) -> list[int]:
        writer = self._session()
        handles = []
        seqs = []
        for record in records:
            seqs.append(writer.next_seq)
            handles.append(writer.append(record))
        for handle in handles:
            handle.result(self.ack_timeout_s)
        return seqs

    def add(
        self, items: Sequence[Mapping[str, Any]], describe: Callable[[Mapping[str, Any]], ItemEvent]
    ) -> None:
        """Append one event per item, in order (all are validated before any is appended)."""
        records = [encode(item, describe(item)) for item in items]
        for record in records:  # the wire's checks, before the first append
            parse_record(self._probe(record))
        if records:
            with self._lock:
                self._append(records)

    def _probe(self, record: dict[str, Any]) -> dict[str, Any]:
        ids = {"workspace_id": self.workspace_id, "session_id": self.session_id}
        return {"v": WIRE_VERSION, "kind": "event", **ids, "seq": 0, "time": datetime.now(UTC), **record}

    def pop(self) -> dict[str, Any] | None:
        """Forget the latest item and return it (``None`` when there is none)."""
        with self._lock:
            latest = self.items(1)
            if not latest:
                return None
            seq, item = latest[0]
            self._append([{"type": POP_TYPE, "attrs": {_TARGET: seq}}])
            return item

    def clear(self) -> None:
        """Forget every item logged so far."""
        with self._lock:
            events = self._events()
            if events and self.items(1):
                self._append([{"type": CLEAR_TYPE, "attrs": {_TARGET: events[-1].seq}}])

    def close(self) -> None:
        """Release the session's writer (the log and the reader stay the caller's)."""
        with self._lock:
            if self._writer is not None:
                self._writer.close()
                self._writer = None
