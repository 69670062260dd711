"""The console on the kafka-opensearch backend (real Kafka and OpenSearch, an isolated pipeline)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import replace

import orjson
import pytest
from kafka import KafkaProducer
from tests.console.conftest import (
    CURSOR_KEY,
    FULL_TOKEN,
    LIMITED_TOKEN,
    PAGING_MATCHES,
    corpus_records,
    grants,
    live_console,
)
from tests.console.http import call
from tests.integration.conftest import Pipeline, make_pipeline

from backscroll.backends import Backend, KafkaOpenSearchBackend

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def base() -> Iterator[str]:
    with make_pipeline() as pipe:
        pipe.append_all(list(corpus_records()))
        producer = KafkaProducer(**pipe.kafka.client_config())
        try:  # one record the indexer must park (with its workspace, so limits apply to it too)
            bad = {"v": 1, "kind": "event", "workspace_id": "ws-b", "session_id": "s-bad"}
            producer.send(pipe.kafka.topic, key=b"s-bad", value=orjson.dumps(bad)).get(timeout=30)
        finally:
            producer.close()
        pipe.index()
        with live_console(_backend(pipe), grants()) as url:
            yield url


def _backend(pipe: Pipeline) -> Backend:
    backend = KafkaOpenSearchBackend(pipe.kafka, pipe.opensearch, pipe.indexer)
    return replace(backend, cursor_key=CURSOR_KEY)


def test_typo_search_paging_and_limits_on_the_stack(base: str) -> None:
    body = call(base + "/search?q=revnue+forcast+zurich", token=FULL_TOKEN).body
    assert "s-alpha" in body and "<mark>Zürich</mark>" in body
    assert "s-secret" in call(base + "/search?q=revnue+forcast", token=FULL_TOKEN).body
    limited = call(base + "/search?q=revnue+forcast", token=LIMITED_TOKEN).body
    assert "s-alpha" in limited and "s-secret" not in limited
    assert call(base + "/session/s-secret/export.jsonl", token=LIMITED_TOKEN).status == 404
    seen: list[str] = []
    url: str | None = base + "/search?q=zeppelin"
    while url is not None:
        reply = call(url, token=FULL_TOKEN)
        assert reply.status == 200
        seen += re.findall(r'data-entry="([^"]+)"', reply.body)
        found = re.search(r'<a href="([^"]+)" id="next"', reply.body)
        url = base + found.group(1).replace("&amp;", "&") if found else None
    assert len(seen) == PAGING_MATCHES == len(set(seen))


def test_session_view_and_export_on_the_stack(base: str) -> None:
    page = call(base + "/session/s-grandchild", token=FULL_TOKEN).body
    assert 'href="/session/s-alpha"' in page and 'href="/session/s-child"' in page
    assert 'id="lineage-cycle"' in call(base + "/session/s-cycle-1", token=FULL_TOKEN).body
    lines = call(base + "/session/s-alpha/export.jsonl", token=FULL_TOKEN).body.splitlines()
    surfaces = [orjson.loads(line)["surface"] for line in lines[1:]]
    assert surfaces == ["shadowed", "log-only", "shadowed", "current", "current", "current"]


def test_health_shows_partitions_dead_letters_and_counts_on_the_stack(base: str) -> None:
    full = call(base + "/health", token=FULL_TOKEN).body
    assert len(re.findall(r"<tr><td>\d+</td>", full)) == 3  # three partitions
    assert 'id="total-lag">0<' in full
    assert "s-bad" in full and 'data-workspace="ws-b"' in full
    limited = call(base + "/health", token=LIMITED_TOKEN).body
    assert "s-bad" not in limited and "ws-b" not in limited
