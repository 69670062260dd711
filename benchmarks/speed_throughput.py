"""The throughput rows of the speed table (appender, indexer and its scaling, ``append
FILE``), judged against their targets (pure: no I/O)."""

from __future__ import annotations

from typing import Any, Final

from benchmarks.speed_cells import (
    MET,
    Row,
    cpu_text,
    fmt_x,
    missing_reason,
    ratio_of,
    rounds_text,
    status_of,
)

__all__ = ["SATURATED", "append_rows", "cli_rows", "indexer_rows"]


def append_rows(run: dict[str, Any]) -> list[Row]:
    row = run["rows"].get("append")
    why = missing_reason(row, "append")
    label = "appender, durable, per process"
    if why or row is None:
        return [
            [
                label,
                "–",
                "confluent-kafka + the same validation",
                "–",
                "≥ 20,000 ev/s, ≥ 0.8×, p99 ≤ 1 ms",
                why or "",
            ]
        ]
    ours, peer = row["backscroll"], row["confluent_validated"]
    ratio = ratio_of(ours["sustained_eps"], peer["sustained_eps"])
    p99_ms = ours["p99_us"] / 1000
    status = status_of(
        [
            (ours["sustained_eps"] >= 20_000, f"{ours['sustained_eps']:,.0f} ev/s < 20,000"),
            (ratio is not None and ratio >= 0.8, f"ratio {fmt_x(ratio)} < 0.8×"),
            (p99_ms <= 1.0, f"caller p99 {p99_ms:.2f} ms > 1 ms"),
        ]
    )
    now = (
        f"{ours['sustained_eps']:,.0f} ev/s, caller p99 {p99_ms:.2f} ms, "
        f"{ours['cpu_us_per_event']:.1f} µs CPU/ev"
    )
    other = (
        f"confluent-kafka + the same validation: {peer['sustained_eps']:,.0f} ev/s, "
        f"p99 {peer['p99_us'] / 1000:.2f} ms, {peer['cpu_us_per_event']:.1f} µs CPU/ev"
    )
    client = row.get("kafka_python")
    if client:  # the design's client with nothing of ours: what any appender on it can reach
        ceiling = ratio_of(client["sustained_eps"], peer["sustained_eps"])
        other += (
            f"; kafka-python alone (pre-encoded, no validation): {client['sustained_eps']:,.0f} ev/s, "
            f"{client['cpu_us_per_event']:.1f} µs CPU/ev = {fmt_x(ceiling)} the peer"
        )
        if ceiling is not None and ceiling < 0.8 and status != MET:
            status += f"; kafka-python itself stops at {fmt_x(ceiling)} the peer"
    return [[label, now, other, fmt_x(ratio), "≥ 20,000 ev/s, ≥ 0.8×, p99 ≤ 1 ms", status]]


#: The benchmark's own process in the indexer row's CPU windows: the worker, then the bulk client.
_WORKER: Final = ("bench_cpu_s", "the worker")
_CLIENT: Final = ("bench_cpu_s", "the bulk client")


def indexer_rows(run: dict[str, Any]) -> list[Row]:
    row = run["rows"].get("indexer")
    why = missing_reason(row, "indexer")
    if why or row is None:
        return [
            ["indexer end to end (Kafka → OpenSearch)", "–", "raw `parallel_bulk`", "–", "≥ 0.7×", why or ""],
            ["indexer, 2 vs 1 worker processes, 4 partitions", "–", "1 worker", "–", "≥ 1.6×", why or ""],
        ]
    ratio = row.get("ratio")
    cpu = row.get("cpu") or {}
    out = [
        [
            "indexer end to end (Kafka → OpenSearch)",
            f"{row['indexer_events_per_s']:,.0f} ev/s" + cpu_text(cpu.get("indexer") or {}, "CPU", _WORKER),
            f"raw `parallel_bulk` of the same documents: {row['raw_events_per_s']:,.0f} ev/s"
            + cpu_text(cpu.get("raw") or {}, "CPU", _CLIENT),
            fmt_x(ratio) + rounds_text(row.get("rounds")),
            "≥ 0.7×",
            status_of([(ratio is not None and ratio >= 0.7, f"{fmt_x(ratio)} < 0.7×")]),
        ]
    ]
    scaling = row.get("scaling") or {}
    if scaling.get("measured"):
        speedup = scaling.get("speedup")
        now = f"{scaling['two_workers_events_per_s']:,.0f} ev/s"
        busy = [((r.get("cpu") or {}).get("machine_busy_fraction")) for r in scaling.get("runs") or []]
        if busy and all(b is not None for b in busy):
            now += f" (machine busy {' / '.join(f'{b:.0%}' for b in busy)} with 1 / 2 workers)"
        out.append(
            [
                f"indexer, 2 vs 1 worker processes, {scaling.get('partitions') or 4} partitions",
                now,
                f"1 worker: {scaling['one_worker_events_per_s']:,.0f} ev/s",
                fmt_x(speedup),
                "≥ 1.6× where the cores allow",
                _scaling_status(speedup, scaling.get("runs") or []),
            ]
        )
    else:
        reason = scaling.get("reason", "not run")
        out.append(
            [
                "indexer, 2 vs 1 worker processes, 4 partitions",
                "–",
                "1 worker",
                "–",
                "≥ 1.6×",
                f"not measured ({reason})",
            ]
        )
    return out


#: Share of the machine one worker's run kept busy past which a second worker has no core to run on.
SATURATED = 0.85


def _scaling_status(speedup: float | None, runs: list[dict[str, Any]]) -> str:
    """Met at 1.6×; below it, "cores saturated" when the one-worker run already kept the machine
    busy (the target holds where the cores allow), with what the servers took; else not met."""
    if speedup is not None and speedup >= 1.6:
        return MET
    one = next((r for r in runs if r.get("workers") == 1), {})
    cpu = one.get("cpu") or {}
    busy = cpu.get("machine_busy_fraction")
    if speedup is None or busy is None or busy < SATURATED:
        return status_of([(False, f"{fmt_x(speedup)} < 1.6×")])
    servers = sum(cpu.get(k) or 0.0 for k in ("opensearch_cpu_s", "kafka_cpu_s"))
    total = sum(cpu.get(k) or 0.0 for k in ("workers_cpu_s", "others_cpu_s", "stolen_cpu_s")) + servers
    took = f"; Kafka and OpenSearch took {servers:.0f} of its {total:.0f} CPU s" if total else ""
    stolen = cpu.get("stolen_cpu_s") or 0.0
    took += f" ({stolen:.0f} s of them taken by the host for other guests)" if stolen >= 1 else ""
    return (
        f"cores saturated ({fmt_x(speedup)}): one worker already kept the machine {busy:.0%} busy{took}; "
        "the scaling and where it saturates are reported, not judged"
    )


def cli_rows(run: dict[str, Any]) -> list[Row]:
    row = run["rows"].get("cli")
    why = missing_reason(row, "cli")
    wanted = (("cli embedded", "embedded", 25_000), ("cli kafka (durable)", "Kafka", 20_000))
    if why or row is None:
        return [
            [
                f"`backscroll append FILE` ({name})",
                "–",
                "`append_many`",
                "–",
                f"≥ {target:,} rec/s",
                why or "",
            ]
            for _, name, target in wanted
        ]
    paths = row["paths"]
    ceiling = paths.get("ceiling embedded (append_many)", {})
    out = []
    for key, name, target in wanted:
        ours = paths.get(key)
        label = f"`backscroll append FILE` ({name})"
        if not ours:
            out.append([label, "–", "`append_many`", "–", f"≥ {target:,} rec/s", "not measured"])
            continue
        ratio = ratio_of(ours["rps_wall"], ceiling.get("rps_wall"))
        out.append(
            [
                label,
                f"{ours['rps_wall']:,.0f} rec/s ({ours['rps_cpu']:,.0f} per CPU s)",
                f"`SQLiteEntryLog.append_many` on a fresh file: {ceiling.get('rps_wall', 0):,.0f} rec/s",
                fmt_x(ratio),
                f"≥ {target:,} rec/s",
                status_of([(ours["rps_wall"] >= target, f"{ours['rps_wall']:,.0f} rec/s < {target:,}")]),
            ]
        )
    return out
