"""Errors raised by the ingest side. Whether an error is worth retrying is a property of its class."""

from __future__ import annotations

__all__ = [
    "AppenderClosed",
    "BufferFull",
    "IngestError",
    "LogAccessDenied",
    "LogCorrupt",
    "LogFull",
    "LogInaccessible",
    "LogNotFound",
    "LogRefused",
    "LogUnavailable",
    "NotABackscrollFile",
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
    """The log could not be reached in time: the broker is down or slow, the SQLite file is locked
    past the busy timeout, a transient I/O error. Trying again later may succeed."""

    retriable = True


class LogFull(LogUnavailable):
    """The disk (or quota) holding the SQLite log is full; nothing was written."""


class LogRefused(IngestError):
    """The log refuses this client for good: authentication, authorization, an invalid topic or a
    broker configuration the client cannot work with. Retrying cannot help; fix the settings."""


class LogInaccessible(IngestError):
    """The SQLite log cannot be opened or written: permissions, a read-only file or folder."""


class LogNotFound(LogInaccessible):
    """A read-only open (search, sessions, read, trace, export) named a file that does not exist;
    read commands never create it."""


class LogCorrupt(IngestError):
    """The SQLite file is damaged (SQLite reports it corrupt)."""


class NotABackscrollFile(IngestError):
    """The file is not backscroll's (another application's SQLite database, a file that is not a
    database at all, or one written by a newer backscroll); it was left untouched."""


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
    """A session already has a live :class:`~backscroll.ingest.session.SessionWriter` in this process."""


class SequenceError(RecordRejected):
    """A caller-given ``seq`` is not the next contiguous one of its session."""

    def __init__(self, reason: str) -> None:
        super().__init__("seq", reason)


class LogAccessDenied(LogRefused):
    """The broker refused this client: TLS trust, SASL login or a missing ACL (the message names
    the server, the principal and what it may not do). Not retriable: fix the configuration."""
