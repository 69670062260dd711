"""``backscroll demo`` on the embedded backend writes where ``BACKSCROLL_SQLITE_PATH`` says (and never
deletes a file it names), and its closing hint runs as printed, from any directory, with the
installed ``backscroll`` off PATH. A settings path that names a directory is a settings error."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from backscroll.backends import EmbeddedBackend
from backscroll.cli.main import app

BACKSCROLL = Path(sys.executable).parent / "backscroll"


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {name: value for name, value in os.environ.items() if not name.startswith("BACKSCROLL_")}
    # a shell without the virtual environment: the hint must not need `backscroll` on PATH
    env["PATH"] = os.pathsep.join(
        p for p in env.get("PATH", "").split(os.pathsep) if Path(p) != BACKSCROLL.parent
    )
    env["XDG_DATA_HOME"] = str(tmp_path / "data")
    env.update(extra)
    return env


def _demo(env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BACKSCROLL), "demo"], env=env, cwd=cwd, capture_output=True, text=True, timeout=300, check=False
    )


def _hint(stdout: str) -> str:
    return stdout.rsplit("try: ", 1)[1].strip()


def test_the_demo_honours_the_sqlite_path_and_its_hint_runs_as_printed(tmp_path: Path) -> None:
    target = tmp_path / "mine" / "history.db"
    target.parent.mkdir()
    env = _env(tmp_path, BACKSCROLL_SQLITE_PATH=str(target))
    done = _demo(env, tmp_path)
    assert done.returncode == 0, done.stderr
    assert f"embedded (SQLite {target})" in done.stdout
    assert target.exists() and not (tmp_path / "data" / "backscroll" / "demo.db").exists()

    hint = _hint(done.stdout)
    assert f"BACKSCROLL_SQLITE_PATH={target}" in hint and str(BACKSCROLL) in hint
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    shell_env = {name: value for name, value in env.items() if not name.startswith("BACKSCROLL_")}
    searched = subprocess.run(
        ["bash", "-c", hint], env=shell_env, cwd=elsewhere, capture_output=True, text=True, timeout=120
    )
    assert searched.returncode == 0, searched.stderr
    assert "revenue forecast" in searched.stdout

    again = _demo(env, tmp_path)  # a file the user named is appended to, never deleted
    assert again.returncode == 0, again.stderr
    assert f"appending to the existing {target}" in again.stdout


def test_without_a_path_the_demo_writes_a_fresh_demo_file(tmp_path: Path) -> None:
    done = _demo(_env(tmp_path), tmp_path)
    assert done.returncode == 0, done.stderr
    demo_file = tmp_path / "data" / "backscroll" / "demo.db"
    assert demo_file.exists() and f"BACKSCROLL_SQLITE_PATH={demo_file}" in _hint(done.stdout)


def test_dropping_an_embedded_backend_deletes_its_file(tmp_path: Path) -> None:
    backend = EmbeddedBackend(tmp_path / "drop.db")
    with backend.open_log() as log:
        log.append(
            {
                "v": 1,
                "kind": "header",
                "workspace_id": "ws-0",
                "session_id": "s-1",
                "created_at": "2026-11-30T09:00:00Z",
            }
        ).result(timeout=30)
    assert str(tmp_path / "drop.db") in backend.drop()
    assert list(tmp_path.iterdir()) == []
    assert backend.drop() == []


@pytest.mark.parametrize(
    "args",
    [
        ["search", "x", "--workspace", "ws-0"],
        ["sessions", "--workspace", "ws-0"],
        ["index", "--until-idle"],
        ["export", "--workspace", "ws-0"],
        ["mcp", "--workspace", "ws-0"],
        ["console", "--port", "0"],
    ],
    ids=lambda args: args[0],
)
def test_a_sqlite_path_naming_a_directory_is_a_settings_error(
    args: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in list(os.environ):
        if name.startswith("BACKSCROLL_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("BACKSCROLL_SQLITE_PATH", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2, result.output
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and "BACKSCROLL_SQLITE_PATH" in lines[0] and "is a directory" in lines[0], lines
    assert "INDEX_FAILED" not in result.stderr and "Traceback" not in result.stderr
