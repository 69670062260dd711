"""The surface fold: which events the model sees now, which were replaced, and which it never saw.

Pure: no I/O, no clock. :class:`SurfaceState` folds one event at a time (the indexer's path);
:func:`fold` runs it over a whole log and :func:`fold_strict` raises for the read paths, which map
:class:`SurfaceViolationError` to ``SESSION_QUERY_INVALID_SURFACE``. :func:`trace` answers
``trace_event`` from a fold and the log. The values it reads and returns are defined in
:mod:`backscroll.indexer.fold_types` and re-exported here.

Violations are values. The fold never stops at one, so the indexer keeps flowing; a session with any
violation is invalid and every read of it that needs the fold fails. After a violation the state
continues by one deterministic rule:

* An event whose seq does not advance past the last folded seq (a duplicate or a step back) is
  skipped: it changes nothing and its seq keeps the classification it had (``log-only`` if none).
* Every other event is folded, a seq gap included; the next expected seq becomes its seq + 1.
* Its surface operation is applied whenever it is mechanically defined: an append, or a replace
  whose start and end are both current with start not after end. Provenance violations and the
  tool-result rewrite rule do not stop such an operation. Otherwise (no marker, a marker on a type
  that may not carry one, a replace that cannot be placed) the event is ``log-only`` and the surface
  does not change.

:func:`fold` is exactly :meth:`SurfaceState.apply` in log order, so an incremental fold always equals
the whole-log fold. Every node keeps an order key: appends take the next integer and a replacer takes
its start node's key, so keys stay increasing along the surface, "start after end" is one comparison,
and a replace costs O(range) on a linked list.
"""

from __future__ import annotations

from bisect import bisect_left
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import islice
from typing import Final

from backscroll.indexer.fold_types import (
    CALL_ID_ATTR,
    VIOLATION_CODES,
    Classification,
    FoldEvent,
    FoldResult,
    FoldStep,
    Replacement,
    Surface,
    SurfaceViolationError,
    Violation,
    ViolationCode,
)

__all__ = [
    "CALL_ID_ATTR", "VIOLATION_CODES", "Classification", "EventTrace", "FoldEvent", "FoldResult", "FoldStep",
    "Replacement", "Surface", "SurfaceState", "SurfaceViolationError", "Violation", "ViolationCode", "fold",
    "fold_strict", "locate", "trace",
]  # fmt: skip

#: ``wire.SURFACE_TYPES``, repeated so the fold imports nothing of ingest (a unit test keeps them equal).
_ELIGIBLE: Final = frozenset({"user/message", "assistant/message", "tool/result"})
_NIL: Final = -1  # "no node" in the linked list; folded seqs are never negative


class SurfaceState:
    """The incremental fold. Feed events in log order to :meth:`apply`; :meth:`result` snapshots it.

    A bad event never raises: it continues by the rule in the module docstring, so applying a log one
    event at a time (across :meth:`copy` too) gives exactly :func:`fold` of it.
    """

    def __init__(self) -> None:
        self._expected = 0
        self._order_key = 0
        self._key: dict[int, int] = {}  # current seq -> order key (membership == on the surface)
        self._prev: dict[int, int] = {}
        self._next: dict[int, int] = {}
        self._head = _NIL
        self._tail = _NIL
        self._tool_key: dict[int, str | None] = {}  # current tool/result seq -> content_key
        self._classification: dict[int, Classification] = {}
        self._replaced_by: dict[int, int] = {}
        self._replacements: list[Replacement] = []
        self._violations: list[Violation] = []

    @property
    def valid(self) -> bool:
        return not self._violations

    @property
    def violations(self) -> tuple[Violation, ...]:
        return tuple(self._violations)

    @property
    def last_seq(self) -> int | None:
        return self._expected - 1 if self._expected else None

    def classification_of(self, seq: int) -> Classification:
        """The current classification of one folded seq (``log-only`` if never folded); O(1)."""
        return self._classification.get(seq, "log-only")

    def nodes(self) -> tuple[int, ...]:
        """The current surface seqs in model-history order."""
        out: list[int] = []
        node, nxt = self._head, self._next
        while node != _NIL:
            out.append(node)
            node = nxt[node]
        return tuple(out)

    def copy(self) -> SurfaceState:
        """An independent copy (O(n) dict copies), e.g. to try events without committing them."""
        other = SurfaceState()
        other._expected, other._order_key = self._expected, self._order_key
        other._head, other._tail = self._head, self._tail
        other._key, other._prev, other._next = self._key.copy(), self._prev.copy(), self._next.copy()
        other._tool_key = self._tool_key.copy()
        other._classification, other._replaced_by = self._classification.copy(), self._replaced_by.copy()
        other._replacements, other._violations = self._replacements.copy(), self._violations.copy()
        return other

    def result(self) -> FoldResult:
        return FoldResult(
            self.nodes(),
            tuple(self._replacements),
            dict(self._classification),
            dict(self._replaced_by),
            tuple(self._violations),
            self.last_seq,
        )

    def apply(self, event: FoldEvent) -> FoldStep:
        """Fold one event; never raises for a bad event, its violations are in the step."""
        seq = event.seq
        found: list[Violation] = []
        if seq != self._expected:
            if seq < self._expected:
                return self._skip(seq)
            found.append(Violation(seq, "seq_gap", f"seq {seq} follows {self._expected - 1}"))
        self._expected = seq + 1
        eligible = event.type in _ELIGIBLE
        if event.sources is not None:
            if eligible:
                _check_sources(event, found)
            else:
                found.append(Violation(seq, "sources_not_allowed", f"{event.type} may not cite sources"))
        op, replacement, placed = event.surface, None, False
        if not eligible:
            if op is not None:
                found.append(Violation(seq, "surface_not_allowed", f"no surface op on {event.type}"))
        elif op is None:
            found.append(Violation(seq, "missing_surface", f"{event.type} needs a surface op"))
        elif isinstance(op, tuple):
            replacement = self._replace(event, op[0], op[1], found)
            placed = replacement is not None
        else:
            self._append(seq)
            placed = True
        if placed and event.type == "tool/result":
            self._tool_key[seq] = event.content_key
        classification: Classification = "current" if placed else "log-only"
        self._classification[seq] = classification
        self._violations.extend(found)
        shadowed = replacement.shadowed_seqs if replacement else ()
        return FoldStep(seq, classification, shadowed, replacement, tuple(found))

    def _skip(self, seq: int) -> FoldStep:
        last = self._expected - 1
        found = Violation(seq, "seq_out_of_order", f"seq {seq} does not advance past {last}")
        self._violations.append(found)
        classification = self._classification.setdefault(seq, "log-only")
        return FoldStep(seq, classification, (), None, (found,))

    def _append(self, seq: int) -> None:
        self._key[seq] = self._order_key
        self._order_key += 1
        self._link(self._tail, seq, _NIL)

    def _link(self, before: int, seq: int, after: int) -> None:
        self._prev[seq], self._next[seq] = before, after
        if before == _NIL:
            self._head = seq
        else:
            self._next[before] = seq
        if after == _NIL:
            self._tail = seq
        else:
            self._prev[after] = seq

    def _replace(self, event: FoldEvent, start: int, end: int, found: list[Violation]) -> Replacement | None:
        seq, key = event.seq, self._key
        if start not in key:
            found.append(Violation(seq, "replace_start_not_on_surface", f"start {start} is not current"))
        if end not in key:
            found.append(Violation(seq, "replace_end_not_on_surface", f"end {end} is not current"))
        if start not in key or end not in key:
            return None
        if key[start] > key[end]:
            found.append(Violation(seq, "replace_start_after_end", f"start {start} comes after end {end}"))
            return None
        shadowed, node, nxt = [start], start, self._next
        while node != end:
            node = nxt[node]
            shadowed.append(node)
        cited = set(event.sources or ())
        missing = [s for s in shadowed if s not in cited]
        if missing:
            found.append(Violation(seq, "replace_missing_citation", f"does not cite shadowed {missing}"))
        if event.type == "tool/result":
            self._check_tool_rewrite(event, shadowed, found)
        before, after = self._prev[start], nxt[end]
        key[seq] = key[start]
        for node in shadowed:
            del key[node], self._prev[node], nxt[node]
            self._tool_key.pop(node, None)
            self._classification[node] = "shadowed"
            self._replaced_by[node] = seq
        self._link(before, seq, after)
        replacement = Replacement(seq, start, end, tuple(shadowed))
        self._replacements.append(replacement)
        return replacement

    def _check_tool_rewrite(self, event: FoldEvent, shadowed: list[int], found: list[Violation]) -> None:
        seq, target = event.seq, shadowed[0]
        if len(shadowed) != 1:
            message = f"a tool/result must replace exactly one node, not {shadowed}"
            found.append(Violation(seq, "tool_result_replace_span", message))
        elif target not in self._tool_key:
            message = f"a tool/result may only replace a tool/result, {target} is not one"
            found.append(Violation(seq, "tool_result_replace_target", message))
        elif self._tool_key[target] != event.content_key:
            message = f"rewrite of {target} changes more than its content"
            found.append(Violation(seq, "tool_result_replace_changed", message))


def _check_sources(event: FoldEvent, found: list[Violation]) -> None:
    seq, sources = event.seq, event.sources or ()
    if not sources:
        if event.type != "assistant/message":
            found.append(Violation(seq, "empty_sources", f"{event.type} may not cite an empty list"))
        return
    if len(set(sources)) != len(sources):
        dupes = sorted({s for s, n in Counter(sources).items() if n > 1})
        found.append(Violation(seq, "duplicate_sources", f"sources repeat {dupes}"))
    if min(sources) < 0:
        found.append(Violation(seq, "source_negative", f"negative sources {[s for s in sources if s < 0]}"))
    if max(sources) >= seq:
        late = [s for s in sources if s >= seq]
        found.append(Violation(seq, "source_not_earlier", f"sources {late} are not earlier than {seq}"))


def fold(events: Sequence[FoldEvent]) -> FoldResult:
    """Fold a whole log; violations are returned, never raised."""
    state = SurfaceState()
    for event in events:
        state.apply(event)
    return state.result()


def fold_strict(events: Sequence[FoldEvent]) -> FoldResult:
    """Fold a whole log for a read path; raise :class:`SurfaceViolationError` if it has any violation."""
    result = fold(events)
    if result.violations:
        raise SurfaceViolationError(result.violations)
    return result


@dataclass(frozen=True, slots=True)
class EventTrace:
    """``trace_event``: positional replacement and citation edges of one event, kept apart on purpose."""

    seq: int
    classification: Classification
    replaced_by: int | None
    replacement_chain: tuple[int, ...]
    replaced_event_seqs: tuple[int, ...]
    source_event_seqs: tuple[int, ...]
    derived_event_seqs: tuple[int, ...]


def locate(events: Sequence[FoldEvent], seq: int) -> FoldEvent | None:
    """The event at index ``seq`` if its seq is ``seq`` (the read rule); ``None`` means EVENT_NOT_FOUND."""
    if 0 <= seq < len(events) and events[seq].seq == seq:
        return events[seq]
    return None


def trace(folded: FoldResult | SurfaceState, events: Sequence[FoldEvent], seq: int) -> EventTrace:
    """Trace ``seq`` in a fold of ``events``; raise ``KeyError`` if :func:`locate` does not find it.

    Meaningful on a valid fold: the read path checks existence, then :func:`fold_strict`, then traces.
    Given a :class:`SurfaceState` it snapshots it first (O(n)).
    Citations are not transitive: ``derived_event_seqs`` are the later events citing ``seq`` directly.
    """
    target = locate(events, seq)
    if target is None:
        raise KeyError(seq)
    result = folded.result() if isinstance(folded, SurfaceState) else folded
    chain: list[int] = []
    replacer = result.replaced_by.get(seq)
    while replacer is not None:
        chain.append(replacer)
        replacer = result.replaced_by.get(replacer)
    replacements = result.replacements
    at = bisect_left(replacements, seq, key=lambda r: r.seq)
    own = replacements[at] if at < len(replacements) and replacements[at].seq == seq else None
    derived = tuple(e.seq for e in islice(events, seq + 1, None) if e.sources and seq in e.sources)
    return EventTrace(
        seq,
        result.classification.get(seq, "log-only"),
        result.replaced_by.get(seq),
        tuple(chain),
        own.shadowed_seqs if own else (),
        target.sources or (),
        derived,
    )
