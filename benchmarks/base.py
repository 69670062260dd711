"""What every benchmarked system implements, and helpers they share."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any, Protocol, runtime_checkable

from benchmarks.corpus import is_searchable
from benchmarks.folding import TOKEN_RE, fold

__all__ = ["SearchSystem", "SystemUnavailable", "doc_id", "query_words", "searchable_rows"]


class SystemUnavailable(RuntimeError):
    """The system cannot run on this machine (not importable, server unreachable, ...)."""


@runtime_checkable
class SearchSystem(Protocol):
    #: Short stable name used in results ("pg_trgm word≥0.6", "sqlite_fts5_trigram", ...).
    name: str

    def load(self, entries: Iterable[dict[str, Any]]) -> None:
        """Bulk-load wire-format dicts (headers and events) and make them searchable."""

    def search(self, scope_kind: str, scope_id: str, query: str, limit: int = 10) -> list[str]:
        """Doc ids ``session_id:seq``, best first; ``scope_kind`` is ``session`` or ``workspace``."""

    def index_bytes(self) -> int:
        """Bytes on disk of everything the system built for the corpus (data plus indexes)."""

    def close(self) -> None: ...


def doc_id(record: dict[str, Any]) -> str:
    return f"{record['session_id']}:{record['seq']}"


def searchable_rows(entries: Iterable[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """The events backscroll searches by default: message-bearing events with text."""
    return (e for e in entries if is_searchable(e))


def query_words(query: str) -> list[str]:
    """Folded words of a query, in order, without duplicates."""
    out: list[str] = []
    for word in TOKEN_RE.findall(fold(query)):
        if word not in out:
            out.append(word)
    return out
