"""The OpenSearch adapters' edge: opensearch-py, urllib3 and socket exceptions become indexer errors.

The OpenSearch view, its bulk writer and the bulk loader wrap every call into the client in
:func:`opensearch_edge` (or the :func:`os_edge_method` decorator), so nothing but an
:class:`~backscroll.indexer.errors.IndexerError` leaves them.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Final, ParamSpec, TypeVar

from opensearchpy.exceptions import ConnectionError as OSConnectionError
from opensearchpy.exceptions import (
    ImproperlyConfigured,
    OpenSearchException,
    SerializationError,
    SSLError,
    TransportError,
)
from urllib3.exceptions import HTTPError as Urllib3Error

from backscroll.indexer.errors import (
    IndexerError,
    ViewAccessDenied,
    ViewFailed,
    ViewUnavailable,
    first_line,
)
from backscroll.indexer.opensearch.security import security_failure
from backscroll.indexer.settings import OpenSearchSettings

__all__ = ["opensearch_edge", "opensearch_error", "os_edge_method"]

P = ParamSpec("P")
R = TypeVar("R")

_HTTP_RETRIABLE: Final = frozenset({408, 429})
_DRIVER_ERRORS: Final = (OpenSearchException, Urllib3Error, OSError)


def opensearch_error(
    err: Exception,
    what: str,
    unavailable: type[IndexerError] = ViewUnavailable,
    failed: type[IndexerError] = ViewFailed,
    settings: OpenSearchSettings | None = None,
) -> IndexerError:
    """The indexer error for an opensearch-py or urllib3 exception (or a socket error); with
    ``settings``, TLS/login/permission refusals become one-line :class:`ViewAccessDenied`."""
    if settings is not None:
        line = security_failure(err, settings)
        if line is not None:
            return ViewAccessDenied(line)
    if isinstance(err, SSLError):
        return failed(f"{what}: TLS failed: {first_line(err)}")
    if isinstance(err, OSConnectionError):  # ConnectionTimeout is one too
        return unavailable(f"{what}: OpenSearch unreachable ({type(err).__name__})")
    if isinstance(err, TransportError):
        status = err.status_code if isinstance(err.status_code, int) else None
        if status is None or status >= 500 or status in _HTTP_RETRIABLE:
            return unavailable(f"{what}: OpenSearch answered {status or 'nothing'} ({err.error})")
        return failed(f"{what}: OpenSearch refused ({status} {err.error})")
    if isinstance(err, SerializationError | ImproperlyConfigured):
        return failed(f"{what}: {first_line(err)}")
    if isinstance(err, Urllib3Error | OSError):
        return unavailable(f"{what}: OpenSearch unreachable ({first_line(err)})")
    return failed(f"{what}: {first_line(err)}")


@contextmanager
def opensearch_edge(
    what: str,
    unavailable: type[IndexerError] = ViewUnavailable,
    failed: type[IndexerError] = ViewFailed,
    settings: OpenSearchSettings | None = None,
) -> Iterator[None]:
    """Translate opensearch-py / urllib3 / socket exceptions raised inside the block."""
    try:
        yield
    except IndexerError:
        raise
    except _DRIVER_ERRORS as err:
        raise opensearch_error(err, what, unavailable, failed, settings) from err


def os_edge_method(what: str) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Decorator form of :func:`opensearch_edge` for view methods (the message names the view's
    ``settings.url``)."""

    def wrap(func: Callable[P, R]) -> Callable[P, R]:
        @functools.wraps(func)
        def inner(*args: P.args, **kwargs: P.kwargs) -> R:
            settings = getattr(args[0] if args else None, "settings", None)
            if not isinstance(settings, OpenSearchSettings):
                settings = None
            where = f"{what} at {settings.url}" if settings else what
            with opensearch_edge(where, settings=settings):
                return func(*args, **kwargs)

        return inner

    return wrap
