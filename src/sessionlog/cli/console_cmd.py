"""``sessionlog console``: serve the operators' web console (``sessionlog.console``) with uvicorn."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape

__all__ = ["console", "register"]

err_console = Console(stderr=True)


def register(app: typer.Typer) -> None:
    """Add the ``console`` command to the ``sessionlog`` app."""
    app.command("console")(console)


def console(
    host: Annotated[
        str, typer.Option(help="Address to bind; anything but loopback needs a token.")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=0, max=65535, help="Port to listen on.")] = 8765,
    allow_writes: Annotated[
        bool,
        typer.Option("--allow-writes", help="Allow forget and dead-letter replay (read-only otherwise)."),
    ] = False,
) -> None:
    """Serve the web console (search, sessions, health) for the configured backend (SESSIONLOG_BACKEND)."""
    from pydantic import ValidationError

    try:
        import uvicorn

        from sessionlog.console.app import create_app
        from sessionlog.console.settings import ConsoleSettings, Grants, is_loopback
        from sessionlog.console.source import ConsoleSource
    except ImportError as err:
        err_console.print(
            f"[red]error:[/red] the console needs its extra: pip install 'sessionlog[console]' ({err})"
        )
        raise typer.Exit(2) from None
    from sessionlog.backend import current_backend
    from sessionlog.query import SessionQueryError

    try:
        settings = ConsoleSettings()
        backend = current_backend()
    except SessionQueryError as err:
        err_console.print(f"[red]error:[/red] {escape(err.message)}")
        raise typer.Exit(2) from None
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        err_console.print(
            f"[red]error:[/red] invalid setting {escape(err.title)} {escape(where)}: {escape(first['msg'])}"
        )
        raise typer.Exit(2) from None
    grants = Grants(settings.grants())
    loopback = is_loopback(host)
    if not loopback and not grants.required:
        needs = "SESSIONLOG_CONSOLE_TOKEN (or SESSIONLOG_CONSOLE_TOKENS)"
        err_console.print(f"[red]error:[/red] binding to {escape(host)} needs {needs}")
        raise typer.Exit(2)
    app = create_app(ConsoleSource(backend), grants, writes=allow_writes, loopback=loopback)
    shown = f"[{host}]" if ":" in host else host
    mode = "writes allowed" if allow_writes else "read-only"
    auth = "token required" if grants.required else "no token (loopback)"
    where = f"http://{escape(shown)}:{port}"
    err_console.print(
        f"sessionlog console on {where} · {escape(backend.describe())} · {mode} · {auth}", highlight=False
    )
    uvicorn.run(app, host=host, port=port, log_level="warning", server_header=False, proxy_headers=False)
