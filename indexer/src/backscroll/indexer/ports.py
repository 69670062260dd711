"""The indexer's interfaces: where entries come from, where projections go, where bad records park.

One implementation per backend: :class:`EntrySource` by the Kafka consumer group
(:mod:`~backscroll.indexer.kafka.source`) and by the SQLite log table
(:mod:`~backscroll.indexer.sqlite.source`); :class:`SessionView` by OpenSearch and SQLite;
:class:`DeadLetters` by the DLQ topic and the ``dead_letters`` table. The
:class:`~backscroll.indexer.runner.Runner` is written once against them.

Every method raises only :class:`~backscroll.indexer.errors.IndexerError` subclasses, whose
``retriable`` tells the runner whether to back off and retry or to stop.
"""

from __future__ import annotations

import enum
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from backscroll.indexer.deadletter import DeadLetter
from backscroll.indexer.projector import Action, SessionProjection
from backscroll.indexer.values import value_type
from backscroll.ingest.wire import EventRecord, HeaderRecord

__all__ = [
    "BulkCatchUp",
    "Commit",
    "DeadLetters",
    "Entry",
    "EntrySource",
    "InvalidEntry",
    "Outcome",
    "Poll",
    "RawRecord",
    "RevokeAware",
    "SessionView",
    "WriteResult",
]


@value_type
class RawRecord:
    """A log record as stored: where it is (``partition``/``offset`` of ``topic``), its bytes and
    its append time. Dead letters keep these exactly."""

    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    timestamp_ms: int


@value_type
class Entry:
    """A record that decoded and validated, with the raw record it came from."""

    raw: RawRecord
    record: HeaderRecord | EventRecord


@value_type
class InvalidEntry:
    """A record that cannot be projected (not JSON, wrong schema, key mismatch, tombstone)."""

    raw: RawRecord
    field: str | None
    reason: str


@dataclass(frozen=True, slots=True)
class Poll:
    """What one poll returned. ``assignment_changed``: the set of partitions (or, on SQLite, the
    stored position) changed since the last poll, so cached per-session states are stale."""

    entries: list[Entry | InvalidEntry] = field(default_factory=list)
    assignment_changed: bool = False


class Commit(enum.Enum):
    """The result of :meth:`EntrySource.commit`."""

    COMMITTED = "committed"
    #: The group moved the partitions away before the commit landed (a rebalance). Nothing was
    #: committed; the records will be delivered again to whoever owns them now (writes are
    #: idempotent). The runner drops its cached state and carries on.
    ASSIGNMENT_LOST = "assignment_lost"


@runtime_checkable
class EntrySource(Protocol):
    """The session log as the indexer consumes it: batches in order per partition, committed only
    after they are projected."""

    @property
    def topic(self) -> str:
        """The name of the log (Kafka topic, or ``log`` for the SQLite table)."""
        ...

    def open(self) -> None:
        """Connect (join the group, check the file) now rather than at the first poll."""
        ...

    def poll(self, max_records: int, timeout_s: float) -> Poll:
        """The next batch (possibly empty after ``timeout_s``), decoded."""
        ...

    def commit(self, through: Mapping[int, int]) -> Commit:
        """Mark everything up to and including ``through[partition]`` (an offset) as projected."""
        ...

    def rewind(self, to: Mapping[int, int]) -> None:
        """Forget an uncommitted batch: the next poll starts again at ``to[partition]``."""
        ...

    def hold(self, seconds: float) -> None:
        """Stay a live member without delivering records for about ``seconds`` (view outage)."""
        ...

    def caught_up(self) -> bool:
        """True when the committed position reaches the end of the WHOLE log (every partition,
        including those assigned to other members), so a run ``until idle`` may return."""
        ...

    def describe_lag(self) -> str:
        """One line saying which partitions are behind (for the ``until idle`` timeout message)."""
        ...

    def lag(self) -> dict[int, int]:
        """Per assigned partition: records not yet committed."""
        ...

    def close(self) -> None:
        """Leave the group / close the file. Idempotent."""
        ...


@runtime_checkable
class RevokeAware(Protocol):
    """A source that calls ``before_revoke`` (when set) inside a poll, before its partitions are
    taken away by a rebalance, so that a runner can commit a batch still in flight."""

    before_revoke: Callable[[], None] | None


class BulkCatchUp(Protocol):
    """A backend's faster path through a long backlog, run before a runner's loop. It commits
    what it projects as the runner would (documents and position together) and hands over at
    anything unusual: the runner goes on from the stored position."""

    def run(self, stop: threading.Event, progress: Callable[[int, int, float], None]) -> None:
        """Project until the end of the log, ``stop``, or a case for the runner, calling
        ``progress(consumed, indexed, seconds)`` for each batch committed (its records, its new
        events, the seconds its write took). Raises nothing."""


class Outcome(enum.Enum):
    """What one write did, in the domain's words."""

    CREATED = "created"  #: a new event document
    WRITTEN = "written"  #: an update of an earlier event, or a session document
    REPLAY = "replay"  #: the event existed with identical content: a no-op re-delivery
    CONFLICT = "conflict"  #: the event existed with different content: dead-lettered
    REJECTED = "rejected"  #: the store refused the document (``reason`` says why)


@dataclass(frozen=True, slots=True)
class WriteResult:
    """The outcome of one action; ``existing`` is the stored document of a conflict."""

    action: Action
    outcome: Outcome
    reason: str | None = None
    existing: dict[str, Any] | None = None


@runtime_checkable
class SessionView(Protocol):
    """The projection store. Writes are idempotent: a batch may be written again after a crash."""

    def ensure_schema(self) -> None:
        """Create what the view needs if missing."""
        ...

    def available(self) -> bool:
        """A cheap probe: does the store answer now? Never raises."""
        ...

    def refresh(self) -> None:
        """Make every earlier write visible to reads."""
        ...

    def restore_sessions(self, session_ids: Sequence[str]) -> dict[str, SessionProjection]:
        """The projection state of each session, rebuilt from the stored documents."""
        ...

    def write(self, actions: Sequence[Action]) -> list[WriteResult]:
        """Apply ``actions`` in order; one result per action."""
        ...

    def get_event_source(self, doc_id: str, routing: str) -> dict[str, Any] | None:
        """The stored event document (as the search engine returns it), None when missing."""
        ...

    def settle(self, committed: bool) -> None:
        """The batch the writes belonged to was committed (True) or abandoned (False)."""
        ...

    @property
    def publishes_watermarks(self) -> bool:
        """Whether writes become searchable only after a refresh (then the runner publishes
        per-partition watermarks from a thread)."""
        ...

    def publish_watermarks(self, topic: str, through: dict[int, tuple[int, int]]) -> None:
        """Record, per partition, the offset (and record time, ms) through which entries are
        searchable."""
        ...

    def forget_session(self, session_id: str) -> int:
        """Delete a session's documents; the number of events deleted."""
        ...

    def compact(self) -> None:
        """Merge the search structures the writes left in pieces (index segments), so that later
        searches probe fewer of them. Changes no document; takes seconds to minutes on a large
        view, so it is meant for after a bulk replay (a rebuild, a first catch-up)."""
        ...

    def close(self) -> None:
        """Release connections. Idempotent."""
        ...


@runtime_checkable
class DeadLetters(Protocol):
    """Where records the indexer cannot project are parked, with why."""

    def park(self, letters: Sequence[DeadLetter]) -> None:
        """Store ``letters`` durably before the batch is committed (raises to keep it uncommitted)."""
        ...

    def list(self, limit: int | None = 100) -> list[dict[str, Any]]:
        """Parked letters, oldest first: decoded envelopes with ``dlq_offset``."""
        ...

    def replay(self) -> int:
        """Re-append every letter not replayed before to the log (after a fix); how many."""
        ...

    def close(self) -> None:
        """Release connections. Idempotent."""
        ...


def through_and_first(entries: Iterable[Entry | InvalidEntry]) -> tuple[dict[int, int], dict[int, int]]:
    """Per partition: the last offset in ``entries`` and the first one."""
    last: dict[int, int] = {}
    first: dict[int, int] = {}
    for entry in entries:
        raw = entry.raw
        first.setdefault(raw.partition, raw.offset)
        last[raw.partition] = max(last.get(raw.partition, raw.offset), raw.offset)
    return last, first
