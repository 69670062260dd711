"""An MCP server for a :class:`Toolset`, on the official ``mcp`` SDK (extra ``backscroll-query[mcp]``).

The scope is whatever the toolset's provider and reader were built with: nothing a client sends
can change it. Tools are listed with their annotations (read-only, idempotent, closed world); a
failed call is an ``isError`` result whose text keeps the error code. Calls run in worker threads,
so a slow search never blocks the server's event loop.
"""

from __future__ import annotations

import socket
from collections.abc import Callable
from importlib.metadata import PackageNotFoundError, version
from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server

from backscroll.query.tools.mcp_frames import MAX_FRAME_BYTES
from backscroll.query.tools.mcp_stdio import DRAIN_TIMEOUT_S, serve_stdio_streams, wire_streams
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


async def serve_stdio(server: Server[Any], *, drain_timeout_s: float = DRAIN_TIMEOUT_S) -> None:
    """Serve one client over stdin/stdout until it disconnects: a malformed frame gets its JSON-RPC
    error reply, and the calls in flight when stdin closes are still answered (for at most
    ``drain_timeout_s``); see :mod:`~backscroll.query.tools.mcp_stdio`."""
    with wire_streams() as (stdin, stdout):
        await serve_stdio_streams(server, stdin, stdout, drain_timeout_s=drain_timeout_s)


async def serve_http(
    server: Server[Any],
    *,
    host: str,
    port: int,
    path: str = "/mcp",
    sock: socket.socket | None = None,
    wrap: Callable[[Any], Any] | None = None,
) -> bool:
    """Serve streamable HTTP on ``host:port`` at ``path`` (DNS-rebinding protection on localhost).

    With ``sock`` (a socket the caller bound to ``host:port`` and listens on) uvicorn serves on it
    and binds nothing itself, so the caller reports a busy port its own way. ``wrap`` puts ASGI
    middleware (authentication, a Host check) in front of the app. Returns whether the
    server started (``False``: it could not bind or its startup failed; uvicorn logged why)."""
    import uvicorn

    # The same frame cap as stdio: a request body over it is refused before it is read whole.
    app = server.streamable_http_app(
        streamable_http_path=path, host=host, max_request_body_size=MAX_FRAME_BYTES
    )
    served_app = app if wrap is None else wrap(app)
    config = uvicorn.Config(served_app, host=host, port=port, log_level="warning", lifespan="on")
    served = uvicorn.Server(config)
    await served.serve(sockets=None if sock is None else [sock])
    return served.started
