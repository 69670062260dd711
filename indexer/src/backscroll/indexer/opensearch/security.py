"""One clear line for OpenSearch security failures (opensearch-py / urllib3 / ssl exceptions).

A 401 is a rejected login, a 403 names the permission the principal lacks, and a connection
error caused by certificate verification says which check failed. Passwords never enter a message.
"""

from __future__ import annotations

import re

from opensearchpy.exceptions import AuthenticationException, AuthorizationException, TransportError
from opensearchpy.exceptions import ConnectionError as OSConnectionError

from backscroll.indexer.errors import ViewAccessDenied
from backscroll.indexer.settings import OpenSearchSettings
from backscroll.ingest.tls import describe_tls_error

__all__ = ["deny", "item_failure", "security_failure"]

_NO_PERMISSION = re.compile(r"no permissions for \[([^\]]*)\]")


def _reason(err: TransportError) -> str:
    info = err.info if isinstance(err.info, dict) else {}
    error = info.get("error")
    if isinstance(error, dict):
        return str(error.get("reason") or error.get("type") or "")
    return str(error or err.error or "")


def security_failure(err: Exception, settings: OpenSearchSettings) -> str | None:
    """The one-line cause when ``err`` is a TLS, login or permission failure; None otherwise."""
    server = settings.url
    who = repr(settings.username) if settings.username else "anonymous"
    if isinstance(err, AuthenticationException):
        return f"OpenSearch {server}: login as {who} was rejected (401: wrong password or unknown user)"
    if isinstance(err, AuthorizationException):
        match = _NO_PERMISSION.search(_reason(err))
        missing = match.group(1) if match else _reason(err)[:200] or "for this request (no detail given)"
        return f"OpenSearch {server}: user {who} lacks permission {missing} (403)"
    if isinstance(err, OSConnectionError):
        cause = describe_tls_error(err, settings.ca_certs)
        if cause is not None:
            return f"OpenSearch {server}: {cause}"
    return None


def item_failure(error: object, settings: OpenSearchSettings) -> str | None:
    """The one-line cause when one ``_msearch``/``_bulk`` item failed for lack of permission."""
    if not isinstance(error, dict) or error.get("type") != "security_exception":
        return None
    match = _NO_PERMISSION.search(str(error.get("reason", "")))
    missing = match.group(1) if match else str(error.get("reason", ""))[:200]
    who = repr(settings.username) if settings.username else "anonymous"
    return f"OpenSearch {settings.url}: user {who} lacks permission {missing} (403)"


def deny(err: Exception, settings: OpenSearchSettings) -> None:
    """Raise :class:`ViewAccessDenied` when ``err`` is a security failure (else return)."""
    line = security_failure(err, settings)
    if line is not None:
        raise ViewAccessDenied(line) from None
