"""Two sides of a row measured over several rounds, in alternating order, and their pooled numbers
(pure).

On a two-core virtual machine the same measurement moves by a quarter from one minute to the next
(the servers' merges and garbage collection, the host). A row that compares two sides measured
once each can land on either side of its target by that alone. Measured in rounds whose order
alternates (A B, then B A, ...), a drift over the run weighs on both sides alike, and the pooled
ratio is the ratio of the mean times; each round's own ratio is kept beside it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["mean", "orders", "pool_cpu"]


def orders(rounds: int, first: str, second: str) -> list[tuple[str, str]]:
    """The order of the two sides in each of ``rounds`` rounds: ``first`` leads in even rounds."""
    return [(first, second) if i % 2 == 0 else (second, first) for i in range(max(1, rounds))]


def mean(values: Sequence[float]) -> float:
    """The arithmetic mean of ``values`` (at least one)."""
    if not values:
        raise ValueError("no values")
    return sum(values) / len(values)


def pool_cpu(reports: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """One :meth:`~benchmarks.cpuacct.CpuWindow.report` for a side measured once per round:
    its seconds (wall and each party's CPU) as the mean per round, and the share of the machine that
    was busy over all rounds together. An empty window (nothing measured) is left out."""
    measured = [r for r in reports if r.get("wall_s")]
    if not measured:
        return {}
    if len(measured) == 1:
        return dict(measured[0])
    out: dict[str, Any] = {"cpus": measured[0].get("cpus")}
    keys = {k for r in measured for k, v in r.items() if k.endswith("_s") and isinstance(v, int | float)}
    for key in sorted(keys):
        out[key] = mean([float(r.get(key) or 0.0) for r in measured])
    busy = total = 0.0
    for report in measured:
        fraction = report.get("machine_busy_fraction")
        if not fraction:
            out["machine_busy_fraction"] = None
            break
        busy += float(report["machine_busy_cpu_s"])
        total += float(report["machine_busy_cpu_s"]) / float(fraction)
    else:
        out["machine_busy_fraction"] = busy / total
    out["rounds"] = len(measured)
    return out
