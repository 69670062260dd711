"""The read commands (``backscroll sessions``, ``read``, ``trace``) on every backend: the settings
choose the backend, and the same sessions print the same JSON, trees and errors."""

from __future__ import annotations

from collections.abc import Iterator

import orjson
import pytest
import typer
from typer.testing import CliRunner

from backscroll.cli.reads_cmd import register

from .conftest import _PARAMS, Harness, make_harness
from .test_reads_contract import RECORDS, hdr

#: A lineage deeper than the tree the command prints by default.
CHAIN = [
    hdr("ws-deep", f"deep-{i}", 0, **({"parent_session_id": f"deep-{i - 1}"} if i else {})) for i in range(10)
]


@pytest.fixture(scope="module", params=_PARAMS)
def pipeline(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Harness]:
    with make_harness(request.param, tmp_path_factory.mktemp(f"cli-{request.param}")) as made:
        made.append_all([*(r for r in RECORDS if r["workspace_id"] != "ws-deep"), *CHAIN])
        made.index()
        yield made


def test_read_commands(pipeline: Harness, monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in pipeline.settings_env().items():
        monkeypatch.setenv(name, value)
    app = typer.Typer()
    register(app)
    runner = CliRunner()

    def run(*args: str, code: int = 0) -> str:
        result = runner.invoke(app, list(args))
        assert result.exit_code == code, (args, result.output)
        return result.output

    listing = orjson.loads(run("sessions", "--workspace", "ws-r", "--json"))
    assert [s["header"]["session_id"] for s in listing] == ["empty", "s47", "s44", "basic"]
    assert "basic" in run("sessions", "-w", "ws-r") and "invalid" in run("sessions", "-w", "ws-bad")
    pair = orjson.loads(run("sessions", "-s", "s44", "-s", "s47", "--json"))
    assert [s["header"]["session_id"] for s in pair] == ["s47", "s44"]
    window = orjson.loads(run("read", "basic", "2", "--before", "1", "--after", "1", "--json"))
    assert (window["start_seq"], window["end_seq"], window["target"]["text"]) == (1, 3, "two")
    human = run("read", "basic", "2", "-B", "1")
    assert "▶" in human and "two" in human and "grep" in human
    lineage = orjson.loads(run("trace", "target", "--workspace", "ws-lin", "--json"))
    assert lineage["complete"] and [n["session_id"] for n in lineage["descendants"]][:2] == ["older", "a"]
    tree = run("trace", "target", "-w", "ws-lin")
    assert all(name in tree for name in ("parent ← root", "older", "grandchild", "(target)"))
    assert "outside (missing or outside the scope)" in run("trace", "partial", "-w", "ws-lin")
    assert "more descendants" in run("trace", "deep-0", "-w", "ws-deep", "--depth", "5")
    traced = orjson.loads(run("trace", "s47", "3", "--json"))
    links = (traced["replaced_by"], traced["replacement_chain"], traced["derived_event_seqs"])
    assert links == (4, [4, 8], [4])
    assert "4, 8" in run("trace", "s47", "3")
    missing = orjson.loads(run("read", "ghost", "0", "--json", code=1))
    assert missing["error"]["code"] == "SESSION_QUERY_SESSION_NOT_FOUND"
    assert "SESSION_QUERY_INVALID_WINDOW" in run("read", "basic", "0", "--before", "99", code=2)
    assert "SESSION_QUERY_INVALID_SURFACE" in run("trace", "bad-gap", "0", "-w", "ws-bad", code=1)
    everywhere = run("sessions", "--json", "--limit", "1000")  # no scope: every workspace
    assert {"basic", "s47", "deep-0"} <= {s["header"]["session_id"] for s in orjson.loads(everywhere)}
    run("sessions", "-w", "a", "-s", "b", code=2)


def test_the_main_command_registers_the_read_commands() -> None:
    from backscroll.cli.main import app

    names = {command.name for command in app.registered_commands}
    assert {"sessions", "read", "trace"} <= names
