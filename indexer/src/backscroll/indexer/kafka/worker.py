"""The Kafka + OpenSearch runner: a consumer-group member projecting the topic into OpenSearch, and
the rebuild that replays the topic into a new index version.

The one module of the indexer that joins two backends: its source is Kafka and its view OpenSearch."""

from __future__ import annotations

import time

from backscroll.indexer.kafka.deadletters import KafkaDeadLetters
from backscroll.indexer.kafka.source import KafkaSource
from backscroll.indexer.opensearch.view import OpenSearchView
from backscroll.indexer.operations import Progress, RebuildReport, compact_quietly
from backscroll.indexer.runner import Runner, RunStats
from backscroll.indexer.settings import IndexerSettings, OpenSearchSettings
from backscroll.ingest.settings import KafkaSettings

__all__ = ["kafka_runner", "rebuild"]


def kafka_runner(
    kafka: KafkaSettings | None = None,
    opensearch: OpenSearchSettings | None = None,
    settings: IndexerSettings | None = None,
    *,
    view: OpenSearchView | None = None,
    watermark_interval_s: float = 1.0,
    behind_watermark_interval_s: float = 5.0,
) -> Runner:
    """A :class:`Runner` over the topic (group ``settings.group_id``), the OpenSearch view (or
    ``view``, e.g. a pinned rebuild target) and the DLQ topic. Nothing connects before the first
    batch."""
    kafka = kafka or KafkaSettings()
    settings = settings or IndexerSettings()
    view = view or OpenSearchView(opensearch or OpenSearchSettings(), retry_budget=settings.retry_budget)
    return Runner(
        KafkaSource(kafka, settings),
        view,
        KafkaDeadLetters(kafka),
        batch_max=settings.batch_max,
        poll_timeout_s=settings.poll_timeout_ms / 1000,
        idle_timeout_s=settings.idle_timeout_s,
        watermark_interval_s=watermark_interval_s,
        behind_watermark_interval_s=behind_watermark_interval_s,
        metrics_port=settings.metrics_port,
        metrics_host=settings.metrics_host,
        pipeline=True,
        write_lanes=view.parallelism,
    )


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
    from backscroll.indexer.opensearch.load import bulk_load_settings

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
