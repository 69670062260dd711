"""Ingest: the wire format and the appender agents embed. Imports nothing from indexer or query.

The core (wire format, entry-log interface, errors, settings) loads with the package; the names of
the backend folders (``kafka/``, ``sqlite/``) load on first use, so an agent that appends to one
SQLite file, or the query side reading the wire format, never loads the Kafka client.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from backscroll.ingest.entry_log import EntryLog, LiveView
from backscroll.ingest.errors import (
    AppenderClosed,
    BufferFull,
    IngestError,
    LogCorrupt,
    LogFull,
    LogInaccessible,
    LogNotFound,
    LogRefused,
    LogUnavailable,
    NotABackscrollFile,
    RecordRejected,
    SequenceError,
    SessionBusy,
    SpoolError,
    SpoolFull,
    SpoolLocked,
)
from backscroll.ingest.live import LiveEntry, LiveLog
from backscroll.ingest.records import AppendHandle, LogRecord, Position
from backscroll.ingest.session import LastSeqLookup, SessionWriter
from backscroll.ingest.settings import AppenderSettings, KafkaSettings
from backscroll.ingest.wire import (
    AppendOp,
    EventRecord,
    HeaderRecord,
    ReplaceOp,
    decode_record,
    encode_record,
    parse_record,
)

if TYPE_CHECKING:
    from backscroll.ingest.kafka.appender import Appender, AppenderStats, get_appender
    from backscroll.ingest.kafka.spool.store import Spool, SpoolRecord, open_slot
    from backscroll.ingest.kafka.topics import dlq_topic, ensure_topics
    from backscroll.ingest.sqlite.log import SQLiteEntryLog

_WHERE = {
    "Appender": "kafka.appender",
    "AppenderStats": "kafka.appender",
    "get_appender": "kafka.appender",
    "SQLiteEntryLog": "sqlite.log",
    "Spool": "kafka.spool.store",
    "SpoolRecord": "kafka.spool.store",
    "open_slot": "kafka.spool.store",
    "dlq_topic": "kafka.topics",
    "ensure_topics": "kafka.topics",
}

__all__ = [
    "AppendHandle",
    "AppendOp",
    "Appender",
    "AppenderClosed",
    "AppenderSettings",
    "AppenderStats",
    "BufferFull",
    "EntryLog",
    "EventRecord",
    "HeaderRecord",
    "IngestError",
    "KafkaSettings",
    "LastSeqLookup",
    "LiveEntry",
    "LiveLog",
    "LiveView",
    "LogCorrupt",
    "LogFull",
    "LogInaccessible",
    "LogNotFound",
    "LogRecord",
    "LogRefused",
    "LogUnavailable",
    "NotABackscrollFile",
    "Position",
    "RecordRejected",
    "ReplaceOp",
    "SQLiteEntryLog",
    "SequenceError",
    "SessionBusy",
    "SessionWriter",
    "Spool",
    "SpoolError",
    "SpoolFull",
    "SpoolLocked",
    "SpoolRecord",
    "decode_record",
    "dlq_topic",
    "encode_record",
    "ensure_topics",
    "get_appender",
    "open_slot",
    "parse_record",
]


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'backscroll.ingest' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"backscroll.ingest.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
