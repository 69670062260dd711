"""The indexer's typed error for a kafka-python exception (security failures named in one line)."""

from __future__ import annotations

from kafka.errors import KafkaError

from sessionlog.indexer.errors import IndexerError, SourceAccessDenied, SourceUnavailable
from sessionlog.ingest.errors import LogAccessDenied
from sessionlog.ingest.kafka_security import translate
from sessionlog.ingest.settings import KafkaSettings

__all__ = ["source_error"]


def source_error(kafka: KafkaSettings, err: KafkaError, doing: str) -> IndexerError:
    """:class:`SourceAccessDenied` for TLS/SASL/ACL refusals, else :class:`SourceUnavailable`."""
    translated = translate(kafka, err, doing)
    if isinstance(translated, LogAccessDenied):
        return SourceAccessDenied(str(translated))
    return SourceUnavailable(str(translated))
