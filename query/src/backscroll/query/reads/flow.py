"""Sans-I/O reads: a read is a generator (a *flow*) that yields the client requests it needs and
receives their answers, so one implementation runs under a synchronous driver and an asyncio one.
No I/O here."""

from __future__ import annotations

from collections.abc import Generator, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeAlias, TypeVar

__all__ = ["ReadFlow", "ReadStep", "advance_read", "done"]

_T = TypeVar("_T")


@dataclass(frozen=True, slots=True)
class ReadStep:
    """One client request a read flow asks its driver for: ``client.<method>(**kwargs)`` (the
    driver adds the request timeout from the read's deadline); the answer is the response."""

    method: str
    kwargs: Mapping[str, Any] = field(default_factory=dict)


#: A read written without I/O: yields :class:`ReadStep`\s, receives their responses, returns ``_T``.
ReadFlow: TypeAlias = Generator[ReadStep, Any, _T]


def done(value: _T) -> ReadFlow[_T]:
    """A flow that needs no request: ``value`` (a load that did its I/O itself, or had none to do)."""
    yield from ()
    return value


def advance_read(flow: ReadFlow[_T], answer: Any) -> ReadStep | tuple[_T]:
    """Send ``answer`` into ``flow``: its next request, or its result (in a 1-tuple, so a result
    is never mistaken for a step)."""
    try:
        return flow.send(answer)
    except StopIteration as finished:
        return (finished.value,)
