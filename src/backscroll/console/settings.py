"""Console settings (env prefix ``BACKSCROLL_CONSOLE_``) and the access a token grants. Pure."""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import json
from dataclasses import dataclass

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

__all__ = ["ALL", "Access", "ConsoleSettings", "Grants", "is_loopback"]

#: The workspace wildcard in ``BACKSCROLL_CONSOLE_TOKENS``: every workspace.
ALL = "*"


class ConsoleSettings(BaseSettings):
    """Who may use the console and what it may do (env prefix ``BACKSCROLL_CONSOLE_``)."""

    model_config = SettingsConfigDict(env_prefix="BACKSCROLL_CONSOLE_", env_file=".env", extra="ignore")

    token: SecretStr | None = Field(
        default=None,
        description="Bearer token with access to every workspace; required when the console is bound "
        "to an address other than loopback (unless `BACKSCROLL_CONSOLE_TOKENS` is set).",
    )
    tokens: SecretStr | None = Field(
        default=None,
        description='JSON object mapping tokens to the workspaces each may see, e.g. `{"t1": ["ws-1"], '
        '"t2": ["*"]}` (`*`: every workspace); tokens of 16+ characters.',
    )

    @field_validator("tokens")
    @classmethod
    def _check_tokens(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None:
            _parse_tokens(value.get_secret_value())
        return value

    @field_validator("token")
    @classmethod
    def _check_token(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None and len(value.get_secret_value()) < 16:
            raise ValueError("the token must have at least 16 characters")
        return value

    def grants(self) -> dict[str, frozenset[str] | None]:
        """Token → the workspaces it may see (``None``: every workspace)."""
        out: dict[str, frozenset[str] | None] = {}
        if self.token is not None:
            out[self.token.get_secret_value()] = None
        if self.tokens is not None:
            for token, workspaces in _parse_tokens(self.tokens.get_secret_value()).items():
                out[token] = None if ALL in workspaces else frozenset(workspaces)
        return out


def _parse_tokens(text: str) -> dict[str, list[str]]:
    """``{"token": ["ws", ...]}``; ValueError (never echoing a token) if it is anything else."""
    try:
        data = json.loads(text)
    except ValueError:
        raise ValueError("must be a JSON object of token to a list of workspaces") from None
    if not isinstance(data, dict):
        raise ValueError("must be a JSON object of token to a list of workspaces")
    for token, workspaces in data.items():
        if len(token) < 16:
            raise ValueError("every token must have at least 16 characters")
        if (
            not isinstance(workspaces, list)
            or not workspaces
            or not all(isinstance(w, str) for w in workspaces)
        ):
            raise ValueError('every token needs a non-empty list of workspaces (or ["*"])')
    return data


def is_loopback(host: str) -> bool:
    """Whether ``host`` (an address or ``localhost``) only accepts connections from this machine."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


@dataclass(frozen=True, slots=True)
class Access:
    """What one caller may see: ``workspaces`` ``None`` means every workspace. ``identity`` names the
    caller without revealing the token (a digest prefix, or ``local`` without tokens)."""

    identity: str
    workspaces: frozenset[str] | None

    def allows(self, workspace_id: str | None) -> bool:
        if self.workspaces is None:
            return True
        return workspace_id is not None and workspace_id in self.workspaces

    def visible(self, workspace_ids: list[str]) -> list[str]:
        return [ws for ws in workspace_ids if self.allows(ws)]


class Grants:
    """The configured tokens; looks a presented token up in constant time per token."""

    def __init__(self, grants: dict[str, frozenset[str] | None]) -> None:
        self._by_digest = {_digest(token): (token, scope) for token, scope in grants.items()}

    @property
    def required(self) -> bool:
        return bool(self._by_digest)

    def for_token(self, presented: str) -> Access | None:
        found: Access | None = None
        for digest, (token, scope) in self._by_digest.items():
            if hmac.compare_digest(token.encode("utf-8"), presented.encode("utf-8")):
                found = Access(identity=digest[:16], workspaces=scope)
        return found

    def for_identity(self, identity: str) -> Access | None:
        for digest, (_token, scope) in self._by_digest.items():
            if hmac.compare_digest(digest[:16], identity):
                return Access(identity=identity, workspaces=scope)
        return None
