"""``backscroll mcp``: the model tools as an MCP server (stdio by default, streamable HTTP).

The scope is pinned when the server starts, by flags or environment — one session, a set of
sessions, or a workspace (several workspaces only with ``--ops``) — and never by tool arguments.
Needs the ``mcp`` extra (``pip install 'backscroll[mcp]'``). In stdio mode nothing but protocol
messages goes to stdout; diagnostics go to stderr.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Annotated, Any, Literal, NoReturn

import typer

if TYPE_CHECKING:
    from mcp.server.lowlevel import Server

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
            metavar="SESSION",
            envvar="BACKSCROLL_MCP_SESSIONS",
            help="Serve these sessions (repeatable; env: space-separated ids).",
        ),
    ] = None,
    workspace: Annotated[
        list[str] | None,
        typer.Option(
            "--workspace",
            "-w",
            metavar="WORKSPACE",
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
            metavar="SESSION",
            envvar="BACKSCROLL_MCP_OWN_SESSION",
            help="The caller's own session: the default for reads, left out of session_search.",
        ),
    ] = None,
    transport: Annotated[
        Literal["stdio", "http"],
        typer.Option(
            "--transport",
            metavar="stdio|http",
            envvar="BACKSCROLL_MCP_TRANSPORT",
            help="stdio, or streamable HTTP.",
        ),
    ] = "stdio",
    host: Annotated[
        str,
        typer.Option("--host", metavar="ADDRESS", envvar="BACKSCROLL_MCP_HOST", help="HTTP bind address."),
    ] = "127.0.0.1",
    port: Annotated[
        int,
        typer.Option(
            "--port",
            min=0,
            max=65535,
            metavar="PORT",
            envvar="BACKSCROLL_MCP_PORT",
            help="HTTP port (0: any free port).",
        ),
    ] = 8766,
    path: Annotated[
        str, typer.Option("--path", metavar="PATH", envvar="BACKSCROLL_MCP_PATH", help="HTTP endpoint path.")
    ] = "/mcp",
    token: Annotated[
        str | None,
        typer.Option(
            "--token",
            metavar="TOKEN",
            envvar="BACKSCROLL_MCP_TOKEN",
            show_default=False,
            help="HTTP: require Authorization: Bearer TOKEN (needed to bind other than loopback).",
        ),
    ] = None,
    allow_host: Annotated[
        list[str] | None,
        typer.Option("--allow-host", metavar="NAME", help="HTTP: another Host name (repeatable)."),
    ] = None,
) -> None:
    """Serve the session tools to an MCP client, pinned to one scope."""
    try:
        import anyio

        from backscroll.query.tools.mcp_server import build_server, serve_stdio
    except ImportError:
        _fail("the MCP server needs the mcp extra: pip install 'backscroll[mcp]'")
    from pydantic import ValidationError

    from backscroll.backends import current_backend
    from backscroll.ingest.settings import describe_settings_error
    from backscroll.query import Scope, SessionQueryError
    from backscroll.query.tools import session_tools

    if bool(session) == bool(workspace):
        _fail("pin exactly one scope: --session ID (repeatable) or --workspace ID")
    if transport == "http":
        from backscroll.cli.listen import refuse_open_bind

        refuse_open_bind(host, has_token=bool(token), needs="--token (or BACKSCROLL_MCP_TOKEN)")
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
    except ValidationError as err:
        _fail(f"BACKSCROLL_INVALID_SETTING: {describe_settings_error(err)}")
    try:
        toolset = session_tools(provider, reader, session_id=own_session)
        assert toolset is not None
        server = build_server(toolset)
        if transport == "http":
            _serve_http(server, host=host, port=port, path=path, token=token, allow_host=allow_host)
        else:
            anyio.run(serve_stdio, server)
    except KeyboardInterrupt:
        pass
    finally:
        provider.close()
        reader.close()


def _serve_http(
    server: Server[Any], *, host: str, port: int, path: str, token: str | None, allow_host: list[str] | None
) -> None:
    """Bind first (a busy port is one line and exit 2), then announce, then serve on the socket
    behind the Host check and, with ``token``, the bearer check."""
    import anyio

    from backscroll.cli.listen import bind_listener, shown_address
    from backscroll.query.tools.mcp_server import serve_http
    from backscroll.service.gate import BearerGate
    from backscroll.service.guards import HostCheck

    hosts = HostCheck.for_bind(host, allow_host)

    def wrap(app: Any) -> Any:
        return BearerGate(app, hosts=hosts, token=token)

    sock = bind_listener(host, port)
    try:
        sys.stderr.write(f"backscroll mcp on http://{shown_address(host, sock.getsockname()[1])}{path}\n")
        sys.stderr.flush()
        started = anyio.run(lambda: serve_http(server, host=host, port=port, path=path, sock=sock, wrap=wrap))
    finally:
        sock.close()
    if not started:
        _fail("the MCP server did not start (see the lines above)", 1)


def register(app: typer.Typer) -> None:
    """Add ``backscroll mcp`` to the ``backscroll`` app."""
    app.command("mcp")(mcp)
