"""Fixtures for tests against the real Kafka and OpenSearch started by ``backscroll up``.

Each test gets its own topic, index prefix and consumer group, so tests never see each other's data.
"""

from __future__ import annotations

import os
import socket
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import pytest
from kafka import KafkaAdminClient

from backscroll.indexer import IndexerSettings, OpenSearchSettings, OpenSearchView, RunStats, kafka_runner
from backscroll.ingest import Appender, KafkaSettings, dlq_topic, ensure_topics
from backscroll.query import OpenSearchProvider, Scope


def _reachable(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=1):
            return True
    except OSError:
        return False


@pytest.fixture(scope="session", autouse=True)
def _stack() -> None:
    kafka = KafkaSettings().bootstrap_servers.split(",")[0].rsplit(":", 1)
    os_url = OpenSearchSettings().url.split(",")[0].split("//", 1)[1].rsplit(":", 1)
    missing = [
        name
        for name, (host, port) in (("Kafka", kafka), ("OpenSearch", os_url))
        if not _reachable(host, int(port))
    ]
    if missing:
        message = f"{' and '.join(missing)} not reachable: run `backscroll up` first"
        if os.environ.get("BACKSCROLL_REQUIRE_STACK") == "1":
            pytest.fail(message)
        pytest.skip(message)


@dataclass
class Pipeline:
    """An isolated topic + index prefix + consumer group on the real servers."""

    name: str
    kafka: KafkaSettings
    opensearch: OpenSearchSettings
    indexer: IndexerSettings
    _closables: list[Any] = field(default_factory=list)

    def appender(self) -> Appender:
        appender = Appender(self.kafka)
        self._closables.append(appender)
        return appender

    def append_all(self, records: list[dict[str, Any]]) -> None:
        with Appender(self.kafka) as appender:
            handles = [appender.append(r) for r in records]
            appender.flush(timeout=60)
            for handle in handles:
                handle.result(timeout=30)

    def index(self) -> RunStats:
        with kafka_runner(self.kafka, self.opensearch, self.indexer) as runner:
            return runner.run(until_idle=True)

    def provider(self, scope: Scope, **kwargs: Any) -> OpenSearchProvider:
        provider = OpenSearchProvider(scope, self.opensearch, **kwargs)
        self._closables.append(provider)
        return provider

    def view(self) -> OpenSearchView:
        view = OpenSearchView(self.opensearch)
        self._closables.append(view)
        return view

    def cleanup(self) -> None:
        for closable in self._closables:
            closable.close()
        view = OpenSearchView(self.opensearch)
        try:
            view.drop()
        finally:
            view.close()
        admin = KafkaAdminClient(**self.kafka.client_config())
        try:
            existing = set(admin.list_topics())
            doomed = [t for t in (self.kafka.topic, dlq_topic(self.kafka.topic)) if t in existing]
            if doomed:
                admin.delete_topics(doomed)
        finally:
            admin.close()


@contextmanager
def make_pipeline() -> Iterator[Pipeline]:
    """A fresh isolated pipeline, removed (indices and topics) afterwards."""
    name = f"t{uuid.uuid4().hex[:10]}"
    kafka = KafkaSettings().model_copy(update={"topic": f"backscroll.test.{name}", "partitions": 3})
    opensearch = OpenSearchSettings().model_copy(update={"index_prefix": f"test-{name}"})
    indexer = IndexerSettings().model_copy(update={"group_id": f"test-{name}"})
    ensure_topics(kafka)
    pipe = Pipeline(name, kafka, opensearch, indexer)
    try:
        yield pipe
    finally:
        pipe.cleanup()


@pytest.fixture
def pipeline() -> Iterator[Pipeline]:
    with make_pipeline() as pipe:
        yield pipe
