"""What a token may see, as the query side's :class:`~backscroll.query.Scope`."""

from __future__ import annotations

from backscroll.backends import Backend
from backscroll.query import Scope
from backscroll.service.tokens import Token

__all__ = ["token_scope"]


def token_scope(backend: Backend, token: Token, workspace: str | None = None) -> Scope | None:
    """The scope ``token`` reads, narrowed to ``workspace`` when given; ``None``: nothing (a
    workspace outside the token, or none of its sessions projected in its workspace yet).

    A session token's sessions count only while the projection places them in the token's
    workspace, so a session id of another tenant never widens it."""
    if workspace is not None and workspace not in token.workspaces:
        return None
    if token.sessions:
        home = token.workspaces[0]
        mine = [s for s in token.sessions if backend.workspace_of(s) == home]
        return Scope.sessions(mine) if mine else None
    if workspace is not None:
        return Scope.workspace(workspace)
    return Scope.workspaces(list(token.workspaces), ops=token.ops)
