"""Where the CPU went during a measured window: our processes, the servers, everything else.

Reads ``/proc`` (Linux only): the machine's busy and idle jiffies from ``/proc/stat`` and the
``utime + stime`` of chosen processes from ``/proc/PID/stat``. The servers are found by their
command line (OpenSearch's bootstrap class, Kafka's main class). ``everything else`` is whatever the
machine spent beyond the named processes (other benchmarks, other users): on a shared machine it
says how much of the measurement was contention. On a virtual machine, the time the host gave to
other guests while ours wanted to run (``steal``) is counted apart: it is busy time nobody here
used.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["CpuWindow", "machine_seconds", "server_pids"]

_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _machine() -> tuple[int, int, int]:
    """(busy, total, stolen) jiffies of all CPUs (busy includes stolen)."""
    return _machine_from(Path("/proc/stat").read_text())


def machine_seconds() -> tuple[float, float]:
    """CPU seconds the machine has been busy (stolen time included) and the host has stolen from
    it since boot, all CPUs together (``(0, 0)`` where ``/proc/stat`` cannot be read)."""
    try:
        busy, _, stolen = _machine()
    except (OSError, ValueError, IndexError):
        return 0.0, 0.0
    return busy / _TICK, stolen / _TICK


def _machine_from(stat: str) -> tuple[int, int, int]:
    fields = [int(x) for x in stat.split("\n", 1)[0].split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
    total = sum(fields[:8])
    stolen = fields[7] if len(fields) > 7 else 0
    return total - idle, total, stolen


def _proc(pid: int) -> int:
    """utime + stime (jiffies) of a process and its waited-for children; 0 once it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0
    rest = stat.rsplit(")", 1)[1].split()
    return int(rest[11]) + int(rest[12]) + int(rest[13]) + int(rest[14])


def server_pids() -> dict[str, int]:
    """The local OpenSearch and Kafka JVMs, by their main classes."""
    found: dict[str, int] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmd = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if b"org.opensearch.bootstrap.OpenSearch" in cmd:
            found.setdefault("opensearch", int(entry.name))
        elif b"kafka.Kafka" in cmd:
            found.setdefault("kafka", int(entry.name))
    return found


@dataclass
class CpuWindow:
    """``start()``, run the work, ``stop()``; :meth:`report` gives CPU seconds per named process."""

    pids: dict[str, list[int]] = field(default_factory=dict)
    _start: dict[int, int] = field(default_factory=dict)
    _last: dict[int, int] = field(default_factory=dict)
    _machine_start: tuple[int, int, int] = (0, 0, 0)
    _machine_end: tuple[int, int, int] = (0, 0, 0)
    _wall: float = 0.0

    @classmethod
    def over_servers(cls) -> CpuWindow:
        """A window watching the local servers (:func:`server_pids`)."""
        window = cls()
        for name, pid in server_pids().items():
            window.watch(name, pid)
        return window

    def watch(self, name: str, pid: int) -> None:
        """Account ``pid`` under ``name`` (several pids may share one name)."""
        self.pids.setdefault(name, []).append(pid)
        self._start.setdefault(pid, _proc(pid))

    def start(self) -> None:
        import time

        self._machine_start = _machine()
        self._wall = time.monotonic()
        for pids in self.pids.values():
            for pid in pids:
                self._start[pid] = _proc(pid)

    def sample(self) -> None:
        """Read the processes now (call before a watched process is reaped)."""
        for pids in self.pids.values():
            for pid in pids:
                value = _proc(pid)
                if value:
                    self._last[pid] = value

    def stop(self) -> None:
        import time

        self.sample()
        self._machine_end = _machine()
        self._wall = time.monotonic() - self._wall

    def report(self) -> dict[str, Any]:
        busy = (self._machine_end[0] - self._machine_start[0]) / _TICK
        total = (self._machine_end[1] - self._machine_start[1]) / _TICK
        out: dict[str, Any] = {"wall_s": self._wall, "cpus": os.cpu_count(), "machine_busy_cpu_s": busy}
        out["machine_busy_fraction"] = busy / total if total else None
        named = 0.0
        for name, pids in self.pids.items():
            seconds = sum(max(0, self._last.get(p, 0) - self._start.get(p, 0)) for p in pids) / _TICK
            out[f"{name}_cpu_s"] = seconds
            named += seconds
        stolen = (self._machine_end[2] - self._machine_start[2]) / _TICK
        out["stolen_cpu_s"] = stolen
        out["others_cpu_s"] = max(0.0, busy - stolen - named)
        return out
