"""The service's ``/mcp``: the MCP tools over streamable HTTP, pinned to the caller's token."""

from __future__ import annotations

from contextlib import AsyncExitStack

from starlette.concurrency import run_in_threadpool
from starlette.types import Receive, Send
from starlette.types import Scope as AsgiScope

from backscroll.backends import Backend
from backscroll.query import Scope
from backscroll.service.scopes import token_scope
from backscroll.service.tokens import Token

__all__ = ["serve_mcp"]


async def serve_mcp(
    backend: Backend, token: Token, max_body_bytes: int, scope: AsgiScope, receive: Receive, send: Send
) -> None:
    """Answer one MCP request (stateless, JSON responses) with tools over ``token``'s scope; the
    SDK refuses a body over ``max_body_bytes``."""
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

    from backscroll.query.tools import session_tools
    from backscroll.query.tools.mcp_server import build_server

    pinned = await run_in_threadpool(token_scope, backend, token)
    if pinned is None:
        # Nothing of the token's is projected yet: tools over a scope that matches nothing.
        pinned = Scope.sessions([f"{token.id}-none"])
    async with AsyncExitStack() as stack:
        provider = stack.enter_context(backend.open_provider(pinned))
        reader = stack.enter_context(backend.open_reader(pinned))
        toolset = session_tools(provider, reader)
        assert toolset is not None
        manager = StreamableHTTPSessionManager(
            app=build_server(toolset),
            json_response=True,
            stateless=True,
            max_request_body_size=max_body_bytes,
        )
        async with manager.run():
            await manager.handle_request(scope, receive, send)
