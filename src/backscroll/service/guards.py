"""What every request passes before it is served: Host and Origin, the body size, the rate."""

from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass, field
from urllib.parse import urlsplit

__all__ = ["LOCAL_NAMES", "HostCheck", "RateLimiter", "host_name"]

LOCAL_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})


def host_name(value: str) -> str:
    """The name part of a ``Host`` header or netloc (no port, no brackets, lower case)."""
    value = value.strip().lower()
    if value.startswith("["):
        return value[1:].split("]", 1)[0]
    if value.count(":") == 1:
        return value.split(":", 1)[0]
    return value


@dataclass(frozen=True)
class HostCheck:
    """The names a request's ``Host`` (and a browser's ``Origin``) may carry: the bind host, the
    local names and the operator's extra names (DNS rebinding gets nowhere)."""

    allowed: frozenset[str]

    @classmethod
    def for_bind(cls, host: str, extra: list[str] | None = None) -> HostCheck:
        names = {host_name(host), *LOCAL_NAMES, *(host_name(name) for name in extra or [])}
        return cls(frozenset(names))

    def host_ok(self, header: str | None) -> bool:
        return header is not None and host_name(header) in self.allowed

    def origin_ok(self, header: str | None) -> bool:
        """No ``Origin`` (not a browser) passes; a browser's must name an allowed host."""
        if header is None:
            return True
        parts = urlsplit(header)
        return parts.scheme in ("http", "https") and host_name(parts.netloc) in self.allowed


@dataclass
class RateLimiter:
    """A token bucket per key: ``rate`` per second on average, ``burst`` at once."""

    rate: float
    burst: int
    _buckets: dict[str, tuple[float, float]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def take(self, key: str, now: float | None = None) -> float:
        """0 when the request may go, else the seconds until it may (for ``Retry-After``)."""
        now = time.monotonic() if now is None else now
        with self._lock:
            level, last = self._buckets.get(key, (float(self.burst), now))
            level = min(float(self.burst), level + (now - last) * self.rate)
            if level >= 1.0:
                self._buckets[key] = (level - 1.0, now)
                return 0.0
            self._buckets[key] = (level, now)
            return (1.0 - level) / self.rate

    @staticmethod
    def retry_after(wait: float) -> str:
        return str(max(1, math.ceil(wait)))
