"""What the operator operations of a backend return: health, workspaces, parked records, and the
outcome of a forget or a rebuild. Plain values, the same on every backend."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import orjson

if TYPE_CHECKING:
    from backscroll.indexer.operations import RebuildReport

__all__ = [
    "Forgotten",
    "Health",
    "LogRetention",
    "ParkedRecord",
    "PartitionLag",
    "Rebuilt",
    "WorkspaceCount",
    "session_not_found",
]


@dataclass(frozen=True, slots=True)
class PartitionLag:
    """One partition of the log (the embedded log is one): how far the projection is behind it."""

    partition: int
    end_offset: int
    indexed_offset: int | None
    lag: int | None
    watermark_offset: int | None = None
    watermark_record_ms: int | None = None
    watermark_published_ms: int | None = None


@dataclass(slots=True)
class Health:
    """Lag, watermark and freshness of a backend; ``problems`` lists what could not be read (shown,
    never hidden)."""

    #: The backend and where its data lives (URL passwords redacted).
    backend: str
    partitions: list[PartitionLag] = field(default_factory=list)
    freshness_s: float | None = None
    oldest_pending_ms: int | None = None
    problems: list[str] = field(default_factory=list)
    #: A sentence on how this backend projects its log (``None``: nothing to add).
    note: str | None = None

    @property
    def total_lag(self) -> int | None:
        lags = [p.lag for p in self.partitions]
        return None if not lags or any(lag is None for lag in lags) else sum(lag or 0 for lag in lags)


@dataclass(frozen=True, slots=True)
class LogRetention:
    """Whether the log still holds every record appended to it, and whether it keeps them for good.

    A log whose first records are gone (retention, deleted records) cannot be rebuilt from
    completely: a rebuild would drop those records from the projection."""

    #: Partitions whose first retained offset is above 0, with that offset (empty: complete).
    truncated: dict[int, int] = field(default_factory=dict)
    #: Retention settings that are finite (not ``-1``), by name, e.g. ``{"retention.ms": "604800000"}``.
    finite: dict[str, str] = field(default_factory=dict)

    @property
    def complete(self) -> bool:
        """Every record ever appended is still in the log."""
        return not self.truncated

    def gone(self) -> str:
        """Which records are gone, in words (``""`` when complete)."""
        return "; ".join(
            f"partition {p} starts at offset {o}: its first {o} records are gone"
            for p, o in sorted(self.truncated.items())
        )

    def warnings(self) -> list[str]:
        """One line per concern for an operator: a truncated log, a finite retention."""
        out = []
        if self.truncated:
            out.append(
                f"the log is truncated ({self.gone()}): a rebuild cannot restore those records; "
                "see docs/operations.md, Retention"
            )
        if self.finite:
            limits = ", ".join(f"{name}={value}" for name, value in sorted(self.finite.items()))
            out.append(
                f"the log's retention is finite ({limits}): records past that age or size will be "
                "deleted and a rebuild will not restore them; set both to -1 (see docs/operations.md, "
                "Retention)"
            )
        return out


@dataclass(frozen=True, slots=True)
class WorkspaceCount:
    """One workspace of the projection, with its session and event counts."""

    workspace_id: str
    sessions: int
    events: int


@dataclass(frozen=True, slots=True)
class ParkedRecord:
    """One dead letter: where it came from, why it was parked and, when its original value is a JSON
    object, its workspace and session (the value itself is not kept here)."""

    dlq_offset: int
    partition: int | None
    offset: int | None
    error_class: str
    reason: str
    field: str | None
    time: str | None
    workspace_id: str | None
    session_id: str | None
    #: The store's envelope without the original key and value (what ``dlq list --json`` prints).
    envelope: dict[str, Any]

    @classmethod
    def from_envelope(cls, letter: dict[str, Any]) -> ParkedRecord:
        """A parked record from what a :class:`~backscroll.indexer.ports.DeadLetters` store lists."""
        ws, sid = _origin(letter.get("value"))
        envelope = {k: v for k, v in letter.items() if k not in ("key", "value")}
        return cls(
            dlq_offset=int(letter.get("dlq_offset", -1)),
            partition=letter.get("partition"),
            offset=letter.get("offset"),
            error_class=str(letter.get("error_class", "")),
            reason=str(letter.get("reason", "")),
            field=letter.get("field"),
            time=letter.get("time"),
            workspace_id=ws,
            session_id=sid,
            envelope=envelope,
        )


def _origin(value: bytes | None) -> tuple[str | None, str | None]:
    """(workspace, session) of a parked record's original value, when it is a JSON object."""
    try:
        data = orjson.loads(value) if value else None
    except orjson.JSONDecodeError:
        return None, None
    if not isinstance(data, dict):
        return None, None
    ws, sid = data.get("workspace_id"), data.get("session_id")
    return (ws if isinstance(ws, str) else None, sid if isinstance(sid, str) else None)


@dataclass(frozen=True, slots=True)
class Forgotten:
    """A session's documents deleted from the projection."""

    session_id: str
    events: int
    #: Where the records still are (the log keeps them), in one sentence.
    kept_by: str

    def summary(self) -> str:
        return f"deleted {self.events} events of {self.session_id}; {self.kept_by}"


def session_not_found(session_id: str) -> Exception:
    """SESSION_NOT_FOUND for an operation on a session the projection does not hold."""
    from backscroll.query.errors import SessionQueryError

    return SessionQueryError("SESSION_QUERY_SESSION_NOT_FOUND", f"no session {session_id}")


@dataclass(frozen=True, slots=True)
class Rebuilt:
    """The projection built again from the whole log."""

    report: RebuildReport
    #: One line for the operator (what was rebuilt, how many events, how long).
    summary: str
