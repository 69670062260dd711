"""The kafka-opensearch backend: agents append to a Kafka topic, indexer workers project it into
OpenSearch (index versions behind read aliases), dead letters go to a DLQ topic."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from backscroll.backends.base import Backend, BackendName, BackendSettings, settings_from_env
from backscroll.backends.reports import (
    Forgotten,
    Health,
    LogRetention,
    PartitionLag,
    Rebuilt,
    WorkspaceCount,
    session_not_found,
)

if TYPE_CHECKING:
    from backscroll.backends.base import RebuildProgress
    from backscroll.indexer.ports import DeadLetters
    from backscroll.indexer.runner import Runner
    from backscroll.indexer.settings import IndexerSettings, OpenSearchSettings
    from backscroll.ingest.entry_log import EntryLog
    from backscroll.ingest.export import LogExport
    from backscroll.ingest.records import LogRecord
    from backscroll.ingest.settings import KafkaSettings
    from backscroll.query import AsyncSearchProvider, OpenSearchProvider, OpenSearchSessionReader, Scope
    from backscroll.query.reads.async_reader import AsyncSessionReader

__all__ = ["KafkaOpenSearchBackend"]


def _kafka() -> KafkaSettings:
    from backscroll.ingest.settings import KafkaSettings

    return KafkaSettings()


def _opensearch() -> OpenSearchSettings:
    from backscroll.indexer.settings import OpenSearchSettings

    return settings_from_env(OpenSearchSettings)


def _indexer() -> IndexerSettings:
    from backscroll.indexer.settings import IndexerSettings

    return settings_from_env(IndexerSettings)


@dataclass(frozen=True, repr=False)
class KafkaOpenSearchBackend(Backend):
    """The topic of ``kafka``, the indexes of ``opensearch`` and the workers' ``indexer`` settings
    (each read from the environment when not given)."""

    kafka: KafkaSettings = field(default_factory=_kafka)
    opensearch: OpenSearchSettings = field(default_factory=_opensearch)
    indexer: IndexerSettings = field(default_factory=_indexer)

    name: ClassVar[BackendName] = "kafka-opensearch"
    keeps_index_versions: ClassVar[bool] = True

    @classmethod
    def from_settings(cls, settings: BackendSettings | None = None) -> KafkaOpenSearchBackend:
        """The servers configured in the environment (and ``.env``)."""
        return cls(**(settings.query_options() if settings is not None else {}))

    def describe(self) -> str:
        from backscroll.ingest.redact import redact_secrets

        return redact_secrets(
            f"kafka-opensearch (Kafka {self.kafka.bootstrap_servers} topic {self.kafka.topic}, "
            f"OpenSearch {self.opensearch.url} prefix {self.opensearch.index_prefix})"
        )

    # -- factories --------------------------------------------------------------------------------
    def open_log(self, *, live: bool = True, spool_when_down: bool = False) -> EntryLog:
        """The appender (the topic is created if missing). With ``spool_when_down`` and the
        brokers out of reach, the appender still opens when it has a spool: the entries wait there,
        and an appender opened later, when the brokers answer, creates the topic and sends them."""
        from backscroll.ingest.errors import LogUnavailable
        from backscroll.ingest.kafka.appender import Appender
        from backscroll.ingest.kafka.topics import ensure_topics
        from backscroll.ingest.settings import AppenderSettings

        options = settings_from_env(AppenderSettings)
        try:
            ensure_topics(self.kafka)
        except LogUnavailable:
            if not (spool_when_down and options.spool):
                raise
        if not live:
            options = options.model_copy(update={"live_max_per_session": 0})
        return Appender(self.kafka, options)

    def open_indexer(self, *, metrics_port: int | None = None) -> Runner:
        from backscroll.indexer.kafka.worker import kafka_runner

        settings = self.indexer
        if metrics_port is not None:
            settings = settings.model_copy(update={"metrics_port": metrics_port})
        return kafka_runner(self.kafka, self.opensearch, settings)

    def _no_kafka_here(self) -> str | None:
        """Why this process has no Kafka to read, or None. A process given an OpenSearch login but
        no Kafka settings at all is a query-only one (a console holding query credentials): the
        default 127.0.0.1:9092 would be a guess, and lag or dead letters read there a wrong answer."""
        if self.opensearch.username is None or self.kafka.sasl_username is not None:
            return None
        if "bootstrap_servers" in self.kafka.model_fields_set:
            return None
        return (
            "Kafka is not configured in this process (BACKSCROLL_KAFKA_BOOTSTRAP_SERVERS is unset, "
            "only OpenSearch credentials are): indexer lag and dead letters need the operator's settings"
        )

    def open_dead_letters(self) -> DeadLetters:
        from backscroll.indexer.errors import SourceUnavailable
        from backscroll.indexer.kafka.deadletters import KafkaDeadLetters

        missing = self._no_kafka_here()
        if missing is not None:
            raise SourceUnavailable(missing)
        return KafkaDeadLetters(self.kafka)

    def open_provider(self, scope: Scope, **kwargs: Any) -> OpenSearchProvider:
        from backscroll.query import OpenSearchProvider

        return OpenSearchProvider(scope, self.opensearch, **self._query_options(kwargs))

    def open_async_provider(self, scope: Scope, **kwargs: Any) -> AsyncSearchProvider:
        from backscroll.query.opensearch.async_provider import AsyncOpenSearchProvider

        return AsyncOpenSearchProvider(scope, self.opensearch, **self._query_options(kwargs))

    def open_reader(self, scope: Scope, **kwargs: Any) -> OpenSearchSessionReader:
        from backscroll.query import OpenSearchSessionReader

        return OpenSearchSessionReader(scope, self.opensearch, **kwargs)

    def open_async_reader(self, scope: Scope, **kwargs: Any) -> AsyncSessionReader:
        """Native on ``AsyncOpenSearch``."""
        from backscroll.query.opensearch.async_reader import AsyncOpenSearchReader

        return AsyncOpenSearchReader(scope, self.opensearch, **kwargs)

    # -- operator operations ----------------------------------------------------------------------
    def health(self) -> Health:
        """The indexer group's committed offsets against the topic's end offsets, and the
        watermark the workers publish in OpenSearch."""
        from backscroll.indexer.errors import IndexerError
        from backscroll.indexer.kafka.progress import PartitionProgress, group_progress
        from backscroll.indexer.opensearch.view import OpenSearchView

        out = Health(backend=self.describe())
        progress: dict[int, PartitionProgress] = {}
        missing = self._no_kafka_here()
        try:
            if missing is not None:
                out.problems.append(missing)
            else:
                progress = {p.partition: p for p in group_progress(self.kafka, self.indexer.group_id)}
        except IndexerError as err:
            out.problems.append(str(err))
        marks: dict[int, dict[str, Any]] = {}
        try:
            view = OpenSearchView(self.opensearch)
            try:
                marks = view.read_watermarks(self.kafka.topic)
            finally:
                view.close()
        except Exception as err:  # opensearch-py and the view's typed errors: shown, never raised
            out.problems.append(f"OpenSearch {self.opensearch.url}: cannot read the watermark: {err}")
        now_ms = time.time() * 1000
        stale: list[float] = []
        for partition in sorted(set(progress) | set(marks)):
            mark = marks.get(partition, {})
            known = progress.get(partition)
            end = known.end_offset if known is not None else 0
            done = known.committed if known is not None else None
            lag = None if known is None else end - (done or 0)
            out.partitions.append(
                PartitionLag(
                    partition,
                    end,
                    done,
                    lag,
                    watermark_offset=mark.get("offset"),
                    watermark_record_ms=mark.get("record_time_ms"),
                    watermark_published_ms=mark.get("published_ms"),
                )
            )
            if lag and mark.get("record_time_ms") is not None:
                stale.append(max(0.0, (now_ms - float(mark["record_time_ms"])) / 1000.0))
        if progress and not out.problems:
            out.freshness_s = max(stale) if stale else 0.0
        return out

    def workspaces(self) -> list[WorkspaceCount]:
        from backscroll.query.opensearch.catalog import workspace_counts

        return [WorkspaceCount(*row) for row in workspace_counts(self.opensearch)]

    def workspace_of(self, session_id: str) -> str | None:
        from backscroll.query.opensearch.catalog import workspace_of

        return workspace_of(self.opensearch, session_id)

    def forget(self, session_id: str) -> Forgotten:
        from backscroll.indexer.opensearch.operations import forget_session

        known = self.workspace_of(session_id) is not None
        events = forget_session(self.opensearch, session_id)
        if not known and not events:
            raise session_not_found(session_id)
        return Forgotten(
            session_id, events, "the Kafka topic keeps its records until retention (see docs/operations.md)"
        )

    def export(self, job: LogExport) -> Iterator[LogRecord]:
        from backscroll.ingest.kafka.export import export_kafka

        return export_kafka(self.kafka, job)

    def drop(self) -> list[str]:
        """Delete the topic and its dead-letter topic, the indexer's consumer group (its workers
        must have stopped) and every index of the prefix."""
        from backscroll.indexer.kafka.progress import delete_group
        from backscroll.indexer.opensearch.view import OpenSearchView
        from backscroll.ingest.kafka.topics import delete_topics

        dropped = [f"topic {name}" for name in delete_topics(self.kafka)]
        if delete_group(self.kafka, self.indexer.group_id):
            dropped.append(f"consumer group {self.indexer.group_id}")
        view = OpenSearchView(self.opensearch)
        try:
            view.drop()
        finally:
            view.close()
        dropped.append(f"indices {self.opensearch.index_prefix}-*")
        return dropped

    def log_retention(self) -> LogRetention:
        """The topic's first retained offset on every partition (``beginning_offsets``) and its
        ``retention.ms``/``retention.bytes`` as the brokers apply them (``DescribeConfigs``)."""
        from backscroll.indexer.kafka.errors import kafka_edge
        from backscroll.indexer.kafka.progress import earliest_offsets
        from backscroll.ingest.kafka.topics import topic_retention

        firsts = earliest_offsets(self.kafka)
        if not firsts:  # no topic yet: nothing appended, nothing lost
            return LogRetention()
        with kafka_edge(f"Kafka {self.kafka.bootstrap_servers}: topic {self.kafka.topic}", kafka=self.kafka):
            configs = topic_retention(self.kafka)
        return LogRetention(
            truncated={p: first for p, first in firsts.items() if first > 0},
            finite={name: value for name, value in configs.items() if value != "-1"},
        )

    def rebuild(
        self,
        *,
        keep: bool = False,
        on_batch: RebuildProgress | None = None,
        allow_truncated: bool = False,
    ) -> Rebuilt:
        """A new index version, replayed from the start of the topic while the current one serves;
        the read aliases switch atomically; the old version is deleted unless ``keep``. A topic
        whose first records are gone is :class:`LogTruncated` unless ``allow_truncated``."""
        from backscroll.indexer.errors import LogTruncated
        from backscroll.indexer.kafka.progress import earliest_offsets
        from backscroll.indexer.kafka.worker import rebuild

        retention = LogRetention(truncated={p: o for p, o in earliest_offsets(self.kafka).items() if o > 0})
        if not retention.complete and not allow_truncated:
            raise LogTruncated(
                f"topic {self.kafka.topic} is truncated ({retention.gone()}), so a rebuild cannot "
                "restore those records. Run `backscroll rebuild --allow-truncated` to rebuild from what "
                "remains: their entries will then be missing from the new projection (add --keep to keep "
                "the current version as well); see docs/operations.md, Retention"
            )
        report = rebuild(self.kafka, self.opensearch, self.indexer, keep=keep, on_batch=on_batch)
        summary = (
            f"rebuilt v{report.old_version} → v{report.new_version}: {report.stats.indexed} events "
            f"in {report.seconds:.1f}s ({'kept' if keep else 'deleted'} v{report.old_version})"
        )
        if not retention.complete:
            summary += (
                f"; from a truncated topic ({retention.gone()}): their entries are missing from the "
                "new projection"
            )
        return Rebuilt(report, summary)
