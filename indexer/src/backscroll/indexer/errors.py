"""Errors of the indexer. Whether an error is worth retrying is a property of its class.

Every adapter (Kafka source and dead letters, OpenSearch view, SQLite source, view and dead letters)
translates its driver's exceptions into these at its edge (the ``errors`` module of its backend's
folder: :mod:`backscroll.indexer.kafka.errors`, :mod:`backscroll.indexer.opensearch.errors`,
:mod:`backscroll.indexer.sqlite.errors`), so the runner and the CLI only ever see these types.
"""

from __future__ import annotations

__all__ = [
    "DeadLetterUnavailable",
    "IndexerError",
    "LogTruncated",
    "NotCaughtUp",
    "SourceAccessDenied",
    "SourceFailed",
    "SourceUnavailable",
    "ViewAccessDenied",
    "ViewFailed",
    "ViewUnavailable",
    "first_line",
]


class IndexerError(Exception):
    """Base class of every error the indexer raises."""

    retriable: bool = False


class ViewUnavailable(IndexerError):
    """The view (OpenSearch, or a locked SQLite file) is unreachable or busy; retry later."""

    retriable = True


class ViewFailed(IndexerError):
    """The view refuses the work for good (bad credentials, a read-only or foreign file, a mapping
    it cannot accept): retrying cannot help, the runner stops."""

    retriable = False


class SourceUnavailable(IndexerError):
    """The entry source (Kafka, or a locked SQLite file) is unreachable or busy; retry later."""

    retriable = True


class SourceFailed(IndexerError):
    """The entry source cannot be used (authorisation, a missing or foreign file, bad config)."""

    retriable = False


class DeadLetterUnavailable(IndexerError):
    """A dead letter could not be parked yet; the batch is not committed and is retried."""

    retriable = True


class NotCaughtUp(IndexerError):
    """``--until-idle`` waited its whole budget without the group reaching the end of the topic."""

    retriable = False


class LogTruncated(IndexerError):
    """The log no longer holds its first records (retention or a deletion removed them): a rebuild
    would lose them from the projection, so it refuses unless told to rebuild only what remains."""

    retriable = False


class ViewAccessDenied(ViewFailed):
    """OpenSearch refused this client (TLS trust, login, or a missing permission, named in the
    message). Not retriable: fix the configuration."""


class SourceAccessDenied(SourceFailed):
    """Kafka refused this worker (TLS trust, SASL login or a missing ACL, named in the message).
    Not retriable: fix the configuration."""


def first_line(err: BaseException) -> str:
    """``Class: first line of the message`` (at most 300 characters), for one-line error messages."""
    text = str(err).strip().splitlines()
    return f"{type(err).__name__}: {text[0][:300]}" if text else type(err).__name__
