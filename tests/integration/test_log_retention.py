"""A truncated topic on the real Kafka: records deleted from the start of a partition (as retention
does) make ``backscroll rebuild`` refuse, ``backscroll status`` warn, and ``rebuild
--allow-truncated`` rebuild from what remains; a finite retention makes ``status`` warn."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import Pipeline
from kafka import KafkaAdminClient, KafkaConsumer, TopicPartition
from kafka.admin import ConfigResource, ConfigResourceType

from backscroll.backends.kafka_opensearch import KafkaOpenSearchBackend
from backscroll.config_docs import env_variables
from backscroll.indexer.errors import LogTruncated
from backscroll.ingest.kafka.topics import topic_retention

pytestmark = pytest.mark.integration


def _records(session: str, events: int) -> list[dict[str, Any]]:
    header = {"v": 1, "kind": "header", "workspace_id": "ws-r", "session_id": session}
    return [
        {**header, "created_at": "2026-11-05T10:00:00Z"},
        *(
            {
                **header,
                "kind": "event",
                "seq": seq,
                "type": "user/message",
                "role": "user",
                "surface": {"op": "append"},
                "time": f"2026-11-05T10:00:{seq:02d}Z",
                "text": f"line {seq} of {session}",
            }
            for seq in range(events)
        ),
    ]


def _cli(pipeline: Pipeline, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in set(env_variables())}
    env.update(
        BACKSCROLL_BACKEND="kafka-opensearch",
        BACKSCROLL_KAFKA_BOOTSTRAP_SERVERS=pipeline.kafka.bootstrap_servers,
        BACKSCROLL_KAFKA_TOPIC=pipeline.kafka.topic,
        BACKSCROLL_OPENSEARCH_URL=pipeline.opensearch.url,
        BACKSCROLL_OPENSEARCH_INDEX_PREFIX=pipeline.opensearch.index_prefix,
        BACKSCROLL_INDEXER_GROUP_ID=pipeline.indexer.group_id,
        COLUMNS="200",
        NO_COLOR="1",
    )
    return subprocess.run(
        [sys.executable, "-m", "backscroll.cli.main", *args],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )


def _truncate(pipeline: Pipeline, count: int) -> tuple[int, int]:
    """Delete the first ``count`` records of the first partition holding more: (partition, offset)."""
    consumer = KafkaConsumer(**pipeline.kafka.client_config())
    try:
        topic = pipeline.kafka.topic
        parts = [TopicPartition(topic, p) for p in sorted(consumer.partitions_for_topic(topic) or ())]
        ends = consumer.end_offsets(parts)
    finally:
        consumer.close()
    target = next(tp for tp in parts if ends[tp] > count)
    admin = KafkaAdminClient(**pipeline.kafka.client_config())
    try:
        admin.delete_records({target: count})
    finally:
        admin.close()
    return target.partition, count


def test_a_topic_backscroll_creates_keeps_every_record(pipeline: Pipeline) -> None:
    assert topic_retention(pipeline.kafka) == {"retention.ms": "-1", "retention.bytes": "-1"}


def test_a_truncated_topic_refuses_rebuild_warns_in_status_and_rebuilds_when_allowed(
    pipeline: Pipeline, tmp_path: Path
) -> None:
    pipeline.append_all(_records("s-r1", 10) + _records("s-r2", 10))
    assert pipeline.index().indexed == 20
    clean = _cli(pipeline, tmp_path, "status")
    assert clean.returncode == 0 and "warning:" not in clean.stdout, clean

    partition, first = _truncate(pipeline, 4)
    backend = KafkaOpenSearchBackend(pipeline.kafka, pipeline.opensearch, pipeline.indexer)
    retention = backend.log_retention()
    assert not retention.complete and retention.truncated == {partition: first}
    with pytest.raises(LogTruncated):
        backend.rebuild()

    refused = _cli(pipeline, tmp_path, "rebuild")
    assert refused.returncode == 1, refused
    lines = [line for line in refused.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "BACKSCROLL_LOG_TRUNCATED" in lines[0], refused.stderr
    assert f"partition {partition} starts at offset {first}" in lines[0]
    assert "--allow-truncated" in lines[0] and "Traceback" not in refused.stderr
    assert pipeline.view().current_version() == 1  # nothing was touched

    status = _cli(pipeline, tmp_path, "status")
    assert status.returncode == 0, status
    warning = f"warning: the log is truncated (partition {partition} starts at offset {first}: its first"
    assert warning in status.stdout

    allowed = _cli(pipeline, tmp_path, "rebuild", "--allow-truncated")
    assert allowed.returncode == 0, allowed
    assert "rebuilt v1 → v2" in allowed.stdout and "from a truncated topic" in allowed.stdout
    assert pipeline.view().current_version() == 2


def test_status_warns_about_a_finite_retention(pipeline: Pipeline, tmp_path: Path) -> None:
    pipeline.append_all(_records("s-r1", 2))
    admin = KafkaAdminClient(**pipeline.kafka.client_config())
    try:
        admin.alter_configs(
            [
                ConfigResource(
                    ConfigResourceType.TOPIC, pipeline.kafka.topic, configs={"retention.ms": "86400000"}
                )
            ]
        )
    finally:
        admin.close()
    status = _cli(pipeline, tmp_path, "status")
    assert status.returncode == 0, status
    assert "warning: the log's retention is finite (retention.ms=86400000)" in status.stdout
