"""What every console handler shares: the state it reads (source, guard, templates), the error page
a handler raises, and rendering a template with the caller's context.

Kept apart from :mod:`backscroll.console.app` (the routes) so the pages import it, and the routes
the pages, without a circle.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from jinja2 import Environment
from starlette.requests import Request
from starlette.responses import HTMLResponse

from backscroll.console.security import Guard
from backscroll.console.settings import Access
from backscroll.console.source import ConsoleSource

__all__ = ["ConsoleState", "Page", "render", "state_of"]


@dataclass
class ConsoleState:
    """What every handler needs: the data source, the guard, whether writes are allowed."""

    source: ConsoleSource
    guard: Guard
    writes: bool
    templates: Environment


class Page(Exception):
    """Stop a handler with an error page (status and a one-line, escaped message)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def state_of(request: Request) -> ConsoleState:
    """The console state of the app serving ``request``."""
    state: ConsoleState = request.app.state.console
    return state


def render(request: Request, name: str, status: int = 200, **context: Any) -> HTMLResponse:
    """Template ``name`` rendered with the caller's access, CSRF token and the console's mode."""
    state = state_of(request)
    access: Access | None = request.scope.get("backscroll.access")
    body = state.templates.get_template(name).render(
        request=request,
        access=access,
        csrf=state.guard.csrf_for(access) if access is not None else "",
        writes=state.writes,
        backend=state.source.backend.name,
        login=state.guard.grants.required,
        **context,
    )
    return HTMLResponse(body, status_code=status)
