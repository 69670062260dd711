"""``backscroll serve``: the scoped query service, the tenant boundary.

It holds the configured backend's query principal and serves tenants by token (``backscroll token
create``): the JSON API under ``/v1`` and the MCP tools at ``/mcp``. Binding to anything but
loopback needs at least one active token.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.text import Text

from backscroll.cli.listen import bind_listener, refuse_open_bind, serve_on, shown_address
from backscroll.cli.output import EXIT_FAILED, EXIT_USAGE, err_console, fail
from backscroll.textsafe import safe_text

__all__ = ["register", "serve"]


def serve(
    host: Annotated[
        str, typer.Option(metavar="ADDRESS", help="Address to bind; anything but loopback needs a token.")
    ] = "127.0.0.1",
    port: Annotated[
        int, typer.Option(min=0, max=65535, metavar="PORT", help="Port to listen on (0: any free port).")
    ] = 8767,
    allow_host: Annotated[
        list[str] | None,
        typer.Option("--allow-host", metavar="NAME", help="Another name clients use in Host (repeatable)."),
    ] = None,
    audit_queries: Annotated[
        bool, typer.Option("--audit-queries", help="Write the query text into the audit log too.")
    ] = False,
) -> None:
    """Serve search, reads and the MCP tools to tenants by token (see `backscroll token`)."""
    from pydantic import ValidationError

    try:
        from backscroll.service.app import ServiceConfig, create_app
    except ImportError as err:
        fail(f"the service needs the console extra: pip install 'backscroll[console]' ({err})", EXIT_USAGE)
    from backscroll.backends import current_backend, default_sqlite_path
    from backscroll.query import SessionQueryError
    from backscroll.service.audit import AuditLog
    from backscroll.service.guards import HostCheck, RateLimiter
    from backscroll.service.settings import ServeSettings, describe_settings_error
    from backscroll.service.tokens import TokenError, TokenStore

    try:
        settings = ServeSettings()
        backend = current_backend()
        store = TokenStore(settings.tokens_file)
        has_token = store.any_active()
    except SessionQueryError as err:
        fail(err.message, EXIT_USAGE, code=err.code)
    except ValidationError as err:
        fail(describe_settings_error(err), EXIT_USAGE, code="BACKSCROLL_INVALID_SETTING")
    except TokenError as err:
        fail(str(err), EXIT_USAGE)
    refuse_open_bind(host, has_token=has_token, needs="a token (backscroll token create)")
    if settings.audit_log == "-":
        audit = AuditLog(None, queries=audit_queries)
    else:
        target = settings.audit_log or str(default_sqlite_path().parent / "service-audit.jsonl")
        audit = AuditLog(Path(target), queries=audit_queries)
    config = ServiceConfig(
        backend=backend,
        tokens=store,
        hosts=HostCheck.for_bind(host, allow_host),
        limiter=RateLimiter(settings.rate_per_second, settings.rate_burst),
        audit=audit,
        max_body_bytes=settings.max_body_bytes,
    )
    app = create_app(config)
    sock = bind_listener(host, port)  # before the banner: a busy port is one line and exit 2
    where = f"http://{shown_address(host, sock.getsockname()[1])}"
    err_console.print(Text(safe_text(f"backscroll serve on {where} · {backend.describe()} · token required")))
    try:
        started = serve_on(app, sock)
    finally:
        audit.close()
        backend.close()
    if not started:
        fail("the service did not start (see the lines above)", EXIT_FAILED)


def register(app: typer.Typer) -> None:
    """Add ``backscroll serve`` to the ``backscroll`` app."""
    app.command("serve")(serve)
