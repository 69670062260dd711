"""Claude Code waits for ``backscroll capture claude-code`` on every prompt and tool call: called
exactly so, the command runs the hook without loading the command-line framework or the query
stage (their imports cost more than the capture itself); any other form gets the full CLI."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

_PROBE = (
    "import sys; sys.argv = ['backscroll', *sys.argv[1:]]\n"
    "from backscroll.cli.entry import main\n"
    "try:\n"
    "    main()\n"
    "except SystemExit:\n"
    "    pass\n"
    "sys.stderr.write(repr(sorted(m for m in ('typer', 'rich', 'backscroll.query') if m in sys.modules)))\n"
)


def _run(tmp_path: Path, *args: str, stdin: bytes = b"{}") -> subprocess.CompletedProcess[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("BACKSCROLL_")}
    env["XDG_DATA_HOME"] = str(tmp_path)
    return subprocess.run(
        [sys.executable, "-c", _PROBE, *args], input=stdin, env=env, capture_output=True, timeout=60
    )


def test_the_hook_form_loads_neither_the_cli_nor_the_query_stage(tmp_path: Path) -> None:
    done = _run(tmp_path, "capture", "claude-code")
    assert done.returncode == 0
    assert done.stdout == b""  # the hook protocol reads stdout
    assert done.stderr.decode().splitlines()[-1] == "[]"


def test_every_other_form_is_the_full_cli(tmp_path: Path) -> None:
    done = _run(tmp_path, "capture", "claude-code", "--help", stdin=b"")
    assert done.returncode == 0
    assert b"--install" in done.stdout
    assert "typer" in done.stderr.decode().splitlines()[-1]
