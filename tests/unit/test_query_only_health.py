"""A process holding only OpenSearch query credentials (a tenant's console) reads no Kafka: the
health page says lag and dead letters need the operator's settings instead of reading them from
the default 127.0.0.1:9092, which would describe some other log or none."""

from __future__ import annotations

import pytest
from pydantic import SecretStr

from backscroll.backends import KafkaOpenSearchBackend
from backscroll.indexer.errors import SourceUnavailable
from backscroll.indexer.kafka import progress
from backscroll.indexer.settings import OpenSearchSettings
from backscroll.ingest.settings import KafkaSettings


def _query_only(monkeypatch: pytest.MonkeyPatch) -> KafkaOpenSearchBackend:
    monkeypatch.delenv("BACKSCROLL_KAFKA_BOOTSTRAP_SERVERS", raising=False)

    def no_kafka(*_: object, **__: object) -> object:
        raise AssertionError("read Kafka at the default address")

    monkeypatch.setattr(progress, "group_progress", no_kafka)
    opensearch = OpenSearchSettings(url="http://127.0.0.1:9", username="sl-query", password=SecretStr("x"))
    return KafkaOpenSearchBackend(kafka=KafkaSettings(), opensearch=opensearch)


def test_health_names_the_missing_kafka_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    facts = _query_only(monkeypatch).health()
    assert any("BACKSCROLL_KAFKA_BOOTSTRAP_SERVERS is unset" in p for p in facts.problems)
    assert not facts.partitions


def test_dead_letters_are_refused_with_the_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(SourceUnavailable, match="operator's settings"):
        _query_only(monkeypatch).dead_letters()


def test_configured_kafka_is_read(monkeypatch: pytest.MonkeyPatch) -> None:
    backend = _query_only(monkeypatch)
    configured = KafkaOpenSearchBackend(
        kafka=KafkaSettings(bootstrap_servers="127.0.0.1:9"), opensearch=backend.opensearch
    )
    assert configured._no_kafka_here() is None
