"""Ingest: the wire format and the appender agents embed. Imports nothing from indexer or query."""

from sessionlog.ingest.appender import AppendHandle, Appender, Position
from sessionlog.ingest.errors import AppenderClosed, IngestError, LogUnavailable, RecordRejected
from sessionlog.ingest.settings import KafkaSettings
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

__all__ = [
    "AppendHandle",
    "AppendOp",
    "Appender",
    "AppenderClosed",
    "EventRecord",
    "HeaderRecord",
    "IngestError",
    "KafkaSettings",
    "LogUnavailable",
    "Position",
    "RecordRejected",
    "ReplaceOp",
    "decode_record",
    "dlq_topic",
    "encode_record",
    "ensure_topics",
    "parse_record",
]
