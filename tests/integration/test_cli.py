"""The ``backscroll`` command against the real Kafka and OpenSearch, run as a user runs it.

Each command runs in a subprocess (``python -m backscroll.cli.main``) with the pipeline's own
topic, index prefix and consumer group in its environment, in an empty working directory (no
stray ``.env``). Set-up and checks use the library; only the command under test is the CLI.
Exit codes: 0 ok, 1 failure (e.g. a server that does not answer), 2 usage or an invalid setting.
``up``/``down`` are never called: other test runs share the servers.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson
import pytest
from conftest import Pipeline
from kafka import KafkaProducer

from backscroll.config_docs import env_variables
from backscroll.query import Scope, SessionQueryRequest

pytestmark = pytest.mark.integration

_T0 = datetime(2026, 11, 3, tzinfo=UTC)
#: Wrong settings must be reported, not waited out: a command that hung on a black-hole port would
#: run until the test's own timeout. The bound is far above the 5 s bootstrap/request timeouts so a
#: busy machine's process start-up cannot fail it (speed itself is measured in benchmarks).
FAIL_FAST_S = 45.0


# -- helpers ---------------------------------------------------------------------------------------
@dataclass
class Run:
    code: int
    stdout: str
    stderr: str
    seconds: float

    @property
    def error_lines(self) -> list[str]:
        return [line for line in self.stderr.splitlines() if line.strip()]


def _base_env() -> dict[str, str]:
    """The caller's environment without any backscroll setting (the stack script's own vars stay)."""
    settings = set(env_variables())
    return {k: v for k, v in os.environ.items() if k not in settings}


def _env(pipeline: Pipeline, spool: Path, **overrides: str) -> dict[str, str]:
    env = _base_env()
    env.update(
        BACKSCROLL_BACKEND="kafka-opensearch",
        BACKSCROLL_KAFKA_BOOTSTRAP_SERVERS=pipeline.kafka.bootstrap_servers,
        BACKSCROLL_KAFKA_TOPIC=pipeline.kafka.topic,
        BACKSCROLL_OPENSEARCH_URL=pipeline.opensearch.url,
        BACKSCROLL_OPENSEARCH_INDEX_PREFIX=pipeline.opensearch.index_prefix,
        BACKSCROLL_INDEXER_GROUP_ID=pipeline.indexer.group_id,
        BACKSCROLL_APPENDER_SPOOL_DIR=str(spool),
        COLUMNS="200",
        NO_COLOR="1",
    )
    env.update(overrides)
    return env


def _run(args: list[str], env: dict[str, str], cwd: Path, stdin: str = "", timeout: float = 180) -> Run:
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "backscroll.cli.main", *args],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        input=stdin,
    )
    return Run(done.returncode, done.stdout, done.stderr, time.monotonic() - started)


@pytest.fixture
def cli(pipeline: Pipeline, tmp_path: Path) -> Iterator[Any]:
    """``cli("search", "x", FOO="bar")``: the command in the pipeline's isolated environment."""
    work = tmp_path / "cwd"
    work.mkdir()

    def run(*args: str, stdin: str = "", **overrides: str) -> Run:
        return _run(list(args), _env(pipeline, tmp_path / "spool", **overrides), work, stdin=stdin)

    yield run


def _event(sid: str, seq: int, text: str | None = None, ws: str = "ws-c") -> dict[str, Any]:
    role = "user" if seq % 2 == 0 else "assistant"
    return {
        "v": 1,
        "kind": "event",
        "workspace_id": ws,
        "session_id": sid,
        "seq": seq,
        "type": f"{role}/message",
        "role": role,
        "surface": {"op": "append"},
        "time": (_T0 + timedelta(seconds=seq)).isoformat(),
        "text": text or f"message {seq} of {sid}",
    }


def _header(sid: str, ws: str = "ws-c") -> dict[str, Any]:
    return {"v": 1, "kind": "header", "workspace_id": ws, "session_id": sid, "created_at": _T0.isoformat()}


def _loaded(pipeline: Pipeline) -> list[dict[str, Any]]:
    """Two sessions of 10 events each, indexed; s-2 seq 3 holds a needle."""
    needle = {("s-2", 3): "the quarterly forecast for Zürich"}
    records: list[dict[str, Any]] = []
    for sid in ("s-1", "s-2"):
        records.append(_header(sid))
        records.extend(_event(sid, seq, needle.get((sid, seq))) for seq in range(10))
    pipeline.append_all(records)
    assert pipeline.index().indexed == 20
    return records


def _count(pipeline: Pipeline) -> int:
    view = pipeline.view()
    view.refresh()
    return int(view.client.count(index=view.events)["count"])


def _park_one(pipeline: Pipeline) -> None:
    """A record whose key is not its session: the indexer dead-letters it."""
    producer = KafkaProducer(**pipeline.kafka.client_config())
    try:
        value = orjson.dumps(_event("d-1", 0))
        producer.send(pipeline.kafka.topic, key=b"other", value=value).get(timeout=30)
    finally:
        producer.close()


# -- stack, usage ----------------------------------------------------------------------------------
def test_status_exits_0_when_both_servers_answer(tmp_path: Path) -> None:
    run = _run(["status"], _base_env(), tmp_path)
    assert run.code == 0, run.stdout + run.stderr
    assert "kafka" in run.stdout and "opensearch" in run.stdout


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["no-such-command"], "No such command"),
        (["append"], "Missing argument"),
        (["search", "anything"], "--workspace"),
        (["search", "x", "--limit", "many"], "--limit"),
        (["--log-format", "xml", "status"], "--log-format"),
        (["dlq"], "Usage"),
    ],
)
def test_usage_errors_exit_2(args: list[str], needle: str, tmp_path: Path) -> None:
    env = {**_base_env(), "BACKSCROLL_BACKEND": "kafka-opensearch", "COLUMNS": "200", "NO_COLOR": "1"}
    run = _run(args, env, tmp_path)
    assert run.code == 2, run
    assert needle in run.stdout + run.stderr
    assert "Traceback" not in run.stderr


def test_an_invalid_log_setting_is_one_line_naming_it(tmp_path: Path) -> None:
    env = {**_base_env(), "BACKSCROLL_LOG_LEVEL": "loud"}
    run = _run(["status"], env, tmp_path)
    assert run.code == 2
    assert run.error_lines == [run.stderr.strip()] and "BACKSCROLL_LOG_LEVEL" in run.stderr


# -- append ----------------------------------------------------------------------------------------
def test_append_reports_rejected_lines_with_reasons_and_exits_1(
    cli: Any, pipeline: Pipeline, tmp_path: Path
) -> None:
    good = [_header("a-1"), *(_event("a-1", seq) for seq in range(5))]
    lines = [orjson.dumps(r).decode() for r in good[:3]]
    lines += [
        "{not json",  # line 4
        orjson.dumps({**_event("a-1", 3), "seq": "three"}).decode(),  # line 5: wrong type
        "",  # blank: skipped
        orjson.dumps({k: v for k, v in _event("a-1", 3).items() if k != "workspace_id"}).decode(),  # 7
        orjson.dumps({**_event("a-1", 3), "colour": "red"}).decode(),  # line 8: unknown field
    ]
    lines += [orjson.dumps(r).decode() for r in good[3:]]
    source = tmp_path / "events.jsonl"
    source.write_text("\n".join(lines) + "\n")

    run = cli("append", str(source))
    assert run.code == 1, run
    assert "appended 6 records, rejected 4" in run.stdout
    reported = [line for line in run.stdout.splitlines() if line.startswith("  line ")]
    reasons = {int(line.split()[1].rstrip(":")): line for line in reported}
    assert sorted(reasons) == [4, 5, 7, 8]
    assert "JSON" in reasons[4]
    assert "seq" in reasons[5]
    assert "workspace_id" in reasons[7]
    assert "colour" in reasons[8]
    assert "Traceback" not in run.stderr

    assert pipeline.index().indexed == 5  # the good lines all arrived, in order


def test_append_of_a_clean_file_and_of_stdin_exits_0(cli: Any, pipeline: Pipeline, tmp_path: Path) -> None:
    source = tmp_path / "clean.jsonl"
    source.write_text("".join(orjson.dumps(r).decode() + "\n" for r in [_header("b-1"), _event("b-1", 0)]))
    run = cli("append", str(source))
    assert run.code == 0, run
    assert "appended 2 records, rejected 0" in run.stdout
    piped = cli("append", "-", stdin="".join(orjson.dumps(_event("b-1", q)).decode() + "\n" for q in (1, 2)))
    assert piped.code == 0, piped
    assert "appended 2 records, rejected 0" in piped.stdout
    assert pipeline.index().indexed == 3


def test_append_of_a_missing_file_is_one_line(cli: Any, tmp_path: Path) -> None:
    missing = cli("append", str(tmp_path / "nope.jsonl"))
    assert missing.code in (1, 2)
    assert len(missing.error_lines) == 1 and "nope.jsonl" in missing.stderr, missing.stderr


# -- index -----------------------------------------------------------------------------------------
def test_index_until_idle_projects_everything_and_logs_json(cli: Any, pipeline: Pipeline) -> None:
    pipeline.append_all([_event("i-1", seq) for seq in range(25)])
    _park_one(pipeline)
    run = cli("--log-format", "json", "--log-level", "info", "index", "--until-idle")
    assert run.code == 0, run
    assert "indexed 25" in run.stdout and "dead-lettered 1" in run.stdout
    entries = [orjson.loads(line) for line in run.error_lines]
    parked = [e for e in entries if "dead-lettered" in e["message"]]
    assert parked, run.stderr
    for entry in entries:
        assert {"time", "level", "logger", "message"} <= entry.keys()
    assert parked[0]["level"] == "WARNING" and parked[0]["logger"].startswith("backscroll.")
    assert "message 0 of d-1" not in run.stderr  # no text payloads above DEBUG
    assert _count(pipeline) == 25
    again = cli("index", "--until-idle")
    assert again.code == 0 and "consumed 0" in again.stdout


# -- search ----------------------------------------------------------------------------------------
def test_search_text_and_json(cli: Any, pipeline: Pipeline) -> None:
    _loaded(pipeline)
    text = cli("search", "forcast zurich", "--workspace", "ws-c")
    assert text.code == 0, text
    assert "1 match" in text.stdout and "[session s-2, seq 3, assistant]" in text.stdout
    assert "the quarterly forecast for Zürich" in text.stdout

    as_json = cli("search", "forcast zurich", "--workspace", "ws-c", "--json")
    assert as_json.code == 0, as_json
    result = orjson.loads(as_json.stdout)
    assert (result["matches"][0]["session_id"], result["matches"][0]["seq"]) == ("s-2", 3)

    scoped = cli("search", "forecast", "--session", "s-1", "--json")
    assert scoped.code == 0 and all(m["session_id"] == "s-1" for m in orjson.loads(scoped.stdout)["matches"])
    # An unknown workspace is said plainly (exit 1), in JSON on stdout with --json.
    other = cli("search", "forecast", "--workspace", "ws-elsewhere", "--json")
    assert other.code == 1
    assert orjson.loads(other.stdout)["error"]["code"] == "BACKSCROLL_WORKSPACE_NOT_FOUND"


# -- dead letters ----------------------------------------------------------------------------------
def test_dlq_list_and_replay(cli: Any, pipeline: Pipeline) -> None:
    _park_one(pipeline)
    assert pipeline.index().dead_lettered == 1

    table = cli("dlq", "list")
    assert table.code == 0, table
    assert "1 dead letters" in table.stdout and "invalid_record" in table.stdout

    as_json = cli("dlq", "list", "--json")
    assert as_json.code == 0, as_json
    (letter,) = [orjson.loads(line) for line in as_json.stdout.splitlines()]
    assert letter["error_class"] == "invalid_record" and letter["field"] == "key"
    assert letter["topic"] == pipeline.kafka.topic
    assert "value" not in letter and "key" not in letter  # record bytes stay out of --json

    first = cli("dlq", "replay")
    assert first.code == 0 and "re-sent 1 dead letters" in first.stdout, first
    second = cli("dlq", "replay")
    assert second.code == 0 and "re-sent 0 dead letters" in second.stdout, second
    assert pipeline.index().dead_lettered == 1  # the replayed record is still wrong: parked again


# -- rebuild, forget -------------------------------------------------------------------------------
def test_rebuild_switches_to_a_new_version(cli: Any, pipeline: Pipeline) -> None:
    _loaded(pipeline)
    run = cli("rebuild")
    assert run.code == 0, run
    assert "rebuilt v1 → v2: 20 events" in run.stdout
    assert pipeline.view().current_version() == 2
    assert _count(pipeline) == 20


def test_forget_deletes_one_session_from_the_projection(cli: Any, pipeline: Pipeline) -> None:
    _loaded(pipeline)
    run = cli("forget", "s-2")
    assert run.code == 0, run
    assert "deleted 10 events of s-2" in run.stdout and "retention" in run.stdout
    assert _count(pipeline) == 10
    result = pipeline.provider(Scope.workspace("ws-c")).search(SessionQueryRequest(query="forecast zurich"))
    assert all(m.session_id != "s-2" for m in result.matches)
    again = cli("forget", "s-2")
    assert again.code == 1 and "SESSION_QUERY_SESSION_NOT_FOUND" in again.stderr  # forgotten already


# -- wrong settings: one clear line, fast ----------------------------------------------------------
class _Blackhole:
    """A TCP port that accepts connections and never answers (a hung server or a dead proxy)."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.sock.settimeout(0.2)
        self.port = int(self.sock.getsockname()[1])
        self._held: list[socket.socket] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
                self._held.append(conn)
            except OSError:
                continue

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        for conn in self._held:
            conn.close()
        self.sock.close()


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])  # nothing listens once this is closed


@pytest.fixture(scope="module")
def blackhole() -> Iterator[_Blackhole]:
    hole = _Blackhole()
    yield hole
    hole.close()


# (commands, variable, value; "{closed}"/"{hole}" become ports; needle: what the line must name)
_KAFKA_CASES = [
    ("BACKSCROLL_KAFKA_BOOTSTRAP_SERVERS", "kafka.example", "BACKSCROLL_KAFKA_BOOTSTRAP_SERVERS"),
    ("BACKSCROLL_KAFKA_BOOTSTRAP_SERVERS", "127.0.0.1:{closed}", "127.0.0.1:{closed}"),
    ("BACKSCROLL_KAFKA_BOOTSTRAP_SERVERS", "127.0.0.1:{hole}", "127.0.0.1:{hole}"),
    ("BACKSCROLL_KAFKA_SSL_CAFILE", "/nonexistent/kafka-ca.pem", "BACKSCROLL_KAFKA_SSL_CAFILE"),
    ("BACKSCROLL_KAFKA_REQUEST_TIMEOUT_S", "soon", "BACKSCROLL_KAFKA_REQUEST_TIMEOUT_S"),
]
_OPENSEARCH_CASES = [
    ("BACKSCROLL_OPENSEARCH_URL", "opensearch:9200", "BACKSCROLL_OPENSEARCH_URL"),
    ("BACKSCROLL_OPENSEARCH_URL", "http://127.0.0.1:{closed}", "127.0.0.1:{closed}"),
    ("BACKSCROLL_OPENSEARCH_URL", "http://127.0.0.1:{hole}", "127.0.0.1:{hole}"),
    ("BACKSCROLL_OPENSEARCH_URL", "https://{opensearch}", "https://{opensearch}"),  # TLS to plain HTTP
    ("BACKSCROLL_OPENSEARCH_CA_CERTS", "/nonexistent/os-ca.pem", "BACKSCROLL_OPENSEARCH_CA_CERTS"),
]
_CASES = (
    [("append", *case) for case in _KAFKA_CASES]
    + [("index", *case) for case in _KAFKA_CASES + _OPENSEARCH_CASES]
    + [("search", *case) for case in _OPENSEARCH_CASES]
)


@pytest.mark.parametrize(
    ("command", "variable", "value", "needle"),
    _CASES,
    ids=[f"{c[0]}-{c[1].removeprefix('BACKSCROLL_')}={c[2]}" for c in _CASES],
)
def test_a_wrong_setting_is_one_clear_line_within_seconds(
    command: str,
    variable: str,
    value: str,
    needle: str,
    cli: Any,
    pipeline: Pipeline,
    blackhole: _Blackhole,
    tmp_path: Path,
) -> None:
    opensearch = pipeline.opensearch.url.split("//", 1)[1]
    ports = {"closed": _closed_port(), "hole": blackhole.port, "opensearch": opensearch}
    value, needle = value.format(**ports), needle.format(**ports)
    source = tmp_path / "one.jsonl"
    source.write_text(orjson.dumps(_header("w-1")).decode() + "\n")
    args = {
        "append": ["append", str(source)],
        "index": ["index", "--until-idle"],
        "search": ["search", "anything", "--workspace", "ws-c"],
    }[command]

    run = cli(*args, **{variable: value})

    # Rejected by validation before any connection, or a setting the server proves wrong
    # (SESSION_QUERY_INVALID_CONFIG, e.g. TLS to a plain port): exit 2 (docs/errors.md "Command line").
    invalid = needle.startswith("BACKSCROLL_") or "SESSION_QUERY_INVALID_CONFIG" in run.stderr
    assert run.code == (2 if invalid else 1), run
    assert run.seconds < FAIL_FAST_S, f"took {run.seconds:.1f}s"
    assert len(run.error_lines) == 1, run.stderr
    assert run.error_lines[0].startswith("error: ")
    assert needle in run.error_lines[0], run.error_lines[0]
    assert run.stdout == ""


def test_up_when_already_up_and_status(cli: Any) -> None:
    up = cli("up")
    assert up.code == 0, up.stderr
    assert "already up" in (up.stdout + up.stderr)
    assert cli("status").code == 0


def test_demo_embedded_and_on_the_stack(cli: Any, tmp_path: Path) -> None:
    embedded = cli("demo", BACKSCROLL_BACKEND="embedded", BACKSCROLL_SQLITE_PATH=str(tmp_path / "demo.db"))
    assert embedded.code == 0, embedded.stderr
    assert "Zürich" in embedded.stdout and "acct_9931" in embedded.stdout
    stack = cli("demo", "--stack")
    assert stack.code == 0, stack.stderr
    assert "Nguyễn" in stack.stdout
