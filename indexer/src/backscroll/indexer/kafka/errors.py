"""The Kafka adapters' edge: kafka-python and socket exceptions become indexer errors.

The Kafka source and dead letters wrap every call into the client in :func:`kafka_edge`, so
nothing but an :class:`~backscroll.indexer.errors.IndexerError` leaves them. The ingest helpers
they share (``ensure_topics``) raise ingest errors, which the edge translates too.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Final

from kafka.errors import KafkaError

from backscroll.indexer.errors import (
    IndexerError,
    SourceAccessDenied,
    SourceFailed,
    SourceUnavailable,
    first_line,
)
from backscroll.ingest.errors import IngestError, LogAccessDenied
from backscroll.ingest.kafka.security import translate
from backscroll.ingest.settings import KafkaSettings

__all__ = ["kafka_edge", "kafka_error"]

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


def kafka_error(
    err: Exception,
    what: str,
    unavailable: type[IndexerError] = SourceUnavailable,
    failed: type[IndexerError] = SourceFailed,
    kafka: KafkaSettings | None = None,
) -> IndexerError:
    """The indexer error for a kafka-python exception (or a socket error); with ``kafka``,
    TLS/SASL/ACL refusals become one-line :class:`SourceAccessDenied`."""
    if kafka is not None and isinstance(err, KafkaError):
        translated = translate(kafka, err, what)
        if isinstance(translated, LogAccessDenied):
            return SourceAccessDenied(str(translated))
    name = type(err).__name__
    if any(cls.__name__ in _KAFKA_FATAL_NAMES for cls in type(err).__mro__):
        return failed(f"{what}: Kafka refused ({first_line(err)})")
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
    try:
        yield
    except IndexerError:
        raise
    except IngestError as err:  # ensure_topics and other ingest helpers used by the adapters
        if isinstance(err, LogAccessDenied):
            raise SourceAccessDenied(str(err)) from err
        kind = unavailable if getattr(err, "retriable", False) else failed
        raise kind(f"{what}: {first_line(err)}") from err
    except (KafkaError, OSError) as err:
        raise kafka_error(err, what, unavailable, failed, kafka) from err
