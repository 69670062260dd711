"""Turns raw log records into entries or invalid-entry values. Pure; shared by every source."""

from __future__ import annotations

from backscroll.indexer.ports import Entry, InvalidEntry, RawRecord
from backscroll.ingest.errors import RecordRejected
from backscroll.ingest.wire import decode_record

__all__ = ["decode_entry"]


def decode_entry(raw: RawRecord) -> Entry | InvalidEntry:
    """Decode and validate one record; anything the indexer cannot project becomes an
    :class:`InvalidEntry` saying which field and why (never an exception)."""
    if raw.value is None:
        return InvalidEntry(raw, "record", "record: value is null (tombstone)")
    try:
        record = decode_record(raw.value)
    except RecordRejected as err:
        return InvalidEntry(raw, err.field, str(err))
    if raw.key is None or raw.key != record.session_id.encode("utf-8"):
        return InvalidEntry(raw, "key", "key: must equal the record's session_id (UTF-8)")
    return Entry(raw, record)
