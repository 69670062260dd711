"""Ingest: the wire format and the appender agents embed. Imports nothing from indexer or query.

Names load on first use: importing the wire format (the query side does) does not start
loading the Kafka client.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sessionlog.ingest.appender import Appender, AppenderStats, get_appender
    from sessionlog.ingest.entry_log import EntryLog, LiveView
    from sessionlog.ingest.errors import (
        AppenderClosed,
        BufferFull,
        IngestError,
        LogCorrupt,
        LogFull,
        LogInaccessible,
        LogNotFound,
        LogRefused,
        LogUnavailable,
        NotASessionlogFile,
        RecordRejected,
        SequenceError,
        SessionBusy,
        SpoolError,
        SpoolFull,
        SpoolLocked,
    )
    from sessionlog.ingest.live import LiveEntry, LiveLog
    from sessionlog.ingest.records import AppendHandle, LogRecord, Position
    from sessionlog.ingest.session import LastSeqLookup, SessionWriter
    from sessionlog.ingest.settings import AppenderSettings, KafkaSettings
    from sessionlog.ingest.spool import Spool, SpoolRecord, open_slot
    from sessionlog.ingest.sqlite_log import SQLiteEntryLog
    from sessionlog.ingest.topics import dlq_topic, ensure_topics
    from sessionlog.ingest.wire import (
        AppendOp,
        EventRecord,
        HeaderRecord,
        ReplaceOp,
        decode_record,
        encode_record,
        parse_record,
    )

_WHERE = {
    "Appender": "appender",
    "AppenderStats": "appender",
    "get_appender": "appender",
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
    "NotASessionlogFile": "errors",
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
    "SQLiteEntryLog": "sqlite_log",
    "LastSeqLookup": "session",
    "SessionWriter": "session",
    "AppenderSettings": "settings",
    "KafkaSettings": "settings",
    "Spool": "spool",
    "SpoolRecord": "spool",
    "open_slot": "spool",
    "dlq_topic": "topics",
    "ensure_topics": "topics",
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
    "NotASessionlogFile",
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
        raise AttributeError(f"module 'sessionlog.ingest' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"sessionlog.ingest.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
