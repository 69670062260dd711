"""``backscroll --version``: the version of every installed backscroll distribution, one a line."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version
from typing import Final

import typer

__all__ = ["DISTRIBUTIONS", "installed_versions", "print_versions"]

#: The four distributions, in the order they are listed.
DISTRIBUTIONS: Final = ("backscroll", "backscroll-ingest", "backscroll-indexer", "backscroll-query")


def installed_versions() -> list[tuple[str, str]]:
    """``(distribution, version)`` of each backscroll distribution installed in this environment."""
    found = []
    for name in DISTRIBUTIONS:
        try:
            found.append((name, version(name)))
        except PackageNotFoundError:
            continue
    return found


def print_versions(wanted: bool) -> None:
    """The ``--version`` option's callback: print the versions and exit."""
    if not wanted:
        return
    for name, number in installed_versions():
        typer.echo(f"{name} {number}")
    raise typer.Exit()
