"""The edge: driver exceptions (kafka-python, opensearch-py, urllib3, sqlite3) become indexer errors.

Each adapter wraps every call into its driver in one of these context managers (or the matching
decorator), so nothing but an :class:`~backscroll.indexer.errors.IndexerError` leaves it. Imports
of the drivers happen inside the functions: the SQLite adapters never load Kafka or OpenSearch.
"""

from __future__ import annotations

import functools
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Final, ParamSpec, TypeVar

from backscroll.indexer.errors import (
    IndexerError,
    SourceAccessDenied,
    SourceFailed,
    SourceUnavailable,
    ViewAccessDenied,
    ViewFailed,
    ViewUnavailable,
)
from backscroll.indexer.settings import OpenSearchSettings

if TYPE_CHECKING:
    from backscroll.ingest.settings import KafkaSettings

__all__ = [
    "kafka_edge",
    "kafka_error",
    "opensearch_edge",
    "opensearch_error",
    "os_edge_method",
    "sqlite_edge",
    "sqlite_error",
]

P = ParamSpec("P")
R = TypeVar("R")

#: SQLite primary result codes worth retrying: the file is busy or locked by another connection,
#: or the disk is full (an operator can free space; the batch stays uncommitted meanwhile).
_SQLITE_RETRIABLE: Final = frozenset({5, 6, 13})  # SQLITE_BUSY, SQLITE_LOCKED, SQLITE_FULL
_HTTP_RETRIABLE: Final = frozenset({408, 429})
#: kafka-python errors that no retry can fix; everything else is treated as a passing outage
#: (the broker restarting shows up as many different error classes).
_KAFKA_FATAL_NAMES: Final = frozenset(
    {
        "AuthenticationFailedError",
        "AuthenticationMethodNotSupported",
        "ClusterAuthorizationFailedError",
        "GroupAuthorizationFailedError",
        "InvalidTopicError",
        "TopicAuthorizationFailedError",
        "UnsupportedVersionError",
        "KafkaConfigurationError",
        "IncompatibleBrokerVersion",
        "SaslAuthenticationFailedError",
    }
)


def _first_line(err: BaseException) -> str:
    text = str(err).strip().splitlines()
    return f"{type(err).__name__}: {text[0][:300]}" if text else type(err).__name__


def sqlite_error(
    err: sqlite3.Error,
    what: str,
    unavailable: type[IndexerError] = ViewUnavailable,
    failed: type[IndexerError] = ViewFailed,
) -> IndexerError:
    """The indexer error for a sqlite3 exception: busy/locked/full retriable, the rest final
    (read-only, not a database, missing tables, corruption, a closed connection)."""
    code = getattr(err, "sqlite_errorcode", None)
    message = str(err)
    busy = (code is not None and code & 0xFF in _SQLITE_RETRIABLE) or (
        code is None and ("locked" in message or "busy" in message)
    )
    kind = unavailable if busy else failed
    return kind(f"{what}: {_first_line(err)}")


@contextmanager
def sqlite_edge(
    what: str,
    unavailable: type[IndexerError] = ViewUnavailable,
    failed: type[IndexerError] = ViewFailed,
) -> Iterator[None]:
    """Translate sqlite3 exceptions raised inside the block."""
    try:
        yield
    except sqlite3.Error as err:
        raise sqlite_error(err, what, unavailable, failed) from err


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
        from backscroll.indexer.opensearch.security import security_failure

        line = security_failure(err, settings)
        if line is not None:
            return ViewAccessDenied(line)
    from opensearchpy.exceptions import (
        ConnectionError as OSConnectionError,
    )
    from opensearchpy.exceptions import (
        ImproperlyConfigured,
        SerializationError,
        SSLError,
        TransportError,
    )
    from urllib3.exceptions import HTTPError as Urllib3Error

    if isinstance(err, SSLError):
        return failed(f"{what}: TLS failed: {_first_line(err)}")
    if isinstance(err, OSConnectionError):  # ConnectionTimeout is one too
        return unavailable(f"{what}: OpenSearch unreachable ({type(err).__name__})")
    if isinstance(err, TransportError):
        status = err.status_code if isinstance(err.status_code, int) else None
        if status is None or status >= 500 or status in _HTTP_RETRIABLE:
            return unavailable(f"{what}: OpenSearch answered {status or 'nothing'} ({err.error})")
        return failed(f"{what}: OpenSearch refused ({status} {err.error})")
    if isinstance(err, SerializationError | ImproperlyConfigured):
        return failed(f"{what}: {_first_line(err)}")
    if isinstance(err, Urllib3Error | OSError):
        return unavailable(f"{what}: OpenSearch unreachable ({_first_line(err)})")
    return failed(f"{what}: {_first_line(err)}")


def _opensearch_kinds() -> tuple[type[Exception], ...]:
    from opensearchpy.exceptions import OpenSearchException
    from urllib3.exceptions import HTTPError as Urllib3Error

    return (OpenSearchException, Urllib3Error, OSError)


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
    except _opensearch_kinds() as err:
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


def kafka_error(
    err: Exception,
    what: str,
    unavailable: type[IndexerError] = SourceUnavailable,
    failed: type[IndexerError] = SourceFailed,
    kafka: KafkaSettings | None = None,
) -> IndexerError:
    """The indexer error for a kafka-python exception (or a socket error); with ``kafka``,
    TLS/SASL/ACL refusals become one-line :class:`SourceAccessDenied`."""
    from kafka.errors import KafkaError

    if kafka is not None and isinstance(err, KafkaError):
        from backscroll.ingest.errors import LogAccessDenied
        from backscroll.ingest.kafka.security import translate

        translated = translate(kafka, err, what)
        if isinstance(translated, LogAccessDenied):
            return SourceAccessDenied(str(translated))
    name = type(err).__name__
    if any(cls.__name__ in _KAFKA_FATAL_NAMES for cls in type(err).__mro__):
        return failed(f"{what}: Kafka refused ({_first_line(err)})")
    return unavailable(f"{what}: Kafka unavailable ({name}: {str(err)[:200]})")


@contextmanager
def kafka_edge(
    what: str,
    unavailable: type[IndexerError] = SourceUnavailable,
    failed: type[IndexerError] = SourceFailed,
    kafka: KafkaSettings | None = None,
) -> Iterator[None]:
    """Translate kafka-python / socket exceptions (and the ingest errors of the Kafka helpers the
    adapters share with ingest) raised inside the block."""
    from kafka.errors import KafkaError

    from backscroll.ingest.errors import IngestError

    try:
        yield
    except IndexerError:
        raise
    except IngestError as err:  # ensure_topics and other ingest helpers used by the adapters
        from backscroll.ingest.errors import LogAccessDenied

        if isinstance(err, LogAccessDenied):
            raise SourceAccessDenied(str(err)) from err
        kind = unavailable if getattr(err, "retriable", False) else failed
        raise kind(f"{what}: {_first_line(err)}") from err
    except (KafkaError, OSError) as err:
        raise kafka_error(err, what, unavailable, failed, kafka) from err
