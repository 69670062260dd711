"""Cancellation and time budgets of one call: an :class:`AbortSignal` the caller may trip, and the
:class:`Deadline` every wait of a search or read is bounded by. Pure (no I/O).

A search or read takes at most the provider's ``request_timeout_s`` (exceeding it is the retriable
``INDEX_FAILED``/``PERSISTENCE_FAILED``, like an unreachable server). A caller that wants to stop
earlier passes ``signal=``: once it is aborted (by :meth:`AbortSignal.abort`, or by its own timeout
from :meth:`AbortSignal.timeout`) the call stops at its next check with ``SESSION_QUERY_ABORTED``.
The checks are cooperative: between phases, inside SQLite statements (a progress handler), and
as the HTTP timeout of every OpenSearch request.
"""

from __future__ import annotations

import math
import threading
import time
from typing import Final

from backscroll.query.errors import ErrorCode, SessionQueryError

__all__ = ["AbortSignal", "Deadline", "check_signal"]

_NEVER: Final = math.inf


class AbortSignal:
    """A thread-safe "stop" flag with a reason, optionally tripping itself after a timeout, or
    when its ``parent`` is aborted."""

    def __init__(self, *, timeout_s: float | None = None, parent: AbortSignal | None = None) -> None:
        if timeout_s is not None and (
            isinstance(timeout_s, bool) or not isinstance(timeout_s, int | float) or not timeout_s > 0
        ):
            raise SessionQueryError("SESSION_QUERY_INVALID_CONFIG", "timeout_s must be a positive number")
        self._event = threading.Event()
        self._reason = ""
        self._expires = time.monotonic() + timeout_s if timeout_s is not None else _NEVER
        self._timeout_s = timeout_s
        self._parent = parent

    @classmethod
    def timeout(cls, seconds: float) -> AbortSignal:
        """A signal that aborts itself ``seconds`` from now (the tools' cooperative timeout)."""
        return cls(timeout_s=seconds)

    def abort(self, reason: str = "cancelled by the caller") -> None:
        """Trip the signal; calls in progress stop at their next check. Idempotent."""
        if not self._event.is_set():
            self._reason = reason
            self._event.set()

    @property
    def aborted(self) -> bool:
        if not self._event.is_set():
            if self._parent is not None and self._parent.aborted:
                self.abort(self._parent.reason)
            elif time.monotonic() >= self._expires:
                self.abort(f"timed out after {self._timeout_s}s")
        return self._event.is_set()

    @property
    def reason(self) -> str:
        return self._reason if self.aborted else ""

    def remaining(self) -> float:
        """Seconds until the signal's own timeout, or its parent's (``inf`` without one)."""
        left = max(0.0, self._expires - time.monotonic())
        return min(left, self._parent.remaining()) if self._parent is not None else left


def check_signal(signal: object) -> AbortSignal | None:
    """``signal`` if it is ``None`` or an :class:`AbortSignal`, else INVALID_CONFIG."""
    if signal is None or isinstance(signal, AbortSignal):
        return signal
    raise SessionQueryError("SESSION_QUERY_INVALID_CONFIG", "signal must be an AbortSignal")


class Deadline:
    """The budget of one call: ``timeout_s`` from its creation, and the caller's signal.

    ``code`` is what running out of time raises (``INDEX_FAILED`` for searches,
    ``PERSISTENCE_FAILED`` for reads); an aborted signal always raises ``ABORTED``.
    """

    __slots__ = ("code", "expires", "signal", "timeout_s")

    def __init__(self, timeout_s: float, code: ErrorCode, signal: AbortSignal | None = None) -> None:
        self.timeout_s = timeout_s
        self.expires = time.monotonic() + timeout_s
        self.code: ErrorCode = code
        self.signal = signal

    def remaining(self) -> float:
        """Seconds left (never negative), the signal's own timeout included."""
        left = self.expires - time.monotonic()
        if self.signal is not None:
            left = min(left, self.signal.remaining())
        return max(0.0, left)

    def stopped(self) -> bool:
        """Whether the call must stop now (aborted or out of time); cheap enough for a progress
        handler."""
        return (self.signal is not None and self.signal.aborted) or time.monotonic() >= self.expires

    def error(self) -> SessionQueryError:
        """The error for a call that was stopped (ABORTED, else out of time)."""
        if self.signal is not None and self.signal.aborted:
            return SessionQueryError("SESSION_QUERY_ABORTED", self.signal.reason)
        return SessionQueryError(self.code, f"took longer than {self.timeout_s}s (request_timeout_s)")

    def check(self) -> None:
        """Raise :meth:`error` when the call must stop."""
        if self.stopped():
            raise self.error()
