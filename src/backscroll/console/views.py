"""Pure helpers behind the pages: highlighted excerpts, lineage with cycles, time filters. No I/O.

Everything that reaches a page as markup is built here from escaped pieces (``markupsafe.escape``),
so user-written text can never become markup.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from markupsafe import Markup, escape
from rapidfuzz.distance import Levenshtein

from backscroll.indexer.textfold import WORD_RE, fold
from backscroll.query import SessionRecord
from backscroll.query.moments import utc_text

__all__ = [
    "SEARCH_KINDS",
    "LineageView",
    "highlight",
    "lineage_from_listing",
    "query_words",
]

#: The kinds offered as filters (message types are searched when none is chosen).
SEARCH_KINDS = ("user/message", "assistant/message", "tool/call", "tool/result", "compaction/summary")


def query_words(query: str) -> list[str]:
    """The folded words of a query, as the index tokenises them."""
    return [fold(word) for word in WORD_RE.findall(query)]


def _budget(word: str) -> int:
    if any(ch.isdigit() for ch in word):
        return 0
    return 0 if len(word) <= 2 else 1 if len(word) <= 5 else 2


def _matches(token: str, words: Sequence[str]) -> bool:
    for word in words:
        if token == word or (len(word) >= 3 and word in token):
            return True
        budget = _budget(word)
        if (
            budget
            and abs(len(token) - len(word)) <= budget
            and Levenshtein.distance(token, word, score_cutoff=budget) <= budget
        ):
            return True
    return False


def highlight(text: str, query: str) -> Markup:
    """``text`` escaped, with the words that match a query word (exactly, inside a longer word, with
    the provider's typo budget, or ignoring accents and case) wrapped in ``<mark>``."""
    words = query_words(query)
    if not words:
        return escape(text)
    out: list[str] = []
    last = 0
    for found in WORD_RE.finditer(text):
        if _matches(fold(found.group()), words):
            out.append(str(escape(text[last : found.start()])))
            out.append(f"<mark>{escape(found.group())}</mark>")
            last = found.end()
    out.append(str(escape(text[last:])))
    return Markup("".join(out))


@dataclass(slots=True)
class LineageView:
    """A session's lineage as the page draws it. ``ancestors`` run from the parent outward;
    ``cycle`` lists the ids of a parent cycle (the walk stopped there); ``unresolved_parent_id`` is a
    parent missing from the scope; ``descendants`` are ``(depth, record)`` in tree order."""

    target: SessionRecord
    ancestors: list[SessionRecord] = field(default_factory=list)
    unresolved_parent_id: str | None = None
    cycle: list[str] | None = None
    descendants: list[tuple[int, SessionRecord]] = field(default_factory=list)

    @property
    def root(self) -> SessionRecord | None:
        if self.cycle is not None or self.unresolved_parent_id is not None:
            return None
        return self.ancestors[-1] if self.ancestors else self.target


def _created(record: SessionRecord) -> tuple[bool, float, str]:
    created = record.header.created_at
    return (created is None, created.timestamp() if created else 0.0, record.header.session_id)


def lineage_from_listing(session_id: str, listing: Sequence[SessionRecord]) -> LineageView | None:
    """The lineage of ``session_id`` from a listing that may hold parent cycles (which a reader's
    ``trace_session`` refuses): the ancestor walk stops at the first repeated id and names the cycle;
    descendants skip sessions already drawn. ``None`` if the session is not listed."""
    corpus = {record.header.session_id: record for record in listing}
    target = corpus.get(session_id)
    if target is None:
        return None
    view = LineageView(target=target)
    path = [session_id]
    parent = target.header.parent_session_id
    while parent is not None:
        if parent in path:
            view.cycle = [*path[path.index(parent) :], parent]
            break
        found = corpus.get(parent)
        if found is None:
            view.unresolved_parent_id = parent
            break
        view.ancestors.append(found)
        path.append(parent)
        parent = found.header.parent_session_id
    children: dict[str, list[SessionRecord]] = {}
    for record in listing:
        parent_id = record.header.parent_session_id
        if parent_id is not None and parent_id != record.header.session_id:
            children.setdefault(parent_id, []).append(record)
    drawn = set(path)
    stack = [(kid, 1) for kid in reversed(sorted(children.get(session_id, []), key=_created))]
    while stack:
        record, depth = stack.pop()
        sid = record.header.session_id
        if sid in drawn:
            continue
        drawn.add(sid)
        view.descendants.append((depth, record))
        stack.extend((kid, depth + 1) for kid in reversed(sorted(children.get(sid, []), key=_created)))
    return view


def utc(value: datetime | None) -> str:
    """``2026-11-30 10:00:00Z`` (or an em dash)."""
    return "—" if value is None else utc_text(value, sep=" ")
