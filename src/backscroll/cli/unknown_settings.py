"""The warning about ``BACKSCROLL_*`` variables that nothing reads (a mistyped setting's name).

pydantic-settings ignores what it does not know, so ``BACKSCROLL_BAKCEND=kafka-opensearch`` would
silently leave the default backend in place. The ``backscroll`` command therefore compares the
``BACKSCROLL_*`` names of its environment (and of ``.env`` in the working directory, which the
settings read too) with every name something reads: the settings models' variables, the command
options' environment variables, and the variables of the local stack scripts and the test
harness. Unknown names are one warning line on stderr, with the nearest known name. Only the
command warns: importing or configuring the libraries never prints.
"""

from __future__ import annotations

import difflib
import os
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Final, Protocol

from backscroll.textsafe import safe_text

__all__ = [
    "PREFIX",
    "TOOL_VARIABLES",
    "CommandTree",
    "command_variables",
    "known_variables",
    "unknown_message",
    "warn_unknown",
]

PREFIX: Final = "BACKSCROLL_"

#: Variables read outside the settings models: the local stack (``deploy/local/stack.sh``,
#: ``secure.sh``, ``backscroll.cli.stack``) and the test and soak harness (``tests/``, ``scripts/``).
TOOL_VARIABLES: Final = frozenset(
    {
        "BACKSCROLL_CACHE_DIR",
        "BACKSCROLL_DEPLOY_DIR",
        "BACKSCROLL_JAVA_HOME",
        "BACKSCROLL_KAFKA_CONTROLLER_PORT",
        "BACKSCROLL_KAFKA_HEAP",
        "BACKSCROLL_KAFKA_PORT",
        "BACKSCROLL_KAFKA_READY_TIMEOUT",
        "BACKSCROLL_MVN_ARGS",
        "BACKSCROLL_OPENSEARCH_HEAP",
        "BACKSCROLL_OPENSEARCH_PORT",
        "BACKSCROLL_OPENSEARCH_READY_TIMEOUT",
        "BACKSCROLL_OPENSEARCH_TRANSPORT_PORT",
        "BACKSCROLL_PYTHON",
        "BACKSCROLL_STACK_CA_DAYS",
        "BACKSCROLL_STACK_CERT_DAYS",
        "BACKSCROLL_STACK_DIR",
        "BACKSCROLL_STACK_DLS_WORKSPACE",
        "BACKSCROLL_STACK_FRESH",
        "BACKSCROLL_STACK_INDEXER_GROUP",
        "BACKSCROLL_STACK_INDEX_PATTERN",
        "BACKSCROLL_STACK_TOPIC",
        "BACKSCROLL_STOP_TIMEOUT",
        # the test and soak harness
        "BACKSCROLL_FLEET_SCALE",
        "BACKSCROLL_REQUIRE_STACK",
        "BACKSCROLL_SECURE_STACK",
        "BACKSCROLL_SECURE_STACK_DIR",
        "BACKSCROLL_SECURE_STACK_REUSE",
        "BACKSCROLL_SOAK_LOGS",
    }
)


class CommandTree(Protocol):
    """A click command (typer's or click's own): its options, and subcommands when a group."""

    @property
    def params(self) -> Sequence[object]: ...


def command_variables(command: CommandTree) -> set[str]:
    """The environment variables of every option of ``command`` and its subcommands."""
    found: set[str] = set()
    for param in command.params:
        envvar = getattr(param, "envvar", None)
        if isinstance(envvar, str):
            found.add(envvar)
        elif isinstance(envvar, Sequence):
            found.update(str(name) for name in envvar)
    subcommands: Mapping[str, CommandTree] = getattr(command, "commands", None) or {}
    for sub in subcommands.values():
        found |= command_variables(sub)
    return found


def known_variables(extra: Iterable[str] = ()) -> set[str]:
    """Every ``BACKSCROLL_*`` name something reads: the settings models, :data:`TOOL_VARIABLES`
    and ``extra`` (the command options' variables)."""
    from backscroll.config_docs import env_variables

    return {*env_variables(), *TOOL_VARIABLES, *extra}


def unknown_message(names: Iterable[str], known: Iterable[str]) -> str | None:
    """The warning line for ``names`` that are not ``known`` (``None``: every name is known)."""
    known = set(known)
    unknown = sorted({name for name in names if name.startswith(PREFIX)} - known)
    if not unknown:
        return None
    # compared without the prefix they all share, which would make any two names look alike
    tails = {name.removeprefix(PREFIX): name for name in known}
    shown = []
    for name in unknown:
        nearest = difflib.get_close_matches(name.removeprefix(PREFIX), list(tails), n=1, cutoff=0.6)
        shown.append(f"{name} (did you mean {tails[nearest[0]]}?)" if nearest else name)
    noun = "variable" if len(unknown) == 1 else "variables"
    return f"warning: unknown {noun} ignored: {', '.join(shown)}"


def _dotenv_names(path: Path) -> set[str]:
    if not path.is_file():
        return set()
    from dotenv import dotenv_values

    try:
        return {name for name in dotenv_values(path) if name.startswith(PREFIX)}
    except (OSError, UnicodeError):
        return set()  # the settings report an unreadable .env themselves


def warn_unknown(command: CommandTree, environ: Mapping[str, str] | None = None) -> None:
    """Print the warning line for the unknown ``BACKSCROLL_*`` names of the environment and
    ``.env``; ``command`` is the ``backscroll`` command, whose options name variables too."""
    names = {name for name in (os.environ if environ is None else environ) if name.startswith(PREFIX)}
    names |= _dotenv_names(Path(".env"))
    if not names:
        return
    message = unknown_message(names, known_variables(command_variables(command)))
    if message is not None:
        sys.stderr.write(safe_text(message) + "\n")
        sys.stderr.flush()
