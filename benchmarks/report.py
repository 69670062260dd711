"""Render ``docs/benchmarks.md`` (the relevance/latency section) and PNG plots from result files.

The section sits between ``<!-- BEGIN relevance -->`` and ``<!-- END relevance -->`` markers; the rest of
the file is left alone, so throughput and freshness sections can be added next to it later. The
headline tables come from the most recent result; "latency vs corpus size" uses the most recent result
of every corpus size found.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from benchmarks.queries import SCOPES, VARIANTS

__all__ = ["load_results", "render", "write_docs"]

ROOT = Path(__file__).resolve().parents[1]
BEGIN = "<!-- BEGIN relevance -->"
END = "<!-- END relevance -->"
TYPO_ACCENT = [v for v in VARIANTS if v.startswith(("typo", "accents"))]
GROUP_ROWS = ("typo1", "typo (all)", "identifier / prefix", "accents", "all")


def load_results(results_dir: Path) -> list[dict[str, Any]]:
    runs = []
    for path in sorted(results_dir.glob("relevance-*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        if data.get("kind") == "relevance" and "finished_at" in data:
            data["_path"] = path
            runs.append(data)
    runs.sort(key=lambda r: r["finished_at"])
    return runs


def _measured(run: dict[str, Any]) -> list[dict[str, Any]]:
    return [s for s in run["systems"] if s.get("available") and "relevance" in s]


def _f(value: float | None, digits: int = 3) -> str:
    if value is None or value != value:  # None or NaN
        return "–"
    return f"{value:.{digits}f}"


def _ms(value: float | None) -> str:
    if value is None or value != value:
        return "–"
    return f"{value:.1f}" if value < 100 else f"{value:.0f}"


def _load(values: list[float] | None) -> str:
    return "–" if not values else "/".join(f"{v:.1f}" for v in values)


def _mib(n: int | None) -> str:
    return "–" if n is None else f"{n / 2**20:,.1f}"


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "|".join(" --- " for _ in header) + "|"]
    out += ["| " + " | ".join(row) + " |" for row in rows]
    return out


def _by_size(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    latest: dict[int, dict[str, Any]] = {}
    for run in runs:
        latest[run["config"]["entries"]] = run
    return [latest[k] for k in sorted(latest)]


def _targets(run: dict[str, Any]) -> list[str]:
    systems = _measured(run)
    ours = next((s for s in systems if s["name"] == "backscroll"), None)
    entries = run["config"]["entries"]
    lines = ["### Targets: where we stand", ""]
    if ours is None:
        skipped = next((s for s in run["systems"] if s["name"] == "backscroll"), None)
        why = skipped.get("skipped_reason") or skipped.get("error") if skipped else "not requested"
        lines.append(f"backscroll was not measured in this run ({why}); the targets are open.")
        return [*lines, ""]
    rel = ours["relevance"]
    worst = min(TYPO_ACCENT, key=lambda v: rel[v]["all"]["recall_at_10"])
    baselines = [s for s in systems if not s["name"].startswith("backscroll")]
    best = max(baselines, key=lambda s: s["relevance"]["all"]["all"]["recall_at_10"], default=None)
    lat = ours["latency_ms"]
    lines.append(
        f"- recall@10 ≥ 0.95 on every typo/accent variant: lowest is {worst} at "
        f"{_f(rel[worst]['all']['recall_at_10'])}."
    )
    if best is not None:
        lines.append(
            "- overall recall@10 ≥ best baseline + 0.05: "
            f"backscroll {_f(rel['all']['all']['recall_at_10'])}, "
            f"best baseline {best['name']} {_f(best['relevance']['all']['all']['recall_at_10'])}."
        )
    lines.append(
        f"- at {entries:,} entries (targets are for 1M): session p50 {_ms(lat['session']['p50'])} ms "
        f"(≤ 15), p99 {_ms(lat['session']['p99'])} ms (≤ 60); "
        f"workspace p50 {_ms(lat['workspace']['p50'])} ms (≤ 40)."
    )
    trgm = [s for s in baselines if s["name"].startswith("pg_trgm")]
    if trgm:
        best_trgm = max(trgm, key=lambda s: s["relevance"]["all"]["all"]["recall_at_10"])
        lines.append(
            f"- vs the best-recall pg_trgm setting ({best_trgm['name']}): p50 {_ms(lat['all']['p50'])} ms "
            f"vs {_ms(best_trgm['latency_ms']['all']['p50'])} ms, p99 {_ms(lat['all']['p99'])} ms vs "
            f"{_ms(best_trgm['latency_ms']['all']['p99'])} ms; recall@10 "
            f"{_f(rel['all']['all']['recall_at_10'])} vs "
            f"{_f(best_trgm['relevance']['all']['all']['recall_at_10'])}."
        )
    return [*lines, ""]


def _relevance_targets(run: dict[str, Any]) -> list[str]:
    """The relevance targets: every variant, overall, MRR, the margin over pg_trgm, clean and accents."""
    systems = _measured(run)
    ours = [s for s in systems if s["name"].startswith("backscroll")]
    trgm = [s for s in systems if s["name"].startswith("pg_trgm")]
    if not ours:
        return []
    lines = ["### Relevance targets: where we stand", ""]
    best_recall = max((s["relevance"]["all"]["all"]["recall_at_10"] for s in trgm), default=None)
    best_mrr = max((s["relevance"]["all"]["all"]["mrr_at_10"] for s in trgm), default=None)
    for system in ours:
        rel = system["relevance"]
        worst = min(VARIANTS, key=lambda v: rel[v]["all"]["recall_at_10"])
        recall, mrr = rel["all"]["all"]["recall_at_10"], rel["all"]["all"]["mrr_at_10"]
        clean = min(rel[v]["all"]["recall_at_10"] for v in ("clean", "accents_stripped", "accents_added"))
        margin = ""
        if best_recall is not None and best_mrr is not None:
            margin = (
                f"; vs best pg_trgm recall@10 +{_f(recall - best_recall)} and MRR@10 "
                f"+{_f(mrr - best_mrr)} (target +0.05)"
            )
        lines.append(
            f"- {system['name']}: lowest variant {worst} {_f(rel[worst]['all']['recall_at_10'])} (≥ 0.95); "
            f"recall@10 {_f(recall)} (≥ 0.97), MRR@10 {_f(mrr)} (≥ 0.92){margin}; clean and accents "
            f"lowest {_f(clean)} (≥ 0.99)."
        )
    return [*lines, ""]


def render(runs: list[dict[str, Any]], img_dir_rel: str = "img") -> str:
    run = runs[-1]
    cfg = run["config"]
    corpus = run["corpus"]
    machine = run["machine"]
    versions = run["versions"]
    systems = _measured(run)
    names = [s["name"] for s in systems]
    lines = [
        BEGIN,
        "## Relevance and latency",
        "",
        "_Generated by `python -m benchmarks.run report` from "
        f"`benchmarks/results/{Path(run['_path']).name}`; do not edit this section by hand._",
        "",
        f"- **Run**: {run['finished_at']} (UTC), seed {cfg['seed']}.",
        f"- **Corpus**: {corpus['events']:,} entries ({corpus['searchable']:,} searchable) in "
        f"{corpus['sessions']:,} sessions over {corpus['workspaces']} workspaces (largest "
        f"{corpus['largest_workspace_events']:,} entries, smallest {corpus['smallest_workspace_events']:,}); "
        f"{corpus['passes']} pass(es) over chitchat-dataset; tool text pool {corpus['pool']['fingerprint']}.",
        f"- **Queries**: {run['queries']['count']} known-item queries ({cfg['queries_per_variant']} per "
        f"variant and scope, {len(VARIANTS)} variants × {len(SCOPES)} scopes), limit {cfg['limit']}, "
        f"distinctive words in ≤ {run['queries']['max_df']} entries, ground truth median "
        f"{run['queries']['relevant_median']} entries (max {run['queries']['relevant_max']}).",
        f"- **Machine**: {machine['nproc']} cores, {machine['memory_bytes'] / 2**30:.1f} GiB memory, "
        f"{machine['cpu_model']}; {machine['os']}, kernel {machine['kernel']}; load average "
        f"{_load(machine.get('loadavg_at_start'))} at start, {_load(machine.get('loadavg_at_end'))} at end.",
        "- **Versions**: " + ", ".join(f"{k} {v}" for k, v in versions.items() if v),
        "",
        "Command:",
        "",
        "```sh",
        run["command"] or "python -m benchmarks.run relevance",
        "```",
        "",
    ]
    skipped = [s for s in run["systems"] if not s.get("available")]
    if skipped:
        lines.append("Not measured in this run:")
        lines.append("")
        lines += [f"- **{s['name']}**: {s.get('skipped_reason') or s.get('error')}" for s in skipped]
        lines.append("")

    lines += ["### Overall", ""]
    rows = []
    for s in systems:
        rel = s["relevance"]["all"]
        lat = s["latency_ms"]
        rows.append(
            [
                s["name"],
                _f(rel["all"]["recall_at_10"]),
                _f(rel["all"]["mrr_at_10"]),
                _f(rel["session"]["recall_at_10"]),
                _f(rel["workspace"]["recall_at_10"]),
                _ms(lat["session"]["p50"]),
                _ms(lat["session"]["p99"]),
                _ms(lat["workspace"]["p50"]),
                _ms(lat["workspace"]["p99"]),
            ]
        )
    lines += _table(
        [
            "system",
            "recall@10",
            "MRR@10",
            "recall@10 session",
            "recall@10 workspace",
            "p50 ms session",
            "p99 ms session",
            "p50 ms workspace",
            "p99 ms workspace",
        ],
        rows,
    )
    lines.append("")

    for metric, title in (("recall_at_10", "Recall@10"), ("mrr_at_10", "MRR@10")):
        lines += [f"### {title} by query variant (both scopes)", ""]
        rows = []
        for variant in (*VARIANTS, *GROUP_ROWS):
            n = systems[0]["relevance"][variant]["all"]["n"] if systems else 0
            label = f"**{variant}**" if variant in GROUP_ROWS else variant
            rows.append([label, str(n), *(_f(s["relevance"][variant]["all"][metric]) for s in systems)])
        lines += _table(["variant", "n", *names], rows)
        lines.append("")

    lines += ["### Recall@10 by variant and scope (session / workspace)", ""]
    rows = []
    for variant in (*VARIANTS, *GROUP_ROWS):
        label = f"**{variant}**" if variant in GROUP_ROWS else variant
        rows.append(
            [
                label,
                *(
                    f"{_f(s['relevance'][variant]['session']['recall_at_10'], 2)} / "
                    f"{_f(s['relevance'][variant]['workspace']['recall_at_10'], 2)}"
                    for s in systems
                ),
            ]
        )
    lines += _table(["variant", *names], rows)
    lines.append("")

    lines += ["### Search latency (ms, client side, one query at a time)", ""]
    rows = []
    for s in systems:
        for scope in SCOPES:
            lat = s["latency_ms"][scope]
            rows.append(
                [
                    s["name"],
                    scope,
                    str(lat["n"]),
                    *(_ms(lat[k]) for k in ("p50", "p95", "p99", "mean", "max")),
                ]
            )
    lines += _table(["system", "scope", "n", "p50", "p95", "p99", "mean", "max"], rows)
    lines.append("")

    lines += ["### Load time and size", ""]
    rows = [
        [
            s["name"],
            _f(s["load_seconds"], 1) + (" (shared table)" if s.get("load_shared") else ""),
            f"{s['load_events_per_second']:,.0f}" if s.get("load_events_per_second") else "–",
            _mib(s.get("index_bytes")),
        ]
        for s in systems
    ]
    lines += _table(["system", "load s (incl. index build)", "entries/s", "size MiB (data + indexes)"], rows)
    lines.append("")

    sized = _by_size(runs)
    lines += ["### Latency vs corpus size", ""]
    rows = []
    for r in sized:
        for s in _measured(r):
            lat = s["latency_ms"]
            rows.append(
                [
                    f"{r['config']['entries']:,}",
                    s["name"],
                    " / ".join(_ms(lat["session"][k]) for k in ("p50", "p95", "p99")),
                    " / ".join(_ms(lat["workspace"][k]) for k in ("p50", "p95", "p99")),
                    _f(s["relevance"]["all"]["all"]["recall_at_10"]),
                ]
            )
    lines += _table(
        ["entries", "system", "session p50 / p95 / p99 ms", "workspace p50 / p95 / p99 ms", "recall@10"], rows
    )
    lines += [
        "",
        f"![Recall@10 by query variant]({img_dir_rel}/bench-recall-by-variant.png)",
        "",
        f"![Search latency vs corpus size]({img_dir_rel}/bench-latency-vs-size.png)",
        "",
    ]
    lines += _targets(run)
    lines += _relevance_targets(run)
    lines += [
        "### How this is measured",
        "",
        "- Corpus: `benchmarks/corpus.py` (chitchat-dataset conversations → sessions; tool calls "
        "and results from Debian changelogs, Python stdlib sources, Chinese/Japanese/Korean messages of "
        "Debian translation catalogs and synthetic SQL/CRM output with real accented names; compaction "
        "summaries; Zipf-sized workspaces; ≥ 1M entries by repeated passes with perturbed ids).",
        "- Queries and ground truth: `benchmarks/queries.py` and `benchmarks/variants.py` "
        "(digit typos, identifier/version/word prefixes, CJK); containment rule (case/accent folding, "
        "3+ character words match inside tokens): `benchmarks/folding.py`.",
        "- recall@10 = relevant entries in the top 10 / min(relevant, 10); MRR@10 = 1 / rank of the "
        "first relevant entry (0 if none in the top 10); both averaged over queries.",
        "- Systems: `benchmarks/sys_*.py`; PostgreSQL runs in a private cluster started by the "
        "benchmark (settings in `benchmarks/pg.py`); every system indexes only the searchable "
        "event types, message-bearing events with text (backscroll filters them itself).",
        "",
        END,
    ]
    return "\n".join(lines) + "\n"


def _plots(runs: list[dict[str, Any]], img_dir: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    img_dir.mkdir(parents=True, exist_ok=True)
    run = runs[-1]
    systems = _measured(run)
    written = []

    variants = [*VARIANTS, "all"]
    fig, ax = plt.subplots(figsize=(14, 5.5))
    width = 0.8 / max(1, len(systems))
    for i, s in enumerate(systems):
        xs = [x + (i - (len(systems) - 1) / 2) * width for x in range(len(variants))]
        ys = [s["relevance"][v]["all"]["recall_at_10"] for v in variants]
        ax.bar(xs, ys, width=width, label=s["name"])
    ax.set_xticks(range(len(variants)))
    ax.set_xticklabels(variants, rotation=30, ha="right")
    ax.set_ylim(0, 1.3)
    ax.set_yticks([0, 0.2, 0.4, 0.6, 0.8, 1.0])
    ax.set_ylabel("recall@10")
    ax.axhline(0.95, color="grey", linestyle=":", linewidth=1)
    ax.set_title(f"Recall@10 by query variant, {run['config']['entries']:,} entries")
    ax.legend(fontsize=8, ncols=3, loc="upper center")
    fig.tight_layout()
    path = img_dir / "bench-recall-by-variant.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    written.append(path)

    sized = _by_size(runs)
    fig, axes = plt.subplots(1, 2, figsize=(13, 5), sharey=True)
    names = sorted({s["name"] for r in sized for s in _measured(r)})
    for ax, scope in zip(axes, SCOPES, strict=True):
        for index, name in enumerate(names):
            points = [
                (r["config"]["entries"], s["latency_ms"][scope])
                for r in sized
                for s in _measured(r)
                if s["name"] == name
            ]
            if not points:
                continue
            color = f"C{index % 10}"
            xs = [p[0] for p in points]
            ax.plot(xs, [p[1]["p50"] for p in points], marker="o", color=color, label=f"{name} p50")
            ax.plot(
                xs,
                [p[1]["p99"] for p in points],
                marker="x",
                linestyle="--",
                color=color,
                label=f"{name} p99",
            )
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("corpus entries")
        ax.set_title(f"{scope}-scoped search latency")
        ax.grid(True, which="both", alpha=0.3)
    axes[0].set_ylabel("ms")
    axes[1].legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1.0))
    fig.tight_layout()
    path = img_dir / "bench-latency-vs-size.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    written.append(path)
    return written


def write_docs(
    results_dir: Path, docs_path: Path | None = None, img_dir: Path | None = None
) -> tuple[Path, list[Path]]:
    runs = load_results(results_dir)
    if not runs:
        raise FileNotFoundError(
            f"no relevance results in {results_dir}: run `python -m benchmarks.run relevance`"
        )
    docs_path = docs_path or ROOT / "docs" / "benchmarks.md"
    img_dir = img_dir or docs_path.parent / "img"
    section = render(runs, img_dir_rel=Path(img_dir.relative_to(docs_path.parent)).as_posix())
    if docs_path.exists():
        text = docs_path.read_text(encoding="utf-8")
        if BEGIN in text and END in text:
            text = re.sub(
                re.escape(BEGIN) + ".*?" + re.escape(END) + "\n?", lambda _: section, text, flags=re.S
            )
        else:
            text = text.rstrip("\n") + "\n\n" + section
    else:
        text = (
            "# Benchmarks\n\n"
            "backscroll side by side with what a user would otherwise use: PostgreSQL `pg_trgm`, SQLite "
            "FTS5 (trigram) and a plain `ILIKE` — same corpus, same queries, same machine, one run. "
            "Run on demand only, never by the default test run:\n\n"
            "```sh\n"
            "pip install -e '.[bench]'            # chitchat-dataset, psycopg, matplotlib, confluent-kafka\n"
            "backscroll up                        # OpenSearch for the backscroll system (optional)\n"
            "python -m benchmarks.run relevance --entries 100000,1000000 --report\n"
            "```\n\n"
            "PostgreSQL comes from Debian's packages (installed with apt-get when missing) and runs as a "
            "private throw-away cluster; `python -m benchmarks.run --help` lists every option.\n\n" + section
        )
    docs_path.parent.mkdir(parents=True, exist_ok=True)
    docs_path.write_text(text, encoding="utf-8")
    return docs_path, _plots(runs, img_dir)
