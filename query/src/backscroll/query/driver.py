"""The drivers of the sans-I/O cores: the provider core's search
(:class:`~backscroll.query.provider.ProviderCore`) and the session reads
(:class:`~backscroll.query.reads.reader.ReaderBase`).

A core is written once, without I/O, as a *flow*: a generator that yields *steps* (each one call
on its backend's port, a :class:`Step`), receives their answers and returns its result.
:func:`drive` answers the steps synchronously. :func:`adrive` awaits them: a natively async port
(``AsyncOpenSearch``) on the event loop, a blocking one wrapped in :class:`OnThread` (SQLite) one
step at a time on a worker thread. Cancelling the task awaiting :func:`adrive` aborts the flow's
signal, so the work behind the step in progress stops at its next check.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Generator
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeAlias, TypeVar

from backscroll.query.deadline import AbortSignal

__all__ = ["Flow", "OnThread", "Step", "adrive", "drive"]

_Port = TypeVar("_Port", contravariant=True)
_AsyncPort = TypeVar("_AsyncPort", contravariant=True)
_P = TypeVar("_P")
_A = TypeVar("_A")
_R = TypeVar("_R")


class Step(Protocol[_Port, _AsyncPort]):
    """One call on a port: made with :meth:`call` on a blocking port, :meth:`acall` on an async one."""

    def call(self, port: _Port, /) -> object:
        """The answer of a blocking port."""
        ...

    def acall(self, port: _AsyncPort, /) -> Awaitable[object]:
        """The answer of an async port, to await."""
        ...


#: A core's work: yields steps, receives each one's answer, returns the result.
Flow: TypeAlias = Generator[Step[_P, _A], Any, _R]


@dataclass(frozen=True, slots=True)
class OnThread(Generic[_P]):
    """A blocking port for :func:`adrive`: each step's :meth:`Step.call` runs on a worker thread."""

    port: _P


def _next(flow: Flow[_P, _A, _R], answer: object) -> Step[_P, _A] | tuple[_R]:
    """Send ``answer`` into ``flow``: its next step, or its result (in a 1-tuple, so that a result is
    never mistaken for a step)."""
    try:
        return flow.send(answer)
    except StopIteration as finished:
        return (finished.value,)


def drive(flow: Flow[_P, Any, _R], port: _P) -> _R:
    """Run ``flow`` to its result, answering each step on the blocking ``port``."""
    outcome = _next(flow, None)
    while not isinstance(outcome, tuple):
        outcome = _next(flow, outcome.call(port))
    return outcome[0]


async def adrive(flow: Flow[_P, _A, _R], port: _A | OnThread[_P], signal: AbortSignal | None = None) -> _R:
    """Run ``flow`` to its result without blocking the loop: each step awaited on the async ``port``,
    or run on a worker thread for an :class:`OnThread` one. ``signal`` is the one the flow's deadline
    watches: a cancelled task aborts it."""
    outcome = _next(flow, None)
    while not isinstance(outcome, tuple):
        try:
            if isinstance(port, OnThread):
                answer = await asyncio.to_thread(outcome.call, port.port)
            else:
                answer = await outcome.acall(port)
        except asyncio.CancelledError:
            if signal is not None:
                signal.abort("the awaiting task was cancelled")
            raise
        outcome = _next(flow, answer)
    return outcome[0]
