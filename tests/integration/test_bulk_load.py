"""Bulk-load settings (no periodic refresh, no replicas) are put back after a load, even a failed
one, and a rebuild leaves its new version with the normal settings (real OpenSearch)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from tests.integration.conftest import Pipeline

from backscroll.indexer.kafka.worker import rebuild
from backscroll.indexer.opensearch.load import bulk_load_settings
from backscroll.indexer.opensearch.mappings import PERIODIC_REFRESH

_T0 = datetime(2026, 11, 3, tzinfo=UTC)


def _settings(pipeline: Pipeline, index: str) -> tuple[str, str]:
    flat = pipeline.view().client.indices.get_settings(index=index, flat_settings=True)[index]["settings"]
    return flat.get("index.refresh_interval", "default"), flat.get("index.number_of_replicas")


def _index(pipeline: Pipeline, suffix: str, refresh: str) -> str:
    name = f"{pipeline.opensearch.index_prefix}-events-v9{suffix}"
    body = {"settings": {"number_of_shards": 1, "number_of_replicas": 0, "refresh_interval": refresh}}
    pipeline.view().client.indices.create(index=name, body=body)
    return name


def test_load_settings_are_restored_after_a_load(pipeline: Pipeline) -> None:
    a, b = _index(pipeline, "a", "1s"), _index(pipeline, "b", "7s")
    client = pipeline.view().client
    with bulk_load_settings(client, [a, b]):
        assert _settings(pipeline, a) == ("-1", "0") and _settings(pipeline, b) == ("-1", "0")
        client.index(index=a, id="1", body={"x": 1})
    assert _settings(pipeline, a) == ("1s", "0") and _settings(pipeline, b) == ("7s", "0")
    assert client.count(index=a)["count"] == 1  # refreshed on the way out


def test_load_settings_are_restored_when_the_load_fails(pipeline: Pipeline) -> None:
    a = _index(pipeline, "c", "2s")
    with pytest.raises(RuntimeError, match="load broke"), bulk_load_settings(pipeline.view().client, [a]):
        assert _settings(pipeline, a)[0] == "-1"
        raise RuntimeError("load broke")
    assert _settings(pipeline, a) == ("2s", "0")


def _event(sid: str, seq: int) -> dict[str, Any]:
    return {
        "v": 1,
        "kind": "event",
        "workspace_id": "ws-load",
        "session_id": sid,
        "seq": seq,
        "type": "user/message",
        "role": "user",
        "surface": {"op": "append"},
        "time": (_T0 + timedelta(seconds=seq)).isoformat(),
        "text": f"bulk load entry {seq} of {sid}",
    }


def test_a_rebuild_leaves_normal_settings_on_the_new_version(pipeline: Pipeline) -> None:
    pipeline.append_all([_event(f"bl-{s}", q) for s in range(3) for q in range(30)])
    pipeline.index()
    lags: list[int] = []
    report = rebuild(
        pipeline.kafka, pipeline.opensearch, pipeline.indexer, on_batch=lambda _s, lag: lags.append(lag)
    )
    assert report.stats.indexed == 90 and lags
    prefix = pipeline.opensearch.index_prefix
    for index in (f"{prefix}-events-v2", f"{prefix}-sessions-v2"):
        assert _settings(pipeline, index) == (PERIODIC_REFRESH, "0")
    # compacted before it took the aliases: one segment per index
    segments = pipeline.view().client.cat.segments(index=f"{prefix}-events-v2", format="json")
    assert len(segments) == 1, segments
