"""``backscroll append FILE`` on its bulk path: validation in worker processes gives the
same log and the same report as in-process, a broken worker costs speed and nothing else, and a
record the log refuses fails the command with one line."""

from __future__ import annotations

import os
import sqlite3
import time
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any

import orjson
import pytest
from tests.unit.test_ingest_appender import KAFKA, FakeBroker, options
from tests.unit.test_ingest_bulk import _Refusing
from typer.testing import CliRunner, Result

from backscroll.cli import append_pipeline
from backscroll.cli.main import app
from backscroll.ingest import Appender
from backscroll.ingest.wire import MAX_INPUT_BYTES, decode_record, encode_record

TIME = "2026-01-01T00:00:00Z"


@pytest.fixture(autouse=True)
def _embedded(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in ("BACKSCROLL_BACKEND", "BACKSCROLL_KAFKA_BOOTSTRAP_SERVERS", "BACKSCROLL_OPENSEARCH_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setattr(append_pipeline, "PARALLEL_MIN_BYTES", 0)  # workers from the first chunk
    monkeypatch.setattr(append_pipeline, "EMBEDDED_BATCH_RECORDS", 2000)  # several chunks below


def event(sid: str, seq: int) -> dict[str, Any]:
    return {
        "v": 1,
        "kind": "event",
        "workspace_id": "ws-1",
        "session_id": sid,
        "seq": seq,
        "type": "user/message",
        "time": TIME,
        "surface": {"op": "append"},
        "text": f"zebra entry {seq}",
    }


def source(tmp_path: Path) -> tuple[Path, list[bytes]]:
    """5,000 records over several chunks, with bad lines, a blank line and an oversized line."""
    path = tmp_path / "in.jsonl"
    good: list[bytes] = []
    with path.open("wb") as out:
        for i in range(5000):
            record = orjson.dumps(event(f"s-{i % 7}", i // 7))
            good.append(record)
            out.write(record + b"\n")
            if i % 997 == 0:
                out.write(b'{"v":2}\n')
            if i == 2500:
                out.write(b"\n" + b'{"v":1,"text":"' + b"y" * (MAX_INPUT_BYTES + 10) + b'"}\n')
    return path, good


def run(db: Path, *args: str, monkeypatch: pytest.MonkeyPatch) -> Result:
    monkeypatch.setenv("BACKSCROLL_SQLITE_PATH", str(db))
    result = CliRunner().invoke(app, ["append", *args, "--json"])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result


def stored(db: Path) -> list[bytes]:
    with sqlite3.connect(db) as conn:
        return [bytes(v) for (v,) in conn.execute("SELECT value FROM log ORDER BY offset")]


def summary(result: Result) -> dict[str, Any]:
    out: dict[str, Any] = orjson.loads(result.stdout)
    out.pop("seconds")
    return out


def test_worker_processes_give_the_same_log_and_report_as_in_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path, good = source(tmp_path)
    started: list[ProcessPoolExecutor | None] = []
    start = append_pipeline._start

    def counted(workers: int) -> ProcessPoolExecutor | None:
        started.append(start(workers))
        return started[-1]

    monkeypatch.setattr(append_pipeline, "_start", counted)
    inline = run(tmp_path / "inline.db", str(path), "--workers", "0", monkeypatch=monkeypatch)
    assert not started
    pooled = run(tmp_path / "pooled.db", str(path), "--workers", "1", monkeypatch=monkeypatch)
    assert len(started) == 1 and isinstance(started[0], ProcessPoolExecutor)
    assert inline.exit_code == pooled.exit_code == 1
    assert summary(pooled) == summary(inline)
    report = summary(inline)
    assert report["appended"] == 5000 and report["rejected"] == 7
    lines = [r["line"] for r in report["rejections"]]
    assert lines == sorted(lines) and "byte line limit" in report["rejections"][3]["reason"]
    expected = [encode_record(decode_record(record)) for record in good]
    assert stored(tmp_path / "inline.db") == stored(tmp_path / "pooled.db") == expected


class _BrokenPool:
    """A pool whose workers died: every result raises BrokenProcessPool."""

    def submit(self, fn: Any, *args: Any) -> Future[Any]:
        future: Future[Any] = Future()
        future.set_exception(BrokenProcessPool("a worker died"))
        return future

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        pass


def test_a_broken_worker_costs_nothing_but_speed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path, good = source(tmp_path)
    monkeypatch.setattr(append_pipeline, "_start", lambda workers: _BrokenPool())
    result = run(tmp_path / "log.db", str(path), "--workers", "2", monkeypatch=monkeypatch)
    assert result.exit_code == 1 and summary(result)["appended"] == 5000
    assert stored(tmp_path / "log.db") == [encode_record(decode_record(record)) for record in good]


def test_a_record_the_log_refuses_fails_the_command_with_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    broker = FakeBroker()

    def refusing_log(backend: object, *, live: bool = True) -> Appender:
        return Appender(KAFKA, options(tmp_path), producer_factory=lambda config: _Refusing(broker))

    for backend in ("EmbeddedBackend", "KafkaOpenSearchBackend"):  # whichever the environment selects
        monkeypatch.setattr(f"backscroll.backends.{backend}.open_log", refusing_log)
    path = tmp_path / "in.jsonl"
    path.write_bytes(b"".join(orjson.dumps(event(sid, 0)) + b"\n" for sid in ("ok", "bad", "fine")))
    for as_json in (False, True):
        result = CliRunner().invoke(app, ["append", str(path), *(["--json"] if as_json else [])])
        assert result.exit_code == 1, result.output
        if as_json:
            error = orjson.loads(result.stdout)
            assert "1 records were not appended" in error["error"]["message"]
        else:
            assert "1 records were not appended" in result.output
            assert "before the failure: appended 2 records" in result.output
            assert "Traceback" not in result.output


def test_the_embedded_backend_appends_in_larger_chunks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sizes: list[int] = []
    real = append_pipeline.iter_chunks

    def counted(stream: Any, cap: int, records: int = append_pipeline.BATCH_RECORDS) -> Any:
        for chunk in real(stream, cap, records):
            sizes.append(len(chunk.lines))
            yield chunk

    monkeypatch.setattr(append_pipeline, "iter_chunks", counted)
    monkeypatch.setattr(append_pipeline, "EMBEDDED_BATCH_RECORDS", 3000)
    path = tmp_path / "in.jsonl"
    path.write_bytes(b"".join(orjson.dumps(event("s", seq)) + b"\n" for seq in range(7000)))
    result = run(tmp_path / "log.db", str(path), "--workers", "0", monkeypatch=monkeypatch)
    assert result.exit_code == 0 and summary(result)["appended"] == 7000
    assert sizes == [3000, 3000, 1000]
    assert len(stored(tmp_path / "log.db")) == 7000


def test_chunks_hold_at_most_the_records_asked_for() -> None:
    import io

    lines = b"".join(b"{}\n" for _ in range(10))
    assert [len(c.lines) for c in append_pipeline.iter_chunks(io.BytesIO(lines), 100)] == [10]
    assert [len(c.lines) for c in append_pipeline.iter_chunks(io.BytesIO(lines), 100, 4)] == [4, 4, 2]


@pytest.mark.parametrize(
    ("cpus", "load", "workers"),
    [(2, 0.1, 1), (2, 1.2, 0), (2, 3.5, 0), (8, 0.0, 4), (8, 5.0, 2), (1, 0.0, 0)],
)
def test_workers_only_for_idle_cpus(
    monkeypatch: pytest.MonkeyPatch, cpus: int, load: float, workers: int
) -> None:
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(cpus)), raising=False)
    monkeypatch.setattr(os, "getloadavg", lambda: (load, load, load), raising=False)
    monkeypatch.setattr(append_pipeline, "_cpu_ticks", lambda: None)  # no /proc/stat
    assert append_pipeline.auto_workers() == workers


@pytest.mark.parametrize(("idle_share", "workers"), [(0.95, 1), (0.4, 0)])
def test_workers_follow_the_cpus_busy_now_not_the_load_average(
    monkeypatch: pytest.MonkeyPatch, idle_share: float, workers: int
) -> None:
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    monkeypatch.setattr(os, "getloadavg", lambda: (2.5, 2.5, 2.5), raising=False)  # a minute ago
    samples = iter([(1000, 500), (1200, 500 + round(200 * idle_share))])
    monkeypatch.setattr(append_pipeline, "_cpu_ticks", lambda: next(samples))
    monkeypatch.setattr(time, "sleep", lambda seconds: None)
    assert append_pipeline.auto_workers() == workers


def test_busy_cpus_reads_this_machine() -> None:
    busy = append_pipeline.busy_cpus(0.05)
    if busy is not None:  # Linux
        assert 0.0 <= busy <= (os.cpu_count() or 1)
