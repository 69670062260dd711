"""Run the local Kafka + OpenSearch stack script (``deploy/local/stack.sh``) from Python.

The CLI exposes this as ``backscroll up / down / status``. All the work (fetching artifacts,
starting/stopping the servers, readiness checks) is done by the bash script; this module only
finds it and runs it with ``bash``, letting its output stream straight to the terminal.

``status`` looks where the client settings point (``BACKSCROLL_KAFKA_BOOTSTRAP_SERVERS``,
``BACKSCROLL_OPENSEARCH_URL``): servers on ``127.0.0.1`` are the local stack, asked about on the
configured ports; anywhere else, :func:`run_status` connects to the first address of each itself.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final
from urllib.parse import urlsplit

#: Subcommands understood by ``deploy/local/stack.sh``.
COMMANDS: tuple[str, ...] = (
    "fetch",
    "up",
    "down",
    "status",
    "start-kafka",
    "stop-kafka",
    "start-opensearch",
    "stop-opensearch",
)

#: Environment variable naming a directory that contains ``stack.sh`` (overrides the repo copy).
DEPLOY_DIR_ENV = "BACKSCROLL_DEPLOY_DIR"


def stack_script() -> Path:
    """Return the path of ``stack.sh``.

    ``$BACKSCROLL_DEPLOY_DIR/stack.sh`` when that variable is set, else the repository's
    ``deploy/local/stack.sh`` found relative to this file (``src/backscroll/cli/stack.py``).
    The file is not required to exist; :func:`run_stack` checks that.
    """
    override = os.environ.get(DEPLOY_DIR_ENV)
    if override:
        return Path(override).expanduser() / "stack.sh"
    return Path(__file__).resolve().parents[3] / "deploy" / "local" / "stack.sh"


def run_stack(command: str, *args: str, env: Mapping[str, str] | None = None) -> int:
    """Run ``bash stack.sh COMMAND ARGS...`` and return its exit code.

    Output is not captured: it streams to this process's stdout/stderr as the script runs.
    Returns 2 for an unknown command and 127 when the script cannot be found (a message goes to
    stderr in both cases). The servers the script starts run in their own session, so they keep
    running after this function returns (or is interrupted).
    """
    if command not in COMMANDS:
        print(f"unknown stack command {command!r}; expected one of: {', '.join(COMMANDS)}", file=sys.stderr)
        return 2
    script = stack_script()
    if not script.is_file():
        print(
            f"stack script not found: {script} (set {DEPLOY_DIR_ENV} to the directory holding stack.sh)",
            file=sys.stderr,
        )
        return 127
    sys.stdout.flush()
    sys.stderr.flush()
    # the secured stack provisions its principals with this interpreter (kafka-python is here)
    child_env = {
        **os.environ,
        **(env or {}),
        "BACKSCROLL_PYTHON": os.environ.get("BACKSCROLL_PYTHON", sys.executable),
    }
    completed = subprocess.run(["bash", str(script), command, *args], check=False, env=child_env)
    return completed.returncode


#: Hosts the local stack listens on (``stack.sh`` binds 127.0.0.1).
LOCAL_HOSTS: Final = frozenset({"127.0.0.1", "localhost"})
#: Seconds :func:`run_status` waits for a server that is not the local stack to accept a connection.
PROBE_TIMEOUT_S: Final = 3.0


@dataclass(frozen=True)
class Server:
    """Where the settings say one server listens (the first address they list)."""

    name: str
    host: str
    port: int
    #: The stack script's variable for this server's port.
    port_variable: str

    @property
    def where(self) -> str:
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"


def configured_servers() -> tuple[Server, Server]:
    """Kafka and OpenSearch as the client settings (environment and ``.env``) name them."""
    from backscroll.indexer.settings import OpenSearchSettings
    from backscroll.ingest.settings import KafkaSettings

    bootstrap = KafkaSettings().bootstrap_servers.split(",")[0].strip()
    host, _, port = bootstrap.rpartition(":")
    kafka = Server("kafka", host.strip("[]"), int(port), "BACKSCROLL_KAFKA_PORT")
    url = urlsplit(OpenSearchSettings().url.split(",")[0].strip())
    try:
        url_port = url.port
    except ValueError:  # not a number: the client fails on it too; probe the scheme's port
        url_port = None
    default_port = 443 if url.scheme == "https" else 80
    opensearch = Server(
        "opensearch", url.hostname or "", url_port or default_port, "BACKSCROLL_OPENSEARCH_PORT"
    )
    return kafka, opensearch


def run_status() -> int:
    """``status`` where the settings point; 0 only when both servers answer.

    Both on the local stack's host: the stack script's status (pids, health) on the configured
    ports (a port variable of the script set in the environment wins). Otherwise one line per
    server, saying whether it accepts a TCP connection."""
    servers = configured_servers()
    if all(server.host in LOCAL_HOSTS for server in servers):
        ports = {s.port_variable: str(s.port) for s in servers if s.port_variable not in os.environ}
        return run_stack("status", env=ports)
    rc = 0
    for server in servers:
        try:
            socket.create_connection((server.host, server.port), timeout=PROBE_TIMEOUT_S).close()
            print(f"{server.name + ':':<11} answering at {server.where}")
        except OSError as err:
            cause = (err.strerror or str(err) or type(err).__name__).lower()
            print(f"{server.name + ':':<11} NOT answering at {server.where} ({cause})")
            rc = 1
    return rc


def warn_retention() -> None:
    """One ``warning:`` line per retention concern of the selected backend's log (a truncated log, a
    finite retention). A log refusing the question is one line too, never a failure of ``status``; a
    log out of reach says nothing more than the server lines above it."""
    from backscroll.backends import current_backend
    from backscroll.indexer.errors import IndexerError
    from backscroll.ingest.errors import IngestError

    backend = current_backend()
    try:
        lines = backend.log_retention().warnings()
    except (IndexerError, IngestError) as err:
        lines = [] if err.retriable else [f"cannot check the log's retention: {err}"]
    finally:
        backend.close()
    for line in lines:
        print(f"warning: {line}")
