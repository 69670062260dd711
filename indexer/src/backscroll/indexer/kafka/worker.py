"""The Kafka + OpenSearch runner: a consumer-group member projecting the topic into OpenSearch."""

from __future__ import annotations

from backscroll.indexer.kafka.deadletters import KafkaDeadLetters
from backscroll.indexer.kafka.source import KafkaSource
from backscroll.indexer.opensearch.view import OpenSearchView
from backscroll.indexer.runner import Runner
from backscroll.indexer.settings import IndexerSettings, OpenSearchSettings
from backscroll.ingest.settings import KafkaSettings

__all__ = ["kafka_runner"]


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
