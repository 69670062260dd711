"""The entry log interface: what an agent process appends to, whatever the backend.

Two implementations: :class:`~backscroll.ingest.kafka.appender.Appender` (a Kafka topic keyed by
session, acknowledged asynchronously) and :class:`~backscroll.ingest.sqlite.log.SQLiteEntryLog`
(the ``log`` table of one SQLite file, committed before ``append`` returns). Code that appends
should be typed against :class:`EntryLog` and never care which one it got.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any, Protocol, Self, runtime_checkable

if TYPE_CHECKING:
    from backscroll.ingest.bulk import BatchAck, EncodedRecord
    from backscroll.ingest.live import LiveEntry, LiveLog
    from backscroll.ingest.records import AppendHandle
    from backscroll.ingest.session import SessionWriter
    from backscroll.ingest.wire import EventRecord, HeaderRecord

__all__ = ["EntryLog", "LiveView"]


@runtime_checkable
class LiveView(Protocol):
    """Entries this process appended that the index may not show yet (read-your-writes).

    Every accepted event enters the view; once the log acknowledged it, its :class:`Position` is
    known, and the query side releases what the index shows by the indexer's watermark
    (:meth:`release_through`) or by a session's indexed seq (:meth:`release_session_through`).
    Bounded (the oldest entries go first); :meth:`truncated` says a session lost some that way.
    """

    @property
    def topic(self) -> str:
        """The log's name as the indexer records it with each document's position (the Kafka
        topic; ``"log"`` for the SQLite file): a watermark only applies to its own topic."""
        ...

    @property
    def live(self) -> LiveLog:
        """The underlying bounded store (its entries carry their position once acknowledged)."""
        ...

    def live_sessions(self) -> list[str]:
        """Sessions with live entries, least recently appended first."""
        ...

    def live_headers(self) -> list[HeaderRecord]:
        """The headers this process wrote for sessions that still have live entries."""
        ...

    def live_events(self, session_id: str) -> list[EventRecord]:
        """The live events of ``session_id`` in seq order."""
        ...

    def live_entries(self, session_id: str) -> list[LiveEntry]:
        """Like :meth:`live_events`, each with its position (None until acknowledged)."""
        ...

    def release_through(self, partition: int, offset: int) -> int:
        """The index shows ``partition`` up to ``offset``: drop those entries; return how many."""
        ...

    def release_session_through(self, session_id: str, seq: int) -> int:
        """The index shows ``session_id`` up to ``seq``: drop those entries; return how many."""
        ...


@runtime_checkable
class EntryLog(LiveView, Protocol):
    """Validated, ordered appends of session headers and events; thread-safe; a context manager.

    Every method raises only :class:`~backscroll.ingest.errors.IngestError` subclasses (driver
    errors are translated at the edge); ``error.retriable`` says whether trying again may help.
    """

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        ...

    def append(self, record: HeaderRecord | EventRecord | Mapping[str, Any] | bytes) -> AppendHandle:
        """Validate and append one record (event or header); the handle's ``result()`` is its
        :class:`~backscroll.ingest.records.Position`.

        Raises :class:`RecordRejected` naming the field, :class:`SessionBusy` when a session writer
        of this process owns the session, :class:`AppenderClosed`, or a storage error
        (:class:`LogUnavailable` and subclasses when retriable).
        """
        ...

    def append_header(self, header: HeaderRecord | Mapping[str, Any]) -> AppendHandle:
        """:meth:`append` for a session header; an event is refused (``RecordRejected('kind')``)."""
        ...

    def append_many(
        self, records: Iterable[HeaderRecord | EventRecord | Mapping[str, Any] | bytes]
    ) -> list[AppendHandle]:
        """Validate every record first (one bad record: nothing is appended), then append them in
        order. SQLite commits them in one transaction; Kafka queues them in order (each record is
        acknowledged on its own, a session's records stay in order)."""
        ...

    def append_encoded(self, records: Sequence[EncodedRecord]) -> BatchAck:
        """Bulk load: append records already validated and encoded by
        :func:`~backscroll.ingest.bulk.prepare_lines`, in order, acknowledged per batch (one
        :class:`~backscroll.ingest.bulk.BatchAck`, settled once :meth:`flush` returned). They do
        not enter the live view. Raises like :meth:`append_many`."""
        ...

    def session(self, workspace_id: str, session_id: str, *, next_seq: int | None = None) -> SessionWriter:
        """The single writer of ``session_id`` in this process: it fills in ids, ``time`` and the
        next contiguous ``seq``. It resumes after the highest seq the log knows of the session
        unless ``next_seq`` is given. Raises :class:`SessionBusy` when one is open already."""
        ...

    def flush(self, timeout: float | None = None) -> None:
        """Wait until every record appended before the call is acknowledged or failed for good;
        :class:`LogUnavailable` on timeout (nothing is dropped then)."""
        ...

    def close(self, timeout: float | None = None) -> None:
        """Flush for up to ``timeout`` s and release the log's resources. Idempotent; appending
        afterwards raises :class:`AppenderClosed`."""
        ...

    def __enter__(self) -> Self: ...

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None: ...
