"""kafka-python's exceptions as ingest's typed errors: the Kafka adapter's edge.

Nothing of kafka-python leaves the ingest package: the appender and the topic helper pass every
driver exception through :func:`translate_kafka_error`. The mapping follows what retrying can do:

* the record itself is unacceptable (too large, invalid) → :class:`RecordRejected` (``record``);
* the broker refuses this client for good (authentication, authorization, an invalid topic, a
  configuration or protocol version the client cannot use) → :class:`LogRefused`;
* anything else (no broker reachable, timeouts, leadership moves, a broker the driver itself marks
  ``retriable``, socket errors) → :class:`LogUnavailable` (``retriable``).
"""

from __future__ import annotations

from typing import Final

from kafka import errors as kafka_errors

from backscroll.ingest.errors import IngestError, LogRefused, LogUnavailable, RecordRejected

__all__ = ["RECORD_ERRORS", "REFUSED_ERRORS", "is_permanent", "translate_kafka_error"]


def _classes(*names: str) -> tuple[type[BaseException], ...]:
    # getattr: kafka-python has renamed and added error classes across releases.
    found = (getattr(kafka_errors, name, None) for name in names)
    return tuple(cls for cls in found if isinstance(cls, type) and issubclass(cls, BaseException))


#: The record cannot be written as it is: re-sending it cannot succeed.
RECORD_ERRORS: Final = _classes(
    "MessageSizeTooLargeError",
    "RecordListTooLargeError",
    "InvalidRecordError",
    "CorruptRecordError",
    "CorruptRecordException",
    "UnsupportedForMessageFormatError",
)
#: The broker refuses this client (or its settings) for good.
REFUSED_ERRORS: Final = _classes(
    "AuthorizationError",
    "AuthenticationFailedError",
    "AuthenticationMethodNotSupported",
    "SaslAuthenticationFailedError",
    "TopicAuthorizationFailedError",
    "ClusterAuthorizationFailedError",
    "TransactionalIdAuthorizationFailedError",
    "GroupAuthorizationFailedError",
    "InvalidTopicError",
    "InvalidReplicationFactorError",
    "InvalidPartitionsError",
    "InvalidConfigurationError",
    "PolicyViolationError",
    "KafkaConfigurationError",
    "IncompatibleBrokerVersion",
    "UnrecognizedBrokerVersion",
    "UnsupportedVersionError",
    "UnsupportedCodecError",
)


def is_permanent(err: BaseException) -> bool:
    """Whether re-sending after ``err`` cannot succeed (the record or the client is refused)."""
    return isinstance(err, RECORD_ERRORS + REFUSED_ERRORS)


def translate_kafka_error(err: BaseException, what: str) -> IngestError:
    """``err`` (a kafka-python or socket error) as ingest's typed error; ``what`` says what was
    being done, e.g. ``"cannot reach Kafka at host:9092"``."""
    if isinstance(err, IngestError):
        return err
    message = f"{what}: {type(err).__name__}: {err}"
    if isinstance(err, RECORD_ERRORS):
        return RecordRejected("record", message)
    if isinstance(err, REFUSED_ERRORS):
        return LogRefused(message)
    return LogUnavailable(message)
