"""``backscroll console``: serve the operators' web console (``backscroll.console``) with uvicorn."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.text import Text

from backscroll.cli.output import EXIT_USAGE, err_console, fail
from backscroll.textsafe import safe_text

__all__ = ["console", "register"]


def register(app: typer.Typer) -> None:
    """Add the ``console`` command to the ``backscroll`` app."""
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
    """Serve the web console (search, sessions, health) for the configured backend (BACKSCROLL_BACKEND)."""
    from pydantic import ValidationError

    try:
        import uvicorn

        from backscroll.console.app import create_app
        from backscroll.console.settings import ConsoleSettings, Grants, is_loopback
        from backscroll.console.source import ConsoleSource
    except ImportError as err:
        fail(f"the console needs its extra: pip install 'backscroll[console]' ({err})", EXIT_USAGE)
    from backscroll.backends import current_backend
    from backscroll.query import SessionQueryError

    try:
        settings = ConsoleSettings()
        backend = current_backend()
    except SessionQueryError as err:
        fail(err.message, EXIT_USAGE, code=err.code)
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        fail(f"invalid setting {err.title} {where}: {first['msg']}", EXIT_USAGE)
    grants = Grants(settings.grants())
    loopback = is_loopback(host)
    if not loopback and not grants.required:
        needs = "BACKSCROLL_CONSOLE_TOKEN (or BACKSCROLL_CONSOLE_TOKENS)"
        fail(f"binding to {host} needs {needs}", EXIT_USAGE)
    app = create_app(ConsoleSource(backend), grants, writes=allow_writes, loopback=loopback)
    shown = f"[{host}]" if ":" in host else host
    mode = "writes allowed" if allow_writes else "read-only"
    auth = "token required" if grants.required else "no token (loopback)"
    where = f"http://{shown}:{port}"
    err_console.print(
        Text(safe_text(f"backscroll console on {where} · {backend.describe()} · {mode} · {auth}"))
    )
    uvicorn.run(app, host=host, port=port, log_level="warning", server_header=False, proxy_headers=False)
