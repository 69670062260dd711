"""An MCP server for a :class:`Toolset`, on the official ``mcp`` SDK (extra ``backscroll-query[mcp]``).

The scope is whatever the toolset's provider and reader were built with: nothing a client sends
can change it. Tools are listed with their annotations (read-only, idempotent, closed world); a
failed call is an ``isError`` result whose text keeps the error code. Calls run in worker threads,
so a slow search never blocks the server's event loop.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version
from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

from backscroll.query.tools.toolset import SYSTEM_PROMPT, Toolset

__all__ = ["build_server", "serve_http", "serve_stdio"]


def _version() -> str:
    try:
        return version("backscroll-query")
    except PackageNotFoundError:  # pragma: no cover - a source checkout without metadata
        return "0"


def _tool(definition: dict[str, Any]) -> types.Tool:
    hints = definition["annotations"]
    return types.Tool(
        name=definition["name"],
        description=definition["description"],
        input_schema=definition["inputSchema"],
        annotations=types.ToolAnnotations(
            title=hints["title"],
            read_only_hint=hints["readOnlyHint"],
            destructive_hint=hints["destructiveHint"],
            idempotent_hint=hints["idempotentHint"],
            open_world_hint=hints["openWorldHint"],
        ),
    )


def build_server(
    toolset: Toolset, *, name: str = "backscroll", instructions: str = SYSTEM_PROMPT
) -> Server[Any]:
    """The low-level MCP server answering ``tools/list`` and ``tools/call`` from ``toolset``."""
    tools = [_tool(definition) for definition in toolset.mcp_tools()]

    async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        text, failed = await anyio.to_thread.run_sync(toolset.answer, params.name, params.arguments)
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=failed)

    return Server(
        name,
        version=_version(),
        instructions=instructions,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


async def serve_stdio(server: Server[Any]) -> None:
    """Serve one client over stdin/stdout until it disconnects."""
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


async def serve_http(server: Server[Any], *, host: str, port: int, path: str = "/mcp") -> None:
    """Serve streamable HTTP on ``host:port`` at ``path`` (DNS-rebinding protection on localhost)."""
    import uvicorn

    app = server.streamable_http_app(streamable_http_path=path, host=host)
    config = uvicorn.Config(app, host=host, port=port, log_level="warning", lifespan="on")
    await uvicorn.Server(config).serve()
