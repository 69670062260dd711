"""``backscroll console``: serve the operators' web console (``backscroll.console``) with uvicorn."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.text import Text

from backscroll.cli.listen import bind_listener, refuse_open_bind, serve_on, shown_address
from backscroll.cli.output import EXIT_FAILED, EXIT_USAGE, err_console, fail
from backscroll.textsafe import safe_text

__all__ = ["console", "register"]


def register(app: typer.Typer) -> None:
    """Add the ``console`` command to the ``backscroll`` app."""
    app.command("console")(console)


def console(
    host: Annotated[
        str, typer.Option(metavar="ADDRESS", help="Address to bind; anything but loopback needs a token.")
    ] = "127.0.0.1",
    port: Annotated[
        int, typer.Option(min=0, max=65535, metavar="PORT", help="Port to listen on (0: any free port).")
    ] = 8765,
    allow_writes: Annotated[
        bool,
        typer.Option("--allow-writes", help="Allow forget and dead-letter replay (read-only otherwise)."),
    ] = False,
) -> None:
    """Serve the web console (search, sessions, health) for the configured backend (BACKSCROLL_BACKEND)."""
    from pydantic import ValidationError

    try:
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
        if err.title != ConsoleSettings.__name__:
            from backscroll.ingest.settings import describe_settings_error

            fail(describe_settings_error(err), EXIT_USAGE, code="BACKSCROLL_INVALID_SETTING")
        first = err.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        fail(f"invalid setting {err.title} {where}: {first['msg']}", EXIT_USAGE)
    grants = Grants(settings.grants())
    loopback = is_loopback(host)
    needs = "BACKSCROLL_CONSOLE_TOKEN (or BACKSCROLL_CONSOLE_TOKENS)"
    refuse_open_bind(host, has_token=grants.required, needs=needs)
    app = create_app(ConsoleSource(backend), grants, writes=allow_writes, loopback=loopback)
    sock = bind_listener(host, port)  # before the banner: a busy port is one line and exit 2
    mode = "writes allowed" if allow_writes else "read-only"
    auth = "token required" if grants.required else "no token (loopback)"
    where = f"http://{shown_address(host, sock.getsockname()[1])}"
    err_console.print(
        Text(safe_text(f"backscroll console on {where} · {backend.describe()} · {mode} · {auth}"))
    )
    if not serve_on(app, sock):
        fail("the console did not start (see the lines above)", EXIT_FAILED)
