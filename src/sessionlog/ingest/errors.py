"""Errors raised by the ingest side. Whether an error is worth retrying is a property of its class."""

from __future__ import annotations

__all__ = ["AppenderClosed", "IngestError", "LogUnavailable", "RecordRejected"]


class IngestError(Exception):
    """Base class of every error the ingest package raises."""

    retriable: bool = False


class RecordRejected(IngestError, ValueError):
    """A record does not satisfy wire format v1; ``field`` names the offending field."""

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(f"{field}: {reason}" if not reason.startswith(f"{field}:") else reason)
        self.field = field
        self.reason = reason


class LogUnavailable(IngestError):
    """The broker could not be reached or did not acknowledge in time."""

    retriable = True


class AppenderClosed(IngestError):
    """The appender was used after ``close()``."""
