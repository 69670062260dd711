"""Backend-neutral record types of the entry log: where an entry landed, a pending append, a raw row.

Neither the Kafka appender nor the SQLite log owns these; both return and read them, and the
indexer and the query side import them from here without loading a driver.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING

from backscroll.ingest.errors import IngestError, LogUnavailable

if TYPE_CHECKING:
    from backscroll.ingest.wire import EventRecord, HeaderRecord

__all__ = ["AppendHandle", "LogRecord", "Position"]


@dataclass(frozen=True, slots=True)
class Position:
    """Where a record landed in the log: a partition and the offset within it.

    Kafka: the topic partition and its offset. SQLite: partition 0 and the row id (1, 2, 3, ...).
    """

    partition: int
    offset: int


@dataclass(frozen=True, slots=True)
class LogRecord:
    """One record as stored in the log, undecoded: the bytes a producer wrote and where they are.

    ``key`` is the session id in UTF-8 and ``value`` the canonical JSON of a wire record, but a
    foreign writer may have put anything there (the indexer dead-letters what does not decode).
    ``timestamp`` is milliseconds since the epoch.
    """

    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    timestamp: int

    @property
    def position(self) -> Position:
        return Position(self.partition, self.offset)


class AppendHandle:
    """A pending append: :meth:`result` waits until the log acknowledged the record.

    The SQLite log hands out handles that are already resolved; the Kafka appender resolves them
    from the broker's acknowledgement on its sender thread.
    """

    __slots__ = ("__weakref__", "_done", "_error", "_event", "_position", "record")
    #: Guards the lazy creation of ``_event``: most handles are never waited on, and an Event
    #: (a Condition and two locks) would cost the caller more than the rest of ``append``.
    _guard = threading.Lock()

    def __init__(self, record: HeaderRecord | EventRecord, position: Position | None = None) -> None:
        self.record = record
        self._done = position is not None
        self._event: threading.Event | None = None
        self._position: Position | None = position
        self._error: IngestError | None = None

    def done(self) -> bool:
        """Whether the append was acknowledged or failed for good."""
        return self._done

    def _wait(self, timeout: float | None) -> bool:
        if self._done:
            return True
        with AppendHandle._guard:
            if self._done:
                return True
            if self._event is None:
                self._event = threading.Event()
            event = self._event
        return event.wait(timeout)

    def result(self, timeout: float | None = 30.0) -> Position:
        """The record's position once the log acknowledged it (on Kafka: all in-sync replicas).

        Raises :class:`LogUnavailable` when that did not happen within ``timeout`` (the record is
        still queued or spooled and will be sent later), or the typed error the append ended with.
        """
        if not self._wait(timeout):
            raise LogUnavailable(
                f"the log did not acknowledge {self.record.session_id} within {timeout}s "
                "(the entry stays queued/spooled)"
            )
        if self._error is not None:
            raise self._error
        assert self._position is not None
        return self._position

    def exception(self, timeout: float | None = 30.0) -> IngestError | None:
        """The error the append ended with (None when acknowledged). Waits like :meth:`result`."""
        try:
            self.result(timeout)
        except IngestError as err:
            return err
        return None

    def _finish(self, position: Position | None, error: IngestError | None) -> None:
        with AppendHandle._guard:
            if self._done:
                return
            self._position, self._error = position, error
            self._done = True
            event = self._event
        if event is not None:
            event.set()

    def _resolve(self, position: Position) -> None:
        self._finish(position, None)

    def _fail(self, error: IngestError) -> None:
        self._finish(None, error)

    def __repr__(self) -> str:
        state = "pending" if not self._done else (self._position or self._error)
        return f"AppendHandle({self.record.session_id!r}, {state})"
