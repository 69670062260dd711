"""``backscroll status`` asks about the servers the settings name: the local stack on the configured
ports, or, for servers on another host, a connection to each."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

FAKE_STACK = """#!/usr/bin/env bash
echo "$1 kafka=${BACKSCROLL_KAFKA_PORT:-unset} opensearch=${BACKSCROLL_OPENSEARCH_PORT:-unset}"
"""


def _status(tmp_path: Path, **settings: str) -> subprocess.CompletedProcess[str]:
    deploy = tmp_path / "deploy"
    deploy.mkdir(exist_ok=True)
    (deploy / "stack.sh").write_text(FAKE_STACK, encoding="utf-8")
    env = {name: value for name, value in os.environ.items() if not name.startswith("BACKSCROLL_")}
    env.update({"BACKSCROLL_DEPLOY_DIR": str(deploy), **settings})
    command = [sys.executable, "-m", "backscroll.cli.main", "status"]
    return subprocess.run(command, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120)


def test_the_local_stack_is_asked_about_the_configured_ports(tmp_path: Path) -> None:
    done = _status(
        tmp_path,
        BACKSCROLL_KAFKA_BOOTSTRAP_SERVERS="127.0.0.1:19092",
        BACKSCROLL_OPENSEARCH_URL="http://localhost:19200",
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "status kafka=19092 opensearch=19200\n"


def test_the_defaults_and_the_stacks_own_port_variables(tmp_path: Path) -> None:
    assert _status(tmp_path).stdout == "status kafka=9092 opensearch=9200\n"
    done = _status(
        tmp_path, BACKSCROLL_KAFKA_BOOTSTRAP_SERVERS="127.0.0.1:19092", BACKSCROLL_KAFKA_PORT="29092"
    )
    assert done.stdout == "status kafka=29092 opensearch=9200\n"


@pytest.fixture
def other_host() -> Iterator[tuple[int, int]]:
    """A port that answers and one that does not, on 127.0.0.2 (not the local stack's address)."""
    with socket.socket() as listening, socket.socket() as closed:
        listening.bind(("127.0.0.2", 0))
        listening.listen()
        closed.bind(("127.0.0.2", 0))
        yield int(listening.getsockname()[1]), int(closed.getsockname()[1])


def test_servers_elsewhere_are_probed_where_the_settings_say(
    tmp_path: Path, other_host: tuple[int, int]
) -> None:
    answering, silent = other_host
    done = _status(
        tmp_path,
        BACKSCROLL_KAFKA_BOOTSTRAP_SERVERS=f"127.0.0.2:{answering}",
        BACKSCROLL_OPENSEARCH_URL=f"http://127.0.0.2:{silent}",
    )
    assert done.returncode == 1, done.stderr
    assert done.stdout.splitlines() == [
        f"kafka:      answering at 127.0.0.2:{answering}",
        f"opensearch: NOT answering at 127.0.0.2:{silent} (connection refused)",
    ]
    done = _status(
        tmp_path,
        BACKSCROLL_KAFKA_BOOTSTRAP_SERVERS=f"127.0.0.2:{answering}",
        BACKSCROLL_OPENSEARCH_URL=f"http://127.0.0.2:{answering}",
    )
    assert done.returncode == 0 and "NOT" not in done.stdout


def test_an_invalid_address_setting_is_a_settings_error(tmp_path: Path) -> None:
    done = _status(tmp_path, BACKSCROLL_OPENSEARCH_URL="opensearch:9200")
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        "error: BACKSCROLL_INVALID_SETTING: invalid setting BACKSCROLL_OPENSEARCH_URL: "
        "expected http(s)://host:port, got 'opensearch:9200'"
    ]
