"""``backscroll mcp``: the model tools as an MCP server (stdio by default, streamable HTTP).

The scope is pinned when the server starts, by flags or environment — one session, a set of
sessions, or a workspace (several workspaces only with ``--ops``) — and never by tool arguments.
Needs the ``mcp`` extra (``pip install 'backscroll[mcp]'``). In stdio mode nothing but protocol
messages goes to stdout; diagnostics go to stderr.
"""

from __future__ import annotations

import sys
from typing import Annotated, Literal, NoReturn

import typer

__all__ = ["mcp", "register"]


def _fail(message: str, code: int = 2) -> NoReturn:
    printable = "".join(ch if ch.isprintable() else "?" for ch in message)
    sys.stderr.write(f"error: {printable}\n")
    raise typer.Exit(code)


def mcp(
    session: Annotated[
        list[str] | None,
        typer.Option(
            "--session",
            "-s",
            envvar="BACKSCROLL_MCP_SESSIONS",
            help="Serve these sessions (repeatable; env: space-separated ids).",
        ),
    ] = None,
    workspace: Annotated[
        list[str] | None,
        typer.Option(
            "--workspace",
            "-w",
            envvar="BACKSCROLL_MCP_WORKSPACES",
            help="Serve this workspace (several only with --ops).",
        ),
    ] = None,
    ops: Annotated[
        bool, typer.Option("--ops", envvar="BACKSCROLL_MCP_OPS", help="Allow several workspaces (operators).")
    ] = False,
    own_session: Annotated[
        str | None,
        typer.Option(
            "--own-session",
            envvar="BACKSCROLL_MCP_OWN_SESSION",
            help="The caller's own session: the default for reads, left out of session_search.",
        ),
    ] = None,
    transport: Annotated[
        Literal["stdio", "http"],
        typer.Option("--transport", envvar="BACKSCROLL_MCP_TRANSPORT", help="stdio, or streamable HTTP."),
    ] = "stdio",
    host: Annotated[str, typer.Option("--host", envvar="BACKSCROLL_MCP_HOST", help="HTTP bind address.")] = (
        "127.0.0.1"
    ),
    port: Annotated[int, typer.Option("--port", envvar="BACKSCROLL_MCP_PORT", help="HTTP port.")] = 8765,
    path: Annotated[str, typer.Option("--path", envvar="BACKSCROLL_MCP_PATH", help="HTTP endpoint path.")] = (
        "/mcp"
    ),
) -> None:
    """Serve the session tools to an MCP client, pinned to one scope."""
    try:
        import anyio

        from backscroll.query.tools.mcp_server import build_server, serve_http, serve_stdio
    except ImportError:
        _fail("the MCP server needs the mcp extra: pip install 'backscroll[mcp]'")
    from backscroll.backends import current_backend
    from backscroll.query import Scope, SessionQueryError
    from backscroll.query.tools import session_tools

    if bool(session) == bool(workspace):
        _fail("pin exactly one scope: --session ID (repeatable) or --workspace ID")
    try:
        if session:
            scope = Scope.sessions(list(session))
        else:
            assert workspace is not None
            scope = Scope.workspaces(list(workspace), ops=ops)
        if own_session is not None and scope.kind == "sessions" and own_session not in scope.ids:
            _fail("--own-session must be one of the --session ids")
        backend = current_backend()
        provider = backend.open_provider(scope)
        reader = backend.open_reader(scope)
    except SessionQueryError as err:
        _fail(str(err))
    try:
        toolset = session_tools(provider, reader, session_id=own_session)
        assert toolset is not None
        server = build_server(toolset)
        if transport == "http":
            anyio.run(lambda: serve_http(server, host=host, port=port, path=path))
        else:
            anyio.run(serve_stdio, server)
    except KeyboardInterrupt:
        pass
    finally:
        provider.close()
        reader.close()


def register(app: typer.Typer) -> None:
    """Add ``backscroll mcp`` to the ``backscroll`` app."""
    app.command("mcp")(mcp)
