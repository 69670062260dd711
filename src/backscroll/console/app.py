"""The console's ASGI application: routes and authentication.

:func:`create_app` builds a Starlette app over a :class:`~backscroll.console.source.ConsoleSource`.
Handlers authenticate the caller (:class:`~backscroll.console.security.Guard`), derive the scope
its token allows, and render server-side templates (:mod:`backscroll.console.state`); blocking
backend calls run in the thread pool.
"""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import parse_qs, quote

from jinja2 import Environment, PackageLoader
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

import backscroll.console.pages as pages
from backscroll.console.security import COOKIE, Guard, SecurityHeaders, safe_next, same_origin
from backscroll.console.settings import Access, Grants
from backscroll.console.source import ConsoleSource
from backscroll.console.state import ConsoleState, Page, render, state_of
from backscroll.console.views import utc

__all__ = ["ConsoleState", "Page", "create_app"]

_MAX_FORM_BYTES = 16 * 1024


Handler = Callable[[Request, Access], Awaitable[Response]]


def authenticated(handler: Handler, *, write: bool = False) -> Callable[[Request], Awaitable[Response]]:
    """Wrap a handler: authenticate, check CSRF and origin on writes, turn :class:`Page` into pages."""

    async def endpoint(request: Request) -> Response:
        state = state_of(request)
        authorization = request.headers.get("authorization")
        access = state.guard.authenticate(authorization, request.cookies.get(COOKIE))
        if access is None:
            if request.method == "GET" and authorization is None:
                target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
                return RedirectResponse(f"/login?next={quote(target, safe='')}", status_code=303)
            return PlainTextResponse(
                "a valid bearer token is required", status_code=401, headers={"www-authenticate": "Bearer"}
            )
        request.scope["backscroll.access"] = access
        try:
            if write:
                if not state.writes:
                    raise Page(403, "the console is read-only (start it with --allow-writes)")
                form = await read_form(request)
                # A bearer token is never sent by a browser on its own: only cookie callers need CSRF checks.
                if authorization is None and not (
                    same_origin(request.headers, request.url.scheme)
                    and state.guard.check_csrf(access, form.get("csrf"))
                ):
                    raise Page(403, "this form expired or did not come from the console; reload and retry")
                request.scope["backscroll.form"] = form
            return await handler(request, access)
        except Page as page:
            return render(request, "error.html", status=page.status, message=page.message)

    return endpoint


async def read_form(request: Request) -> dict[str, str]:
    """A small url-encoded form (first value per field)."""
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > _MAX_FORM_BYTES:
            raise Page(413, "form too large")
    try:
        fields = parse_qs(body.decode("utf-8"), keep_blank_values=True, max_num_fields=32)
    except (UnicodeDecodeError, ValueError):
        raise Page(400, "malformed form") from None
    return {key: values[0] for key, values in fields.items()}


async def login_page(request: Request) -> Response:
    state = state_of(request)
    target = safe_next(request.query_params.get("next"))
    if request.method == "GET":
        return render(request, "login.html", next=target, error=None)
    form = await read_form(request)
    if not same_origin(request.headers, request.url.scheme):
        return render(request, "login.html", status=403, next=target, error="sign in from the console page")
    target = safe_next(form.get("next"))
    access = state.guard.grants.for_token(form.get("token", "").strip())
    if access is None:
        return render(request, "login.html", status=401, next=target, error="that token is not valid")
    response = RedirectResponse(target, status_code=303)
    response.set_cookie(
        COOKIE,
        state.guard.cookie_for(access),
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
        path="/",
    )
    return response


async def logout(request: Request, access: Access) -> Response:
    response = RedirectResponse("/login", status_code=303)
    response.delete_cookie(COOKIE, path="/")
    return response


async def index(request: Request, access: Access) -> Response:
    return RedirectResponse("/search", status_code=303)


def create_app(source: ConsoleSource, grants: Grants, *, writes: bool = False, loopback: bool = True) -> Any:
    """The console as an ASGI app (Starlette wrapped in the security-header middleware)."""
    templates = Environment(loader=PackageLoader("backscroll.console", "templates"), autoescape=True)
    templates.filters["utc"] = utc
    templates.globals["quote"] = lambda value: quote(str(value), safe="")

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        yield
        source.close()

    routes = [
        Route("/", authenticated(index)),
        Route("/login", login_page, methods=["GET", "POST"]),
        Route("/logout", authenticated(logout, write=False), methods=["POST"]),
        Route("/search", authenticated(pages.search)),
        Route("/session/{session_id}", authenticated(pages.session)),
        Route("/session/{session_id}/export.jsonl", authenticated(pages.export)),
        Route("/session/{session_id}/forget", authenticated(pages.forget, write=True), methods=["POST"]),
        Route("/health", authenticated(pages.health)),
        Route("/health/replay", authenticated(pages.replay, write=True), methods=["POST"]),
        Mount("/static", StaticFiles(packages=[("backscroll.console", "static")]), name="static"),
    ]

    async def not_found(request: Request, exc: Exception) -> Response:
        return render(request, "error.html", status=404, message="no such page")

    app = Starlette(routes=routes, lifespan=lifespan, exception_handlers={404: not_found})
    app.state.console = ConsoleState(
        source=source, guard=Guard(grants, secrets.token_bytes(32)), writes=writes, templates=templates
    )
    return SecurityHeaders(app, loopback_only=loopback)
