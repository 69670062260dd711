"""Run the local Kafka + OpenSearch stack script (``deploy/local/stack.sh``) from Python.

The CLI exposes this as ``backscroll up / down / status``. All the work (fetching artifacts,
starting/stopping the servers, readiness checks) is done by the bash script; this module only
finds it and runs it with ``bash``, letting its output stream straight to the terminal.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

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


def run_stack(command: str, *args: str) -> int:
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
    env = {**os.environ, "BACKSCROLL_PYTHON": os.environ.get("BACKSCROLL_PYTHON", sys.executable)}
    completed = subprocess.run(["bash", str(script), command, *args], check=False, env=env)
    return completed.returncode
