"""``backscroll export`` on Kafka: a session's partition read to its end offset, a workspace's topic."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
from conftest import Pipeline
from kafka import KafkaProducer

from backscroll.ingest.export import LogExport
from backscroll.ingest.kafka.export import export_kafka


def _event(sid: str, seq: int, ws: str = "ws-e") -> dict[str, Any]:
    return {
        "v": 1,
        "kind": "event",
        "workspace_id": ws,
        "session_id": sid,
        "seq": seq,
        "type": "user/message",
        "role": "user",
        "surface": {"op": "append"},
        "time": "2026-11-02T10:00:00Z",
        "text": f"{sid} entry {seq}",
    }


def _fill(pipeline: Pipeline) -> list[dict[str, Any]]:
    records = [_event(f"s-{n}", seq) for seq in range(4) for n in range(6)] + [
        _event("o-1", 0, ws="ws-other")
    ]
    pipeline.append_all(records)
    producer = KafkaProducer(**pipeline.kafka.client_config())
    try:  # a foreign writer's garbage under a session's key: skipped and counted
        producer.send(pipeline.kafka.topic, key=b"s-1", value=b"not json").get(timeout=30)
    finally:
        producer.close()
    return records


def test_export_reads_a_session_in_order_and_a_workspace_across_partitions(pipeline: Pipeline) -> None:
    records = _fill(pipeline)
    job = LogExport(session_id="s-1")
    got = list(export_kafka(pipeline.kafka, job))
    assert [orjson.loads(r.value or b"")["seq"] for r in got] == [0, 1, 2, 3]
    assert len({r.partition for r in got}) == 1 and (job.exported, job.skipped) == (4, 1)

    job = LogExport(workspace_id="ws-e")
    got = list(export_kafka(pipeline.kafka, job))
    decoded = [orjson.loads(r.value or b"") for r in got]
    assert sorted((d["session_id"], d["seq"]) for d in decoded) == sorted(
        (r["session_id"], r["seq"]) for r in records if r["workspace_id"] == "ws-e"
    )
    for sid in {d["session_id"] for d in decoded}:
        assert [d["seq"] for d in decoded if d["session_id"] == sid] == [0, 1, 2, 3]


def test_export_cli_follows_the_kafka_backend(pipeline: Pipeline, tmp_path: Path) -> None:
    _fill(pipeline)
    env = {k: v for k, v in os.environ.items() if not k.startswith("BACKSCROLL_")}
    env.update(
        BACKSCROLL_BACKEND="kafka-opensearch",
        BACKSCROLL_KAFKA_BOOTSTRAP_SERVERS=pipeline.kafka.bootstrap_servers,
        BACKSCROLL_KAFKA_TOPIC=pipeline.kafka.topic,
        # never contacted by export: an address nothing listens on proves it
        BACKSCROLL_OPENSEARCH_URL="http://127.0.0.1:1",
        NO_COLOR="1",
    )
    done = subprocess.run(
        [sys.executable, "-m", "backscroll.cli.main", "export", "s-2"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert [orjson.loads(line)["seq"] for line in done.stdout.splitlines()] == [0, 1, 2, 3]
    missing = subprocess.run(
        [sys.executable, "-m", "backscroll.cli.main", "export", "s-1"],
        env={**env, "BACKSCROLL_KAFKA_TOPIC": f"{pipeline.kafka.topic}.nope"},
        cwd=tmp_path,
        capture_output=True,
        timeout=120,
    )
    assert missing.returncode == 1 and b"does not exist" in missing.stderr, missing.stderr
