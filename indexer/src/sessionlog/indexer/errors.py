"""Errors of the indexer. Whether an error is worth retrying is a property of its class."""

from __future__ import annotations

__all__ = ["IndexerError", "SourceAccessDenied", "SourceUnavailable", "ViewAccessDenied", "ViewUnavailable"]


class IndexerError(Exception):
    """Base class of every error the indexer raises."""

    retriable: bool = False


class ViewUnavailable(IndexerError):
    """OpenSearch is unreachable or keeps failing retriably; the batch will be retried later."""

    retriable = True


class SourceUnavailable(IndexerError):
    """Kafka is unreachable."""

    retriable = True


class ViewAccessDenied(IndexerError):
    """OpenSearch refused this client (TLS trust, login, or a missing permission, named in the
    message). Not retriable: fix the configuration."""


class SourceAccessDenied(IndexerError):
    """Kafka refused this worker (TLS trust, SASL login or a missing ACL, named in the message).
    Not retriable: fix the configuration."""
