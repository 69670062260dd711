"""A ``BACKSCROLL_*`` variable that nothing reads (a mistyped setting's name) is one warning line on
the command's stderr, with the nearest known name; known names, in the environment or in ``.env``,
never warn; importing and configuring the libraries never prints."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from backscroll.cli.main import app
from backscroll.cli.unknown_settings import command_variables, known_variables, unknown_message
from backscroll.config_docs import env_variables

REPO = Path(__file__).resolve().parents[2]
#: How the scripts, the stack and the tests read a variable: ``${BACKSCROLL_X``, ``$BACKSCROLL_X``,
#: ``environ["BACKSCROLL_X"]``, ``environ.get("BACKSCROLL_X"``, ``getenv(``, ``setenv(``, ``envvar=``.
READS = re.compile(r'(?:\$\{?|(?:environ(?:\.get)?[\[(]|getenv\(|setenv\(|envvar=)")(BACKSCROLL_[A-Z0-9_]+)')


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    for name in list(os.environ):
        if name.startswith("BACKSCROLL_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("BACKSCROLL_SQLITE_PATH", str(tmp_path / "none.db"))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _known() -> set[str]:
    return known_variables(command_variables(typer.main.get_command(app)))


def _warnings(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("warning:")]


def test_a_mistyped_name_is_one_line_with_the_nearest_known_name(
    clean_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BACKSCROLL_BAKCEND", "kafka-opensearch")
    monkeypatch.setenv("BACKSCROLL_MCP_PROT", "9000")
    monkeypatch.setenv("BACKSCROLL_ZZZ", "1")
    result = CliRunner().invoke(app, ["sessions", "--workspace", "ws-0"])
    assert _warnings(result.stderr) == [
        "warning: unknown variables ignored: BACKSCROLL_BAKCEND (did you mean BACKSCROLL_BACKEND?), "
        "BACKSCROLL_MCP_PROT (did you mean BACKSCROLL_MCP_PORT?), BACKSCROLL_ZZZ"
    ]
    assert result.stdout == ""  # the warning never mixes with a command's output


def test_a_mistyped_name_in_dotenv_warns_too(clean_env: Path) -> None:
    (clean_env / ".env").write_text("BACKSCROLL_SQLITE_PAHT=/tmp/x.db\nOTHER_TOOL=1\n", encoding="utf-8")
    result = CliRunner().invoke(app, ["sessions", "--workspace", "ws-0"])
    expected = (
        "warning: unknown variable ignored: BACKSCROLL_SQLITE_PAHT (did you mean BACKSCROLL_SQLITE_PATH?)"
    )
    assert _warnings(result.stderr) == [expected]


def test_every_known_name_is_quiet(clean_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in _known():
        monkeypatch.setenv(name, "")  # some are invalid empty: the warning comes before the settings
    (clean_env / ".env").write_text(
        "BACKSCROLL_BACKEND=embedded\nBACKSCROLL_STACK_DIR=/tmp\n", encoding="utf-8"
    )
    result = CliRunner().invoke(app, ["status", "--help"])
    assert "unknown" not in result.stderr and _warnings(result.stderr) == []


def test_the_settings_models_the_options_and_the_harness_are_known() -> None:
    known = _known()
    assert set(env_variables()) <= known
    assert {"BACKSCROLL_MCP_PORT", "BACKSCROLL_MCP_WORKSPACES"} <= known  # the mcp command's options
    read = set()
    for folder in (
        "deploy",
        "scripts",
        "tests",
        "benchmarks",
        "src",
        "ingest/src",
        "indexer/src",
        "query/src",
    ):
        for path in (REPO / folder).rglob("*"):
            if path == Path(__file__) or "__pycache__" in path.parts:
                continue  # this file sets unknown names on purpose
            if path.is_file() and path.suffix in {"", ".sh", ".py"}:
                read |= set(READS.findall(path.read_text(encoding="utf-8", errors="replace")))
    assert {"BACKSCROLL_STACK_DIR", "BACKSCROLL_REQUIRE_STACK", "BACKSCROLL_KAFKA_PORT"} <= read
    assert read - known == set()


def test_the_nearest_name_is_only_offered_when_it_is_near() -> None:
    known = {"BACKSCROLL_BACKEND", "BACKSCROLL_SQLITE_PATH"}
    assert unknown_message({"BACKSCROLL_BACKEND", "PATH"}, known) is None
    assert unknown_message({"BACKSCROLL_QQ"}, known) == "warning: unknown variable ignored: BACKSCROLL_QQ"


def test_the_libraries_never_print(tmp_path: Path) -> None:
    script = (
        "from backscroll.backends import BackendSettings, current_backend\n"
        "import backscroll.cli.main\n"
        "BackendSettings(); current_backend()\n"
    )
    env = {name: value for name, value in os.environ.items() if not name.startswith("BACKSCROLL_")}
    env["BACKSCROLL_BAKCEND"] = "kafka-opensearch"
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "" and done.stderr == ""


def test_the_command_warns_before_it_runs(tmp_path: Path) -> None:
    env = {name: value for name, value in os.environ.items() if not name.startswith("BACKSCROLL_")}
    env.update({"BACKSCROLL_BAKCEND": "kafka-opensearch", "BACKSCROLL_SQLITE_PATH": str(tmp_path / "x.db")})
    command = [sys.executable, "-m", "backscroll.cli.main", "sessions", "--workspace", "ws-0"]
    done = subprocess.run(command, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.stderr.splitlines()[0] == (
        "warning: unknown variable ignored: BACKSCROLL_BAKCEND (did you mean BACKSCROLL_BACKEND?)"
    )
