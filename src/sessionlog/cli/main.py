"""The ``sessionlog`` command line: local stack, demo, append, index, search."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any, Literal, NoReturn

import orjson
import typer
from pydantic import ValidationError
from rich.console import Console
from rich.progress import Progress
from rich.table import Table

app = typer.Typer(
    add_completion=False, no_args_is_help=True, help="Durable, searchable agent session history."
)
console = Console(soft_wrap=True)
err_console = Console(stderr=True, soft_wrap=True)
_state: dict[str, bool] = {"debug": False}


@app.callback()
def _main(
    debug: Annotated[bool, typer.Option("--debug", help="Show stack traces on errors.")] = False,
    log_format: Annotated[
        Literal["json", "text"] | None,
        typer.Option("--log-format", case_sensitive=False, help="json or text (SESSIONLOG_LOG_FORMAT)."),
    ] = None,
    log_level: Annotated[
        Literal["debug", "info", "warning", "error", "critical"] | None,
        typer.Option("--log-level", case_sensitive=False, help="Log level (SESSIONLOG_LOG_LEVEL; warning)."),
    ] = None,
) -> None:
    _state["debug"] = debug
    from sessionlog.logging_setup import LoggingConfigError, configure_from_settings

    try:
        configure_from_settings(log_format, log_level)
    except LoggingConfigError as err:
        _fail(str(err), 2)


def _fail(message: str, code: int = 1) -> NoReturn:
    err_console.print(f"[red]error:[/red] {message}", highlight=False)
    raise typer.Exit(code)


@contextmanager
def _errors() -> Iterator[None]:
    """One clear line per failure; a stack trace only with --debug."""
    from sessionlog.indexer.errors import IndexerError
    from sessionlog.ingest.errors import IngestError
    from sessionlog.query.errors import SessionQueryError

    try:
        yield
    except typer.Exit:
        raise
    except (IngestError, IndexerError, SessionQueryError) as err:
        if _state["debug"]:
            raise
        _fail(str(err))
    except OSError as err:
        if _state["debug"]:
            raise
        _fail(f"{err.strerror or err}: {err.filename}" if err.filename else str(err))
    except ValidationError as err:
        if _state["debug"]:
            raise
        from sessionlog.ingest.settings import describe_settings_error

        _fail(describe_settings_error(err), 2)


# -- local stack ----------------------------------------------------------------------------------
@app.command()
def up(
    fresh: Annotated[bool, typer.Option(help="Wipe data before starting.")] = False,
    secure: Annotated[
        bool, typer.Option(help="TLS, SASL/SCRAM + ACLs, security plugin (docs/security.md).")
    ] = False,
) -> None:
    """Start the local Kafka and OpenSearch (fetched from Maven Central on first use)."""
    from sessionlog.cli.stack import run_stack

    raise typer.Exit(run_stack("up", *(["--fresh"] if fresh else []), *(["--secure"] if secure else [])))


@app.command()
def down() -> None:
    """Stop exactly the servers `up` started."""
    from sessionlog.cli.stack import run_stack

    raise typer.Exit(run_stack("down"))


@app.command()
def status() -> None:
    """Show whether the local Kafka and OpenSearch answer."""
    from sessionlog.cli.stack import run_stack

    raise typer.Exit(run_stack("status"))


# -- pipeline -------------------------------------------------------------------------------------
def _read_lines(source: str) -> Iterator[tuple[int, bytes]]:
    if source != "-" and not Path(source).is_file():
        _fail(f"no such file: {source}", 2)
    stream = sys.stdin.buffer if source == "-" else Path(source).open("rb")  # noqa: SIM115 - closed below
    with stream:
        for number, line in enumerate(stream, 1):
            if line.strip():
                yield number, line


@app.command()
def append(
    source: Annotated[str, typer.Argument(help="JSONL file of wire records, or - for stdin.")],
) -> None:
    """Append wire-format records (one JSON object per line) to the session log (SESSIONLOG_BACKEND)."""
    from sessionlog.backend import open_log
    from sessionlog.ingest import RecordRejected

    with _errors():
        rejected: list[tuple[int, str]] = []
        sent = 0
        with open_log() as appender, Progress(console=err_console, transient=True) as progress:
            task = progress.add_task("appending", total=None)
            for number, line in _read_lines(source):
                try:
                    appender.append(orjson.loads(line))
                    sent += 1
                except orjson.JSONDecodeError as err:
                    rejected.append((number, f"record: not valid JSON: {err}"))
                except RecordRejected as err:
                    rejected.append((number, str(err)))
                progress.advance(task)
            appender.flush(timeout=60)
        console.print(f"appended {sent} records, rejected {len(rejected)}")
        for number, reason in rejected[:50]:
            console.print(f"  line {number}: {reason}", highlight=False)
        if rejected:
            raise typer.Exit(1)


def _provider(workspace: str | None, session: str | None) -> Any:
    from sessionlog.backend import open_provider
    from sessionlog.query import Scope

    if workspace:
        return open_provider(Scope.workspace(workspace))
    if session:
        return open_provider(Scope.session(session))
    _fail("give --workspace W (optionally with --session S) or --session S", 2)


@app.command()
def search(
    query: Annotated[str, typer.Argument(help="Free text; empty browses the most recent entries.")] = "",
    workspace: Annotated[str | None, typer.Option("--workspace", "-w")] = None,
    session: Annotated[str | None, typer.Option("--session", "-s")] = None,
    limit: Annotated[
        int | None, typer.Option("--limit", "-n", help="Matches per page (10; 50 with --all).")
    ] = None,
    kinds: Annotated[list[str] | None, typer.Option("--kind")] = None,
    as_json: Annotated[bool, typer.Option("--json")] = False,
    cursor: Annotated[
        str | None,
        typer.Option("--cursor", help="Continue from a page's next_cursor (same query and scope)."),
    ] = None,
    all_pages: Annotated[
        bool,
        typer.Option("--all", help="Stream every match, page by page (one JSON object a line with --json)."),
    ] = False,
) -> None:
    """Scoped, typo- and accent-tolerant search (SESSIONLOG_CURSOR_KEY: cursors work across processes)."""
    from sessionlog.cli.search_pages import print_all, print_next
    from sessionlog.query import DEFAULT_LIMIT, MAX_LIMIT, SessionQueryRequest, render_result

    with _errors(), _provider(workspace, session) as provider:
        request = SessionQueryRequest(
            session_id=session,
            query=query,
            limit=limit if limit is not None else (MAX_LIMIT if all_pages else DEFAULT_LIMIT),
            kinds=tuple(kinds or ()),
            cursor=cursor,
        )
        if all_pages:
            print_all(provider, request, as_json=as_json, several=not session, out=console, err=err_console)
            return
        result = provider.search(request)
        if as_json:
            sys.stdout.write(result.model_dump_json() + "\n")
        else:
            console.print(
                render_result(result, query, scope_noun="session" if session else "workspace"),
                highlight=False,
                markup=False,
            )
            print_next(result, err_console)


@app.command()
def demo(
    workspaces: Annotated[int, typer.Option(help="Workspaces in the workload.")] = 3,
    sessions: Annotated[int, typer.Option(help="Sessions in the workload.")] = 9,
    stack: Annotated[
        bool, typer.Option("--stack", help="Run on Kafka + OpenSearch (`sessionlog up`).")
    ] = False,
) -> None:
    """Append a realistic multi-session workload, index it, and run typo'd and accented searches
    (embedded SQLite by default: no servers needed)."""
    from sessionlog.cli.demo import run_demo

    with _errors():
        run_demo(console, workspaces=workspaces, sessions=sessions, stack=stack)


@app.command(context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def bench(ctx: typer.Context) -> None:
    """Run the benchmarks (relevance, pipeline, append, reads) from a checkout; arguments pass through.

    `sessionlog bench relevance --entries 100000 --report`, `sessionlog bench pipeline --events 50000`,
    `sessionlog bench report`; needs `pip install -e '.[bench]'`.
    """
    import subprocess

    root = Path(__file__).resolve().parents[3]
    if not (root / "tests" / "benchmarks" / "run.py").is_file():
        _fail("the benchmarks live in the source checkout (tests/benchmarks); run from a clone", 2)
    args = list(ctx.args)
    modules = {"pipeline": "bench_pipeline", "append": "bench_append", "reads": "bench_reads"}
    if args and args[0] in modules:
        module, args = f"tests.benchmarks.{modules[args[0]]}", args[1:]
    else:
        module = "tests.benchmarks.run"
    raise typer.Exit(subprocess.call([sys.executable, "-m", module, *args], cwd=root))


def _table(title: str, columns: list[str]) -> Table:
    table = Table(title=title)
    for column in columns:
        table.add_column(column)
    return table


from sessionlog.cli.ops_cmd import register as register_ops  # noqa: E402 - index, dlq, rebuild, forget
from sessionlog.cli.reads_cmd import register  # noqa: E402 - the read commands (sessions, read, trace)

register(app)
register_ops(app)

from sessionlog.cli.export_cmd import register as register_export  # noqa: E402 - sessionlog export

register_export(app)

from sessionlog.cli.mcp_cmd import register as register_mcp  # noqa: E402 - sessionlog mcp

register_mcp(app)

from sessionlog.cli.console_cmd import register as register_console  # noqa: E402 - the web console

register_console(app)


if __name__ == "__main__":  # pragma: no cover
    app()
