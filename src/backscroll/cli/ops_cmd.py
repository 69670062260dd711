"""``backscroll index``, ``dlq list|replay``, ``rebuild`` and ``forget``: the indexer and its operator
commands, on whichever backend ``BACKSCROLL_BACKEND`` selects.

Each command calls one operation of the selected :class:`~backscroll.backends.Backend`, which builds
only what it needs (the embedded backend opens the SQLite file and nothing else; kafka-opensearch
contacts Kafka and/or OpenSearch). Failures print one line and exit non-zero (a stack trace only with
``--debug``).
"""

from __future__ import annotations

import sys
import time
from contextlib import ExitStack
from typing import TYPE_CHECKING, Annotated

import orjson
import typer
from rich.table import Table
from rich.text import Text

from backscroll.cli.meter import Meter
from backscroll.cli.output import console, errors, fail

if TYPE_CHECKING:
    from backscroll.backends import Backend
    from backscroll.indexer.runner import RunStats

__all__ = ["dlq_list_cmd", "dlq_replay_cmd", "forget", "index", "rebuild", "register"]


def register(app: typer.Typer) -> None:
    """Add the indexer and operator commands to the ``backscroll`` app."""
    app.command()(index)
    dlq_app = typer.Typer(
        no_args_is_help=True, rich_markup_mode=None, help="Inspect and re-drive dead letters."
    )
    dlq_app.command("list")(dlq_list_cmd)
    dlq_app.command("replay")(dlq_replay_cmd)
    app.add_typer(dlq_app, name="dlq")
    app.command()(rebuild)
    app.command()(forget)


def _backend(*, need_data: bool) -> Backend:
    """The selected backend; with ``need_data``, one that may hold something (else one line, exit 1)."""
    from backscroll.backends import current_backend

    backend = current_backend()
    missing = backend.missing() if need_data else None
    if missing is not None:
        fail(missing)
    return backend


def index(
    until_idle: Annotated[
        bool, typer.Option("--until-idle", help="Stop once the whole log is projected (bounded wait).")
    ] = False,
    metrics_port: Annotated[
        int | None, typer.Option(metavar="PORT", help="Serve /metrics, /healthz, /readyz on this port.")
    ] = None,
    compact: Annotated[
        bool,
        typer.Option(
            "--compact",
            help="With --until-idle: then merge the view's index segments (faster searches after a "
            "large first load; seconds to minutes).",
        ),
    ] = False,
) -> None:
    """Run the indexer that projects the log into the search view (BACKSCROLL_BACKEND)."""
    import signal
    import threading

    if compact and not until_idle:
        fail("--compact needs --until-idle (a long-running indexer never reaches the end of its run)")
    with errors():
        stop = threading.Event()
        signal.signal(signal.SIGTERM, lambda *_: stop.set())
        signal.signal(signal.SIGINT, lambda *_: stop.set())
        started = time.monotonic()
        with ExitStack() as stack:
            runner = stack.enter_context(_backend(need_data=False).open_indexer(metrics_port=metrics_port))
            meter = Meter(stack, "indexing")

            def on_batch(progress: RunStats) -> None:
                lag = runner.last_lag
                meter.update(progress.consumed, note="" if lag is None else f"lag {lag}")

            stats = runner.run(until_idle=until_idle, stop=stop, on_batch=on_batch)
            took = time.monotonic() - started
            console.print(
                f"consumed {stats.consumed}, indexed {stats.indexed}, replays {stats.replays}, "
                f"conflicts {stats.conflicts}, dead-lettered {stats.dead_lettered} in {took:.1f}s"
            )
            if compact and not stop.is_set():
                meter.stop()
                merging = time.monotonic()
                runner.view.compact()
                console.print(f"compacted the view in {time.monotonic() - merging:.1f}s")


def dlq_list_cmd(
    limit: Annotated[int, typer.Option("--limit", "-n", metavar="N", help="Show at most N records.")] = 100,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print each record's envelope as one JSON object a line.")
    ] = False,
) -> None:
    """Show parked records with their reasons, oldest first."""
    with errors():
        letters = _backend(need_data=True).dead_letters(limit)
        if as_json:
            for letter in letters:
                sys.stdout.write(orjson.dumps(letter.envelope).decode() + "\n")
            return
        table = Table(title=f"{len(letters)} dead letters")
        for column in ("dlq offset", "source", "class", "field", "reason"):
            table.add_column(column)
        for letter in letters:
            table.add_row(
                str(letter.dlq_offset),
                f"{letter.partition}@{letter.offset}",
                Text(letter.error_class),
                Text(str(letter.field or "")),
                Text(letter.reason[:120]),
            )
        console.print(table)


def dlq_replay_cmd() -> None:
    """Re-append dead letters not replayed before to the log (after a fix); idempotent."""
    with errors():
        count = _backend(need_data=True).replay_dead_letters()
        console.print(f"re-sent {count} dead letters")


def rebuild(
    keep: Annotated[bool, typer.Option(help="Keep the old index version (OpenSearch).")] = False,
    allow_truncated: Annotated[
        bool,
        typer.Option(
            "--allow-truncated",
            help="Rebuild from what a truncated log still holds (the records retention deleted are "
            "then absent from the new projection).",
        ),
    ] = False,
) -> None:
    """Project the whole log again: into a new index version whose aliases switch atomically
    (kafka-opensearch), or into the emptied projection of the file (embedded)."""
    with errors():
        backend = _backend(need_data=True)
        if keep and not backend.keeps_index_versions:
            fail(f"--keep: the {backend.name} backend has no index versions to keep", 2)
        with ExitStack() as stack:
            meter = Meter(stack, "rebuilding")

            def on_batch(stats: RunStats, remaining: int) -> None:
                meter.update(stats.consumed, note=f"lag {remaining}")

            rebuilt = backend.rebuild(keep=keep, on_batch=on_batch, allow_truncated=allow_truncated)
    console.print(rebuilt.summary)


def forget(
    session_id: Annotated[str, typer.Argument(metavar="SESSION", help="Session whose documents to delete.")],
) -> None:
    """Delete a session's documents from the projection (the log keeps its records)."""
    with errors():
        forgotten = _backend(need_data=True).forget(session_id)
        console.print(Text(forgotten.summary()))
