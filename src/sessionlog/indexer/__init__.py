"""Indexer: projects the session log from Kafka into OpenSearch. May import ingest, never query."""

from sessionlog.indexer.deadletter import DeadLetter, decode_envelope
from sessionlog.indexer.errors import IndexerError, SourceUnavailable, ViewUnavailable
from sessionlog.indexer.opensearch_view import OpenSearchView
from sessionlog.indexer.settings import IndexerSettings, OpenSearchSettings
from sessionlog.indexer.worker import IndexerWorker, WorkerStats

__all__ = [
    "DeadLetter",
    "IndexerError",
    "IndexerSettings",
    "IndexerWorker",
    "OpenSearchSettings",
    "OpenSearchView",
    "SourceUnavailable",
    "ViewUnavailable",
    "WorkerStats",
    "decode_envelope",
]
