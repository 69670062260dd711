"""The ``backscroll`` command line: local stack, demo, append, index, search."""

from __future__ import annotations

import sys
from contextlib import AbstractContextManager
from typing import Annotated, Any, Literal, NoReturn

import typer

from backscroll.cli import append_cmd, output
from backscroll.cli.version import print_versions

# Plain help (no Rich panels): a flag shows no type and every value its metavar.
app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    rich_markup_mode=None,
    help="Durable, searchable agent session history.",
)
# No markup, no emoji, user text escaped: see backscroll.cli.output.
console = output.console
err_console = output.err_console
_state = output.state


@app.callback()
def _main(
    ctx: typer.Context,
    debug: Annotated[bool, typer.Option("--debug", help="Show stack traces on errors.")] = False,
    log_format: Annotated[
        Literal["json", "text"] | None,
        typer.Option(
            "--log-format",
            case_sensitive=False,
            metavar="json|text",
            help="json or text (BACKSCROLL_LOG_FORMAT).",
        ),
    ] = None,
    log_level: Annotated[
        Literal["debug", "info", "warning", "error", "critical"] | None,
        typer.Option(
            "--log-level",
            case_sensitive=False,
            metavar="LEVEL",
            help="debug, info, warning, error or critical (BACKSCROLL_LOG_LEVEL; warning).",
        ),
    ] = None,
    _version: Annotated[
        bool,
        typer.Option(
            "--version",
            is_eager=True,
            callback=print_versions,
            help="Print the version of each installed backscroll distribution and exit.",
        ),
    ] = False,
) -> None:
    _state["debug"] = debug
    from backscroll.cli.unknown_settings import warn_unknown
    from backscroll.logging_setup import LoggingConfigError, configure_from_settings

    warn_unknown(ctx.find_root().command)

    try:
        configure_from_settings(log_format, log_level)
    except LoggingConfigError as err:
        _fail(str(err), 2)


def _fail(message: str, code: int = 1) -> NoReturn:
    output.fail(message, code)


def _errors(as_json: bool = False) -> AbstractContextManager[None]:
    """One clear line per failure (JSON on stdout with ``--json``); a stack trace only with --debug."""
    return output.errors(as_json)


# -- local stack ----------------------------------------------------------------------------------
@app.command()
def up(
    fresh: Annotated[bool, typer.Option(help="Wipe data before starting.")] = False,
    secure: Annotated[
        bool, typer.Option(help="TLS, SASL/SCRAM + ACLs, security plugin (docs/security.md).")
    ] = False,
) -> None:
    """Start the local Kafka and OpenSearch (fetched from Maven Central on first use)."""
    from backscroll.cli.stack import run_stack

    raise typer.Exit(run_stack("up", *(["--fresh"] if fresh else []), *(["--secure"] if secure else [])))


@app.command()
def down() -> None:
    """Stop exactly the servers `up` started."""
    from backscroll.cli.stack import run_stack

    raise typer.Exit(run_stack("down"))


@app.command()
def status() -> None:
    """Show whether Kafka and OpenSearch answer where the settings point (the local stack by default),
    and warn when the log is truncated or its retention finite (a rebuild would then lose history)."""
    from backscroll.cli.stack import run_status, warn_retention

    with _errors():
        code = run_status()
        if code == 0:
            warn_retention()
    raise typer.Exit(code)


# -- pipeline -------------------------------------------------------------------------------------
app.command("append")(append_cmd.append)


#: ``search --kind``'s help: the event types the wire format knows (``KNOWN_EVENT_TYPES``).
KIND_HELP = (
    "Search only these event types (repeatable; default: the four message types): user/message, "
    "assistant/message, tool/call, tool/result, compaction/summary, goal/set, model/change, "
    "tool/disable, turn/start, turn/end, step/start, step/end."
)


def _search_scope(workspace: str | None, session: str | None, as_json: bool) -> Any:
    from backscroll.query import Scope

    if workspace:
        return Scope.workspace(workspace)
    if session:
        return Scope.session(session)
    output.fail("give --workspace W (optionally with --session S) or --session S", 2, as_json=as_json)


def _require_known(scope: Any, workspace: str | None, session: str | None, as_json: bool) -> None:
    """An empty answer from a workspace or session that does not exist is an error, not "no
    history yet": the operator most likely mistyped the id."""
    from backscroll.backends import current_backend

    with current_backend().open_reader(scope) as reader:
        known = {record.header.session_id for record in reader.list_sessions()}
    if session is not None and session not in known:
        where = f" in workspace {workspace}" if workspace else ""
        message = f"no session {session}{where}"
        output.fail(message, 1, as_json=as_json, code="SESSION_QUERY_SESSION_NOT_FOUND")
    if not known:
        output.fail(
            f"no sessions in workspace {workspace} (unknown workspace, or nothing indexed yet)",
            1,
            as_json=as_json,
            code="BACKSCROLL_WORKSPACE_NOT_FOUND",
        )


@app.command()
def search(
    query: Annotated[
        str, typer.Argument(metavar="QUERY", help="Free text; empty browses the most recent entries.")
    ] = "",
    workspace: Annotated[
        str | None, typer.Option("--workspace", "-w", metavar="WORKSPACE", help="Search this workspace.")
    ] = None,
    session: Annotated[
        str | None,
        typer.Option(
            "--session", "-s", metavar="SESSION", help="Search this session (within --workspace, if given)."
        ),
    ] = None,
    limit: Annotated[
        int | None,
        typer.Option("--limit", "-n", metavar="N", help="Matches per page (10; 50 with --all)."),
    ] = None,
    kinds: Annotated[
        list[str] | None,
        typer.Option("--kind", metavar="KIND", help=KIND_HELP),
    ] = None,
    since: Annotated[
        str | None,
        typer.Option(
            "--since",
            metavar="TIME",
            help="Only entries at or after this time (2026-11-30 or 2026-11-30T10:00, UTC).",
        ),
    ] = None,
    until: Annotated[
        str | None,
        typer.Option(
            "--until",
            metavar="TIME",
            help="Only entries at or before this time (a bare date means its whole day).",
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the result (or error) as JSON.")] = False,
    cursor: Annotated[
        str | None,
        typer.Option(
            "--cursor", metavar="CURSOR", help="Continue from a page's next_cursor (same query and scope)."
        ),
    ] = None,
    all_pages: Annotated[
        bool,
        typer.Option("--all", help="Stream every match, page by page (one JSON object a line with --json)."),
    ] = False,
) -> None:
    """Scoped, typo- and accent-tolerant search (BACKSCROLL_CURSOR_KEY: cursors work across processes)."""
    from backscroll.backends import current_backend
    from backscroll.cli.search_pages import check_kinds, describe_empty, print_all, print_next, time_option
    from backscroll.query import DEFAULT_LIMIT, MAX_LIMIT, SessionQueryRequest, render_result

    with _errors(as_json):
        scope = _search_scope(workspace, session, as_json)
        wanted = check_kinds(kinds)
        with current_backend().open_provider(scope) as provider:
            request = SessionQueryRequest(
                session_id=session,
                query=query,
                limit=limit if limit is not None else (MAX_LIMIT if all_pages else DEFAULT_LIMIT),
                kinds=wanted,
                cursor=cursor,
                since=time_option("--since", since),
                until=time_option("--until", until, end=True),
            )
            if all_pages:
                print_all(
                    provider, request, as_json=as_json, several=not session, out=console, err=err_console
                )
                return
            result = provider.search(request)
        if not result.matches and result.searched == 0 and cursor is None:
            _require_known(scope, workspace, session, as_json)
        if as_json:
            sys.stdout.write(result.model_dump_json() + "\n")
        else:
            empty = None
            if not result.matches:
                empty = describe_empty(query, workspace, session, wanted, since, until, result.searched)
            text = empty or render_result(result, query, scope_noun="session" if session else "workspace")
            output.say(text, keep_newlines=True)
            print_next(result, err_console)


@app.command()
def demo(
    workspaces: Annotated[int, typer.Option(metavar="N", help="Workspaces in the workload.")] = 3,
    sessions: Annotated[int, typer.Option(metavar="N", help="Sessions in the workload.")] = 9,
    stack: Annotated[
        bool, typer.Option("--stack", help="Run on Kafka + OpenSearch (`backscroll up`).")
    ] = False,
    keep: Annotated[
        bool,
        typer.Option("--keep", help="With --stack: keep the run's topic and indices (deleted by default)."),
    ] = False,
) -> None:
    """Append a realistic multi-session workload, index it, and run typo'd and accented searches
    (embedded SQLite by default, in BACKSCROLL_SQLITE_PATH or a fresh demo.db: no servers needed)."""
    from backscroll.cli.demo import run_demo

    with _errors():
        run_demo(console, workspaces=workspaces, sessions=sessions, stack=stack, keep=keep)


from backscroll.cli.ops_cmd import register as register_ops  # noqa: E402 - index, dlq, rebuild, forget
from backscroll.cli.reads_cmd import register  # noqa: E402 - the read commands (sessions, read, trace)

register(app)
register_ops(app)

from backscroll.cli.export_cmd import register as register_export  # noqa: E402 - backscroll export

register_export(app)

from backscroll.cli.mcp_cmd import register as register_mcp  # noqa: E402 - backscroll mcp

register_mcp(app)

from backscroll.cli.console_cmd import register as register_console  # noqa: E402 - the web console

register_console(app)

from backscroll.cli.capture_cmd import register as register_capture  # noqa: E402 - import, capture, watch

register_capture(app)

from backscroll.cli.serve_cmd import register as register_serve  # noqa: E402 - the query service
from backscroll.cli.token_cmd import register as register_token  # noqa: E402 - the service's tokens

register_serve(app)
register_token(app)


if __name__ == "__main__":  # pragma: no cover
    app()
