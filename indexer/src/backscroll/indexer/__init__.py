"""Indexer: projects the session log (Kafka topic or SQLite table) into a search view. May import
ingest, never query.

Names are loaded on first use, so that importing a pure module such as
``backscroll.indexer.document`` (the query side does) does not load Kafka or OpenSearch clients.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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
    from backscroll.indexer.kafka.worker import kafka_runner
    from backscroll.indexer.opensearch.view import OpenSearchView
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
    from backscroll.indexer.sqlite.runner import embedded_runner

_WHERE = {
    "DeadLetter": "deadletter",
    "decode_envelope": "deadletter",
    "embedded_runner": "sqlite.runner",
    "DeadLetterUnavailable": "errors",
    "IndexerError": "errors",
    "NotCaughtUp": "errors",
    "SourceFailed": "errors",
    "SourceUnavailable": "errors",
    "ViewFailed": "errors",
    "ViewUnavailable": "errors",
    "OpenSearchView": "opensearch.view",
    "Commit": "ports",
    "DeadLetters": "ports",
    "Entry": "ports",
    "EntrySource": "ports",
    "InvalidEntry": "ports",
    "Outcome": "ports",
    "Poll": "ports",
    "RawRecord": "ports",
    "SessionView": "ports",
    "WriteResult": "ports",
    "RunStats": "runner",
    "Runner": "runner",
    "IndexerSettings": "settings",
    "OpenSearchSettings": "settings",
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
