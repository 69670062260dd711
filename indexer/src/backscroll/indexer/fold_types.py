"""The values of the surface fold (:mod:`backscroll.indexer.fold`): the events it reads, the steps,
results and violations it returns, and the error the read paths raise. Pure: no I/O."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, Literal, Protocol, TypeAlias, cast, get_args

from backscroll.indexer.values import value_type

__all__ = [
    "CALL_ID_ATTR", "VIOLATION_CODES", "Classification", "FoldEvent", "FoldResult", "FoldStep", "Replacement",
    "Surface", "SurfaceViolationError", "Violation", "ViolationCode",
]  # fmt: skip

Classification: TypeAlias = Literal["current", "shadowed", "log-only"]
#: ``None`` (no marker), ``"append"``, or ``(start, end)`` for a replace.
Surface: TypeAlias = Literal["append"] | tuple[int, int] | None
ViolationCode: TypeAlias = Literal[
    "seq_gap", "seq_out_of_order",
    "missing_surface", "surface_not_allowed",
    "sources_not_allowed", "empty_sources", "duplicate_sources", "source_negative", "source_not_earlier",
    "replace_start_not_on_surface", "replace_end_not_on_surface", "replace_start_after_end",
    "replace_missing_citation",
    "tool_result_replace_span", "tool_result_replace_target", "tool_result_replace_changed",
]  # fmt: skip
VIOLATION_CODES: Final[frozenset[str]] = frozenset(get_args(ViolationCode))
#: The ``attrs`` key holding a tool result's call id; part of what a rewrite may not change.
CALL_ID_ATTR: Final = "call_id"


class _OpLike(Protocol):
    @property
    def op(self) -> str: ...


class _ReplaceLike(_OpLike, Protocol):
    @property
    def start(self) -> int: ...
    @property
    def end(self) -> int: ...


class _RecordLike(Protocol):
    @property
    def seq(self) -> int: ...
    @property
    def type(self) -> str: ...
    @property
    def surface(self) -> _OpLike | None: ...
    @property
    def sources(self) -> Sequence[int] | None: ...
    @property
    def tool_name(self) -> str | None: ...
    @property
    def role(self) -> str | None: ...


@value_type
class FoldEvent:
    """What the fold needs of one event.

    ``content_key`` is the identity of a ``tool/result`` apart from its content: a rewrite of a tool
    result must keep it. :meth:`from_record` builds it from ``tool_name``, ``role`` and
    ``attrs["call_id"]`` (the text is the content, so it is left out); other types get ``None``.
    """

    seq: int
    type: str
    surface: Surface = None
    sources: tuple[int, ...] | None = None
    content_key: str | None = None

    @classmethod
    def from_record(cls, record: _RecordLike) -> FoldEvent:
        """Build from an ``EventRecord`` or any object with the same attributes."""
        op = record.surface
        surface: Surface
        if op is None:
            surface = None
        elif op.op == "append":
            surface = "append"
        elif op.op == "replace":
            replace = cast(_ReplaceLike, op)
            surface = (replace.start, replace.end)
        else:
            raise ValueError(f"unknown surface op {op.op!r}")
        key = None
        if record.type == "tool/result":
            attrs = getattr(record, "attrs", None) or {}
            key = repr((record.tool_name, record.role, attrs.get(CALL_ID_ATTR)))
        sources = None if record.sources is None else tuple(record.sources)
        return cls(record.seq, record.type, surface, sources, key)


@dataclass(frozen=True, slots=True)
class Violation:
    """One broken surface or provenance rule, at the event ``seq``."""

    seq: int
    code: ViolationCode
    message: str


@dataclass(frozen=True, slots=True)
class Replacement:
    """One applied replace: the declared ``start``/``end`` and the nodes it removed, in surface order."""

    seq: int
    start: int
    end: int
    shadowed_seqs: tuple[int, ...]


@value_type
class FoldStep:
    """What folding one event changed.

    ``classification`` is the event's own (``current`` or ``log-only``; a skipped event repeats what
    its seq already had). ``shadowed`` lists the earlier seqs that just left the surface, all now
    ``shadowed`` with ``replaced_by == seq``.
    """

    seq: int
    classification: Classification
    shadowed: tuple[int, ...]
    replacement: Replacement | None
    violations: tuple[Violation, ...]


@dataclass(frozen=True, slots=True)
class FoldResult:
    """The fold of a log.

    ``nodes`` are the current seqs in model-history order and ``replacements`` the applied replaces in
    seq order. ``classification`` covers every seq seen, ``replaced_by`` every shadowed seq.
    ``violations`` are in log order; ``last_seq`` is the capture boundary (``None`` for an empty log).
    """

    nodes: tuple[int, ...]
    replacements: tuple[Replacement, ...]
    classification: dict[int, Classification]
    replaced_by: dict[int, int]
    violations: tuple[Violation, ...]
    last_seq: int | None

    @property
    def valid(self) -> bool:
        return not self.violations


class SurfaceViolationError(ValueError):
    """The log breaks a surface rule; the query layer reports ``SESSION_QUERY_INVALID_SURFACE``."""

    def __init__(self, violations: Sequence[Violation]) -> None:
        self.violations = tuple(violations)
        first = self.violations[0]
        super().__init__(
            f"{len(self.violations)} surface violation(s); first at seq {first.seq}: "
            f"{first.code}: {first.message}"
        )
