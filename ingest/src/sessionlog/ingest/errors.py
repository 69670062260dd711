"""Errors raised by the ingest side. Whether an error is worth retrying is a property of its class."""

from __future__ import annotations

__all__ = [
    "AppenderClosed",
    "BufferFull",
    "IngestError",
    "LogAccessDenied",
    "LogUnavailable",
    "RecordRejected",
    "SequenceError",
    "SessionBusy",
    "SpoolError",
    "SpoolFull",
    "SpoolLocked",
]


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


class BufferFull(LogUnavailable):
    """The in-memory buffer stayed full for ``enqueue_timeout_s`` and there is no spool to take the entry."""


class SpoolError(IngestError):
    """The local spool could not be opened, written or recovered."""


class SpoolFull(SpoolError):
    """Writing the entry would take the spool past its size cap (or the disk is full); nothing was written."""

    retriable = True


class SpoolLocked(SpoolError):
    """Another live process (or another appender in this one) holds the spool directory's lock."""


class SessionBusy(IngestError):
    """A session already has a live :class:`~sessionlog.ingest.session.SessionWriter` in this process."""


class SequenceError(RecordRejected):
    """A caller-given ``seq`` is not the next contiguous one of its session."""

    def __init__(self, reason: str) -> None:
        super().__init__("seq", reason)


class LogAccessDenied(IngestError):
    """The broker refused this client: TLS trust, SASL login or a missing ACL (the message names
    the server, the principal and what it may not do). Not retriable: fix the configuration."""
