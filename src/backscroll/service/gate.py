"""The gate of ``backscroll mcp --transport http``: the Host check and, when configured, one bearer
token (compared in constant time), in front of the MCP SDK's app."""

from __future__ import annotations

import hashlib
import hmac

import orjson
from starlette.datastructures import Headers
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from backscroll.service.guards import HostCheck

__all__ = ["BearerGate"]


class BearerGate:
    """ASGI middleware: 421 for a Host not served, 403 for a foreign browser Origin, 401 without
    the token (when one is set)."""

    def __init__(self, app: ASGIApp, *, hosts: HostCheck, token: str | None) -> None:
        self.app = app
        self.hosts = hosts
        self._digest = hashlib.sha256(token.encode()).digest() if token else None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        refused: tuple[int, str, str] | None = None
        if not self.hosts.host_ok(headers.get("host")):
            refused = (421, "BACKSCROLL_MISDIRECTED", "this server does not answer for that Host")
        elif not self.hosts.origin_ok(headers.get("origin")):
            refused = (403, "BACKSCROLL_FORBIDDEN_ORIGIN", "requests from that Origin are refused")
        elif self._digest is not None:
            scheme, _, presented = headers.get("authorization", "").partition(" ")
            given = hashlib.sha256(presented.strip().encode()).digest()
            if scheme.lower() != "bearer" or not hmac.compare_digest(given, self._digest):
                refused = (401, "BACKSCROLL_UNAUTHORIZED", "give the token: Authorization: Bearer TOKEN")
        if refused is None:
            await self.app(scope, receive, send)
            return
        status, code, message = refused
        body = orjson.dumps({"error": {"code": code, "message": message, "retriable": False}})
        extra = {"WWW-Authenticate": "Bearer"} if status == 401 else None
        await Response(body, status_code=status, media_type="application/json", headers=extra)(
            scope, receive, send
        )
