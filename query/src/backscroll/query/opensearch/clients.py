"""One pooled OpenSearch client per endpoint and credentials, shared by every provider in a process."""

from __future__ import annotations

import os
import threading

from opensearchpy import OpenSearch

from backscroll.indexer.settings import OpenSearchSettings
from backscroll.query.opensearch.serializer import OrjsonSerializer

__all__ = ["shared_client"]

_lock = threading.Lock()
_clients: dict[tuple[int, str, str | None, str | None, bool], OpenSearch] = {}


def shared_client(settings: OpenSearchSettings) -> OpenSearch:
    """The process's client for these settings; a forked child gets its own (keyed by pid)."""
    secret = settings.password.get_secret_value() if settings.password else None
    # the trust settings are part of the key: a client verifying against another CA is another client
    key = (
        os.getpid(),
        settings.url,
        f"{settings.username}:{secret}" if settings.username else None,
        str(settings.ca_certs) if settings.ca_certs else None,
        settings.verify_certs,
    )
    with _lock:
        client = _clients.get(key)
        if client is None:
            client = OpenSearch(**settings.client_kwargs(), serializer=OrjsonSerializer())
            _clients[key] = client
        return client
