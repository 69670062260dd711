"""pydantic-ai: the model tools as a ``FunctionToolset``.

Install the extra: ``pip install 'backscroll-query[pydantic-ai]'``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any

try:
    from pydantic_ai import FunctionToolset, Tool
except ImportError as err:
    raise ImportError(
        f"{__name__} needs pydantic-ai: pip install 'backscroll-query[pydantic-ai]'", name=err.name
    ) from err

from backscroll.query.tools.base import ModelTool

__all__ = ["pydantic_tool", "toolset"]


def pydantic_tool(tool: ModelTool) -> Tool[Any]:
    """One model tool as a pydantic-ai ``Tool`` with the tool's own JSON Schema (the tool checks
    the arguments; a failed call answers the model with ``error: …`` text)."""

    async def call(**arguments: Any) -> str:
        text, failed = await asyncio.to_thread(tool.answer, arguments)
        return f"error: {text}" if failed else text

    return Tool.from_schema(call, name=tool.name, description=tool.description, json_schema=tool.parameters)


def toolset(tools: Iterable[ModelTool] | None) -> FunctionToolset[Any]:
    """Every tool of a set (``session_tools(...)``; ``None``, the declined set, gives an empty
    toolset) for ``Agent(toolsets=[...])``."""
    return FunctionToolset([pydantic_tool(tool) for tool in tools or ()])
