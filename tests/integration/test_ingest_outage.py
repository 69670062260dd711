"""The appender against the real broker, with real outages (deploy/local/stack.sh).

* A fleet of appender processes keeps appending while Kafka is stopped for 20 s: every event
  reaches the topic exactly once per (session, seq), in per-session order, and is indexed once;
  no append() call blocked longer than the configured timeout. Size: ``BACKSCROLL_FLEET_SCALE``
  (default 0.1 → 5 processes × at least 200 events; 1 → the full fleet, 50 × 2,000). The processes and
  the test synchronise through files (every process appending before the broker stops; each goes
  on until it appended after the broker was back), never through wall-clock estimates.
* kill -9 right after a durable append() returned while Kafka is down; a new process on the same
  spool delivers the entry.

Both stop the shared local Kafka: outages are kept short (20 s) and Kafka is always
restarted in a ``finally``. Run this file as a script with ``worker`` to get one fleet process.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

STACK = Path(__file__).resolve().parents[2] / "deploy" / "local" / "stack.sh"
OUTAGE_S = 20.0
ENQUEUE_TIMEOUT_S = 1.0


# -- the fleet process (python test_ingest_outage.py worker '{json}') -------------------------------
def _worker(spec: dict[str, Any]) -> None:
    from backscroll.ingest import Appender, AppenderSettings, KafkaSettings

    kafka = KafkaSettings(topic=spec["topic"])
    options = AppenderSettings(
        spool_dir=Path(spec["spool"]),
        durable=spec["durable"],
        enqueue_timeout_s=ENQUEUE_TIMEOUT_S,
        queue_max_records=spec["queue"],
        inflight_max_bytes=16 * 1024,
        connect_timeout_s=1.0,
        close_timeout_s=5.0,
    )
    index, events, sessions = spec["index"], spec["events"], spec["sessions"]
    sync = Path(spec["sync"])
    slowest = 0.0
    appended = 0
    with Appender(kafka, options) as appender:
        writers = [appender.session(f"ws-{index % 5}", f"p{index:03d}-s{j}") for j in range(sessions)]
        for writer in writers:
            writer.header(title=f"fleet process {index}")
        started = time.monotonic()
        wall_start = time.time()
        after_up = -1
        # At least ``events`` appends, and on until a few were made after the broker came back
        # (the test writes ``up``): however slowly this process started or the broker restarted,
        # it appends from before the outage until after it.
        while appended < events or after_up < spec["after_up"]:
            assert appended < 20 * events, "the test never said the broker is up again"
            t0 = time.perf_counter()
            writers[appended % sessions].append(
                type="user/message",
                role="user",
                surface={"op": "append"},
                text=f"process {index} event {appended}",
            )
            slowest = max(slowest, time.perf_counter() - t0)
            appended += 1
            if appended == 1:
                (sync / f"ready-{index}").touch()
            if after_up >= 0 or (sync / "up").exists():
                after_up += 1
            delay = started + appended * spec["pace_s"] - time.monotonic()
            if delay > 0:
                time.sleep(delay)
        append_s = time.monotonic() - started
        wall_end = time.time()
        appender.flush(timeout=spec["flush_timeout_s"])
        stats = appender.stats()
    print(
        json.dumps(
            {
                "index": index,
                "appended": appended,
                "max_append_s": slowest,
                "append_s": append_s,
                "appends_from": wall_start,
                "appends_until": wall_end,
                "flushed_s": time.monotonic() - started,
                "spooled": stats.spooled,
                "replayed": stats.replayed,
                "resent": stats.resent,
            }
        ),
        flush=True,
    )


def _crash_worker(spec: dict[str, Any]) -> None:
    """Append one event durably, say so, then wait to be killed."""
    from backscroll.ingest import Appender, AppenderSettings, KafkaSettings

    options = AppenderSettings(spool_dir=Path(spec["spool"]), connect_timeout_s=1.0)
    appender = Appender(KafkaSettings(topic=spec["topic"]), options)
    writer = appender.session("ws-crash", spec["session"])
    writer.append(type="tool/call", tool_name="probe", text=spec["text"])
    print(json.dumps({"appended": True, "spool": appender.spool_dir}), flush=True)
    time.sleep(3600)


def _deliver_worker(spec: dict[str, Any]) -> None:
    from backscroll.ingest import Appender, AppenderSettings, KafkaSettings

    options = AppenderSettings(spool_dir=Path(spec["spool"]), connect_timeout_s=1.0)
    with Appender(KafkaSettings(topic=spec["topic"]), options) as appender:
        replaying = appender.stats().spool_unacked
        appender.flush(timeout=120)
        stats = appender.stats()
        print(
            json.dumps({"found": replaying, "replayed": stats.replayed, "spool": stats.spool_dir}), flush=True
        )


if __name__ == "__main__":
    {"worker": _worker, "crash": _crash_worker, "deliver": _deliver_worker}[sys.argv[1]](
        json.loads(sys.argv[2])
    )
    sys.exit(0)


# -- the tests --------------------------------------------------------------------------------------
from collections.abc import Iterator  # noqa: E402

import pytest  # noqa: E402
from conftest import Pipeline  # noqa: E402
from kafka import KafkaConsumer, TopicPartition  # noqa: E402

pytestmark = pytest.mark.skipif(not STACK.is_file(), reason="deploy/local/stack.sh not found")


def _stack(command: str) -> float:
    started = time.monotonic()
    done = subprocess.run(
        ["bash", str(STACK), command], capture_output=True, text=True, timeout=300, check=False
    )
    if done.returncode != 0:
        raise RuntimeError(f"stack.sh {command} failed ({done.returncode}): {done.stdout}\n{done.stderr}")
    return time.monotonic() - started


def _spawn(kind: str, spec: dict[str, Any]) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    return subprocess.Popen(
        [sys.executable, __file__, kind, json.dumps(spec)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def _consume(pipeline: Pipeline) -> list[tuple[int, int, bytes, bytes]]:
    """Every record of the topic as (partition, offset, key, value)."""
    consumer = KafkaConsumer(**pipeline.kafka.client_config(), enable_auto_commit=False, group_id=None)
    try:
        topic = pipeline.kafka.topic
        partitions = consumer.partitions_for_topic(topic) or set()
        tps = [TopicPartition(topic, p) for p in sorted(partitions)]
        consumer.assign(tps)
        consumer.seek_to_beginning(*tps)
        ends = consumer.end_offsets(tps)
        out: list[tuple[int, int, bytes, bytes]] = []
        deadline = time.monotonic() + 300
        while any(consumer.position(tp) < ends[tp] for tp in tps):
            assert time.monotonic() < deadline, "could not read the topic to its end"
            for batch in consumer.poll(timeout_ms=1000, max_records=10_000).values():
                out.extend((m.partition, m.offset, m.key, m.value) for m in batch)
        return out
    finally:
        consumer.close()


def _fleet_size() -> tuple[int, int]:
    scale = float(os.environ.get("BACKSCROLL_FLEET_SCALE", "0.1"))
    return max(2, round(50 * scale)), max(100, round(2000 * scale))


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
@pytest.mark.filterwarnings("ignore::ResourceWarning")
def test_fleet_keeps_appending_through_a_broker_outage(pipeline: Pipeline, tmp_path: Path) -> None:
    processes, events = _fleet_size()
    sessions = 2
    lead_s, tail_s = 6.0, 8.0
    expected_span = lead_s + OUTAGE_S + 25.0 + tail_s  # 25 s: what stop + start usually take here
    sync = tmp_path / "sync"
    sync.mkdir()
    specs = [
        {
            "index": i,
            "topic": pipeline.kafka.topic,
            "spool": str(tmp_path / "spool"),
            "durable": i % 2 == 0,  # half durable, half memory mode (block up to the timeout, then spool)
            "queue": 20,  # small, so that the outage fills it and the spool takes over
            "events": events,
            "sessions": sessions,
            "pace_s": expected_span / events,
            "after_up": 10,
            "sync": str(sync),
            "flush_timeout_s": 240,
        }
        for i in range(processes)
    ]
    workers = [_spawn("worker", spec) for spec in specs]
    timeline: dict[str, float] = {}
    try:
        # every process is appending before the broker goes down, however long it took to start
        waited = time.monotonic()
        while not all((sync / f"ready-{i}").exists() for i in range(processes)):
            assert time.monotonic() - waited < 300, "the fleet processes did not start appending"
            assert all(w.poll() is None for w in workers), "a fleet process died before appending"
            time.sleep(0.1)
        time.sleep(lead_s)
        started = time.monotonic()
        try:
            timeline["stop_s"] = _stack("stop-kafka")
            broker_down_at = time.time()
            time.sleep(max(0.0, OUTAGE_S - (time.monotonic() - started)))
        finally:
            timeline["outage_s"] = time.monotonic() - started
            broker_up_at = time.time()
            timeline["start_s"] = _stack("start-kafka")
            (sync / "up").touch()
        outputs = [w.communicate(timeout=600) for w in workers]
    finally:
        for w in workers:
            if w.poll() is None:
                w.kill()
                w.communicate()
    failures = [
        (w.returncode, err[-2000:]) for w, (_, err) in zip(workers, outputs, strict=True) if w.returncode
    ]
    assert not failures, failures
    reports = [json.loads(out.strip().splitlines()[-1]) for out, _ in outputs]
    slowest = max(r["max_append_s"] for r in reports)
    durable_max = max(r["max_append_s"] for r, spec in zip(reports, specs, strict=True) if spec["durable"])
    print(
        f"\nfleet {processes}x{events}: {timeline}; slowest append {slowest * 1000:.1f} ms "
        f"(durable processes {durable_max * 1000:.1f} ms); "
        f"spooled {sum(r['spooled'] for r in reports)}, replayed {sum(r['replayed'] for r in reports)}, "
        f"resent {sum(r['resent'] for r in reports)}; last flush at "
        f"{max(r['flushed_s'] for r in reports):.1f}s"
    )
    # Appends are paced evenly, so a process that appended from before the broker went down until
    # after it was started again appended all through the outage. (Whether records reach the spool
    # depends on how much kafka-python's own buffer absorbs; it is printed above, not asserted.)
    for report in reports:
        assert report["appends_from"] < broker_down_at and report["appends_until"] > broker_up_at, (
            f"process {report['index']} did not append through the outage"
        )
    assert slowest < ENQUEUE_TIMEOUT_S + 0.5, f"an append() blocked {slowest:.3f}s"

    # Every event exactly once per (session, seq), in per-session order, on one partition.
    records = _consume(pipeline)
    seqs: dict[str, list[int]] = defaultdict(list)
    headers: dict[str, int] = defaultdict(int)
    partitions: dict[str, set[int]] = defaultdict(set)
    for partition, _offset, key, value in sorted(records, key=lambda r: (r[0], r[1])):
        record = json.loads(value)
        assert key == record["session_id"].encode()
        partitions[record["session_id"]].add(partition)
        if record["kind"] == "header":
            headers[record["session_id"]] += 1
        else:
            seqs[record["session_id"]].append(record["seq"])
    counts = {r["index"]: r["appended"] for r in reports}
    assert len(seqs) == processes * sessions
    for session, got in seqs.items():
        index, j = int(session[1:4]), int(session.rsplit("-s", 1)[1])
        per_session = len(range(j, counts[index], sessions))
        assert got == list(range(per_session)), f"{session}: {len(got)} events, first gap/dup near " + str(
            next((i for i, s in enumerate(got) if s != i), None)
        )
        assert headers[session] == 1
        assert len(partitions[session]) == 1

    # ... and in the index exactly once (the real indexer).
    stats = pipeline.index()
    assert stats.indexed == sum(counts.values())
    assert stats.dead_lettered == 0 and stats.conflicts == 0 and stats.replays == 0


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
@pytest.mark.filterwarnings("ignore::ResourceWarning")
def test_kill_9_after_durable_append_while_broker_down_then_next_process_delivers(
    pipeline: Pipeline, tmp_path: Path
) -> None:
    spec = {
        "topic": pipeline.kafka.topic,
        "spool": str(tmp_path / "spool"),
        "session": "crash-1",
        "text": f"survives kill -9 {os.getpid()}-{time.time_ns()}",
    }
    crashed: subprocess.Popen[str] | None = None
    try:
        _stack("stop-kafka")
        crashed = _spawn("crash", spec)
        assert crashed.stdout is not None
        line = crashed.stdout.readline()  # printed right after append() returned
        assert json.loads(line)["appended"] is True, line
        os.kill(crashed.pid, signal.SIGKILL)
        crashed.wait(timeout=30)
        assert crashed.returncode == -signal.SIGKILL
    finally:
        if crashed is not None:
            if crashed.poll() is None:
                crashed.kill()
            crashed.communicate()
        _stack("start-kafka")
    deliver = _spawn("deliver", spec)
    out, err = deliver.communicate(timeout=300)
    assert deliver.returncode == 0, err[-3000:]
    report = json.loads(out.strip().splitlines()[-1])
    assert report["found"] == 1 and report["replayed"] == 1
    events = [json.loads(v) for _, _, _, v in _consume(pipeline)]
    assert [(e["session_id"], e["seq"], e["text"]) for e in events] == [("crash-1", 0, spec["text"])]
    stats = pipeline.index()
    assert stats.indexed == 1 and stats.dead_lettered == 0


@pytest.fixture(autouse=True)
def _collect_leaked_sockets() -> Iterator[None]:
    """Sockets the clients leave behind when the broker dies are collected inside the test that
    caused them (whose marks ignore the warning), not in whichever test runs next."""
    yield
    import gc

    gc.collect()
