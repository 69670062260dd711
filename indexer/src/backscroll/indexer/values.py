"""The indexer's per-record value types: immutable to the type checker, cheap to build.

A ``@dataclass(frozen=True)`` enforces immutability at run time by setting each field through
``object.__setattr__`` in ``__init__``: 1.8 µs for six fields against 0.5 µs for a plain
dataclass with slots (Python 3.11, this project's machine). The projection builds about seven
such values per record (the raw record, the entry, the fold's event and step, the actions, the
text rows), which made about 6 % of the embedded catch-up's projecting thread. :func:`value_type`
keeps what the frozen form gave where it matters: the type checker refuses assignments (PEP 681
``frozen_default``), and equality and hashing are by field, as before.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeVar, dataclass_transform

__all__ = ["value_type"]

_T = TypeVar("_T")


@dataclass_transform(frozen_default=True)
def value_type(cls: type[_T]) -> type[_T]:
    """A dataclass with slots, read-only to the type checker, hashed by its fields."""
    return dataclass(slots=True, unsafe_hash=True)(cls)
