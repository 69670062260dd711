"""Every option of every ``backscroll`` command says what it does and shows a name for its value,
never a Python type such as ``<bool>`` or ``<list[str]>``."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import typer
from typer.testing import CliRunner

from backscroll.cli.main import KIND_HELP, app
from backscroll.ingest.wire import KNOWN_EVENT_TYPES

#: A Python type shown where a value's name belongs: ``<bool>``, ``<list[str]>``, ``<int range>``.
TYPE_METAVAR = re.compile(r"<[a-z][a-z0-9_|\[\], ]*>")


def _commands(command: Any, path: str = "backscroll") -> Iterator[tuple[str, Any]]:
    """Each command of the tree (typer's own click classes: typed loosely on purpose)."""
    yield path, command
    for name, sub in getattr(command, "commands", {}).items():
        yield from _commands(sub, f"{path} {name}")


def test_every_option_has_help_and_a_plain_metavar() -> None:
    root = typer.main.get_command(app)
    problems = []
    seen = 0
    for path, command in _commands(root):
        ctx = typer.Context(command, info_name=path)
        for param in command.get_params(ctx):
            if param.param_type_name != "option":
                continue
            seen += 1
            record = param.get_help_record(ctx)
            if not (param.help or "").strip():
                problems.append(f"{path} {param.opts[0]}: no help")
            if record is None or TYPE_METAVAR.search(record[0]):
                problems.append(f"{path} {param.opts[0]}: shows {record and record[0]!r}")
    assert seen > 40
    assert not problems, "\n".join(problems)


def test_every_argument_has_help() -> None:
    root = typer.main.get_command(app)
    missing = [
        f"{path} {param.name}"
        for path, command in _commands(root)
        for param in command.get_params(typer.Context(command))
        if param.param_type_name == "argument" and not (getattr(param, "help", "") or "").strip()
    ]
    assert not missing


def test_the_kind_option_lists_every_kind() -> None:
    assert all(kind in KIND_HELP for kind in KNOWN_EVENT_TYPES)


def test_the_rendered_help_shows_no_python_types_for_options() -> None:
    root = typer.main.get_command(app)
    runner = CliRunner()
    shown = []
    for path, _ in _commands(root):
        result = runner.invoke(app, [*path.split()[1:], "--help"], terminal_width=200)
        assert result.exit_code == 0, (path, result.output)
        options = [line for line in result.output.splitlines() if line.strip(" │").startswith("-")]
        assert options, path
        shown += [f"{path}: {line.strip()}" for line in options if TYPE_METAVAR.search(line)]
    assert not shown, "\n".join(shown)
