"""The speed benchmark's report (benchmarks/speed_report.py) rendered from a fixture result:
every row of the speed table appears, each target is judged from the numbers, failed or missing
rows say why, and only the marked section of the doc is rewritten. No benchmark runs here."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from benchmarks import cpuacct, speed_report

FIXTURE = Path(__file__).parent / "fixtures" / "speed-result.json"


def _result() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(FIXTURE.read_text(encoding="utf-8"))
    data["_path"] = FIXTURE
    return data


def _row(section: str, label: str) -> list[str]:
    """The cells of the table row whose first cell starts with ``label``."""
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split(" | ")]
        if cells and cells[0].startswith(label):
            return cells
    raise AssertionError(f"no row {label!r} in:\n{section}")


def test_section_is_marked_dated_and_flags_a_quick_run() -> None:
    section = speed_report.render(_result())
    assert section.startswith(speed_report.BEGIN) and section.rstrip().endswith(speed_report.END)
    assert "Quick smoke run" in section
    assert "2026-12-01T17:00:00+00:00" in section and "10.0 min" in section
    assert "2 cores, 23.5 GiB memory, AMD EPYC" in section
    assert "load average 1.0 / 1.5 / 2.0 at start, 1.2 / 1.4 / 1.9 at end." in section
    assert "CPU time taken by the host" not in section  # a result without the machine's CPU split


def test_the_header_says_how_much_cpu_time_the_host_took() -> None:
    result = _result()
    result["machine"]["cpu_s"] = {"busy": 2000.0, "stolen": 150.0}
    section = speed_report.render(result)
    assert (
        "1.2 / 1.4 / 1.9 at end; CPU time taken by the host for other guests: 150 s of 2,000 busy CPU s (8%)."
        in section
    )
    assert "kafka 4.3.1" in section and "opensearch 2.19.6" in section and "matplotlib" not in section
    assert "python -m benchmarks.speed --quick" in section
    assert "speed-result.json" in section
    assert "![Throughput vs corpus size](img/speed-throughput.png)" in section
    assert "![Search latency vs corpus size](img/speed-latency.png)" in section


def test_a_server_warm_up_is_said_and_its_absence_is_not() -> None:
    result = _result()
    assert "Warm-up" not in speed_report.render(result)
    result["warmup"] = {"events": 30000, "seconds": 41.0}
    said = "- **Warm-up**: before the first row, 30,000 events through the appender"
    assert said in speed_report.render(result)
    result["warmup"] = {"error": "NoBrokersAvailable: no brokers"}  # a failed warm-up claims nothing
    assert "Warm-up" not in speed_report.render(result)


def test_every_row_of_the_speed_table_is_judged_against_its_target() -> None:
    section = speed_report.render(_result())
    appender = _row(section, "appender, durable")
    assert appender[1].startswith("21,000 ev/s, caller p99 0.80 ms")
    assert "25,000 ev/s" in appender[2] and appender[3] == "0.84×" and appender[5] == "met"

    assert _row(section, "`backscroll append FILE` (embedded)")[5] == "met"
    kafka = _row(section, "`backscroll append FILE` (Kafka)")
    assert kafka[5] == "**not met** (3,000 rec/s < 20,000)" and kafka[3] == "0.07×"

    assert _row(section, "load 3,000 entries, empty → searchable (Kafka + OpenSearch)")[3:] == [
        "2.50×",
        "≤ 3× PostgreSQL",
        "met",
    ]
    assert _row(section, "load 3,000 entries, empty → searchable (embedded)")[3] == "1.50×"

    assert _row(section, "session-scoped search p50, 3,000 (OpenSearch)")[5] == "**not met** (5.00× > 2×)"
    assert _row(section, "session-scoped search p50, 3,000 (embedded)")[5] == "met"
    assert _row(section, "session-scoped search p99, 3,000 (OpenSearch)")[5].startswith("**not met**")
    assert (
        _row(section, "workspace-scoped search p95, 3,000 (OpenSearch)")[5] == "**not met** (0.62× > 0.25×)"
    )
    assert _row(section, "workspace-scoped search p95, 3,000 (embedded)")[5] == "met"
    assert _row(section, "workspace-scoped search p99, 3,000 (OpenSearch)")[5] == "met"

    assert _row(section, "session-scoped search p99 at 1,000,000 (embedded)")[1:2] == ["45.0 ms"]
    assert _row(section, "session-scoped search p99 at 1,000,000 (embedded)")[5] == "met"
    assert _row(section, "workspace-scoped search p99 at 1,000,000 (embedded)")[5] == (
        "**not met** (200 ms > 150 ms)"
    )

    embedded = _row(section, "on-disk size, 3,000 entries (embedded")
    assert (
        embedded[1] == "10.0 MiB"
        and embedded[2].endswith("5.0 MiB")
        and embedded[5].startswith("**not met**")
    )
    assert _row(section, "on-disk size, 3,000 entries (OpenSearch")[5] == "reported"


def test_failed_and_unoffered_rows_say_why() -> None:
    section = speed_report.render(_result())
    assert _row(section, "indexer end to end")[5] == "not measured: RuntimeError: raw bulk failed"
    assert _row(section, "indexer, 2 vs 1 worker")[5] == "not measured: RuntimeError: raw bulk failed"

    result = _result()
    result["runs"][0]["rows"]["indexer"] = {
        "indexer_events_per_s": 800.0,
        "raw_events_per_s": 1000.0,
        "ratio": 0.8,
        "scaling": {"measured": False, "reason": "bench_pipeline.throughput has no `workers` option"},
    }
    del result["runs"][1]
    section = speed_report.render(result)
    assert _row(section, "indexer end to end")[3:] == ["0.80×", "≥ 0.7×", "met"]
    assert "has no `workers` option" in _row(section, "indexer, 2 vs 1 worker")[5]
    assert "not measured (no 1M size in this run)" in _row(section, "session-scoped search p99 at 1M")[5]


def test_size_table_has_one_line_per_corpus_size() -> None:
    section = speed_report.render(_result())
    small = _row(section, "3,000")
    assert small[1] == "21,000 / 25,000" and small[4] == "5.0 / 3.0 / 2.0"
    big = _row(section, "1,000,000")
    assert big[1] == "– / –" and big[5] == "– · 10.0 / 45.0 · 12.0 / 1,400.0"


def test_the_size_rows_are_followed_by_where_the_bytes_are() -> None:
    section = speed_report.render(_result())
    assert "#### Where the bytes are (3,000 entries, after the load row)" in section
    assert _row(section, "embedded: log")[2:] == ["3.0", "30 %", "0.75×"]
    assert _row(section, "embedded: full text")[2:] == ["2.0", "20 %", "0.50×"]
    assert _row(section, "embedded without the log")[2:] == ["7.0", "70 %", "1.75×"]
    assert _row(section, "PostgreSQL: index trgm_entries_key_trgm")[3:] == ["38 %", "0.38×"]
    assert "embedded: other" not in section and "embedded: wal" not in section  # empty, not parts

    result = _result()
    del result["runs"][0]["rows"]["load"]["pg"]  # an older result: no breakdown, no table
    assert "Where the bytes are" not in speed_report.render(result)


def test_only_the_marked_section_is_replaced(tmp_path: Path) -> None:
    docs = tmp_path / "benchmarks.md"
    docs.write_text(
        f"# Benchmarks\n\nbefore\n\n{speed_report.BEGIN}\nold numbers\n{speed_report.END}\n"
        "\nafter, by hand\n",
        encoding="utf-8",
    )
    text = speed_report.replace_section(docs.read_text(encoding="utf-8"), speed_report.render(_result()))
    assert text.startswith("# Benchmarks\n\nbefore\n\n" + speed_report.BEGIN)
    assert "old numbers" not in text and text.endswith(speed_report.END + "\n\nafter, by hand\n")
    assert text.count(speed_report.BEGIN) == 1
    appended = speed_report.replace_section("# Benchmarks\n", "SECTION\n")
    assert appended == "# Benchmarks\n\nSECTION\n"


def test_latest_finished_result_of_a_directory_is_rendered(tmp_path: Path) -> None:
    older = _result() | {"finished_at": "2026-11-30T10:00:00+00:00", "command": "older"}
    unfinished = {k: v for k, v in _result().items() if k not in ("finished_at", "_path")}
    shutil.copy(FIXTURE, tmp_path / "speed-20261201T170000Z.json")
    (tmp_path / "speed-20261130T100000Z.json").write_text(json.dumps(older, default=str), encoding="utf-8")
    (tmp_path / "speed-20261202T000000Z.json").write_text(json.dumps(unfinished), encoding="utf-8")
    chosen = speed_report.latest_result(tmp_path)
    assert chosen["_path"].name == "speed-20261201T170000Z.json"
    with pytest.raises(FileNotFoundError):
        speed_report.latest_result(tmp_path / "nothing-here")


def test_plots_are_drawn_when_matplotlib_is_installed(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    docs = tmp_path / "benchmarks.md"
    docs.write_text("# Benchmarks\n", encoding="utf-8")
    written, images = speed_report.write_docs(FIXTURE, docs)
    assert [p.name for p in images] == ["speed-throughput.png", "speed-latency.png"]
    assert all(p.stat().st_size > 0 for p in images)
    assert speed_report.BEGIN in written.read_text(encoding="utf-8")


def test_a_cli_load_row_and_worker_scaling_are_judged_from_their_own_numbers() -> None:
    result = _result()
    rows = result["runs"][0]["rows"]
    rows["load"] = {
        "via": "bench_load (the CLI)",
        "entries": 3000,
        "events": 3000,
        "embedded": {"append_s": 1.0, "index_s": 1.0, "seconds": 2.0, "bytes": 7340032, "found": True},
        "kafka_opensearch": {
            "append_s": 4.0,
            "index_s": 4.0,
            "seconds": 8.0,
            "found": False,
            "index_cpu": {
                "wall_s": 4.0,
                "command_cpu_s": 1.5,
                "opensearch_cpu_s": 5.5,
                "kafka_cpu_s": 0.2,
                "machine_busy_fraction": 0.95,
            },
        },
        "pg": {"seconds": 4.0, "bytes": 4194304},
    }
    rows["indexer"] = {
        "indexer_events_per_s": 600.0,
        "raw_events_per_s": 1000.0,
        "ratio": 0.6,
        "scaling": {
            "measured": True,
            "partitions": 4,
            "one_worker_events_per_s": 500.0,
            "two_workers_events_per_s": 850.0,
            "speedup": 1.7,
            "runs": [
                {"workers": 1, "cpu": {"machine_busy_fraction": 0.6}},
                {"workers": 2, "cpu": {"machine_busy_fraction": 1.0}},
            ],
        },
    }
    section = speed_report.render(result)
    opensearch = _row(section, "load 3,000 entries, empty → searchable (Kafka + OpenSearch)")
    assert "probe entry **not found**" in opensearch[1] and opensearch[2].endswith("4.0 s")
    cpu = "; index step CPU: `backscroll index` 1.5 s, OpenSearch 5.5 s, Kafka 0.2 s in 4.0 s"
    assert opensearch[1].endswith(cpu + " (machine 95% busy)")
    assert opensearch[3:] == ["2.00×", "≤ 3× PostgreSQL", "met"]
    rows["load"]["kafka_opensearch"]["index_cpu"]["stolen_cpu_s"] = 0.8
    stolen = _row(speed_report.render(result), "load 3,000 entries, empty → searchable (Kafka + OpenSearch)")
    host = "taken by the host for other guests 0.8 s"
    assert stolen[1].endswith(f", Kafka 0.2 s, {host} in 4.0 s (machine 95% busy)")
    assert _row(section, "on-disk size, 3,000 entries (embedded")[3:4] == ["1.75×"]
    # no OpenSearch size from the load row: the search row's index of the same documents
    assert _row(section, "on-disk size, 3,000 entries (OpenSearch")[1] == "3.8 MiB"
    assert _row(section, "indexer end to end")[5] == "**not met** (0.60× < 0.7×)"
    scaling = _row(section, "indexer, 2 vs 1 worker processes, 4 partitions")
    assert scaling[1:4] == [
        "850 ev/s (machine busy 60% / 100% with 1 / 2 workers)",
        "1 worker: 500 ev/s",
        "1.70×",
    ]
    assert scaling[5] == "met"
    assert "- **Load path in this run**: bench_load (the CLI)." in section


def test_the_indexer_row_says_where_each_side_s_cpu_went() -> None:
    result = _result()
    row: dict[str, Any] = {"indexer_events_per_s": 600.0, "raw_events_per_s": 1000.0, "ratio": 0.6}
    result["runs"][0]["rows"]["indexer"] = row
    assert "CPU" not in "".join(_row(speed_report.render(result), "indexer end to end")[1:3])
    window = {"wall_s": 10.0, "opensearch_cpu_s": 14.0, "kafka_cpu_s": 0.4, "machine_busy_fraction": 0.9}
    row["cpu"] = {
        "indexer": {**window, "bench_cpu_s": 4.5},
        "raw": {**window, "bench_cpu_s": 1.2, "kafka_cpu_s": 0.0, "wall_s": 6.0},
    }
    cells = _row(speed_report.render(result), "indexer end to end")
    assert (
        cells[1]
        == "600 ev/s; CPU: the worker 4.5 s, OpenSearch 14.0 s, Kafka 0.4 s in 10.0 s (machine 90% busy)"
    )
    assert cells[2].endswith(
        "1,000 ev/s; CPU: the bulk client 1.2 s, OpenSearch 14.0 s in 6.0 s (machine 90% busy)"
    )


def test_the_appender_row_shows_what_kafka_python_alone_reaches() -> None:
    result = _result()
    append = result["runs"][0]["rows"]["append"]
    append["backscroll"] = {"sustained_eps": 9000.0, "p99_us": 800.0, "cpu_us_per_event": 110.0}
    append["confluent_validated"] = {"sustained_eps": 80000.0, "p99_us": 60.0, "cpu_us_per_event": 13.0}
    append["kafka_python"] = {"sustained_eps": 30000.0, "p99_us": 200.0, "cpu_us_per_event": 27.0}
    row = _row(speed_report.render(result), "appender, durable")
    assert (
        "kafka-python alone (pre-encoded, no validation): 30,000 ev/s, 27.0 µs CPU/ev = 0.38× the peer"
        in row[2]
    )
    assert row[5] == (
        "**not met** (9,000 ev/s < 20,000; ratio 0.11× < 0.8×); kafka-python itself stops at 0.38× the peer"
    )


def test_worker_scaling_on_a_saturated_machine_is_reported_not_judged() -> None:
    result = _result()
    one = {"machine_busy_fraction": 0.9, "opensearch_cpu_s": 54.3, "kafka_cpu_s": 0.7, "workers_cpu_s": 15.6}
    scaling = {
        "measured": True,
        "partitions": 4,
        "one_worker_events_per_s": 6900.0,
        "two_workers_events_per_s": 7174.0,
        "speedup": 1.04,
        "runs": [{"workers": 1, "cpu": one}, {"workers": 2, "cpu": {"machine_busy_fraction": 0.96}}],
    }
    result["runs"][0]["rows"]["indexer"] = {
        "indexer_events_per_s": 7000.0,
        "raw_events_per_s": 9000.0,
        "ratio": 0.78,
        "scaling": scaling,
    }
    status = _row(speed_report.render(result), "indexer, 2 vs 1 worker")[5]
    assert status.startswith("cores saturated (1.04×): one worker already kept the machine 90% busy")
    assert "Kafka and OpenSearch took 55 of its 71 CPU s;" in status

    one["stolen_cpu_s"] = 9.2  # a virtual machine's host ran other guests meanwhile
    status = _row(speed_report.render(result), "indexer, 2 vs 1 worker")[5]
    host = "(9 s of them taken by the host for other guests)"
    assert f"Kafka and OpenSearch took 55 of its 80 CPU s {host};" in status

    one["machine_busy_fraction"] = 0.6  # a core was free: the target is judged
    assert _row(speed_report.render(result), "indexer, 2 vs 1 worker")[5] == "**not met** (1.04× < 1.6×)"


def test_the_cpu_window_counts_the_host_s_stolen_time_apart() -> None:
    window = cpuacct.CpuWindow()
    # /proc/stat's first line: user nice system idle iowait irq softirq steal (jiffies)
    window._machine_start = cpuacct._machine_from("cpu  100 0 50 800 50 0 0 0 0 0\n")
    window._machine_end = cpuacct._machine_from("cpu  300 0 100 900 50 0 0 100 0 0\n")
    report = window.report()
    tick = cpuacct._TICK
    assert report["machine_busy_cpu_s"] == 350 / tick  # stolen time is busy: nobody here could use it
    assert report["stolen_cpu_s"] == 100 / tick
    assert report["others_cpu_s"] == 250 / tick


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
    assert _row(section, "indexer end to end")[3] == f"0.70×{by_round} 0.62× / 0.80×"
    assert (
        _row(section, "load 3,000 entries, empty → searchable (embedded)")[3]
        == f"2.50×{by_round} 2.60× / 2.40×"
    )
    assert "- **Rounds**: the indexer row and the embedded load row measured both sides 2 times" in section
    rows["indexer"]["rounds"] = [{"ratio": 0.7}]
    rows["load"].pop("rounds")
    single = speed_report.render(result)
    assert _row(single, "indexer end to end")[3] == "0.70×" and "- **Rounds**" not in single
