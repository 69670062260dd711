"""The listening socket of a served command (``console``, ``mcp --transport http``).

The command binds the socket itself before it announces anything, so a busy port, an address the
machine does not have or a port it may not use is one line naming ``host:port`` and the cause, and
exit status 2 (the settings are wrong), never a server's log line and an exit status of its own.
The bound socket is then handed to uvicorn (``uvicorn.Server(config).run(sockets=[sock])``).
"""

from __future__ import annotations

import socket
from typing import Any

from backscroll.cli.output import EXIT_USAGE, fail
from backscroll.console.settings import is_loopback

__all__ = ["BACKLOG", "bind_listener", "is_loopback", "refuse_open_bind", "serve_on", "shown_address"]

#: Pending connections the kernel queues (uvicorn's default).
BACKLOG = 2048


def shown_address(host: str, port: int) -> str:
    """``host:port`` as a URL writes it (an IPv6 address in brackets)."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def refuse_open_bind(host: str, *, has_token: bool, needs: str) -> None:
    """The rule every served command keeps: an address other than loopback only with a token
    configured (``needs`` names how to configure one); otherwise one line and exit 2."""
    if not is_loopback(host) and not has_token:
        fail(f"binding to {host} needs {needs}", EXIT_USAGE)


def bind_listener(host: str, port: int) -> socket.socket:
    """A TCP socket bound to ``host:port`` and listening; when it cannot be, one line and exit 2.

    ``port`` 0 picks a free port: read it back with ``sock.getsockname()[1]``."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
    except (socket.gaierror, UnicodeError, OverflowError) as err:
        fail(f"cannot listen on {shown_address(host, port)}: {_cause(err)}", EXIT_USAGE)
    sock = socket.socket(family, kind, proto)
    try:
        # a restart must not wait for the previous run's connections to leave TIME_WAIT
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(BACKLOG)
    except OSError as err:
        sock.close()
        fail(f"cannot listen on {shown_address(host, port)}: {_cause(err)}", EXIT_USAGE)
    return sock


def _cause(err: BaseException) -> str:
    if isinstance(err, OSError) and err.strerror:
        return err.strerror.lower()
    return str(err) or type(err).__name__


def serve_on(app: Any, sock: socket.socket) -> bool:
    """Run the ASGI ``app`` with uvicorn on the bound ``sock`` until interrupted; whether the
    server started (False: uvicorn printed why). The socket is closed in every case."""
    import uvicorn

    config = uvicorn.Config(app, log_level="warning", server_header=False, proxy_headers=False)
    server = uvicorn.Server(config)
    try:
        server.run(sockets=[sock])
    except KeyboardInterrupt:
        return True
    finally:
        sock.close()
    return bool(server.started)
