"""An agent that only appends installs ``backscroll-ingest`` alone and can append to Kafka.

A new virtual environment gets ``pip install ./ingest`` (with CI's constraints), nothing else; a
small script there appends to an isolated topic on the shared Kafka, reads the records back, and
proves the query/indexer/CLI dependencies (and the optional zstandard) are not installed.
"""

from __future__ import annotations

import subprocess
import textwrap
import uuid
import venv
from pathlib import Path

from backscroll.ingest import KafkaSettings

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = textwrap.dedent(
    """
    import importlib.util, sys
    from kafka import KafkaConsumer, TopicPartition
    from backscroll.ingest import Appender, AppenderSettings, KafkaSettings, ensure_topics
    from backscroll.ingest.kafka.appender import producer_config

    absent = ["opensearchpy", "typer", "rich", "prometheus_client", "rapidfuzz", "zstandard"]
    present = [name for name in absent if importlib.util.find_spec(name) is not None]
    assert not present, f"installed although ingest does not need them: {present}"
    assert importlib.util.find_spec("backscroll.indexer") is None
    assert importlib.util.find_spec("backscroll.query") is None

    settings = KafkaSettings(bootstrap_servers=sys.argv[1], topic=sys.argv[2], partitions=1)
    assert producer_config(settings)["compression_type"] != "zstd"
    ensure_topics(settings)
    options = AppenderSettings(spool_dir=sys.argv[3])
    with Appender(settings, options) as log:
        with log.session("ws-fresh", "s-fresh") as writer:
            writer.header()
            handles = [writer.append(type="user/message", role="user", surface={"op": "append"}, text=f"m{i}")
                       for i in range(3)]
        log.flush(timeout=60)
        positions = [h.result(timeout=30) for h in handles]
    consumer = KafkaConsumer(**settings.client_config(), group_id=None, enable_auto_commit=False)
    tp = TopicPartition(settings.topic, 0)
    consumer.assign([tp])
    consumer.seek_to_beginning(tp)
    end = consumer.end_offsets([tp])[tp]
    seen = []
    while len(seen) < end:
        for batch in consumer.poll(timeout_ms=1000).values():
            seen.extend(batch)
    consumer.close()
    assert [m.key for m in seen] == [b"s-fresh"] * 4, seen
    assert [p.offset for p in positions] == [1, 2, 3]
    print("appended", len(seen))
    """
)


def _run(args: list[str], cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, capture_output=True, text=True, check=False, timeout=600, cwd=cwd)


def test_only_the_ingest_distribution_appends_to_kafka(tmp_path: Path) -> None:
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    python = str(env_dir / "bin" / "python")
    installed = _run(
        [python, "-m", "pip", "install", "-q", "-c", str(ROOT / "constraints.txt"), str(ROOT / "ingest")]
    )
    assert installed.returncode == 0, installed.stderr
    topic = f"backscroll.test.fresh-{uuid.uuid4().hex[:10]}"
    servers = KafkaSettings().bootstrap_servers
    script = tmp_path / "append.py"
    script.write_text(SCRIPT)
    try:
        done = _run([python, str(script), servers, topic, str(tmp_path / "spool")], cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() == "appended 4"
    finally:
        from kafka import KafkaAdminClient

        admin = KafkaAdminClient(**KafkaSettings().client_config())
        try:
            doomed = [t for t in (topic, f"{topic}.dlq") if t in set(admin.list_topics())]
            if doomed:
                admin.delete_topics(doomed)
        finally:
            admin.close()
