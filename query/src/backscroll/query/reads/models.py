"""The results of session reads and the live source a reader serves from.

Every result is a frozen pydantic model built fresh for each call (a detached copy: nothing a caller
does to one result reaches the store or a later read) and serialises to JSON with
``model_dump_json()``. A lineage's descendants are a flat pre-order list of :class:`LineageNode`
(depth plus child ids) rather than nested objects, so a 3,000-deep chain stays serialisable.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Final, Literal, Protocol, TypeAlias, runtime_checkable

from pydantic import BaseModel, ConfigDict

from backscroll.ingest.wire import EventRecord, HeaderRecord

__all__ = [
    "DEFAULT_READ_WINDOW_MAX",
    "AttrValue",
    "Availability",
    "EventRecordView",
    "EventTraceResult",
    "LineageNode",
    "LiveSource",
    "ReadEventResult",
    "SessionHeader",
    "SessionRecord",
    "SessionStats",
    "SessionTrace",
    "SurfaceClass",
    "SurfaceRead",
]

DEFAULT_READ_WINDOW_MAX: Final = 50
SurfaceClass: TypeAlias = Literal["current", "shadowed", "log-only"]
Availability: TypeAlias = Literal["live", "persisted"]
AttrValue: TypeAlias = str | int | float | bool | None


# -- result models --------------------------------------------------------------------------------
class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class SessionHeader(_Frozen):
    """The immutable facts of a session. ``workspace_id`` is backscroll's ``cwd`` (the workspace
    identity); ``has_header`` is false for a session known only from its events (no header record
    yet), which then has no ``created_at``."""

    session_id: str
    workspace_id: str | None = None
    created_at: datetime | None = None
    parent_session_id: str | None = None
    seed_length: int | None = None
    delegation_depth: int = 0
    origin: str | None = None
    agent_preset: str | None = None
    title: str | None = None
    has_header: bool = True


class SessionStats(_Frozen):
    """The projection's counters for a persisted session (not a header field; may lag the log)."""

    last_seq: int | None
    entry_count: int
    last_activity: datetime | None
    surface_valid: bool
    seq_gaps: int


class SessionRecord(_Frozen):
    """One session of a listing: the header (live-preferred) and where the session is available.
    ``stats`` comes from the projection, so it is ``None`` for a session that is only live."""

    header: SessionHeader
    live: bool
    persisted: bool
    stats: SessionStats | None = None


class EventRecordView(_Frozen):
    """One event of a session's log with its surface classification (``current``: on the model's
    surface now; ``shadowed``: removed by a later replace, see ``replaced_by``; ``log-only``: never
    on the surface). ``live`` is true when the entry came from this process's live entries."""

    session_id: str
    seq: int
    type: str
    time: datetime
    turn: int | None = None
    role: str | None = None
    tool_name: str | None = None
    text: str = ""
    surface: SurfaceClass
    surface_op: Literal["append", "replace"] | None = None
    replace_start: int | None = None
    replace_end: int | None = None
    sources: tuple[int, ...] | None = None
    replaced_by: int | None = None
    attrs: dict[str, AttrValue] | None = None
    live: bool = False


class ReadEventResult(_Frozen):
    """``read_event``: the target and the window ``start_seq``..``end_seq`` around it (inclusive)."""

    header: SessionHeader
    target: EventRecordView
    events: tuple[EventRecordView, ...]
    start_seq: int
    end_seq: int


class SurfaceRead(_Frozen):
    """``read_surface``: the current surface in model-history order, captured through the last raw
    seq (``None`` for an empty log)."""

    header: SessionHeader
    captured_through_seq: int | None
    events: tuple[EventRecordView, ...]


class LineageNode(_Frozen):
    """One descendant in a :class:`SessionTrace`: ``depth`` 1 is a child of the target; ``children``
    are the ids of its own children, sorted by creation time then id."""

    session_id: str
    depth: int
    children: tuple[str, ...]
    session: SessionRecord


class SessionTrace(_Frozen):
    """``trace_session``: ancestors from the immediate parent outward; ``complete`` is false when the
    walk stopped at a parent that is missing or outside the scope (``unresolved_parent_id``);
    ``root`` is the last ancestor (the target itself without a parent), ``None`` when incomplete.
    ``descendants`` is the forest below the target, flattened depth-first in sibling order."""

    target: SessionRecord
    ancestors: tuple[SessionRecord, ...]
    complete: bool
    unresolved_parent_id: str | None
    root: SessionRecord | None
    descendants: tuple[LineageNode, ...]

    def children(self, session_id: str | None = None) -> tuple[LineageNode, ...]:
        """The sorted children of a descendant (of the target when ``session_id`` is ``None``)."""
        if session_id is None or session_id == self.target.header.session_id:
            return tuple(node for node in self.descendants if node.depth == 1)
        nodes = {node.session_id: node for node in self.descendants}
        parent = nodes.get(session_id)
        return () if parent is None else tuple(nodes[child] for child in parent.children)

    @property
    def depth(self) -> int:
        """How deep the descendant forest nests (0 without descendants)."""
        return max((node.depth for node in self.descendants), default=0)


class EventTraceResult(_Frozen):
    """``trace_event``: positional replacement (``replaced_by``, the ``replacement_chain`` to the
    final replacement, the ``replaced_event_seqs`` the target itself removed) and citation edges
    (the target's ``source_event_seqs`` as recorded, later events citing it directly in
    ``derived_event_seqs``), kept apart on purpose; citations are not transitive."""

    header: SessionHeader
    target: EventRecordView
    replaced_by: int | None
    replacement_chain: tuple[int, ...]
    replaced_event_seqs: tuple[int, ...]
    source_event_seqs: tuple[int, ...]
    derived_event_seqs: tuple[int, ...]


# -- the live source ------------------------------------------------------------------------------
@runtime_checkable
class LiveSource(Protocol):
    """Entries this process appended that a reader serves without the projection.

    ``sessions()`` lists the live sessions (wire headers or :class:`SessionHeader`). ``events(id)``
    returns that session's live entries in seq order, or ``None`` when the session is not live.
    Entries that start at seq 0 are the complete log: the reader then never consults OpenSearch for
    that session. Entries that start later, or none at all (a store such as ``ingest.live.LiveLog``
    releases entries once the index shows them), are a tail: the projection supplies the rest, and a
    live entry wins over a persisted one with the same seq. With no projection mounted the live
    entries are all there is.
    """

    def sessions(self) -> Sequence[HeaderRecord | SessionHeader]: ...

    def events(self, session_id: str) -> Sequence[EventRecord] | None: ...
