"""Indexer: projects the session log (Kafka topic or SQLite table) into a search view. May import
ingest, never query.

The core (runner, ports, fold, documents, settings) loads with the package; the names of the backend
folders (``kafka/``, ``opensearch/``, ``sqlite/``) load on first use, so that the embedded path never
loads the Kafka or OpenSearch client.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from backscroll.indexer.deadletter import DeadLetter, decode_envelope
from backscroll.indexer.errors import (
    DeadLetterUnavailable,
    IndexerError,
    NotCaughtUp,
    SourceFailed,
    SourceUnavailable,
    ViewFailed,
    ViewUnavailable,
)
from backscroll.indexer.ports import (
    Commit,
    DeadLetters,
    Entry,
    EntrySource,
    InvalidEntry,
    Outcome,
    Poll,
    RawRecord,
    SessionView,
    WriteResult,
)
from backscroll.indexer.runner import Runner, RunStats
from backscroll.indexer.settings import IndexerSettings, OpenSearchSettings

if TYPE_CHECKING:
    from backscroll.indexer.kafka.worker import kafka_runner
    from backscroll.indexer.opensearch.view import OpenSearchView
    from backscroll.indexer.sqlite.runner import embedded_runner

_WHERE = {
    "embedded_runner": "sqlite.runner",
    "OpenSearchView": "opensearch.view",
    "kafka_runner": "kafka.worker",
}

__all__ = [
    "Commit",
    "DeadLetter",
    "DeadLetterUnavailable",
    "DeadLetters",
    "Entry",
    "EntrySource",
    "IndexerError",
    "IndexerSettings",
    "InvalidEntry",
    "NotCaughtUp",
    "OpenSearchSettings",
    "OpenSearchView",
    "Outcome",
    "Poll",
    "RawRecord",
    "RunStats",
    "Runner",
    "SessionView",
    "SourceFailed",
    "SourceUnavailable",
    "ViewFailed",
    "ViewUnavailable",
    "WriteResult",
    "decode_envelope",
    "embedded_runner",
    "kafka_runner",
]


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'backscroll.indexer' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"backscroll.indexer.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
