"""``backscroll index``, ``dlq list|replay``, ``rebuild`` and ``forget``: the indexer and its operator
commands, on whichever backend ``BACKSCROLL_BACKEND`` selects.

Each command builds only what the selected backend names (the embedded backend opens the SQLite file
and nothing else; kafka-opensearch contacts Kafka and/or OpenSearch). Failures print one line and exit
non-zero (a stack trace only with ``--debug``).
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

if TYPE_CHECKING:
    from backscroll.backend import Backend
    from backscroll.indexer.runner import RunStats

__all__ = ["dlq_list_cmd", "dlq_replay_cmd", "forget", "index", "rebuild", "register"]


def register(app: typer.Typer) -> None:
    """Add the indexer and operator commands to the ``backscroll`` app."""
    app.command()(index)
    dlq_app = typer.Typer(no_args_is_help=True, help="Inspect and re-drive dead letters.")
    dlq_app.command("list")(dlq_list_cmd)
    dlq_app.command("replay")(dlq_replay_cmd)
    app.add_typer(dlq_app, name="dlq")
    app.command()(rebuild)
    app.command()(forget)


def _backend(*, need_file: bool) -> Backend:
    from backscroll.backend import current_backend
    from backscroll.cli.main import _fail

    backend = current_backend()
    if need_file and backend.name == "embedded" and not backend.sqlite_path.exists():
        _fail(f"{backend.sqlite_path} does not exist: nothing was appended on the embedded backend yet")
    return backend


def index(
    until_idle: Annotated[
        bool, typer.Option("--until-idle", help="Stop once the whole log is projected (bounded wait).")
    ] = False,
    metrics_port: Annotated[int | None, typer.Option(help="Serve /metrics, /healthz, /readyz here.")] = None,
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

    from backscroll.cli.main import _errors, _fail, console

    if compact and not until_idle:
        _fail("--compact needs --until-idle (a long-running indexer never reaches the end of its run)")
    with _errors():
        stop = threading.Event()
        signal.signal(signal.SIGTERM, lambda *_: stop.set())
        signal.signal(signal.SIGINT, lambda *_: stop.set())
        started = time.monotonic()
        with ExitStack() as stack:
            runner = stack.enter_context(_backend(need_file=False).open_indexer(metrics_port=metrics_port))
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
    limit: Annotated[int, typer.Option("--limit", "-n")] = 100,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Show parked records with their reasons, oldest first."""
    from backscroll.cli.main import _errors, console

    with _errors():
        letters_store = _backend(need_file=True).open_dead_letters()
        try:
            letters = letters_store.list(limit)
        finally:
            letters_store.close()
        if as_json:
            for letter in letters:
                letter.pop("key", None)
                letter.pop("value", None)
                sys.stdout.write(orjson.dumps(letter).decode() + "\n")
            return
        table = Table(title=f"{len(letters)} dead letters")
        for column in ("dlq offset", "source", "class", "field", "reason"):
            table.add_column(column)
        for letter in letters:
            table.add_row(
                str(letter["dlq_offset"]),
                f"{letter['partition']}@{letter['offset']}",
                Text(str(letter["error_class"])),
                Text(str(letter.get("field") or "")),
                Text(str(letter["reason"])[:120]),
            )
        console.print(table)


def dlq_replay_cmd() -> None:
    """Re-append dead letters not replayed before to the log (after a fix); idempotent."""
    from backscroll.cli.main import _errors, console

    with _errors():
        letters_store = _backend(need_file=True).open_dead_letters()
        try:
            count = letters_store.replay()
        finally:
            letters_store.close()
        console.print(f"re-sent {count} dead letters")


def rebuild(
    keep: Annotated[bool, typer.Option(help="Keep the old index version (OpenSearch).")] = False,
) -> None:
    """Project the whole log again: into a new index version whose aliases switch atomically
    (kafka-opensearch), or into the emptied projection of the file (embedded)."""
    from backscroll.cli.main import _errors, _fail, console
    from backscroll.indexer.operations import rebuild as run_rebuild
    from backscroll.indexer.operations import rebuild_embedded

    with _errors():
        backend = _backend(need_file=True)
        if backend.name == "embedded" and keep:
            _fail("--keep: the embedded backend has no index versions to keep", 2)
        with ExitStack() as stack:
            meter = Meter(stack, "rebuilding")

            def on_batch(stats: RunStats, remaining: int) -> None:
                meter.update(stats.consumed, note=f"lag {remaining}")

            if backend.name == "embedded":
                report = rebuild_embedded(backend.sqlite_path, on_batch=on_batch)
            else:
                assert backend.kafka and backend.opensearch and backend.indexer
                report = run_rebuild(
                    backend.kafka, backend.opensearch, backend.indexer, keep=keep, on_batch=on_batch
                )
    if backend.name == "embedded":
        console.print(
            f"rebuilt {backend.sqlite_path}: {report.stats.indexed} events in {report.seconds:.1f}s"
        )
        return
    console.print(
        f"rebuilt v{report.old_version} → v{report.new_version}: {report.stats.indexed} events "
        f"in {report.seconds:.1f}s ({'kept' if keep else 'deleted'} v{report.old_version})"
    )


def forget(session_id: Annotated[str, typer.Argument(help="Session whose documents to delete.")]) -> None:
    """Delete a session's documents from the projection (the log keeps its records)."""
    from backscroll.cli.main import _errors, console
    from backscroll.indexer.operations import forget_embedded, forget_session

    with _errors():
        backend = _backend(need_file=True)
        if backend.name == "embedded":
            deleted = forget_embedded(backend.sqlite_path, session_id)
            where = "the log table keeps its records (a rebuild would restore them)"
        else:
            assert backend.opensearch is not None
            deleted = forget_session(backend.opensearch, session_id)
            where = "the Kafka topic keeps its records until retention (see docs/operations.md)"
        console.print(Text(f"deleted {deleted} events of {session_id}; {where}"))
