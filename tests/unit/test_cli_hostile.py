"""The command line under hostile input, on the embedded backend: markup and control characters in user data,
streamed append with the cap before parsing, bounded rejection output, operator scope defaults,
``--json`` errors, redacted URLs, and the log formatter's injection guard."""

from __future__ import annotations

import io
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from typer.testing import CliRunner, Result

from backscroll.backends import BackendSettings, EmbeddedBackend, backend_from_settings
from backscroll.cli.append_cmd import MAX_REASONS_SHOWN, iter_lines
from backscroll.cli.main import app
from backscroll.ingest.sqlite.log import SQLiteEntryLog
from backscroll.ingest.wire import MAX_INPUT_BYTES
from backscroll.logging_setup import JsonFormatter, TextFormatter
from backscroll.textsafe import escape_control, safe_text

_SERVER_VARS = ("BACKSCROLL_BACKEND", "BACKSCROLL_KAFKA_BOOTSTRAP_SERVERS", "BACKSCROLL_OPENSEARCH_URL")
TIME = "2026-01-01T00:00:00Z"


@pytest.fixture
def db(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    for name in (*_SERVER_VARS, "BACKSCROLL_SQLITE_INDEX_ON_SEARCH", "BACKSCROLL_LOG_FORMAT"):
        monkeypatch.delenv(name, raising=False)
    path = tmp_path / "backscroll.db"
    monkeypatch.setenv("BACKSCROLL_SQLITE_PATH", str(path))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.chdir(tmp_path)
    return path


def run(*args: str, stdin: bytes | str | None = None) -> Result:
    result = CliRunner().invoke(app, list(args), input=stdin)
    # A typed error ends in typer.Exit (SystemExit); anything else is a crash with a traceback.
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert "Traceback" not in result.output + result.stderr
    return result


def event(sid: str = "s-1", seq: int = 0, ws: str = "ws-1", **fields: Any) -> dict[str, Any]:
    record: dict[str, Any] = {
        "v": 1,
        "kind": "event",
        "workspace_id": ws,
        "session_id": sid,
        "seq": seq,
        "type": "user/message",
        "time": TIME,
        "surface": {"op": "append"},
        "text": f"zebra entry {seq}",
    }
    record.update(fields)
    return record


def header(sid: str, ws: str = "ws-1", **fields: Any) -> dict[str, Any]:
    return {"v": 1, "kind": "header", "workspace_id": ws, "session_id": sid, "created_at": TIME, **fields}


def jsonl(*records: dict[str, Any]) -> bytes:
    return b"".join(orjson.dumps(r) + b"\n" for r in records)


# -- item 1: rich markup and control characters ----------------------------------------------------
def test_markup_in_stdin_records_prints_intact(db: Path) -> None:
    result = run("append", "-", stdin='{"v":"[/x]"}\n')
    assert result.exit_code == 1
    assert "unsupported wire version '[/x]'" in result.output


def test_markup_in_a_workspace_option_is_a_typed_error(db: Path) -> None:
    result = run("search", "zebra", "-w", "[/x]")
    assert result.exit_code == 2
    assert "'[/x]'" in result.stderr and "INVALID_SCOPE" in result.stderr


def test_a_file_named_like_markup_and_the_type_pattern_print_intact(db: Path, tmp_path: Path) -> None:
    (tmp_path / "[").mkdir()
    source = tmp_path / "[/x].jsonl"  # the directory "[" holds "x].jsonl"
    source.write_bytes(jsonl(event(type="BAD")))
    result = run("append", str(source))
    assert result.exit_code == 1
    assert "^[a-z0-9_.-]{1,48}(/[a-z0-9_.-]{1,48}){0,3}$" in result.output
    missing = run("append", str(tmp_path / "nope[/x][bold].jsonl"))
    assert missing.exit_code == 2 and "nope[/x][bold].jsonl" in missing.stderr


def test_control_characters_in_stored_text_are_escaped_on_the_terminal(db: Path) -> None:
    with SQLiteEntryLog(db) as log:
        log.append(header("s-1", title="evil\x1b[2J\rtitle [/x]"))
        log.append(event(text="line one\nline two \x1b]0;pwned\x07 [red]x[/red] :smile:"))
    read = run("read", "s-1", "0")
    assert read.exit_code == 0, read.stderr
    assert "\x1b" not in read.output and "\\x1b]0;pwned\\x07" in read.output
    assert "[red]x[/red] :smile:" in read.output and "line one\nline two" in read.output
    listed = run("trace", "s-1")
    assert listed.exit_code == 0 and "\x1b" not in listed.output and "\\x1b[2J title [/x]" in listed.output
    found = run("search", "zebra", "-w", "ws-1")
    assert found.exit_code == 0 and "\x1b" not in found.output


# -- item 4: log and terminal injection -----------------------------------------------------------
FORGED = '{"v":1,"kind":"event","workspace_id":"w","session_id":"s","seq":0,"type":"turn/start",' + (
    '"time":"2026-01-01T00:00:00Z","attrs":{"a\\n2026-01-01T00:00:00.000Z ERROR forged: owned":1}}'
)


def test_a_newline_in_a_rejected_attrs_key_cannot_forge_a_summary_line(db: Path) -> None:
    result = run("append", "-", stdin=FORGED + "\n")
    assert result.exit_code == 1
    assert not any(line.startswith("2026-01-01T00:00:00.000Z ERROR") for line in result.output.splitlines())
    assert "attrs.a\\n2026-01-01T00:00:00.000Z ERROR forged: owned" in result.output


def _format(formatter: logging.Formatter, message: str, *args: Any, **extra: Any) -> str:
    record = logging.LogRecord("backscroll.x", logging.WARNING, __file__, 1, message, args, None)
    record.__dict__.update(extra)
    return formatter.format(record)


def test_the_text_log_escapes_control_characters_in_messages_and_fields() -> None:
    line = _format(TextFormatter(), "dead-lettered %s", "attrs.a\nERROR forged", session_id="s\r\n1")
    assert "\n" not in line and "\r" not in line
    assert "attrs.a\\nERROR forged" in line and "session_id=s\\r\\n1" in line
    data = orjson.loads(_format(JsonFormatter(), "x %s", "a\nb"))
    assert data["message"] == "x a\nb"  # JSON escapes it itself


def test_the_embedded_indexer_log_of_a_dead_letter_is_one_line(db: Path) -> None:
    with SQLiteEntryLog(db) as log:
        log.append_raw(b"s", FORGED.encode())
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(TextFormatter())
    logger = logging.getLogger("backscroll")
    logger.addHandler(handler)
    try:
        with EmbeddedBackend(db).open_indexer() as indexer:
            stats = indexer.run(until_idle=True)
    finally:
        logger.removeHandler(handler)
    assert stats.dead_lettered == 1
    lines = stream.getvalue().splitlines()
    # Whatever the indexer logs about the record, the key's newline never starts a line of its own.
    assert not any(line.startswith("2026-01-01T00:00:00.000Z ERROR") for line in lines)


def test_escape_control_keeps_printable_text() -> None:
    assert escape_control("é [b] \u200b ok") == "é [b] \u200b ok"
    assert escape_control("a\tb\nc\u2028d\u202e") == "a\\tb\\nc\\u2028d\\u202e"
    assert escape_control("a\tb\nc\x00", keep_newlines=True) == "a\tb\nc\\x00"


# -- item 8: credentials in URLs ------------------------------------------------------------------
SECRET_URL = "https://admin:s3cret@search.example:9200"


def test_url_passwords_never_print(monkeypatch: pytest.MonkeyPatch, db: Path) -> None:
    monkeypatch.setenv("BACKSCROLL_OPENSEARCH_URL", SECRET_URL)
    settings = BackendSettings()
    backend = backend_from_settings(settings)
    for text in (repr(settings), str(settings), backend.describe(), repr(backend)):
        assert "s3cret" not in text and "admin:***@search.example" in text
    line = _format(TextFormatter(), "connect to %s failed", SECRET_URL)
    assert "s3cret" not in line and "admin:***@" in line
    assert "s3cret" not in _format(JsonFormatter(), "connect to %s failed", SECRET_URL)
    monkeypatch.setenv("BACKSCROLL_OPENSEARCH_URL", "ftp://admin:s3cret@search.example:9200")
    result = run("search", "x", "-w", "ws-1")
    assert result.exit_code == 2 and "BACKSCROLL_OPENSEARCH_URL" in result.stderr
    assert "s3cret" not in result.stderr and "admin:***@" in result.stderr
    as_json = run("sessions", "-w", "ws-1", "--json")
    assert as_json.exit_code == 2 and "s3cret" not in as_json.output
    assert orjson.loads(as_json.stdout)["error"]["code"] == "BACKSCROLL_INVALID_SETTING"


def test_safe_text_redacts_only_the_password() -> None:
    assert safe_text("a http://u:p@h:1/x?y=z@q b") == "a http://u:***@h:1/x?y=z@q b"
    assert safe_text("mail me@example.com, http://h:9200") == "mail me@example.com, http://h:9200"


# -- item 9: streaming with the cap before parsing, bounded rejection output ----------------------
def test_an_oversized_line_is_skipped_in_chunks_never_read_whole() -> None:
    class Counting(io.BytesIO):
        largest = 0

        def readline(self, size: int | None = -1) -> bytes:
            line = super().readline(size)
            Counting.largest = max(Counting.largest, len(line))
            return line

    cap = 1000
    big = b'{"v":1,"text":"' + b"x" * 50_000 + b'"}\n'
    stream = Counting(b"first\n" + big + b"\n  \nlast")
    lines = list(iter_lines(stream, cap))
    assert [(n, line) for n, line, _ in lines] == [(1, b"first\n"), (2, None), (5, b"last")]
    assert lines[1][2] == len(big)
    assert Counting.largest <= 1024 * 1024  # bounded by the chunk, not by the line


def test_append_reports_an_oversized_line_and_keeps_the_rest(db: Path, tmp_path: Path) -> None:
    source = tmp_path / "big.jsonl"
    with source.open("wb") as out:
        out.write(jsonl(event(seq=0)))
        out.write(b'{"v":1,"text":"' + b"y" * MAX_INPUT_BYTES + b'"}\n')
        out.write(jsonl(event(seq=1)))
    result = run("append", str(source), "--json")
    assert result.exit_code == 1
    summary = orjson.loads(result.stdout)
    assert summary["appended"] == 2 and summary["rejected"] == 1
    assert summary["rejections"][0]["line"] == 2 and "byte line limit" in summary["rejections"][0]["reason"]


def test_every_rejection_up_to_the_bound_then_one_more_line(db: Path) -> None:
    bad = MAX_REASONS_SHOWN + 37
    lines = [orjson.dumps(event(seq=i)) for i in range(5)] + [b'{"v":2}'] * bad
    result = run("append", "-", stdin=b"\n".join(lines) + b"\n")
    assert result.exit_code == 1
    shown = [line for line in result.output.splitlines() if line.startswith("  line ")]
    assert len(shown) == MAX_REASONS_SHOWN
    assert "… 37 more rejected lines not shown" in result.output
    assert f"appended 5 records, rejected {bad}" in result.output


def test_append_streams_in_batches_and_keeps_good_records_around_bad_ones(db: Path) -> None:
    good = [event(sid=f"s-{i % 7}", seq=i // 7) for i in range(5000)]
    payload = b"".join(
        orjson.dumps(r) + b"\n" + (b"not json\n" if i % 1000 == 0 else b"") for i, r in enumerate(good)
    )
    result = run("append", "-", stdin=payload)
    assert result.exit_code == 1 and "appended 5000 records, rejected 5" in result.output
    with SQLiteEntryLog(db) as log:
        assert log.end_offset() == 5000


# -- item 6 end to end: seq 1, 0, 2 ----------------------------------------------------------------
def test_out_of_order_seqs_give_right_session_statistics(db: Path) -> None:
    result = run("append", "-", stdin=jsonl(header("s-1"), event(seq=1), event(seq=0), event(seq=2)))
    assert result.exit_code == 0, result.output
    listed = run("sessions", "-w", "ws-1", "--json")
    assert listed.exit_code == 0, listed.output
    (record,) = orjson.loads(listed.stdout)
    assert record["stats"]["entry_count"] == 3 and record["stats"]["seq_gaps"] == 0


# -- item 11: operator scope defaults, unknown ids, --json errors ---------------------------------
@pytest.fixture
def family(db: Path) -> Iterator[Path]:
    with SQLiteEntryLog(db) as log:
        log.append(header("parent"))
        log.append(header("child", parent_session_id="parent"))
        log.append(header("other", ws="ws-2"))
        for sid in ("parent", "child"):
            log.append(event(sid=sid))
        log.append(event(sid="other", ws="ws-2"))
    yield db


def test_trace_without_a_scope_sees_the_sessions_workspace(family: Path) -> None:
    result = run("trace", "child", "--json")
    assert result.exit_code == 0, result.output
    lineage = orjson.loads(result.stdout)
    assert [a["header"]["session_id"] for a in lineage["ancestors"]] == ["parent"]
    down = orjson.loads(run("trace", "parent", "--json").stdout)
    assert [d["session"]["header"]["session_id"] for d in down["descendants"]] == ["child"]
    assert run("read", "child", "0").exit_code == 0


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (["sessions", "-w", "nope"], "BACKSCROLL_WORKSPACE_NOT_FOUND"),
        (["sessions", "-s", "nope"], "SESSION_QUERY_SESSION_NOT_FOUND"),
        (["search", "zebra", "-w", "nope"], "BACKSCROLL_WORKSPACE_NOT_FOUND"),
        (["search", "zebra", "-s", "nope"], "SESSION_QUERY_SESSION_NOT_FOUND"),
        (["search", "zebra", "-w", "ws-1", "-s", "other"], "SESSION_QUERY_SESSION_NOT_FOUND"),
        (["trace", "nope"], "SESSION_QUERY_SESSION_NOT_FOUND"),
        (["read", "nope", "0"], "SESSION_QUERY_SESSION_NOT_FOUND"),
    ],
)
def test_unknown_ids_are_said_plainly_with_exit_1(family: Path, args: list[str], code: str) -> None:
    text = run(*args)
    assert text.exit_code == 1 and code in text.stderr and "No searchable history" not in text.output
    as_json = run(*args, "--json")
    assert as_json.exit_code == 1 and orjson.loads(as_json.stdout)["error"]["code"] == code


@pytest.mark.parametrize(
    ("args", "exit_code"),
    [
        (["search", "zebra"], 2),
        (["search", "zebra", "-w", "[/x]"], 2),
        (["search", "zebra", "-w", "ws-1", "-n", "0"], 2),
        (["sessions", "--limit", "0"], 2),
        (["read", "child", "0", "-B", "-1"], 2),
        (["append", "no-such-file"], 2),
    ],
)
def test_json_means_json_on_stdout_for_errors_too(family: Path, args: list[str], exit_code: int) -> None:
    result = run(*args, "--json")
    assert result.exit_code == exit_code, result.output
    error = orjson.loads(result.stdout)["error"]
    assert set(error) == {"code", "message", "retriable"} and error["message"]
