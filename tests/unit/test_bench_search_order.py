"""The relevance benchmark's search order (benchmarks/bench_relevance.py): every loaded system
runs each query (or block of queries) in turn, the first system rotating, and a system
that fails is left out while the others go on. No benchmark runs here."""

from __future__ import annotations

from typing import Any

from rich.console import Console

from benchmarks.bench_relevance import RelevanceConfig, _interleaved, _progress
from benchmarks.queries import Query


class _System:
    """Records each search in ``calls`` as (system, query text); fails on ``fail_on``."""

    def __init__(self, name: str, calls: list[tuple[str, str]], fail_on: str = "") -> None:
        self.name, self.calls, self.fail_on = name, calls, fail_on

    def search(self, scope_kind: str, scope_id: str, query: str, limit: int = 10) -> list[str]:
        self.calls.append((self.name, query))
        if query == self.fail_on:
            raise RuntimeError("server gone")
        return [f"{scope_id}:{query}"]


def _queries(n: int) -> list[Query]:
    return [Query(f"q{i}", "clean", "session", "s1", f"t{i}", [f"t{i}"], "s1:0") for i in range(n)]


def _run(
    systems: list[_System], queries: list[Query], block: int
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    live: list[tuple[dict[str, Any], Any]] = [({"name": s.name}, s) for s in systems]
    console = Console(quiet=True)
    with _progress(console) as progress:
        got = _interleaved(queries, live, RelevanceConfig(warmup=1, block=block), progress, console)
    return got, [entry for entry, _ in live]


def test_each_block_runs_back_to_back_on_every_system_the_first_rotating() -> None:
    calls: list[tuple[str, str]] = []
    got, _ = _run([_System("a", calls), _System("b", calls)], _queries(5), block=2)
    assert calls == [
        ("a", "t0"), ("b", "t0"),  # the warm-up, not timed
        ("a", "t0"), ("a", "t1"), ("b", "t0"), ("b", "t1"),
        ("b", "t2"), ("b", "t3"), ("a", "t2"), ("a", "t3"),
        ("a", "t4"), ("b", "t4"),
    ]  # fmt: skip
    assert [found for found, _ in got["a"]] == [[f"s1:t{i}"] for i in range(5)]
    assert all(ms >= 0 for _, ms in got["b"])


def test_a_block_of_one_is_query_by_query() -> None:
    calls: list[tuple[str, str]] = []
    _run([_System("a", calls), _System("b", calls)], _queries(3), block=1)
    assert calls[2:] == [("a", "t0"), ("b", "t0"), ("b", "t1"), ("a", "t1"), ("a", "t2"), ("b", "t2")]


def test_a_failing_system_is_recorded_and_left_out() -> None:
    calls: list[tuple[str, str]] = []
    got, entries = _run([_System("a", calls, fail_on="t1"), _System("b", calls)], _queries(4), block=2)
    assert "a" not in got and len(got["b"]) == 4
    assert entries[0]["available"] is False and "server gone" in entries[0]["error"]
    assert [q for name, q in calls if name == "a"] == ["t0", "t0", "t1"]
