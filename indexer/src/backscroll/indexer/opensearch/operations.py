"""Operator actions on the OpenSearch projection: rebuild it from the Kafka topic into a new index
version, forget a session."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from backscroll.indexer.operations import Progress, RebuildReport, compact_quietly
from backscroll.indexer.runner import RunStats

if TYPE_CHECKING:
    from backscroll.indexer.settings import IndexerSettings, OpenSearchSettings
    from backscroll.ingest.settings import KafkaSettings

__all__ = ["forget_session", "rebuild"]


def rebuild(
    kafka: KafkaSettings,
    opensearch: OpenSearchSettings,
    settings: IndexerSettings,
    *,
    keep: bool = False,
    on_batch: Progress | None = None,
) -> RebuildReport:
    """Replay the topic from the beginning into a new index version while the current one keeps
    serving; move the read aliases atomically once caught up, then catch up once more.

    Nobody reads the new version during the replay, so it runs without periodic refresh or
    replicas (:func:`~backscroll.indexer.opensearch.load.bulk_load_settings`); both are restored,
    and the version refreshed, before the aliases move (and when the replay fails). The version is
    compacted (:meth:`~backscroll.indexer.opensearch.view.OpenSearchView.compact`) before it
    serves."""
    from backscroll.indexer.kafka.worker import kafka_runner
    from backscroll.indexer.opensearch.load import bulk_load_settings
    from backscroll.indexer.opensearch.view import OpenSearchView

    started = time.monotonic()
    admin_view = OpenSearchView(opensearch)
    try:
        admin_view.ensure_schema()
        old = admin_view.current_version()
        new = old + 1
        admin_view.create_version(new)
        group = settings.model_copy(
            update={"group_id": f"{settings.group_id}-rebuild-v{new}-{int(time.time())}"}
        )
        target = OpenSearchView(opensearch, pinned_version=new, retry_budget=settings.retry_budget)
        with kafka_runner(kafka, opensearch, group, view=target) as runner:

            def progress(stats: RunStats) -> None:
                if on_batch is not None:
                    on_batch(stats, runner.last_lag or 0)  # read every few seconds by the runner

            with bulk_load_settings(admin_view.client, [target.events, target.sessions], opensearch):
                runner.run(until_idle=True, on_batch=progress)
            compact_quietly(target)
            admin_view.switch_aliases(old, new)
            stats = runner.run(until_idle=True, on_batch=progress)
        if not keep:
            admin_view.delete_version(old)
        return RebuildReport(old, new, stats, time.monotonic() - started, keep)
    finally:
        admin_view.close()


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
