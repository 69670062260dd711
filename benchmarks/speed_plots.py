"""Throughput and latency vs corpus size (PNG) from a ``speed-*.json`` result; matplotlib is
imported only here, only when drawing."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.speed_table import PG, latency, pg_load, point

__all__ = ["plots"]


def plots(result: dict[str, Any], img_dir: Path) -> list[Path]:
    """Throughput and latency vs corpus size (PNG); returns the files written."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    img_dir.mkdir(parents=True, exist_ok=True)
    runs = sorted(result["runs"], key=lambda r: int(r["entries"]))
    title = " (quick smoke run)" if result.get("quick") else ""
    series: list[tuple[str, Callable[[dict[str, Any]], float | None], str]] = [
        ("append: backscroll durable", lambda r: point(r, ("append", "backscroll", "sustained_eps")), "-"),
        (
            "append: confluent + validation",
            lambda r: point(r, ("append", "confluent_validated", "sustained_eps")),
            ":",
        ),
        ("index: end to end", lambda r: point(r, ("indexer", "indexer_events_per_s")), "-"),
        ("index: raw parallel_bulk", lambda r: point(r, ("indexer", "raw_events_per_s")), ":"),
        ("append FILE: embedded", lambda r: point(r, ("cli", "paths", "cli embedded", "rps_wall")), "-"),
        ("append FILE: Kafka", lambda r: point(r, ("cli", "paths", "cli kafka (durable)", "rps_wall")), "-"),
        (
            "append_many ceiling",
            lambda r: point(r, ("cli", "paths", "ceiling embedded (append_many)", "rps_wall")),
            ":",
        ),
    ]

    def load_rate(key: str) -> Callable[[dict[str, Any]], float | None]:
        def rate(r: dict[str, Any]) -> float | None:
            seconds = point(r, ("load", key, "seconds"))
            events = point(r, ("load", "events"))
            return events / seconds if seconds and events else None

        return rate

    def pg_rate(r: dict[str, Any]) -> float | None:
        seconds = pg_load(r).get("load_seconds")
        events = point(r, ("load", "events"))
        return events / float(seconds) if seconds and events else None

    series += [
        ("load: Kafka + OpenSearch", load_rate("kafka_opensearch"), "-"),
        ("load: embedded", load_rate("embedded"), "-"),
        ("load: PostgreSQL COPY + GIN", pg_rate, ":"),
    ]
    written = []
    fig, ax = plt.subplots(figsize=(11, 5.5))
    for index, (name, get, style) in enumerate(series):
        points = [(r["entries"], get(r)) for r in runs]
        kept = [(x, y) for x, y in points if y]
        if kept:
            ax.plot(
                [p[0] for p in kept],
                [p[1] for p in kept],
                marker="o",
                linestyle=style,
                color=f"C{index % 10}",
                label=name,
            )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("corpus entries")
    ax.set_ylabel("entries / s")
    ax.set_title("Throughput vs corpus size" + title)
    ax.grid(True, which="both", alpha=0.3)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1.0))
    fig.tight_layout()
    path = img_dir / "speed-throughput.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    written.append(path)

    fig, axes = plt.subplots(1, 2, figsize=(13, 5), sharey=True)
    names = [("backscroll", "OpenSearch"), ("backscroll_embedded", "embedded"), (PG, "pg_trgm 0.4")]
    for ax, scope in zip(axes, ("session", "workspace"), strict=True):
        for index, (key, name) in enumerate(names):
            lat: list[tuple[int, float | None, float | None]] = []
            for r in runs:
                system = ((r["rows"].get("search") or {}).get(key)) or {}
                if system.get("available"):
                    lat.append((r["entries"], latency(system, scope, "p50"), latency(system, scope, "p99")))
            if not lat:
                continue
            xs = [p[0] for p in lat]
            ax.plot(xs, [p[1] for p in lat], marker="o", color=f"C{index}", label=f"{name} p50")
            ax.plot(
                xs, [p[2] for p in lat], marker="x", linestyle="--", color=f"C{index}", label=f"{name} p99"
            )
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("corpus entries")
        ax.set_title(f"{scope}-scoped search latency" + title)
        ax.grid(True, which="both", alpha=0.3)
    axes[0].set_ylabel("ms")
    if axes[1].get_legend_handles_labels()[0]:
        axes[1].legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1.0))
    fig.tight_layout()
    path = img_dir / "speed-latency.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    written.append(path)
    return written
