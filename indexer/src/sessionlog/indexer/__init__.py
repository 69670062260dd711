"""Indexer: projects the session log from Kafka into OpenSearch. May import ingest, never query.

Names are loaded on first use, so that importing a pure module such as
``sessionlog.indexer.document`` (the query side does) does not load Kafka or OpenSearch clients.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sessionlog.indexer.deadletter import DeadLetter, decode_envelope
    from sessionlog.indexer.errors import IndexerError, SourceUnavailable, ViewUnavailable
    from sessionlog.indexer.opensearch_view import OpenSearchView
    from sessionlog.indexer.settings import IndexerSettings, OpenSearchSettings
    from sessionlog.indexer.worker import IndexerWorker, WorkerStats

_WHERE = {
    "DeadLetter": "deadletter",
    "decode_envelope": "deadletter",
    "IndexerError": "errors",
    "SourceUnavailable": "errors",
    "ViewUnavailable": "errors",
    "OpenSearchView": "opensearch_view",
    "IndexerSettings": "settings",
    "OpenSearchSettings": "settings",
    "IndexerWorker": "worker",
    "WorkerStats": "worker",
}

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


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'sessionlog.indexer' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"sessionlog.indexer.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
