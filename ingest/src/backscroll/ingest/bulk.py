"""Bulk appends: records validated and encoded once, in batches, and acknowledged per batch.

The per-record API (``append`` / ``append_many``) hands back one :class:`AppendHandle` per record
and keeps every appended event in the process's live view: what an agent needs, and more than a
bulk load does. A bulk loader (``backscroll append FILE``) instead

1. turns raw lines into :data:`EncodedRecord` s with :func:`prepare_lines` (pure; it may run in
   another process): every line is decoded, validated and encoded exactly as ``append`` would,
   and a line that is not a valid record becomes a rejection with its line number, field and
   reason;
2. hands each batch to the log's ``append_encoded`` (``SQLiteEntryLog``: one transaction;
   ``Appender``: one spool write, acknowledged per batch through one :class:`BatchAck`).

Nothing here touches the network or a file.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import TYPE_CHECKING, NamedTuple

from backscroll.ingest.errors import RecordRejected
from backscroll.ingest.wire import (
    MAX_RECORD_BYTES,
    EventRecord,
    HeaderRecord,
    decode_record,
    encode_record,
)

if TYPE_CHECKING:
    from backscroll.ingest.errors import IngestError
    from backscroll.ingest.records import Position

__all__ = ["BatchAck", "EncodedRecord", "Rejection", "encode_for_log", "prepare_lines"]


#: A validated record as the log stores it: ``(session_id, key, value, seq)``, the key and value
#: being the bytes of the log record (the canonical encoding) and ``seq`` None for a header. A
#: plain tuple: a chunk's records cross from a worker process, and plain tuples unpickle in C.
EncodedRecord = tuple[str, bytes, bytes, int | None]


class Rejection(NamedTuple):
    """A line that is not a valid record: its number, the field at fault and the reason."""

    line: int
    field: str
    reason: str


def encode_for_log(record: HeaderRecord | EventRecord) -> EncodedRecord:
    """The :data:`EncodedRecord` of a validated wire record; :class:`RecordRejected` when its
    encoding is over :data:`~backscroll.ingest.wire.MAX_RECORD_BYTES`."""
    value = encode_record(record)
    if len(value) > MAX_RECORD_BYTES:
        raise RecordRejected("record", f"encoded record is {len(value)} bytes, cap is {MAX_RECORD_BYTES}")
    session_id = record.session_id
    seq = record.seq if isinstance(record, EventRecord) else None
    return session_id, session_id.encode("utf-8"), value, seq


def prepare_lines(lines: Iterable[tuple[int, bytes]]) -> tuple[list[EncodedRecord], list[Rejection]]:
    """Decode, validate and encode numbered lines (each one JSON wire record): the records in
    line order, and the lines that are not valid records with their reasons (nothing dropped
    silently). The same checks and messages as :func:`~backscroll.ingest.wire.decode_record`
    and ``append``."""
    records: list[EncodedRecord] = []
    rejections: list[Rejection] = []
    add, reject = records.append, rejections.append
    for number, line in lines:
        try:
            add(encode_for_log(decode_record(line)))
        except RecordRejected as err:
            reject(Rejection(number, err.field, str(err)))
    return records, rejections


class BatchAck:
    """The acknowledgement of a batch of bulk appends: one object for all its records (where the
    per-record API makes one :class:`AppendHandle` each). Thread-safe; the log's threads resolve
    or fail each record once, and :meth:`settled` / :meth:`error` tell the loader the outcome."""

    __slots__ = ("__weakref__", "_error", "_lock", "_settled", "acknowledged", "failed", "size")

    def __init__(self, size: int, *, acknowledged: int = 0) -> None:
        self.size = size
        self.acknowledged = acknowledged
        self.failed = 0
        self._error: IngestError | None = None
        self._lock = threading.Lock()
        self._settled = threading.Event()
        if acknowledged >= size:
            self._settled.set()

    def _resolve(self, position: Position) -> None:
        self._resolve_many(1)

    def _resolve_many(self, count: int) -> None:
        with self._lock:
            self.acknowledged += count
            if self.acknowledged + self.failed >= self.size:
                self._settled.set()

    def _fail(self, error: IngestError) -> None:
        with self._lock:
            self.failed += 1
            if self._error is None:
                self._error = error
            if self.acknowledged + self.failed >= self.size:
                self._settled.set()

    def settled(self) -> bool:
        """Whether every record of the batch was acknowledged or failed for good."""
        return self._settled.is_set()

    def wait(self, timeout: float | None = None) -> bool:
        """Wait until :meth:`settled` (False when ``timeout`` passed first)."""
        return self._settled.wait(timeout)

    def error(self) -> IngestError | None:
        """The first error a record of the batch failed with (None while none failed)."""
        return self._error

    def __repr__(self) -> str:
        return f"BatchAck(size={self.size}, acknowledged={self.acknowledged}, failed={self.failed})"
