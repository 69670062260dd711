"""Scope: the set of sessions a provider may read, pinned by whoever constructs it."""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, model_validator

from backscroll.query.errors import SessionQueryError

__all__ = ["Scope"]

_ID = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")


def _check_ids(kind: str, ids: tuple[str, ...]) -> tuple[str, ...]:
    if not ids:
        raise SessionQueryError("SESSION_QUERY_INVALID_SCOPE", f"a {kind} scope needs at least one id")
    for value in ids:
        if not isinstance(value, str) or not value.strip():
            raise SessionQueryError("SESSION_QUERY_INVALID_SCOPE", f"{kind} id must not be empty or blank")
        if not _ID.fullmatch(value):
            raise SessionQueryError("SESSION_QUERY_INVALID_SCOPE", f"{kind} id {value!r} is not a valid id")
    return tuple(dict.fromkeys(ids))


class Scope(BaseModel):
    """Sessions (one or a set) or workspaces (one; several only with ``ops=True``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["sessions", "workspaces"]
    ids: tuple[str, ...]
    ops: bool = False

    @model_validator(mode="after")
    def _checked(self) -> Scope:
        # The constructor is public too: it must not bypass the rules of the named constructors.
        _check_ids(self.kind.removesuffix("s"), self.ids)
        if self.kind == "workspaces" and len(set(self.ids)) > 1 and not self.ops:
            raise SessionQueryError(
                "SESSION_QUERY_INVALID_SCOPE", "several workspaces need an explicit ops=True scope"
            )
        return self

    @classmethod
    def session(cls, session_id: str) -> Scope:
        return cls(kind="sessions", ids=_check_ids("session", (session_id,)))

    @classmethod
    def sessions(cls, session_ids: tuple[str, ...] | list[str]) -> Scope:
        return cls(kind="sessions", ids=_check_ids("session", tuple(session_ids)))

    @classmethod
    def workspace(cls, workspace_id: str) -> Scope:
        return cls(kind="workspaces", ids=_check_ids("workspace", (workspace_id,)))

    @classmethod
    def workspaces(cls, workspace_ids: tuple[str, ...] | list[str], *, ops: bool = False) -> Scope:
        return cls(kind="workspaces", ids=_check_ids("workspace", tuple(workspace_ids)), ops=ops)

    def filter(self) -> dict[str, Any]:
        """The server-side filter clause that every query path of this scope carries."""
        field = "session_id" if self.kind == "sessions" else "workspace_id"
        return {"terms": {field: list(self.ids)}}

    def routing(self) -> str | None:
        """Shard routing for session scopes (one shard per session); none for workspaces."""
        return ",".join(self.ids) if self.kind == "sessions" else None

    def admits_session_id(self, session_id: str) -> bool | None:
        """True/False when decidable from the scope alone; None when the index must be asked."""
        if self.kind == "sessions":
            return session_id in self.ids
        return None

    def fingerprint(self) -> str:
        return f"{self.kind}:{','.join(sorted(self.ids))}"
