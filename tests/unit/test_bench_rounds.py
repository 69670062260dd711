"""Rows measured in rounds of alternating order (tests/benchmarks/rounds.py) and how the speed report
shows them: the order of the sides, the pooled CPU windows, the pooled load sides, and the ratio of
each round beside the row's. No benchmark runs here."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = Path(__file__).parent / "fixtures" / "speed-result.json"

if str(ROOT) not in sys.path:  # the benchmarks are a package of the repository, not installed
    sys.path.insert(0, str(ROOT))

from tests.benchmarks import speed_report, speed_rows  # noqa: E402
from tests.benchmarks.rounds import mean, orders, pool_cpu  # noqa: E402


def _cells(section: str, label: str) -> list[str]:
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split(" | ")]
        if cells and cells[0].startswith(label):
            return cells
    raise AssertionError(f"no row {label!r}")


def _result() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(FIXTURE.read_text(encoding="utf-8"))
    data["_path"] = FIXTURE
    return data


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


def test_the_rows_show_each_round_s_ratio_beside_the_pooled_one() -> None:
    result = _result()
    rows = result["runs"][0]["rows"]
    rows["indexer"] = {
        "indexer_events_per_s": 700.0,
        "raw_events_per_s": 1000.0,
        "ratio": 0.7,
        "rounds": [{"ratio": 0.62}, {"ratio": 0.8}],
    }
    rows["load"] = {
        "via": "bench_load (the CLI)",
        "entries": 3000,
        "embedded": {"append_s": 1.0, "index_s": 2.0, "seconds": 3.0, "bytes": 1024, "found": True},
        "pg": {"seconds": 1.2, "bytes": 1024},
        "rounds": [{"ratio": 2.6}, {"ratio": 2.4}],
    }
    section = speed_report.render(result)
    by_round = "; mean of 2 rounds in alternating order, by round:"
    assert _cells(section, "indexer end to end")[3] == f"0.70×{by_round} 0.62× / 0.80×"
    assert (
        _cells(section, "load 3,000 entries, empty → searchable (embedded)")[3]
        == f"2.50×{by_round} 2.60× / 2.40×"
    )
    assert "- **Rounds**: the indexer row and the embedded load row measured both sides 2 times" in section
    rows["indexer"]["rounds"] = [{"ratio": 0.7}]
    rows["load"].pop("rounds")
    single = speed_report.render(result)
    assert _cells(single, "indexer end to end")[3] == "0.70×" and "- **Rounds**" not in single
