"""A tiny HTTP client for the console tests (stdlib only; redirects are not followed)."""

from __future__ import annotations

import urllib.error
import urllib.request
from dataclasses import dataclass
from email.message import Message


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: object, **kwargs: object) -> None:
        return None


_OPENER = urllib.request.build_opener(_NoRedirect)


@dataclass
class Reply:
    status: int
    headers: Message
    body: str


def call(
    url: str,
    *,
    token: str | None = None,
    data: bytes | None = None,
    headers: dict[str, str] | None = None,
) -> Reply:
    request = urllib.request.Request(url, data=data, headers=dict(headers or {}))
    if token is not None:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with _OPENER.open(request, timeout=30) as response:
            return Reply(response.status, response.headers, response.read().decode("utf-8"))
    except urllib.error.HTTPError as err:
        with err:
            return Reply(err.code, err.headers, err.read().decode("utf-8"))
