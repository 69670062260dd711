"""Relevance and latency metrics."""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence

__all__ = ["latency_summary", "mean", "percentile", "recall_at", "reciprocal_rank_at"]


def recall_at(results: Sequence[str], relevant: Collection[str], k: int = 10) -> float:
    """Relevant entries in the top ``k`` over ``min(|relevant|, k)`` (so 1.0 is reachable)."""
    if not relevant:
        return 0.0
    hits = sum(1 for doc in results[:k] if doc in relevant)
    return hits / min(len(relevant), k)


def reciprocal_rank_at(results: Sequence[str], relevant: Collection[str], k: int = 10) -> float:
    """1 / rank of the first relevant entry in the top ``k``; 0 when there is none."""
    for rank, doc in enumerate(results[:k], start=1):
        if doc in relevant:
            return 1.0 / rank
    return 0.0


def mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else float("nan")


def percentile(values: Sequence[float], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default)."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q / 100
    low = math.floor(pos)
    high = math.ceil(pos)
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)


def latency_summary(ms: Sequence[float]) -> dict[str, float]:
    return {
        "n": len(ms),
        "p50": percentile(ms, 50),
        "p95": percentile(ms, 95),
        "p99": percentile(ms, 99),
        "mean": mean(ms),
        "max": max(ms) if ms else float("nan"),
    }
