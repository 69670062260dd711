"""``backscroll export SESSION`` / ``backscroll export --workspace W``: the original records as JSONL.

Reads the selected backend's log (never the search index): the stored bytes of each record, one per
line, in the order they were appended (see :mod:`backscroll.ingest.export`). The output can be fed
back to ``backscroll append``. A summary goes to stderr; exit 0, 1 when the log cannot be read,
2 for bad usage.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, BinaryIO

import typer
from rich.text import Text

from backscroll.cli.output import EXIT_FAILED, EXIT_USAGE, err_console, errors, fail
from backscroll.textsafe import safe_text

if TYPE_CHECKING:
    from backscroll.ingest.records import LogRecord

__all__ = ["export", "register"]


def register(app: typer.Typer) -> None:
    """Add ``export`` to the ``backscroll`` app."""
    app.command("export")(export)


def export(
    session: Annotated[str | None, typer.Argument(metavar="SESSION", help="The session to export.")] = None,
    workspace: Annotated[
        str | None,
        typer.Option(
            "--workspace",
            "-w",
            metavar="WORKSPACE",
            help="Export every session of this workspace (with SESSION: only if it is in it).",
        ),
    ] = None,
    output: Annotated[
        Path | None,
        typer.Option("--output", "-o", metavar="FILE", help="Write to this file instead of stdout."),
    ] = None,
) -> None:
    """Print the original records of SESSION (or of a workspace) as JSONL, in log order."""
    from backscroll.backends import current_backend
    from backscroll.ingest.export import LogExport

    if session is None and workspace is None:
        fail("give a SESSION or --workspace W", EXIT_USAGE)
    job = LogExport(session_id=session, workspace_id=workspace)
    with errors():
        records = current_backend().export(job)
        if output is None:
            _write(records, sys.stdout.buffer)
        else:
            with output.open("wb") as sink:
                _write(records, sink)
    what = f"session {session}" if session is not None else f"workspace {workspace}"
    where = f"in workspace {workspace}" if session is not None and workspace is not None else "in the log"
    if job.exported == 0:
        # The same words whether the session is elsewhere or nowhere: a workspace never tells
        # which sessions other workspaces hold.
        code = "SESSION_QUERY_SESSION_NOT_FOUND" if session is not None else "BACKSCROLL_WORKSPACE_NOT_FOUND"
        fail(f"no records of {what} {where}", EXIT_FAILED, code=code)
    note = f" ({job.skipped} values that are not wire records skipped)" if job.skipped else ""
    err_console.print(Text(safe_text(f"exported {job.exported} records of {what}{note}")))


def _write(records: Iterable[LogRecord], sink: BinaryIO) -> None:
    import orjson

    for record in records:
        value = record.value or b"{}"
        if b"\n" in value or b"\r" in value:  # a foreign writer's pretty-printed JSON: one line
            value = orjson.dumps(orjson.loads(value))
        sink.write(value + b"\n")
    sink.flush()
