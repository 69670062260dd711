"""The ASGI app of ``backscroll serve``: a JSON API and the MCP tools, each request by token.

* ``POST /v1/search`` — the search request's fields (``query``, ``limit``, ``cursor``, ``kinds``,
  ``since``, ``until``, ``excerpt_bytes``) plus ``session`` and ``workspace`` to narrow within the
  token's scope; answers the result as ``backscroll search --json`` prints it.
* ``POST /v1/read`` — ``session``, ``seq``, ``before``, ``after``; ``POST /v1/trace`` — ``session``
  and optionally ``seq``: as ``backscroll read/trace --json``.
* ``/mcp`` — the MCP streamable-HTTP endpoint, with the tools pinned to the token's scope.

Anything outside a token's scope answers exactly as something that does not exist. Errors are
``{"error": {"code", "message", "retriable"}}``.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Final

import orjson
from pydantic import ValidationError
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import Receive, Send
from starlette.types import Scope as AsgiScope

from backscroll.backends import Backend
from backscroll.query import SessionQueryError, SessionQueryRequest
from backscroll.service.audit import AuditLog
from backscroll.service.guards import HostCheck, RateLimiter
from backscroll.service.mcp_mount import serve_mcp
from backscroll.service.scopes import token_scope
from backscroll.service.tokens import Token, TokenStore

__all__ = ["ServiceConfig", "create_app"]

_log = logging.getLogger(__name__)

_EMPTY_RESULT = {"matches": [], "searched": 0, "next_cursor": None, "partial": False, "source": "persisted"}
_NOT_FOUND: Final = "SESSION_QUERY_SESSION_NOT_FOUND"
_SEARCH_FIELDS = ("query", "limit", "cursor", "kinds", "since", "until", "excerpt_bytes", "exclude_tools")


@dataclass(frozen=True)
class ServiceConfig:
    """What the app needs: the backend, the tokens, the guards and the audit log."""

    backend: Backend
    tokens: TokenStore
    hosts: HostCheck
    limiter: RateLimiter
    audit: AuditLog
    max_body_bytes: int = 1024 * 1024


class _Refused(Exception):
    def __init__(self, status: int, code: str, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status, self.code, self.message, self.headers = status, code, message, headers or {}


def _error(
    status: int, code: str, message: str, retriable: bool = False, headers: dict[str, str] | None = None
) -> Response:
    body = orjson.dumps({"error": {"code": code, "message": message, "retriable": retriable}})
    return Response(body, status_code=status, media_type="application/json", headers=headers)


def _status_of(err: SessionQueryError) -> int:
    if err.code in (_NOT_FOUND, "SESSION_QUERY_EVENT_NOT_FOUND"):
        return 404
    if err.retriable:
        return 503
    if err.code.startswith("SESSION_QUERY_INVALID") or err.code in (
        "SESSION_QUERY_STALE_CURSOR",
        "SESSION_QUERY_SEARCH_DISABLED",
    ):
        return 400
    return 500


def _not_found(session: str | None) -> SessionQueryError:
    return SessionQueryError(_NOT_FOUND, f"no session {session}" if session else "no such workspace")


class _Service:
    def __init__(self, config: ServiceConfig) -> None:
        self.config = config

    # -- the gate every request passes ------------------------------------------------------------
    def authenticate(self, headers: Headers) -> Token:
        if not self.config.hosts.host_ok(headers.get("host")):
            raise _Refused(421, "BACKSCROLL_MISDIRECTED", "this server does not answer for that Host")
        if not self.config.hosts.origin_ok(headers.get("origin")):
            raise _Refused(403, "BACKSCROLL_FORBIDDEN_ORIGIN", "requests from that Origin are refused")
        scheme, _, presented = headers.get("authorization", "").partition(" ")
        token = self.config.tokens.authenticate(presented.strip()) if scheme.lower() == "bearer" else None
        if token is None:
            raise _Refused(
                401,
                "BACKSCROLL_UNAUTHORIZED",
                "give a valid token: Authorization: Bearer TOKEN",
                {"WWW-Authenticate": "Bearer"},
            )
        wait = self.config.limiter.take(token.id)
        if wait > 0:
            raise _Refused(
                429,
                "BACKSCROLL_RATE_LIMITED",
                "too many requests for this token",
                {"Retry-After": RateLimiter.retry_after(wait)},
            )
        length = headers.get("content-length")
        if length is not None and (not length.isdigit() or int(length) > self.config.max_body_bytes):
            raise _Refused(
                413,
                "BACKSCROLL_TOO_LARGE",
                f"request bodies are limited to {self.config.max_body_bytes} bytes",
            )
        return token

    async def body(self, request: Request) -> dict[str, Any]:
        chunks: list[bytes] = []
        size = 0
        async for chunk in request.stream():
            size += len(chunk)
            if size > self.config.max_body_bytes:
                raise _Refused(
                    413,
                    "BACKSCROLL_TOO_LARGE",
                    f"request bodies are limited to {self.config.max_body_bytes} bytes",
                )
            chunks.append(chunk)
        try:
            data = orjson.loads(b"".join(chunks) or b"{}")
        except orjson.JSONDecodeError:
            raise _Refused(400, "BACKSCROLL_BAD_REQUEST", "the body must be a JSON object") from None
        if not isinstance(data, dict):
            raise _Refused(400, "BACKSCROLL_BAD_REQUEST", "the body must be a JSON object")
        return data

    # -- the JSON API -----------------------------------------------------------------------------
    def search(self, token: Token, body: dict[str, Any]) -> Any:
        session, workspace = _text(body, "session"), _text(body, "workspace")
        unknown = set(body) - {*_SEARCH_FIELDS, "session", "workspace"}
        if unknown:
            raise SessionQueryError(
                "SESSION_QUERY_INVALID_QUERY", f"unknown fields: {', '.join(sorted(unknown))}"
            )
        if workspace is not None and workspace not in token.workspaces:
            raise _not_found(session)
        scope = token_scope(self.config.backend, token, workspace)
        fields = {key: body[key] for key in _SEARCH_FIELDS if key in body}
        request = SessionQueryRequest.model_validate({**fields, "session_id": session})
        if scope is None or (session is not None and scope.admits_session_id(session) is False):
            return _EMPTY_RESULT
        with self.config.backend.open_provider(scope) as provider:
            return provider.search(request).model_dump(mode="json")

    def read(self, token: Token, body: dict[str, Any]) -> Any:
        session = _required_text(body, "session")
        seq, before, after = _int(body, "seq"), _int(body, "before", 0), _int(body, "after", 0)
        scope = token_scope(self.config.backend, token)
        if scope is None:
            raise _not_found(session)
        with self.config.backend.open_reader(scope) as reader:
            return reader.read_event(session, seq, before, after).model_dump(mode="json")

    def trace(self, token: Token, body: dict[str, Any]) -> Any:
        session = _required_text(body, "session")
        seq = _int(body, "seq") if body.get("seq") is not None else None
        scope = token_scope(self.config.backend, token)
        if scope is None:
            raise _not_found(session)
        with self.config.backend.open_reader(scope) as reader:
            if seq is None:
                return reader.trace_session(session).model_dump(mode="json")
            return reader.trace_event(session, seq).model_dump(mode="json")

    def endpoint(
        self, name: str, work: Callable[[Token, dict[str, Any]], Any]
    ) -> Callable[[Request], Awaitable[Response]]:
        async def handle(request: Request) -> Response:
            token: Token | None = None
            query: str | None = None
            try:
                token = self.authenticate(request.headers)
                body = await self.body(request)
                query = body.get("query") if isinstance(body.get("query"), str) else None
                payload = await run_in_threadpool(work, token, body)
                response = Response(orjson.dumps(payload), media_type="application/json")
            except _Refused as err:
                response = _error(err.status, err.code, err.message, headers=err.headers)
            except SessionQueryError as err:
                response = _error(_status_of(err), err.code, err.message, err.retriable)
            except ValidationError as err:
                response = _error(400, "SESSION_QUERY_INVALID_QUERY", str(err.errors()[0].get("msg")))
            except Exception:
                # Errors stop here: the tenant gets a code, the operator's log gets the traceback.
                _log.exception("the %s request failed", name)
                response = _error(500, "BACKSCROLL_INTERNAL", "the service could not answer; see its log")
            self.config.audit.write(
                token_id=token.id if token else None,
                scope=token.describe_scope() if token else None,
                endpoint=name,
                status=response.status_code,
                size=len(response.body),
                query=query,
            )
            return response

        return handle

    # -- MCP --------------------------------------------------------------------------------------
    async def mcp(self, scope: AsgiScope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        token: Token | None = None
        status: dict[str, int] = {"code": 0, "size": 0}

        async def counted(message: Any) -> None:
            if message["type"] == "http.response.start":
                status["code"] = message["status"]
            elif message["type"] == "http.response.body":
                status["size"] += len(message.get("body", b""))
            await send(message)

        try:
            token = self.authenticate(Headers(scope=scope))
            await serve_mcp(self.config.backend, token, self.config.max_body_bytes, scope, receive, counted)
        except _Refused as err:
            await _error(err.status, err.code, err.message, headers=err.headers)(scope, receive, counted)
        self.config.audit.write(
            token_id=token.id if token else None,
            scope=token.describe_scope() if token else None,
            endpoint="mcp",
            status=status["code"],
            size=status["size"],
        )


def _text(body: dict[str, Any], key: str) -> str | None:
    value = body.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        raise SessionQueryError("SESSION_QUERY_INVALID_QUERY", f"{key} must be a non-empty string")
    return value


def _required_text(body: dict[str, Any], key: str) -> str:
    value = _text(body, key)
    if value is None:
        raise SessionQueryError("SESSION_QUERY_INVALID_QUERY", f"{key} is required")
    return value


def _int(body: dict[str, Any], key: str, default: int | None = None) -> int:
    value = body.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int):
        raise SessionQueryError("SESSION_QUERY_INVALID_WINDOW", f"{key} must be an integer")
    return value


class _Asgi:
    """A raw ASGI callable as a route's endpoint (Starlette wraps plain functions and methods)."""

    def __init__(self, handle: Callable[[AsgiScope, Receive, Send], Awaitable[None]]) -> None:
        self.handle = handle

    async def __call__(self, scope: AsgiScope, receive: Receive, send: Send) -> None:
        await self.handle(scope, receive, send)


def create_app(config: ServiceConfig) -> Starlette:
    """The service's ASGI app (serve it with uvicorn, or test it with Starlette's TestClient)."""
    service = _Service(config)
    routes = [
        Route("/v1/search", service.endpoint("search", service.search), methods=["POST"]),
        Route("/v1/read", service.endpoint("read", service.read), methods=["POST"]),
        Route("/v1/trace", service.endpoint("trace", service.trace), methods=["POST"]),
        Route("/mcp", _Asgi(service.mcp), methods=["GET", "POST", "DELETE"]),
    ]
    return Starlette(routes=routes)
