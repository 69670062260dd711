"""A :class:`~backscroll.query.contract.SessionQuery` that asks ``backscroll serve`` over HTTP.

An agent process holds a service token (``BACKSCROLL_SERVICE_TOKEN``) and the service's address
(``BACKSCROLL_SERVICE_URL``) instead of OpenSearch credentials; the scope is the token's. The
service's errors come back as :class:`SessionQueryError` with their codes; an unreachable or
overloaded service is the retriable ``SESSION_QUERY_PERSISTENCE_FAILED``, a refused token
``SESSION_QUERY_INVALID_CONFIG``.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

from backscroll.query.contract import SessionQueryRequest, SessionQueryResult
from backscroll.query.errors import ERROR_CODES, SessionQueryError

__all__ = ["ServiceClientSettings", "ServiceProvider"]


class ServiceClientSettings(BaseSettings):
    """Where the query service is and the token to present (env prefix ``BACKSCROLL_SERVICE_``)."""

    model_config = SettingsConfigDict(env_prefix="BACKSCROLL_SERVICE_", env_file=".env", extra="ignore")

    url: str | None = Field(
        default=None,
        description="The address of `backscroll serve` (e.g. http://127.0.0.1:8767) for ServiceProvider.",
    )
    token: SecretStr | None = Field(
        default=None, description="The service token ServiceProvider presents (`backscroll token create`)."
    )


class ServiceProvider:
    """Searches, reads and traces through ``backscroll serve`` with one token."""

    def __init__(self, url: str | None = None, token: str | None = None, *, timeout_s: float = 30.0) -> None:
        if url is None or token is None:
            settings = ServiceClientSettings()
            url = url or settings.url
            token = token or (settings.token.get_secret_value() if settings.token else None)
        if not url or not token:
            raise SessionQueryError(
                "SESSION_QUERY_INVALID_CONFIG", "set BACKSCROLL_SERVICE_URL and BACKSCROLL_SERVICE_TOKEN"
            )
        if not url.startswith(("http://", "https://")):
            raise SessionQueryError(
                "SESSION_QUERY_INVALID_CONFIG", "BACKSCROLL_SERVICE_URL must be http(s)://…"
            )
        self.url = url.rstrip("/")
        self._token = token
        self.timeout_s = timeout_s

    def __enter__(self) -> ServiceProvider:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Nothing is kept open between requests."""

    def search(self, request: SessionQueryRequest) -> SessionQueryResult:
        """One page of matches in the token's scope (``request.session_id`` narrows it)."""
        body = request.model_dump(mode="json", exclude_defaults=True, exclude={"session_id"})
        if request.session_id is not None:
            body["session"] = request.session_id
        return SessionQueryResult.model_validate(self._post("/v1/search", body))

    def read_event(self, session_id: str, seq: int, before: int = 0, after: int = 0) -> dict[str, Any]:
        """The event ``seq`` and its neighbours, as ``backscroll read --json`` prints them."""
        payload = self._post(
            "/v1/read", {"session": session_id, "seq": seq, "before": before, "after": after}
        )
        assert isinstance(payload, dict)
        return payload

    def trace(self, session_id: str, seq: int | None = None) -> dict[str, Any]:
        """A session's lineage, or one event's edges with ``seq`` (as ``backscroll trace --json``)."""
        payload = self._post("/v1/trace", {"session": session_id, "seq": seq})
        assert isinstance(payload, dict)
        return payload

    def _post(self, path: str, body: dict[str, Any]) -> Any:
        data = json.dumps(body).encode("utf-8")
        headers = {"Content-Type": "application/json", "Authorization": f"Bearer {self._token}"}
        call = urllib.request.Request(self.url + path, data=data, headers=headers, method="POST")
        try:
            with urllib.request.urlopen(call, timeout=self.timeout_s) as answer:
                return json.loads(answer.read())
        except urllib.error.HTTPError as err:
            raise _error_of(err.code, err.read()) from None
        except (urllib.error.URLError, TimeoutError, OSError) as err:
            raise SessionQueryError(
                "SESSION_QUERY_PERSISTENCE_FAILED", f"the query service at {self.url} is out of reach ({err})"
            ) from None


def _error_of(status: int, raw: bytes) -> SessionQueryError:
    try:
        error = json.loads(raw)["error"]
        code, message = str(error["code"]), str(error["message"])
    except (ValueError, KeyError, TypeError):
        code, message = "", f"the query service answered HTTP {status}"
    if code in ERROR_CODES:
        return SessionQueryError(code, message)  # type: ignore[arg-type]
    if status in (401, 403, 421):
        return SessionQueryError(
            "SESSION_QUERY_INVALID_CONFIG", f"the query service refused the token: {message}"
        )
    if status == 413:
        return SessionQueryError("SESSION_QUERY_INVALID_QUERY", message)
    return SessionQueryError("SESSION_QUERY_PERSISTENCE_FAILED", f"{message} (HTTP {status})")
