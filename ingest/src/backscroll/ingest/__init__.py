"""Ingest: the wire format and the appender agents embed. Imports nothing from indexer or query.

Names load on first use: importing the wire format (the query side does) does not start
loading the Kafka client.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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
    from backscroll.ingest.kafka.appender import Appender, AppenderStats, get_appender
    from backscroll.ingest.kafka.spool.store import Spool, SpoolRecord, open_slot
    from backscroll.ingest.kafka.topics import dlq_topic, ensure_topics
    from backscroll.ingest.live import LiveEntry, LiveLog
    from backscroll.ingest.records import AppendHandle, LogRecord, Position
    from backscroll.ingest.session import LastSeqLookup, SessionWriter
    from backscroll.ingest.settings import AppenderSettings, KafkaSettings
    from backscroll.ingest.sqlite.log import SQLiteEntryLog
    from backscroll.ingest.wire import (
        AppendOp,
        EventRecord,
        HeaderRecord,
        ReplaceOp,
        decode_record,
        encode_record,
        parse_record,
    )

_WHERE = {
    "Appender": "kafka.appender",
    "AppenderStats": "kafka.appender",
    "get_appender": "kafka.appender",
    "EntryLog": "entry_log",
    "LiveView": "entry_log",
    "AppenderClosed": "errors",
    "BufferFull": "errors",
    "IngestError": "errors",
    "LogCorrupt": "errors",
    "LogFull": "errors",
    "LogInaccessible": "errors",
    "LogNotFound": "errors",
    "LogRefused": "errors",
    "LogUnavailable": "errors",
    "NotABackscrollFile": "errors",
    "RecordRejected": "errors",
    "SequenceError": "errors",
    "SessionBusy": "errors",
    "SpoolError": "errors",
    "SpoolFull": "errors",
    "SpoolLocked": "errors",
    "LiveEntry": "live",
    "LiveLog": "live",
    "AppendHandle": "records",
    "LogRecord": "records",
    "Position": "records",
    "SQLiteEntryLog": "sqlite.log",
    "LastSeqLookup": "session",
    "SessionWriter": "session",
    "AppenderSettings": "settings",
    "KafkaSettings": "settings",
    "Spool": "kafka.spool.store",
    "SpoolRecord": "kafka.spool.store",
    "open_slot": "kafka.spool.store",
    "dlq_topic": "kafka.topics",
    "ensure_topics": "kafka.topics",
    "AppendOp": "wire",
    "EventRecord": "wire",
    "HeaderRecord": "wire",
    "ReplaceOp": "wire",
    "decode_record": "wire",
    "encode_record": "wire",
    "parse_record": "wire",
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
