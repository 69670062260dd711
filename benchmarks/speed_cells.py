"""Cells of the speed table: numbers, ratios and statuses as Markdown text (pure)."""

from __future__ import annotations

from typing import Any

__all__ = [
    "MET",
    "NOT_MET",
    "Row",
    "cpu_text",
    "fmt_mib",
    "fmt_ms",
    "fmt_num",
    "fmt_x",
    "loadavg_text",
    "md_table",
    "missing_reason",
    "ratio_of",
    "rounds_text",
    "status_of",
]

MET, NOT_MET = "met", "**not met**"


def fmt_num(value: float | None, unit: str = "", digits: int = 0) -> str:
    if value is None or value != value:
        return "–"
    if digits == 0 and abs(value) < 10:
        digits = 1
    return f"{value:,.{digits}f}{unit}"


def fmt_ms(value: float | None) -> str:
    if value is None or value != value:
        return "–"
    return f"{value:.1f} ms" if value < 100 else f"{value:,.0f} ms"


def fmt_mib(n: float | None) -> str:
    return "–" if n is None else f"{n / 2**20:,.1f} MiB"


def ratio_of(a: float | None, b: float | None) -> float | None:
    if a is None or b is None or not b or a != a or b != b:
        return None
    return a / b


def fmt_x(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}×"


def loadavg_text(values: list[float] | None) -> str:
    return "–" if not values else " / ".join(f"{v:.1f}" for v in values)


def status_of(checks: list[tuple[bool | None, str]]) -> str:
    """``met`` when every check holds; otherwise which ones failed (unknown ones count as failed)."""
    failed = [label for ok, label in checks if not ok]
    return MET if not failed else f"{NOT_MET} ({'; '.join(failed)})"


def missing_reason(row: dict[str, Any] | None, name: str) -> str | None:
    """Why a row has no numbers (not run, or failed), or ``None`` when it has them."""
    if row is None:
        return f"not measured ({name} not run at this size)"
    if "error" in row:
        return f"not measured: {row['error']}"
    return None


Row = list[str]


def md_table(header: list[str], rows: list[Row]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "|".join(" --- " for _ in header) + "|"]
    out += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows]
    return out


def cpu_text(cpu: dict[str, Any], what: str, own: tuple[str, str]) -> str:
    """``; WHAT: OWN x s, OpenSearch y s, Kafka z s in w s (machine b% busy)`` from a
    :class:`~benchmarks.cpuacct.CpuWindow` report (``own``: its key and label), with the time
    the host took for other guests when it counts; "" when the window measured nothing."""
    if not cpu.get("wall_s"):
        return ""
    key, label = own
    parts = [f"{label} {cpu.get(key, 0):.1f} s"]
    parts += [
        f"{name} {cpu[k]:.1f} s"
        for k, name in (("opensearch_cpu_s", "OpenSearch"), ("kafka_cpu_s", "Kafka"))
        if cpu.get(k)
    ]
    if (cpu.get("stolen_cpu_s") or 0.0) >= 0.5:  # a virtual machine's host ran other guests
        parts.append(f"taken by the host for other guests {cpu['stolen_cpu_s']:.1f} s")
    busy = cpu.get("machine_busy_fraction")
    return f"; {what}: {', '.join(parts)} in {cpu['wall_s']:.1f} s" + (
        f" (machine {busy:.0%} busy)" if busy is not None else ""
    )


def rounds_text(rounds: list[dict[str, Any]] | None) -> str:
    """``; mean of N rounds in alternating order, by round: a× / b×`` from a row's ``rounds`` (each
    with its ``ratio``, in the row's own sense); "" for a single round."""
    if not rounds or len(rounds) < 2:
        return ""
    by_round = " / ".join(fmt_x(r.get("ratio")) for r in rounds)
    return f"; mean of {len(rounds)} rounds in alternating order, by round: {by_round}"
