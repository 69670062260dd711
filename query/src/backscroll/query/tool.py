"""The model-facing ``session_query`` tool (kept here for existing imports; the tools live in
:mod:`backscroll.query.tools`)."""

from __future__ import annotations

from typing import Any

from backscroll.query.contract import SessionQuery
from backscroll.query.tools.errors import ToolError
from backscroll.query.tools.search import TOOL_NAME, WORKSPACE_DESCRIPTION, SessionQueryTool

__all__ = ["TOOL_NAME", "SessionQueryTool", "ToolError", "session_query_tool"]


def session_query_tool(
    provider: SessionQuery | None, *, workspace: bool = False, **kwargs: Any
) -> SessionQueryTool | None:
    """The tool, or ``None`` (decline: advertise nothing) when there is no provider to search.
    ``workspace=True`` names it ``workspace_query`` and describes it as searching the workspace."""
    if provider is None:
        return None
    if workspace:
        kwargs.setdefault("name", "workspace_query")
        kwargs.setdefault("description", WORKSPACE_DESCRIPTION)
    return SessionQueryTool(provider, **kwargs)
