"""Rows measured in rounds of alternating order (benchmarks/rounds.py): the order of the sides,
the pooled CPU windows and the pooled load sides (test_bench_speed_report.py has how the report
shows the rounds). No benchmark runs here."""

from __future__ import annotations

import pytest

from benchmarks import speed_rows
from benchmarks.rounds import mean, orders, pool_cpu


def test_the_sides_alternate_which_one_goes_first() -> None:
    assert orders(1, "a", "b") == [("a", "b")]
    assert orders(3, "a", "b") == [("a", "b"), ("b", "a"), ("a", "b")]
    assert orders(0, "a", "b") == [("a", "b")]  # at least one round


def test_mean_needs_a_value() -> None:
    assert mean([1.0, 2.0, 6.0]) == 3.0
    with pytest.raises(ValueError):
        mean([])


def test_cpu_windows_pool_to_the_mean_per_round_and_the_busy_share_of_all() -> None:
    first = {
        "wall_s": 10.0,
        "cpus": 2,
        "machine_busy_cpu_s": 18.0,
        "machine_busy_fraction": 0.9,
        "opensearch_cpu_s": 12.0,
    }
    second = {
        "wall_s": 20.0,
        "cpus": 2,
        "machine_busy_cpu_s": 20.0,
        "machine_busy_fraction": 0.5,
        "opensearch_cpu_s": 8.0,
        "bench_cpu_s": 4.0,
    }
    pooled = pool_cpu([first, second])
    assert pooled["wall_s"] == 15.0 and pooled["opensearch_cpu_s"] == 10.0
    assert pooled["bench_cpu_s"] == 2.0  # a party one window did not see took nothing there
    assert pooled["machine_busy_fraction"] == pytest.approx(38.0 / 60.0)
    assert pooled["cpus"] == 2 and pooled["rounds"] == 2
    assert pool_cpu([first]) == first
    assert pool_cpu([{}, {"wall_s": 0.0}]) == {}
    assert pool_cpu([first, {**second, "machine_busy_fraction": None}])["machine_busy_fraction"] is None


def test_a_load_side_pools_its_times_and_keeps_the_last_round_s_size() -> None:
    rounds = [
        {"append_s": 4.0, "index_s": 16.0, "total_s": 20.0, "found": True, "bytes": 10, "index_cpu": {}},
        {"append_s": 5.0, "index_s": 19.0, "total_s": 24.0, "found": True, "bytes": 11, "index_cpu": {}},
    ]
    pooled = speed_rows._pooled_load(rounds)
    assert (pooled["append_s"], pooled["index_s"], pooled["total_s"]) == (4.5, 17.5, 22.0)
    assert pooled["seconds"] == 22.0 and pooled["bytes"] == 11 and pooled["rounds"] == 2
    assert pooled["found"] is True and pooled["index_cpu"] == {}
    rounds[0]["found"] = False
    assert speed_rows._pooled_load(rounds)["found"] is False  # lost once is lost
    assert "found" not in speed_rows._pooled_load([{"total_s": 7.0, "bytes": 1}])
