"""``backscroll import``, ``backscroll capture`` and ``backscroll watch``: coding agents' transcripts
into the session log (:mod:`backscroll.capture`)."""

from __future__ import annotations

import sys
import time
from contextlib import ExitStack
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal

import typer

from backscroll.cli.output import EXIT_USAGE, errors, fail, print_json, say

if TYPE_CHECKING:
    from backscroll.capture.settings import CaptureSettings

__all__ = ["register"]

import_app = typer.Typer(no_args_is_help=True, help="Import coding agents' transcripts into the session log.")
capture_app = typer.Typer(no_args_is_help=True, help="Capture a coding agent's session as it runs (hooks).")

_Since = Annotated[
    str | None,
    typer.Option(
        "--since",
        metavar="TIME",
        help="Only transcripts written at or after this time (2026-11-30 or 2026-11-30T10:00, UTC).",
    ),
]
_Project = Annotated[
    Path | None,
    typer.Option("--project", metavar="FOLDER", help="Only sessions started in this folder (or below it)."),
]
_Json = Annotated[bool, typer.Option("--json", help="Print the summary (or error) as JSON.")]
_Thinking = Annotated[
    bool, typer.Option("--thinking", help="Keep the model's thinking text (BACKSCROLL_CAPTURE_THINKING).")
]


def _settings(thinking: bool, as_json: bool) -> CaptureSettings:
    from pydantic import ValidationError

    from backscroll.capture.settings import CaptureSettings

    try:
        settings = CaptureSettings()
    except ValidationError as err:
        fail(
            f"capture settings: {err.errors()[0]['loc']}: {err.errors()[0]['msg']}",
            EXIT_USAGE,
            as_json=as_json,
        )
    return settings.model_copy(update={"thinking": True}) if thinking else settings


def _run_import(
    source: str,
    directory: Path | None,
    since: str | None,
    project: Path | None,
    thinking: bool,
    as_json: bool,
) -> None:
    from backscroll.capture.runner import FORMATS, ImportSummary, open_capture, select
    from backscroll.cli.meter import Meter
    from backscroll.cli.search_pages import time_option

    fmt = FORMATS[source]()
    summary = ImportSummary()
    started = time.monotonic()
    with errors(as_json):
        settings = _settings(thinking, as_json)
        root = (directory or fmt.default_dir()).expanduser()
        if not root.exists():
            fail(f"no such folder: {root}", EXIT_USAGE, as_json=as_json)
        after: datetime | None = time_option("--since", since)
        paths = select(fmt, root, since=after, project=project)
        total = sum(p.stat().st_size for p in paths)
        with ExitStack() as stack:
            capture = stack.enter_context(open_capture(settings=settings))
            meter = Meter(stack, "importing", total or None)
            done = 0
            for path in paths:
                summary.add(capture.transcript(path, fmt))
                done += path.stat().st_size
                meter.update(summary.entries, done_bytes=done)
            capture.log.flush(timeout=120)
            meter.stop()
    seconds = time.monotonic() - started
    if as_json:
        print_json(summary.as_json(seconds))
        return
    say(
        f"imported {summary.entries} entries from {summary.lines} new lines of {summary.transcripts} "
        f"transcripts in {seconds:.1f}s ({summary.duplicates} lines already captured, "
        f"{summary.invalid} unreadable lines kept as capture/invalid-line)"
    )
    for workspace, sessions in sorted(summary.workspaces.items()):
        say(f"  workspace {workspace}: {len(sessions)} sessions")
    if summary.waiting:
        say(f"  {summary.waiting} transcripts end in a line still being written: it waits for the next run")
    for reason in summary.reasons:
        say(f"  {reason}")


@import_app.command("claude-code")
def import_claude_code(
    directory: Annotated[
        Path | None, typer.Argument(help="Transcript folder (default ~/.claude/projects) or one file.")
    ] = None,
    since: _Since = None,
    project: _Project = None,
    thinking: _Thinking = False,
    as_json: _Json = False,
) -> None:
    """Import Claude Code transcripts (resumable: a second run appends only what is new)."""
    _run_import("claude-code", directory, since, project, thinking, as_json)


@import_app.command("codex")
def import_codex(
    directory: Annotated[
        Path | None, typer.Argument(help="Rollout folder (default ~/.codex/sessions) or one file.")
    ] = None,
    since: _Since = None,
    project: _Project = None,
    thinking: _Thinking = False,
    as_json: _Json = False,
) -> None:
    """Import Codex rollouts (rollout-*.jsonl; resumable: a second run appends only what is new)."""
    _run_import("codex", directory, since, project, thinking, as_json)


@capture_app.command("claude-code")
def capture_claude_code(
    install: Annotated[
        bool, typer.Option("--install", help="Register the hooks and the MCP server in Claude Code's files.")
    ] = False,
    user: Annotated[bool, typer.Option("--user", help="With --install: ~/.claude (every project).")] = False,
    project: Annotated[
        bool,
        typer.Option("--project", help="With --install: this project's .claude and .mcp.json (default)."),
    ] = False,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="With --install: print the diff, write nothing.")
    ] = False,
) -> None:
    """The Claude Code hook: reads the event's JSON on stdin, captures the transcript's new lines,
    prints nothing and always exits 0. With --install, registers itself."""
    if not install:
        if user or project or dry_run:
            fail("--user, --project and --dry-run go with --install", EXIT_USAGE)
        from backscroll.capture.hook import read_event, run_hook

        run_hook(read_event(sys.stdin.buffer))
        return
    if user and project:
        fail("give --user or --project, not both", EXIT_USAGE)
    _install("user" if user else "project", dry_run)


def _install(scope: Literal["user", "project"], dry_run: bool) -> None:
    from backscroll.capture.entries import workspace_for
    from backscroll.capture.install import plan, write

    with errors():
        settings = _settings(False, False)
        cwd = Path.cwd()
        workspace = workspace_for(str(cwd), settings)
        try:
            changes = plan(scope, cwd=cwd, home=Path.home(), workspace=workspace)
        except ValueError as err:
            fail(str(err), EXIT_USAGE)
        if dry_run:
            for change in changes:
                if change.changed:
                    sys.stdout.write(change.diff())
            if not any(change.changed for change in changes):
                say("already installed: nothing would change")
            return
        written = write(changes)
    for path in written:
        say(f"updated {path}")
    if not written:
        say("already installed: nothing changed")
    else:
        say(
            f"Claude Code sessions started here now go to workspace {workspace}; "
            f"search them with: backscroll search -w {workspace} 'words'"
        )


def watch(
    claude_code: Annotated[
        Path | None,
        typer.Option(
            "--claude-code", metavar="FOLDER", help="Claude Code folder (default ~/.claude/projects)."
        ),
    ] = None,
    codex: Annotated[
        Path | None,
        typer.Option("--codex", metavar="FOLDER", help="Codex folder (default ~/.codex/sessions)."),
    ] = None,
    thinking: _Thinking = False,
) -> None:
    """Follow Claude Code and Codex transcripts and append new lines as they are written (Ctrl-C
    stops; a restart continues where it stopped). Needs the capture extra (watchdog)."""
    import threading

    from backscroll.capture.runner import FORMATS, open_capture
    from backscroll.capture.watch import MissingWatchdog
    from backscroll.capture.watch import watch as follow

    roots = []
    for name, given in (("claude-code", claude_code), ("codex", codex)):
        fmt = FORMATS[name]()
        root = (given or fmt.default_dir()).expanduser()
        if given is not None or root.exists():
            roots.append((fmt, root))
    if not roots:
        fail("no transcript folder found: give --claude-code DIR or --codex DIR", EXIT_USAGE)
    stop = threading.Event()
    with errors():
        settings = _settings(thinking, False)
        with open_capture(settings=settings) as capture:
            say("watching " + ", ".join(str(root) for _, root in roots) + " (Ctrl-C stops)")
            try:
                follow(
                    capture,
                    roots,
                    stop,
                    on_outcome=lambda o: say(f"{o.path.name}: +{o.entries} entries"),
                )
            except MissingWatchdog as err:
                fail(str(err), EXIT_USAGE)
            except KeyboardInterrupt:
                stop.set()


def register(app: typer.Typer) -> None:
    """Add ``import``, ``capture`` and ``watch`` to the ``backscroll`` command."""
    app.add_typer(import_app, name="import")
    app.add_typer(capture_app, name="capture")
    app.command("watch")(watch)
