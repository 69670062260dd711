"""Authentication, CSRF and response hardening for the console.

* Loopback without tokens: everyone who can reach the port is the local operator (every workspace).
  Any configured token makes authentication mandatory: ``Authorization: Bearer TOKEN``, or the
  HttpOnly, SameSite=Strict cookie the login form sets (it holds a signed digest prefix of the
  token, never the token).
* Writes are POST forms carrying a CSRF token (an HMAC of the caller's identity) and must come from
  the console's own origin (``Origin`` / ``Sec-Fetch-Site``).
* Every response carries a CSP without inline script or style, ``nosniff``, ``frame-ancestors
  'none'``, a same-origin referrer policy and ``no-store``; on loopback the ``Host`` header must name loopback
  (no DNS rebinding).
"""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass
from urllib.parse import urlsplit

from starlette.datastructures import Headers
from starlette.responses import PlainTextResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from backscroll.console.settings import Access, Grants

__all__ = ["COOKIE", "Guard", "SecurityHeaders", "safe_next"]

COOKIE = "backscroll_console"

CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
)
_HEADERS = [
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"same-origin"),
    (b"cross-origin-opener-policy", b"same-origin"),
    (b"cross-origin-resource-policy", b"same-origin"),
    (b"permissions-policy", b"camera=(), microphone=(), geolocation=()"),
    (b"cache-control", b"no-store"),
]
_LOOPBACK_NAMES = frozenset({"127.0.0.1", "localhost", "[::1]", "::1"})


class SecurityHeaders:
    """ASGI middleware: hardening headers on every response; loopback Host check when asked."""

    def __init__(self, app: ASGIApp, *, loopback_only: bool) -> None:
        self.app = app
        self.loopback_only = loopback_only

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if self.loopback_only:
            host = Headers(scope=scope).get("host", "")
            name = host.rsplit(":", 1)[0] if not host.endswith("]") else host
            if name not in _LOOPBACK_NAMES:
                response = PlainTextResponse("invalid Host header", status_code=400)
                await response(scope, receive, self._wrap(send))
                return
        await self.app(scope, receive, self._wrap(send))

    @staticmethod
    def _wrap(send: Send) -> Send:
        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                existing = {name.lower() for name, _ in message.get("headers", [])}
                extra = [(n, v) for n, v in _HEADERS if n not in existing]
                message["headers"] = [*message.get("headers", []), *extra]
            await send(message)

        return with_headers


def safe_next(target: str | None) -> str:
    """A same-site path to go to after login (anything else: the search page)."""
    if not target or not target.startswith("/") or target.startswith("//") or "\\" in target:
        return "/search"
    return target


@dataclass(frozen=True, slots=True)
class Guard:
    """Signs login cookies and CSRF tokens with a per-process secret and checks them."""

    grants: Grants
    secret: bytes

    def _mac(self, purpose: str, identity: str) -> str:
        return hmac.new(self.secret, f"{purpose}:{identity}".encode(), hashlib.sha256).hexdigest()[:40]

    def cookie_for(self, access: Access) -> str:
        return f"{access.identity}.{self._mac('login', access.identity)}"

    def csrf_for(self, access: Access) -> str:
        return self._mac("csrf", access.identity)

    def check_csrf(self, access: Access, presented: str | None) -> bool:
        return presented is not None and hmac.compare_digest(self.csrf_for(access), presented)

    def authenticate(self, authorization: str | None, cookie: str | None) -> Access | None:
        """The caller's access, or ``None`` when a token is required and none valid was shown."""
        if not self.grants.required:
            return Access(identity="local", workspaces=None)
        if authorization:
            scheme, _, token = authorization.partition(" ")
            if scheme.lower() == "bearer" and token.strip():
                return self.grants.for_token(token.strip())
            return None
        if cookie:
            identity, _, mac = cookie.partition(".")
            if identity and hmac.compare_digest(self._mac("login", identity), mac):
                return self.grants.for_identity(identity)
        return None


def same_origin(headers: Headers, scheme: str) -> bool:
    """Whether a state-changing request comes from the console's own pages: ``Sec-Fetch-Site``
    when the browser sends it, and the ``Origin`` (or ``Referer``) must name this host."""
    site = headers.get("sec-fetch-site")
    if site is not None and site != "same-origin":
        return False
    origin = headers.get("origin")
    if origin is None or origin == "null":
        origin = headers.get("referer")
    if origin is None:
        return site == "same-origin"
    parts = urlsplit(origin)
    return parts.scheme == scheme and parts.netloc == headers.get("host", "")
