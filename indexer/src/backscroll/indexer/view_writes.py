"""The one place a view's raw write results become domain outcomes (replay vs conflict).

A view implements :meth:`ViewWrites._apply` (its store's write, reporting an event that already
existed as :attr:`Outcome.REPLAY`) and the two reads below; :meth:`ViewWrites.write` then compares
the stored content hash of every existing event with the re-sent one, so an identical re-delivery is
a replay and a different document under the same (session, seq) is a conflict.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import Any

from backscroll.indexer.ports import Outcome, WriteResult
from backscroll.indexer.projector import Action

__all__ = ["ViewWrites"]


class ViewWrites(ABC):
    """Mixin giving a view its :meth:`write` on top of three store primitives."""

    @abstractmethod
    def _apply(self, actions: Sequence[Action]) -> list[WriteResult]:
        """Write ``actions`` in order; an event that already existed comes back as REPLAY."""

    @abstractmethod
    def content_hashes(self, actions: Iterable[Action]) -> dict[str, str | None]:
        """The stored content hash of each action's event document (None: missing)."""

    @abstractmethod
    def get_event_source(self, doc_id: str, routing: str) -> dict[str, Any] | None:
        """The stored event document, as the search engine returns it."""

    def write(self, actions: Sequence[Action]) -> list[WriteResult]:
        """Apply ``actions``; existing events are told apart as replays or conflicts."""
        if not actions:
            return []
        results = self._apply(actions)
        existing = [r.action for r in results if r.outcome is Outcome.REPLAY]
        if not existing:
            return results
        hashes = self.content_hashes(existing)
        out = []
        for result in results:
            action = result.action
            if result.outcome is Outcome.REPLAY and hashes.get(action.doc_id) != action.body.get(
                "content_hash"
            ):
                result = replace(
                    result,
                    outcome=Outcome.CONFLICT,
                    reason="seq: same (session, seq) with different content",
                    existing=self.get_event_source(action.doc_id, action.routing),
                )
            out.append(result)
        return out
