"""The service's tokens: scoped, hashed at rest, expiring and revocable.

A token reads ``bst_<id>_<secret>``; the store keeps only the SHA-256 of the secret (compared in
constant time), the scope, and when it was created, expires and was revoked. The file
(``$XDG_DATA_HOME/backscroll/tokens.json``, mode 600) is replaced atomically under a lock, and a
running service reads it again whenever it changes, so a revoke takes effect without a restart.
"""

from __future__ import annotations

import fcntl
import hashlib
import hmac
import json
import os
import re
import secrets
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from backscroll.backends import default_sqlite_path

__all__ = [
    "TOKEN_PREFIX",
    "Token",
    "TokenError",
    "TokenStore",
    "default_tokens_path",
    "parse_expires",
]

TOKEN_PREFIX = "bst_"
_DURATION = re.compile(r"^(\d+)([mhdw])$")
_UNITS = {"m": "minutes", "h": "hours", "d": "days", "w": "weeks"}
_ID = re.compile(r"^[0-9a-f]{12}$")
#: Compared against when a token's id is unknown, so a miss takes as long as a wrong secret.
_DUMMY_HASH = hashlib.sha256(b"backscroll-no-such-token").hexdigest()


class TokenError(ValueError):
    """A token request that cannot be honoured (bad scope, bad expiry, unknown id)."""


def default_tokens_path() -> Path:
    """``$XDG_DATA_HOME/backscroll/tokens.json`` (next to the embedded database's default)."""
    return default_sqlite_path().parent / "tokens.json"


def parse_expires(value: str | None, *, now: datetime | None = None) -> datetime | None:
    """``30d``, ``12h``, ``45m``, ``2w`` from ``now``, or an ISO date/time (UTC when no zone);
    ``None`` or ``never``: no expiry."""
    if value is None or value.strip().lower() == "never":
        return None
    now = now or datetime.now(UTC)
    text = value.strip().lower()
    matched = _DURATION.match(text)
    if matched:
        amount = int(matched.group(1))
        if amount <= 0:
            raise TokenError(f"--expires {value}: needs a positive duration")
        return now + timedelta(**{_UNITS[matched.group(2)]: amount})
    try:
        moment = datetime.fromisoformat(value.strip())
    except ValueError:
        raise TokenError(f"--expires {value}: give 30d, 12h, 45m, 2w or an ISO date") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    if moment <= now:
        raise TokenError(f"--expires {value}: that time has passed")
    return moment


def _hash(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


@dataclass(frozen=True, slots=True)
class Token:
    """One stored token (never its secret)."""

    id: str
    workspaces: tuple[str, ...]
    sessions: tuple[str, ...] = ()
    name: str | None = None
    created: datetime = field(default_factory=lambda: datetime.now(UTC))
    expires: datetime | None = None
    revoked: datetime | None = None
    secret_hash: str = ""

    @property
    def ops(self) -> bool:
        """Whether the token spans several workspaces (operators)."""
        return len(self.workspaces) > 1

    def describe_scope(self) -> str:
        """``workspace W``, ``sessions S1,S2 of W`` or ``workspaces W1,W2``."""
        if self.sessions:
            return f"sessions {','.join(self.sessions)} of {self.workspaces[0]}"
        if self.ops:
            return f"workspaces {','.join(self.workspaces)}"
        return f"workspace {self.workspaces[0]}"

    def active(self, now: datetime | None = None) -> bool:
        """Not revoked and not expired."""
        now = now or datetime.now(UTC)
        return self.revoked is None and (self.expires is None or self.expires > now)

    def to_json(self, *, with_hash: bool = False) -> dict[str, Any]:
        """The stored (``with_hash``) or listed form."""
        data: dict[str, Any] = {
            "id": self.id,
            "name": self.name,
            "workspaces": list(self.workspaces),
            "sessions": list(self.sessions),
            "created": self.created.isoformat(),
            "expires": self.expires.isoformat() if self.expires else None,
            "revoked": self.revoked.isoformat() if self.revoked else None,
        }
        if with_hash:
            data["sha256"] = self.secret_hash
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Token:
        def when(key: str) -> datetime | None:
            value = data.get(key)
            return datetime.fromisoformat(value) if value else None

        return cls(
            id=str(data["id"]),
            name=data.get("name"),
            workspaces=tuple(str(w) for w in data["workspaces"]),
            sessions=tuple(str(s) for s in data.get("sessions") or ()),
            created=when("created") or datetime.now(UTC),
            expires=when("expires"),
            revoked=when("revoked"),
            secret_hash=str(data["sha256"]),
        )


class TokenStore:
    """The token file: create, list, revoke, and authenticate (re-read when the file changes)."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path or default_tokens_path()
        self._lock = threading.Lock()
        self._seen: tuple[int, int, int] | None = None
        self._tokens: dict[str, Token] = {}

    # -- reading ------------------------------------------------------------------------------
    def _stamp(self) -> tuple[int, int, int] | None:
        try:
            info = self.path.stat()
        except FileNotFoundError:
            return None
        return (info.st_mtime_ns, info.st_size, info.st_ino)

    def _read_file(self) -> dict[str, Token]:
        try:
            raw = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as err:
            raise TokenError(f"{self.path}: unreadable token file ({err})") from None
        tokens = [Token.from_json(item) for item in raw.get("tokens", [])]
        return {token.id: token for token in tokens}

    def tokens(self) -> list[Token]:
        """Every token, current as of the file's last change."""
        with self._lock:
            stamp = self._stamp()
            if stamp != self._seen:
                self._tokens = self._read_file()
                self._seen = stamp
            return list(self._tokens.values())

    def any_active(self) -> bool:
        """Whether at least one token could authenticate now."""
        return any(token.active() for token in self.tokens())

    def authenticate(self, presented: str) -> Token | None:
        """The active token ``presented`` (``bst_<id>_<secret>``) names, or ``None``."""
        known = {token.id: token for token in self.tokens()}
        token_id, secret = "", ""
        if presented.startswith(TOKEN_PREFIX):
            token_id, _, secret = presented[len(TOKEN_PREFIX) :].partition("_")
        token = known.get(token_id)
        expected = token.secret_hash if token is not None else _DUMMY_HASH
        matches = hmac.compare_digest(_hash(secret), expected)
        if token is None or not matches or not secret or not token.active():
            return None
        return token

    # -- writing ------------------------------------------------------------------------------
    @contextmanager
    def _locked(self) -> Iterator[dict[str, Token]]:
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        lock_path = self.path.with_name(self.path.name + ".lock")
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield self._read_file()
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)

    def _write(self, tokens: dict[str, Token]) -> None:
        payload = {"tokens": [token.to_json(with_hash=True) for token in tokens.values()]}
        fd, temp = tempfile.mkstemp(dir=self.path.parent, prefix=".tokens-", suffix=".json")
        try:
            os.fchmod(fd, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                json.dump(payload, out, indent=1)
                out.flush()
                os.fsync(out.fileno())
            os.replace(temp, self.path)
        except BaseException:
            Path(temp).unlink(missing_ok=True)
            raise

    def create(
        self,
        workspaces: list[str],
        *,
        sessions: list[str] | None = None,
        expires: datetime | None = None,
        name: str | None = None,
    ) -> tuple[Token, str]:
        """A new token and its secret (shown once; only its hash is stored)."""
        workspaces = [w for w in dict.fromkeys(workspaces) if w]
        sessions = [s for s in dict.fromkeys(sessions or []) if s]
        if not workspaces:
            raise TokenError("a token needs --workspace W (or --workspaces W1,W2)")
        if sessions and len(workspaces) != 1:
            raise TokenError("--session needs exactly one --workspace (the sessions' workspace)")
        secret = secrets.token_urlsafe(32)
        token = Token(
            id=secrets.token_hex(6),
            workspaces=tuple(workspaces),
            sessions=tuple(sessions),
            name=name,
            expires=expires,
            secret_hash=_hash(secret),
        )
        with self._locked() as tokens:
            tokens[token.id] = token
            self._write(tokens)
        return token, f"{TOKEN_PREFIX}{token.id}_{secret}"

    def revoke(self, token_id: str) -> Token:
        """Mark ``token_id`` revoked (idempotent); :class:`TokenError` when there is no such id."""
        if not _ID.match(token_id):
            raise TokenError(f"no token {token_id}")
        with self._locked() as tokens:
            token = tokens.get(token_id)
            if token is None:
                raise TokenError(f"no token {token_id}")
            if token.revoked is None:
                token = replace(token, revoked=datetime.now(UTC))
                tokens[token_id] = token
                self._write(tokens)
        return token
