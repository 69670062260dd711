"""The speed table's rows judged against their targets, as Markdown table rows (pure: no I/O).

Used by ``speed_report`` (the doc section) and ``speed_plots``; every function takes the parsed
``speed-*.json`` result (or one of its per-size runs).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from benchmarks.speed_cells import (
    Row,
    cpu_text,
    fmt_mib,
    fmt_ms,
    fmt_num,
    fmt_x,
    loadavg_text,
    md_table,
    missing_reason,
    ratio_of,
    rounds_text,
    status_of,
)
from benchmarks.speed_throughput import append_rows, cli_rows, indexer_rows

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
BACKENDS = (("backscroll", "OpenSearch"), ("backscroll_embedded", "embedded"))


def big_run(result: dict[str, Any]) -> dict[str, Any] | None:
    big = [r for r in result["runs"] if r["entries"] >= BIG]
    return max(big, key=lambda r: int(r["entries"])) if big else None


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
    why = missing_reason(row, "load")
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
        ratio = ratio_of(ours["seconds"], pg.get("load_seconds"))
        now = f"{ours['seconds']:.1f} s (append {ours['append_s']:.1f} s + index {ours['index_s']:.1f} s)"
        if ours.get("found") is False:
            now += ", probe entry **not found** afterwards"
        now += cpu_text(
            ours.get("index_cpu") or {}, "index step CPU", ("command_cpu_s", "`backscroll index`")
        )
        status = status_of([(ratio is not None and ratio <= 3.0, f"{fmt_x(ratio)} > 3×")])
        shown = fmt_x(ratio) + (rounds_text((row or {}).get("rounds")) if key == "embedded" else "")
        out.append([label, now, peer, shown, "≤ 3× PostgreSQL", status])
    return out


def latency(system: dict[str, Any], scope: str, q: str) -> float | None:
    value = ((system.get("latency_ms") or {}).get(scope) or {}).get(q)
    return None if value is None else float(value)


def _search_rows(run: dict[str, Any]) -> list[Row]:
    row = run["rows"].get("search")
    why = missing_reason(row, "search")
    pg = _pg(run)
    specs: list[tuple[str, str, str, Callable[[float | None], tuple[bool | None, str]], str]] = [
        ("session", "p50", "≤ 2× pg_trgm p50", lambda r: (r is not None and r <= 2, f"{fmt_x(r)} > 2×"), "2"),
        ("session", "p99", "≤ pg_trgm p99", lambda r: (r is not None and r <= 1, f"{fmt_x(r)} > 1×"), "1"),
        (
            "workspace",
            "p95",
            "≤ 0.25× pg_trgm p95",
            lambda r: (r is not None and r <= 0.25, f"{fmt_x(r)} > 0.25×"),
            "",
        ),
        (
            "workspace",
            "p99",
            "≤ pg_trgm p99 (keep)",
            lambda r: (r is not None and r <= 1, f"{fmt_x(r)} > 1×"),
            "",
        ),
    ]
    out = []
    for scope, q, target, check, _ in specs:
        for key, name in BACKENDS:
            label = f"{scope}-scoped search {q}, {run['entries']:,} ({name})"
            system = (row or {}).get(key) or {}
            peer_ms = latency(pg, scope, q)
            peer = f"pg_trgm word_similarity 0.4: {fmt_ms(peer_ms)}"
            if why or not system.get("available"):
                reason = why or system.get("skipped_reason") or system.get("error") or "not measured"
                out.append([label, "–", peer, "–", target, f"not measured: {reason}"])
                continue
            ours = latency(system, scope, q)
            ratio = ratio_of(ours, peer_ms)
            out.append([label, fmt_ms(ours), peer, fmt_x(ratio), target, status_of([check(ratio)])])
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
    why = missing_reason(row, "search")
    pg = _pg(run)
    out = []
    for scope, limit in targets:
        label = f"{scope}-scoped search p99 at {run['entries']:,} (embedded)"
        system = (row or {}).get("backscroll_embedded") or {}
        peer = f"pg_trgm word_similarity 0.4: {fmt_ms(latency(pg, scope, 'p99'))}"
        if why or not system.get("available"):
            reason = why or system.get("skipped_reason") or system.get("error") or "not measured"
            out.append([label, "–", peer, "–", f"≤ {limit:.0f} ms", f"not measured: {reason}"])
            continue
        ours = latency(system, scope, "p99")
        ratio = ratio_of(ours, latency(pg, scope, "p99"))
        status = status_of([(ours is not None and ours <= limit, f"{fmt_ms(ours)} > {limit:.0f} ms")])
        out.append([label, fmt_ms(ours), peer, fmt_x(ratio), f"≤ {limit:.0f} ms", status])
    return out


def _size_rows(run: dict[str, Any]) -> list[Row]:
    row = run["rows"].get("load")
    why = missing_reason(row, "load")
    peer_bytes = pg_load(run).get("index_bytes")
    peer = f"pg_trgm table + indexes: {fmt_mib(peer_bytes)}"
    searched = ((run["rows"].get("search") or {}).get("backscroll")) or {}
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
        ratio = ratio_of(ours["bytes"], peer_bytes)
        if key == "embedded":
            status = status_of([(ratio is not None and ratio <= 1.5, f"{fmt_x(ratio)} > 1.5×")])
        else:
            status = "reported"
        out.append([label, fmt_mib(ours["bytes"]), peer, fmt_x(ratio), target, status])
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
            return f"{fmt_num(p50, digits=1)} / {fmt_num(p99, digits=1)}"

        rows.append(
            [
                f"{run['entries']:,}",
                fmt_num((app.get("backscroll") or {}).get("sustained_eps"))
                + " / "
                + fmt_num((app.get("confluent_validated") or {}).get("sustained_eps")),
                fmt_num(idx.get("indexer_events_per_s")) + " / " + fmt_num(idx.get("raw_events_per_s")),
                " / ".join(
                    fmt_num((paths.get(k) or {}).get("rps_wall"))
                    for k in ("cli embedded", "cli kafka (durable)", "ceiling embedded (append_many)")
                ),
                " / ".join(
                    fmt_num((load.get(k) or {}).get("seconds"), digits=1)
                    for k in ("kafka_opensearch", "embedded")
                )
                + " / "
                + fmt_num(pg.get("load_seconds"), digits=1),
                " · ".join(
                    [lat("backscroll", "session"), lat("backscroll_embedded", "session"), lat(PG, "session")]
                ),
                " · ".join(
                    [
                        lat("backscroll", "workspace"),
                        lat("backscroll_embedded", "workspace"),
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
    """Every row of the speed table for the size ``head`` (and the 1M rows from ``result``)."""
    return (
        append_rows(head)
        + indexer_rows(head)
        + cli_rows(head)
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
