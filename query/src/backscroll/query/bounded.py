"""A small map that forgets its oldest keys: what an engine keeps between calls on the same data."""

from __future__ import annotations

from collections.abc import Hashable
from typing import Generic, TypeVar

__all__ = ["Bounded"]

V = TypeVar("V")


class Bounded(Generic[V]):
    """A small map that forgets its oldest keys past ``size`` entries."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._items: dict[Hashable, V] = {}

    def get(self, key: Hashable) -> V | None:
        """The value kept for ``key``, ``None`` when there is none."""
        return self._items.get(key)

    def __contains__(self, key: Hashable) -> bool:
        return key in self._items

    def put(self, key: Hashable, value: V) -> V:
        """Keep ``value`` for ``key`` as the newest entry, forgetting the oldest past the size."""
        self._items.pop(key, None)
        self._items[key] = value
        while len(self._items) > self.size:
            del self._items[next(iter(self._items))]
        return value

    def discard(self, key: Hashable) -> None:
        """Forget ``key`` if kept."""
        self._items.pop(key, None)

    def clear(self) -> None:
        """Forget everything."""
        self._items.clear()
