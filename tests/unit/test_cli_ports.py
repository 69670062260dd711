"""The served commands (``console``, ``mcp --transport http``) bind their port before they announce
it: a busy port is one line naming ``host:port`` and the cause, exit status 2 and no banner; a free
one is announced with the port it really got. The two commands default to different ports."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
import typer

from backscroll.cli.main import app

COMMANDS = {
    "console": ["console"],
    "mcp": ["mcp", "--transport", "http", "--workspace", "ws-a"],
}


@pytest.fixture
def child_env(tmp_path: Path) -> dict[str, str]:
    env = {name: value for name, value in os.environ.items() if not name.startswith("BACKSCROLL_")}
    env.update({"BACKSCROLL_BACKEND": "embedded", "BACKSCROLL_SQLITE_PATH": str(tmp_path / "ports.db")})
    return env


@pytest.fixture
def busy_port() -> Iterator[int]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield int(sock.getsockname()[1])


def _run(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "backscroll.cli.main", *args]
    return subprocess.run(command, env=env, cwd=cwd, capture_output=True, text=True, timeout=120, check=False)


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_a_busy_port_is_one_line_and_exit_2(
    name: str, busy_port: int, child_env: dict[str, str], tmp_path: Path
) -> None:
    done = _run([*COMMANDS[name], "--port", str(busy_port)], child_env, tmp_path)
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert lines == [f"error: cannot listen on 127.0.0.1:{busy_port}: address already in use"]


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_an_address_the_machine_cannot_bind_is_exit_2(
    name: str, child_env: dict[str, str], tmp_path: Path
) -> None:
    done = _run([*COMMANDS[name], "--host", "203.0.113.7", "--port", "0"], child_env, tmp_path)
    if name in ("console", "mcp"):  # a non-loopback bind needs a token first
        assert done.returncode == 2 and "needs" in done.stderr
        child_env["BACKSCROLL_CONSOLE_TOKEN" if name == "console" else "BACKSCROLL_MCP_TOKEN"] = "t" * 32
        done = _run([*COMMANDS[name], "--host", "203.0.113.7", "--port", "0"], child_env, tmp_path)
    assert done.returncode == 2, done.stderr
    assert (
        done.stderr.startswith("error: cannot listen on 203.0.113.7:0: ")
        and len(done.stderr.splitlines()) == 1
    )
    assert "Traceback" not in done.stderr and "backscroll console on" not in done.stderr


def test_the_console_announces_the_port_it_got_and_serves_on_it(
    child_env: dict[str, str], tmp_path: Path
) -> None:
    command = [sys.executable, "-m", "backscroll.cli.main", "console", "--port", "0"]
    with subprocess.Popen(
        command, env=child_env, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    ) as process:
        try:
            assert process.stderr is not None
            banner = process.stderr.readline()
            found = re.search(r"backscroll console on http://127\.0\.0\.1:(\d+) ", banner)
            assert found, banner
            port = int(found.group(1))
            assert port != 0
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/login", timeout=30) as response:
                assert response.status == 200
        finally:
            process.terminate()
            process.wait(timeout=30)


def test_console_and_mcp_default_to_different_ports() -> None:
    group = typer.main.get_command(app)

    def default_port(name: str) -> object:
        command = group.commands[name]  # type: ignore[attr-defined]
        return next(param.default for param in command.params if param.name == "port")

    assert default_port("console") == 8765
    assert default_port("mcp") == 8766
