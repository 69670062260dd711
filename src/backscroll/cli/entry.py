"""The ``backscroll`` command's entry point.

Claude Code runs ``backscroll capture claude-code`` on every prompt, tool call and stop of an
agent, and waits for it. That one form goes straight to the capture, without loading the
command-line framework and every command (about 300 ms of imports, more than the hook's own work);
every other command line, including ``capture claude-code --install`` and ``--help``, goes to the
full application.
"""

from __future__ import annotations

import sys

__all__ = ["HOOK_ARGS", "main"]

#: The exact arguments the installed hooks run.
HOOK_ARGS = ("capture", "claude-code")


def main() -> None:
    """Run the hook when called exactly as the installed hooks call it, else the CLI."""
    if tuple(sys.argv[1:]) == HOOK_ARGS:
        from backscroll.capture.hook import read_event, run_hook

        run_hook(read_event(sys.stdin.buffer))
        return
    from backscroll.cli.main import app

    app()
