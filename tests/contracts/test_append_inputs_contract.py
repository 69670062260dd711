"""What ``backscroll append`` and ``EntryLog.append`` take, on every backend: any kind of input
path (an empty device, a FIFO, a directory), and records whose JSON spells text with ``\\u``
escapes (the record cap counts the record as the log stores it, not its spelling)."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest
from typer.testing import CliRunner, Result

from backscroll.cli.main import app
from backscroll.ingest import RecordRejected
from backscroll.ingest.wire import MAX_RECORD_BYTES, MAX_TEXT_BYTES

from .conftest import Harness

Cli = Callable[..., Result]


def _event(seq: int, text: str = "", sid: str = "inputs-1") -> dict[str, Any]:
    return {
        "v": 1,
        "kind": "event",
        "workspace_id": "ws-inputs",
        "session_id": sid,
        "seq": seq,
        "type": "user/message",
        "role": "user",
        "surface": {"op": "append"},
        "time": "2026-11-02T10:00:00+00:00",
        "text": text or f"entry {seq}",
    }


@pytest.fixture
def cli(harness: Harness, tmp_path: Path) -> Cli:
    # the spool directory only matters to the Kafka appender; the embedded log ignores it
    env = {**harness.settings_env(), "BACKSCROLL_APPENDER_SPOOL_DIR": str(tmp_path / "spool")}

    def run(*args: str) -> Result:
        result = CliRunner().invoke(app, ["append", *args], env=env)
        assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
        return result

    return run


def test_dev_null_appends_nothing_and_says_so(cli: Cli) -> None:
    human = cli("/dev/null")
    assert human.exit_code == 0, human.output
    assert "appended 0 records: the input holds no records" in human.stdout
    summary = orjson.loads(cli("/dev/null", "--json").stdout)
    assert (summary["appended"], summary["rejected"], summary["lines"]) == (0, 0, 0)


def test_a_fifo_is_read_as_a_stream(harness: Harness, cli: Cli, tmp_path: Path) -> None:
    fifo = tmp_path / "records.fifo"
    os.mkfifo(fifo)
    lines = b"".join(orjson.dumps(_event(seq)) + b"\n" for seq in range(3))

    def write() -> None:
        with fifo.open("wb") as out:  # blocks until the command opens the other end
            out.write(lines)

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    result = cli(str(fifo), "--json")
    writer.join(30)
    assert result.exit_code == 0, result.output
    assert orjson.loads(result.stdout)["appended"] == 3
    assert harness.index().indexed == 3


def test_a_directory_is_a_usage_error(cli: Cli, tmp_path: Path) -> None:
    human = cli(str(tmp_path))
    assert human.exit_code == 2 and "is a directory" in human.stderr
    error = orjson.loads(cli(str(tmp_path), "--json").stdout)["error"]
    assert error["code"] == "BACKSCROLL_USAGE" and "is a directory" in error["message"]
    missing = cli(str(tmp_path / "absent.jsonl"))
    assert missing.exit_code == 2 and "no such file" in missing.stderr


#: The largest texts, in 2-byte and 4-byte characters: Python's default ``json.dumps`` writes
#: each as ``\u00e9`` (6 bytes) or a surrogate pair (12 bytes), 3 MiB of escapes for 1 MiB of text.
BIG_TEXTS = ("é" * (MAX_TEXT_BYTES // 2), "😀" * (MAX_TEXT_BYTES // 4))


def test_escaped_spellings_of_records_under_the_cap_are_appended(
    harness: Harness, cli: Cli, tmp_path: Path
) -> None:
    lines = [json.dumps(_event(seq, text)).encode() for seq, text in enumerate(BIG_TEXTS)]
    assert all(len(line) > MAX_RECORD_BYTES for line in lines)  # the spelling is over the cap
    source = tmp_path / "escaped.jsonl"
    source.write_bytes(b"\n".join(lines) + b"\n")
    result = cli(str(source), "--json")
    assert result.exit_code == 0, result.output
    assert orjson.loads(result.stdout)["appended"] == 2

    log = harness.log()
    spelled = [
        json.dumps(_event(seq + 2, text, sid="inputs-2")).encode() for seq, text in enumerate(BIG_TEXTS)
    ]
    handles = [log.append(value) for value in spelled]
    log.flush(timeout=60)
    assert all(handle.result(timeout=30) for handle in handles)
    stats = harness.index()
    assert (stats.indexed, stats.dead_lettered) == (4, 0)


def test_the_record_cap_counts_the_record_as_stored(harness: Harness, cli: Cli, tmp_path: Path) -> None:
    # 600,000 control characters: 600 kB of text, stored escaped (6 bytes each): 3.6 MB.
    record = _event(0, "\x01" * 600_000)
    assert len(orjson.dumps(record)) > MAX_RECORD_BYTES
    with pytest.raises(RecordRejected) as caught:
        harness.log().append(record)
    assert caught.value.field == "record" and str(MAX_RECORD_BYTES) in str(caught.value)
    source = tmp_path / "over.jsonl"
    source.write_bytes(orjson.dumps(record) + b"\n" + orjson.dumps(_event(1)) + b"\n")
    summary = orjson.loads(cli(str(source), "--json").stdout)
    assert (summary["appended"], summary["rejected"]) == (1, 1)
    assert str(MAX_RECORD_BYTES) in summary["rejections"][0]["reason"]
