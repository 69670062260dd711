"""Issue 15's rows judged against their targets, as Markdown table rows (pure: no I/O).

Used by ``speed_report`` (the doc section) and ``speed_plots``; every function takes the parsed
``speed-*.json`` result (or one of its per-size runs).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = [
    "BIG",
    "PG",
    "Row",
    "big_run",
    "every_row",
    "latency",
    "loadavg_text",
    "md_table",
    "pg_load",
    "point",
    "size_table",
]

BIG = 1_000_000
PG = "pg_trgm word_similarity≥0.4"
BACKENDS = (("sessionlog", "OpenSearch"), ("sessionlog_embedded", "embedded"))
MET, NOT_MET = "met", "**not met**"


def big_run(result: dict[str, Any]) -> dict[str, Any] | None:
    big = [r for r in result["runs"] if r["entries"] >= BIG]
    return max(big, key=lambda r: int(r["entries"])) if big else None


def _num(value: float | None, unit: str = "", digits: int = 0) -> str:
    if value is None or value != value:
        return "–"
    if digits == 0 and abs(value) < 10:
        digits = 1
    return f"{value:,.{digits}f}{unit}"


def _ms(value: float | None) -> str:
    if value is None or value != value:
        return "–"
    return f"{value:.1f} ms" if value < 100 else f"{value:,.0f} ms"


def _mib(n: float | None) -> str:
    return "–" if n is None else f"{n / 2**20:,.1f} MiB"


def _ratio(a: float | None, b: float | None) -> float | None:
    if a is None or b is None or not b or a != a or b != b:
        return None
    return a / b


def _x(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}×"


def loadavg_text(values: list[float] | None) -> str:
    return "–" if not values else " / ".join(f"{v:.1f}" for v in values)


def _status(checks: list[tuple[bool | None, str]]) -> str:
    """``met`` when every check holds; otherwise which ones failed (unknown ones count as failed)."""
    failed = [label for ok, label in checks if not ok]
    return MET if not failed else f"{NOT_MET} ({'; '.join(failed)})"


def _missing(row: dict[str, Any] | None, name: str) -> str | None:
    """Why a row has no numbers (not run, or failed), or ``None`` when it has them."""
    if row is None:
        return f"not measured ({name} not run at this size)"
    if "error" in row:
        return f"not measured: {row['error']}"
    return None


Row = list[str]


def _append_rows(run: dict[str, Any]) -> list[Row]:
    row = run["rows"].get("append")
    why = _missing(row, "append")
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
    ours, peer = row["sessionlog"], row["confluent_validated"]
    ratio = _ratio(ours["sustained_eps"], peer["sustained_eps"])
    p99_ms = ours["p99_us"] / 1000
    status = _status(
        [
            (ours["sustained_eps"] >= 20_000, f"{ours['sustained_eps']:,.0f} ev/s < 20,000"),
            (ratio is not None and ratio >= 0.8, f"ratio {_x(ratio)} < 0.8×"),
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
    return [[label, now, other, _x(ratio), "≥ 20,000 ev/s, ≥ 0.8×, p99 ≤ 1 ms", status]]


def _indexer_rows(run: dict[str, Any]) -> list[Row]:
    row = run["rows"].get("indexer")
    why = _missing(row, "indexer")
    if why or row is None:
        return [
            ["indexer end to end (Kafka → OpenSearch)", "–", "raw `parallel_bulk`", "–", "≥ 0.7×", why or ""],
            ["indexer, 2 vs 1 worker processes, 4 partitions", "–", "1 worker", "–", "≥ 1.6×", why or ""],
        ]
    ratio = row.get("ratio")
    out = [
        [
            "indexer end to end (Kafka → OpenSearch)",
            f"{row['indexer_events_per_s']:,.0f} ev/s",
            f"raw `parallel_bulk` of the same documents: {row['raw_events_per_s']:,.0f} ev/s",
            _x(ratio),
            "≥ 0.7×",
            _status([(ratio is not None and ratio >= 0.7, f"{_x(ratio)} < 0.7×")]),
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
                _x(speedup),
                "≥ 1.6× where the cores allow",
                _status([(speedup is not None and speedup >= 1.6, f"{_x(speedup)} < 1.6×")]),
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


def _cli_rows(run: dict[str, Any]) -> list[Row]:
    row = run["rows"].get("cli")
    why = _missing(row, "cli")
    wanted = (("cli embedded", "embedded", 25_000), ("cli kafka (durable)", "Kafka", 20_000))
    if why or row is None:
        return [
            [
                f"`sessionlog append FILE` ({name})",
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
        label = f"`sessionlog append FILE` ({name})"
        if not ours:
            out.append([label, "–", "`append_many`", "–", f"≥ {target:,} rec/s", "not measured"])
            continue
        ratio = _ratio(ours["rps_wall"], ceiling.get("rps_wall"))
        out.append(
            [
                label,
                f"{ours['rps_wall']:,.0f} rec/s ({ours['rps_cpu']:,.0f} per CPU s)",
                f"`SQLiteEntryLog.append_many` on a fresh file: {ceiling.get('rps_wall', 0):,.0f} rec/s",
                _x(ratio),
                f"≥ {target:,} rec/s",
                _status([(ours["rps_wall"] >= target, f"{ours['rps_wall']:,.0f} rec/s < {target:,}")]),
            ]
        )
    return out


def _pg(run: dict[str, Any] | None) -> dict[str, Any]:
    search = (run or {}).get("rows", {}).get("search") or {}
    pg = search.get(PG) or {}
    return pg if pg.get("available") else {}


def pg_load(run: dict[str, Any]) -> dict[str, Any]:
    """PostgreSQL's load time and size: the load row's own when it has one, else the search row's."""
    own = ((run["rows"].get("load") or {}).get("pg")) or {}
    if own.get("seconds"):
        return {"load_seconds": own["seconds"], "index_bytes": own.get("bytes")}
    return _pg(run)


def _load_rows(run: dict[str, Any]) -> list[Row]:
    row = run["rows"].get("load")
    why = _missing(row, "load")
    pg = pg_load(run)
    peer = (
        f"PostgreSQL COPY + GIN trigram build: {pg['load_seconds']:.1f} s"
        if pg.get("load_seconds")
        else "PostgreSQL COPY + GIN trigram build: not measured"
    )
    out = []
    for key, name in (("kafka_opensearch", "Kafka + OpenSearch"), ("embedded", "embedded")):
        label = f"load {run['entries']:,} entries, empty → searchable ({name})"
        ours = (row or {}).get(key)
        if why or not ours:
            out.append([label, "–", peer, "–", "≤ 3× PostgreSQL", why or "not measured"])
            continue
        ratio = _ratio(ours["seconds"], pg.get("load_seconds"))
        now = f"{ours['seconds']:.1f} s (append {ours['append_s']:.1f} s + index {ours['index_s']:.1f} s)"
        if ours.get("found") is False:
            now += ", probe entry **not found** afterwards"
        status = _status([(ratio is not None and ratio <= 3.0, f"{_x(ratio)} > 3×")])
        out.append([label, now, peer, _x(ratio), "≤ 3× PostgreSQL", status])
    return out


def latency(system: dict[str, Any], scope: str, q: str) -> float | None:
    value = ((system.get("latency_ms") or {}).get(scope) or {}).get(q)
    return None if value is None else float(value)


def _search_rows(run: dict[str, Any]) -> list[Row]:
    row = run["rows"].get("search")
    why = _missing(row, "search")
    pg = _pg(run)
    specs: list[tuple[str, str, str, Callable[[float | None], tuple[bool | None, str]], str]] = [
        ("session", "p50", "≤ 2× pg_trgm p50", lambda r: (r is not None and r <= 2, f"{_x(r)} > 2×"), "2"),
        ("session", "p99", "≤ pg_trgm p99", lambda r: (r is not None and r <= 1, f"{_x(r)} > 1×"), "1"),
        (
            "workspace",
            "p95",
            "≤ 0.25× pg_trgm p95",
            lambda r: (r is not None and r <= 0.25, f"{_x(r)} > 0.25×"),
            "",
        ),
        (
            "workspace",
            "p99",
            "≤ pg_trgm p99 (keep)",
            lambda r: (r is not None and r <= 1, f"{_x(r)} > 1×"),
            "",
        ),
    ]
    out = []
    for scope, q, target, check, _ in specs:
        for key, name in BACKENDS:
            label = f"{scope}-scoped search {q}, {run['entries']:,} ({name})"
            system = (row or {}).get(key) or {}
            peer_ms = latency(pg, scope, q)
            peer = f"pg_trgm word_similarity 0.4: {_ms(peer_ms)}"
            if why or not system.get("available"):
                reason = why or system.get("skipped_reason") or system.get("error") or "not measured"
                out.append([label, "–", peer, "–", target, f"not measured: {reason}"])
                continue
            ours = latency(system, scope, q)
            ratio = _ratio(ours, peer_ms)
            out.append([label, _ms(ours), peer, _x(ratio), target, _status([check(ratio)])])
    return out


def _big_rows(result: dict[str, Any]) -> list[Row]:
    run = big_run(result)
    targets = (("session", 50.0), ("workspace", 150.0))
    if run is None:
        return [
            [
                f"{scope}-scoped search p99 at 1M (embedded)",
                "–",
                "–",
                "–",
                f"≤ {limit:.0f} ms",
                "not measured (no 1M size in this run)",
            ]
            for scope, limit in targets
        ]
    row = run["rows"].get("search")
    why = _missing(row, "search")
    pg = _pg(run)
    out = []
    for scope, limit in targets:
        label = f"{scope}-scoped search p99 at {run['entries']:,} (embedded)"
        system = (row or {}).get("sessionlog_embedded") or {}
        peer = f"pg_trgm word_similarity 0.4: {_ms(latency(pg, scope, 'p99'))}"
        if why or not system.get("available"):
            reason = why or system.get("skipped_reason") or system.get("error") or "not measured"
            out.append([label, "–", peer, "–", f"≤ {limit:.0f} ms", f"not measured: {reason}"])
            continue
        ours = latency(system, scope, "p99")
        ratio = _ratio(ours, latency(pg, scope, "p99"))
        status = _status([(ours is not None and ours <= limit, f"{_ms(ours)} > {limit:.0f} ms")])
        out.append([label, _ms(ours), peer, _x(ratio), f"≤ {limit:.0f} ms", status])
    return out


def _size_rows(run: dict[str, Any]) -> list[Row]:
    row = run["rows"].get("load")
    why = _missing(row, "load")
    peer_bytes = pg_load(run).get("index_bytes")
    peer = f"pg_trgm table + indexes: {_mib(peer_bytes)}"
    searched = ((run["rows"].get("search") or {}).get("sessionlog")) or {}
    out = []
    for key, name, target in (
        ("embedded", "embedded: log + projection, one file", "≤ 1.5× pg_trgm"),
        ("kafka_opensearch", "OpenSearch indices, primaries", "no number (mapping without unused fields)"),
    ):
        label = f"on-disk size, {run['entries']:,} entries ({name})"
        ours = (row or {}).get(key) or {}
        if key == "kafka_opensearch" and not ours.get("bytes") and searched.get("index_bytes"):
            ours = {"bytes": searched["index_bytes"]}  # the same documents, loaded by the search row
        if not ours.get("bytes"):
            out.append([label, "–", peer, "–", target, why or "not measured"])
            continue
        ratio = _ratio(ours["bytes"], peer_bytes)
        if key == "embedded":
            status = _status([(ratio is not None and ratio <= 1.5, f"{_x(ratio)} > 1.5×")])
        else:
            status = "reported"
        out.append([label, _mib(ours["bytes"]), peer, _x(ratio), target, status])
    return out


def md_table(header: list[str], rows: list[Row]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "|".join(" --- " for _ in header) + "|"]
    out += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows]
    return out


def size_table(result: dict[str, Any]) -> list[str]:
    rows = []
    for run in sorted(result["runs"], key=lambda r: int(r["entries"])):
        got = run["rows"]
        app, idx, cli, load = (got.get(k) or {} for k in ("append", "indexer", "cli", "load"))
        search = got.get("search") or {}
        pg = pg_load(run)
        paths = cli.get("paths", {})

        def lat(key: str, scope: str, search: dict[str, Any] = search) -> str:
            system = search.get(key) or {}
            if not system.get("available"):
                return "–"
            p50, p99 = latency(system, scope, "p50"), latency(system, scope, "p99")
            return f"{_num(p50, digits=1)} / {_num(p99, digits=1)}"

        rows.append(
            [
                f"{run['entries']:,}",
                _num((app.get("sessionlog") or {}).get("sustained_eps"))
                + " / "
                + _num((app.get("confluent_validated") or {}).get("sustained_eps")),
                _num(idx.get("indexer_events_per_s")) + " / " + _num(idx.get("raw_events_per_s")),
                " / ".join(
                    _num((paths.get(k) or {}).get("rps_wall"))
                    for k in ("cli embedded", "cli kafka (durable)", "ceiling embedded (append_many)")
                ),
                " / ".join(
                    _num((load.get(k) or {}).get("seconds"), digits=1)
                    for k in ("kafka_opensearch", "embedded")
                )
                + " / "
                + _num(pg.get("load_seconds"), digits=1),
                " · ".join(
                    [lat("sessionlog", "session"), lat("sessionlog_embedded", "session"), lat(PG, "session")]
                ),
                " · ".join(
                    [
                        lat("sessionlog", "workspace"),
                        lat("sessionlog_embedded", "workspace"),
                        lat(PG, "workspace"),
                    ]
                ),
                loadavg_text(run.get("loadavg_at_start")) + " → " + loadavg_text(run.get("loadavg_at_end")),
            ]
        )
    header = [
        "entries",
        "append ev/s (ours / confluent + validation)",
        "index ev/s (end to end / raw bulk)",
        "append FILE rec/s (embedded / Kafka / append_many)",
        "load s (Kafka+OpenSearch / embedded / PostgreSQL)",
        "session p50 / p99 ms: OpenSearch · embedded · pg_trgm",
        "workspace p50 / p99 ms: OpenSearch · embedded · pg_trgm",
        "load average",
    ]
    return md_table(header, rows)


def every_row(result: dict[str, Any], head: dict[str, Any]) -> list[Row]:
    """Every row of issue 15's table for the size ``head`` (and the 1M rows from ``result``)."""
    return (
        _append_rows(head)
        + _indexer_rows(head)
        + _cli_rows(head)
        + _load_rows(head)
        + _search_rows(head)
        + _big_rows(result)
        + _size_rows(head)
    )


def big_rows(result: dict[str, Any]) -> list[Row]:
    """The embedded 1M rows alone (a run of 1M entries only)."""
    return _big_rows(result)


def point(run: dict[str, Any], path: tuple[str, ...]) -> float | None:
    value: Any = run["rows"]
    for key in path:
        if not isinstance(value, dict):
            return None
        value = value.get(key)
    return float(value) if isinstance(value, int | float) else None
