"""Operator actions on the OpenSearch projection: forget a session. (A rebuild replays the Kafka topic
into a new index version: :func:`backscroll.indexer.kafka.worker.rebuild`.)"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from backscroll.indexer.settings import OpenSearchSettings

__all__ = ["forget_session"]


def forget_session(opensearch: OpenSearchSettings, session_id: str) -> int:
    """Delete a session's documents from the OpenSearch projection; how many events were deleted.

    The Kafka topic still holds the records until retention removes them (or, on a compacted
    topic, until tombstones for every key are compacted); a rebuild would bring them back until then."""
    from backscroll.indexer.opensearch.view import OpenSearchView

    view = OpenSearchView(opensearch)
    try:
        return view.forget_session(session_id)
    finally:
        view.close()
