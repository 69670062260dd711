"""Relevance and latency: every system, same corpus, same queries, same machine, one run.

Steps: build the corpus (and validate every record with ``backscroll.ingest.wire.parse_record``),
generate the queries and their ground truth, then for each system: bulk load (timed, including index
builds) and measure the size on disk. Once every system is loaded, each runs ``warmup`` queries
unmeasured, then every query runs once on every system in turn (timed client side with
``perf_counter``, one at a time, the first system rotating per query, so that all see the same
machine load; ``block`` > 1 runs blocks of that many queries per system instead), and each
system's recall@10 and MRR@10 are scored.
Systems that cannot run here (backscroll before its provider exists, or without OpenSearch) are
recorded as skipped with the reason.
"""

from __future__ import annotations

import functools
import json
import os
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from benchmarks.base import SearchSystem, SystemUnavailable
from benchmarks.corpus import Corpus, CorpusConfig
from benchmarks.machine import machine_info, package_versions
from benchmarks.metrics import latency_summary, mean, recall_at, reciprocal_rank_at
from benchmarks.queries import SCOPES, VARIANTS, Query, QueryGenerator
from benchmarks.sys_pgtrgm import label as trgm_label

__all__ = ["ALL_SYSTEMS", "RelevanceConfig", "run_relevance"]

RESULTS_DIR = Path(__file__).resolve().parent / "results"
ALL_SYSTEMS = ("backscroll", "embedded", "pg_trgm", "fts5", "ilike")
GROUPS = {
    "typo1": [v for v in VARIANTS if v.startswith("typo1_")],
    "typo (all)": [v for v in VARIANTS if v.startswith("typo")],
    "identifier / prefix": ["id_substring", "id_prefix", "version_prefix", "word_prefix"],
    "accents": ["accents_stripped", "accents_added"],
}


@dataclass
class RelevanceConfig:
    entries: int = 100_000
    seed: int = 7
    queries_per_variant: int = 40  # per scope: 11 variants × 2 scopes × 40 = 880 queries
    systems: tuple[str, ...] = ALL_SYSTEMS
    pg_settings: tuple[tuple[str, float], ...] = (("word", 0.6), ("word", 0.4), ("strict", 0.5))
    limit: int = 10
    warmup: int = 20
    #: Queries each system runs in a row before the next system's turn (1: query by query).
    block: int = 1
    opensearch_hosts: str = "http://127.0.0.1:9200"
    index_prefix: str = "bench"
    validate: bool = True
    max_df: int | None = None  # None: 3 × corpus passes
    keep_per_query: bool = True
    command: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


def _progress(console: Console) -> Progress:
    return Progress(
        SpinnerColumn(),
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=console,
        transient=False,
    )


class _Tracked:
    """An iterable over the records that advances a progress task for every event it hands out."""

    def __init__(self, records: list[dict[str, Any]], advance: Callable[[], None]) -> None:
        self.records = records
        self.advance = advance

    def __iter__(self) -> Iterator[dict[str, Any]]:
        for record in self.records:
            yield record
            if record["kind"] == "event":
                self.advance()


def _validate(records: list[dict[str, Any]], advance: Callable[[], None]) -> str:
    try:
        from backscroll.ingest.wire import parse_record
    except ImportError as err:
        return f"skipped: backscroll.ingest.wire not importable ({err})"
    for record in records:
        parse_record(record)  # raises RecordRejected on the first invalid record
        advance()
    return "ok"


def _build_systems(
    cfg: RelevanceConfig, state: dict[str, Any]
) -> list[tuple[str, Callable[[], SearchSystem]]]:
    """(label, factory) for every requested system; factories may raise SystemUnavailable."""
    builders: list[tuple[str, Callable[[], SearchSystem]]] = []

    def cluster() -> Any:
        if "pg" not in state:
            from benchmarks.pg import PgCluster

            state["pg"] = PgCluster().start()
        return state["pg"]

    for name in cfg.systems:
        if name == "backscroll":

            def make_backscroll() -> SearchSystem:
                from benchmarks.sys_backscroll import BackscrollSystem

                return BackscrollSystem(hosts=cfg.opensearch_hosts, index_prefix=cfg.index_prefix)

            builders.append(("backscroll", make_backscroll))
        elif name == "pg_trgm":
            for mode, threshold in cfg.pg_settings:

                def make_trgm(mode: str = mode, threshold: float = threshold) -> SearchSystem:
                    from benchmarks.sys_pgtrgm import PgTrgmSystem, PgTrgmTable

                    if "trgm_table" not in state:
                        state["trgm_table"] = PgTrgmTable(cluster())
                    return PgTrgmSystem(state["trgm_table"], mode=mode, threshold=threshold)

                builders.append((trgm_label(mode, threshold), make_trgm))
        elif name == "fts5":

            def make_fts5() -> SearchSystem:
                from benchmarks.sys_fts5 import Fts5System

                return Fts5System()

            builders.append(("sqlite_fts5_trigram", make_fts5))
        elif name == "ilike":

            def make_ilike() -> SearchSystem:
                from benchmarks.sys_ilike import IlikeSystem

                return IlikeSystem(cluster())

            builders.append(("ilike", make_ilike))
        elif name == "embedded":

            def make_embedded() -> SearchSystem:
                from benchmarks.sys_embedded import EmbeddedSystem

                return EmbeddedSystem()

            builders.append(("backscroll_embedded", make_embedded))
        else:
            raise ValueError(f"unknown system {name!r} (known: {', '.join(ALL_SYSTEMS)})")
    return builders


def _score(
    queries: list[Query], outcomes: list[tuple[list[str], float]], limit: int
) -> tuple[dict[str, Any], dict[str, Any], list[list[float]]]:
    cells: dict[tuple[str, str], list[tuple[float, float]]] = defaultdict(list)
    latencies: dict[str, list[float]] = defaultdict(list)
    per_query = []
    for query, (results, ms) in zip(queries, outcomes, strict=True):
        relevant = set(query.relevant)
        recall = recall_at(results, relevant, limit)
        rr = reciprocal_rank_at(results, relevant, limit)
        cells[query.variant, query.scope_kind].append((recall, rr))
        latencies[query.scope_kind].append(ms)
        per_query.append([round(recall, 4), round(rr, 4), round(ms, 3), len(results)])

    def summary(pairs: list[tuple[float, float]]) -> dict[str, float]:
        return {
            "n": len(pairs),
            "recall_at_10": mean([p[0] for p in pairs]),
            "mrr_at_10": mean([p[1] for p in pairs]),
        }

    relevance: dict[str, Any] = {}
    for variant in [*VARIANTS, *GROUPS, "all"]:
        members = GROUPS.get(variant, VARIANTS if variant == "all" else [variant])
        row = {}
        for scope in (*SCOPES, "all"):
            scopes = SCOPES if scope == "all" else (scope,)
            pairs = [p for v in members for s in scopes for p in cells.get((v, s), [])]
            row[scope] = summary(pairs)
        relevance[variant] = row
    latency = {scope: latency_summary(latencies[scope]) for scope in SCOPES}
    latency["all"] = latency_summary([ms for scope in SCOPES for ms in latencies[scope]])
    return relevance, latency, per_query


def _load(
    label: str,
    factory: Callable[[], SearchSystem],
    entry: dict[str, Any],
    records: list[dict[str, Any]],
    events: int,
    state: dict[str, Any],
    progress: Progress,
    console: Console,
) -> SearchSystem | None:
    """Make and load one system, recording its load time and size in ``entry``; ``None`` (and the
    reason in ``entry``) when it cannot run here or its load failed."""
    try:
        system = factory()
    except (SystemUnavailable, FileNotFoundError) as err:
        entry |= {"available": False, "skipped_reason": str(err)}
        console.print(f"[yellow]skipped {label}: {err}")
        return None
    try:
        task = progress.add_task(f"{label}: load", total=events)
        t0 = time.perf_counter()
        system.load(_Tracked(records, functools.partial(progress.advance, task)))
        load_seconds = time.perf_counter() - t0
        progress.update(task, completed=events)
        if "trgm_table" in state and label.startswith("pg_trgm"):
            load_seconds = state["trgm_table"].load_seconds  # one table for every setting
            entry["load_shared"] = bool(getattr(system, "shared_load", False))
        entry |= {
            "available": True,
            "load_seconds": load_seconds,
            "load_events_per_second": events / load_seconds if load_seconds else None,
            "index_bytes": system.index_bytes(),
        }
        if label == "backscroll":
            entry["server_version"] = getattr(system, "server_version", None)
    except Exception as err:  # one broken system must not sink the others' numbers
        console.print_exception()
        entry |= {"available": False, "error": f"{type(err).__name__}: {err}"}
        system.close()
        return None
    return system


def _interleaved(
    queries: list[Query],
    live: list[tuple[dict[str, Any], SearchSystem]],
    cfg: RelevanceConfig,
    progress: Progress,
    console: Console,
) -> dict[str, list[tuple[list[str], float]]]:
    """Every query on every loaded system in turn, the first system rotating from one query to the
    next, so that each system's latencies are taken under the same machine load as its peers'
    (a system measured alone after its own load met whatever that hour brought). With
    ``cfg.block`` > 1, each system runs a block of that many queries back to back before the next
    system's turn, the first system rotating per block: on demand, to see how much of a latency is
    the CPU waking up after a peer's query. A system that
    fails is recorded in its entry and left out from then on."""
    outcomes: dict[str, list[tuple[list[str], float]]] = {entry["name"]: [] for entry, _ in live}

    def run(entry: dict[str, Any], system: SearchSystem, query: Query, timed: bool) -> None:
        try:
            t0 = time.perf_counter()
            found = system.search(query.scope_kind, query.scope_id, query.text, cfg.limit)
            if timed:
                outcomes[entry["name"]].append((found, (time.perf_counter() - t0) * 1000))
        except Exception as err:  # one broken system must not sink the others' numbers
            console.print_exception()
            entry |= {"available": False, "error": f"{type(err).__name__}: {err}"}
            del outcomes[entry["name"]]

    for entry, system in live:
        for query in queries[: cfg.warmup]:
            if entry["name"] in outcomes:
                run(entry, system, query, timed=False)
    task = progress.add_task("queries: every system in turn", total=len(queries))
    size = max(1, cfg.block)
    for n, start in enumerate(range(0, len(queries), size)):
        block = queries[start : start + size]
        first = n % max(1, len(live))
        for entry, system in live[first:] + live[:first]:
            for query in block:
                if entry["name"] in outcomes:
                    run(entry, system, query, timed=True)
        progress.advance(task, len(block))
    return outcomes


def run_relevance(cfg: RelevanceConfig, *, console: Console | None = None, out: Path | None = None) -> Path:
    """Run the benchmark; write and return the JSON result file."""
    console = console or Console()
    started = datetime.now(UTC)
    state: dict[str, Any] = {}
    result: dict[str, Any] = {
        "kind": "relevance",
        "schema": 1,
        "started_at": started.isoformat(timespec="seconds"),
        "command": cfg.command,
        "config": {k: v for k, v in asdict(cfg).items() if k not in ("command", "extra")} | cfg.extra,
        "machine": machine_info() | {"loadavg_at_start": list(os.getloadavg())},
        "versions": package_versions(),
        "systems": [],
        # Latencies taken query by query (or block by block) on every system in turn (``_interleaved``).
        "latency_order": "interleaved",
        "latency_block": max(1, cfg.block),
    }
    try:
        with _progress(console) as progress:
            corpus = Corpus(CorpusConfig(entries=cfg.entries, seed=cfg.seed))
            task = progress.add_task("corpus: generate", total=cfg.entries)
            records = []
            for record in corpus.records():
                records.append(record)
                if record["kind"] == "event":
                    progress.advance(task)
            result["corpus"] = corpus.stats.describe() | {"pool": corpus.pool.describe()}
            if cfg.validate:
                task = progress.add_task("corpus: validate (parse_record)", total=len(records))
                result["corpus"]["validated"] = _validate(records, lambda: progress.advance(task))

            max_df = cfg.max_df or 3 * corpus.stats.passes
            task = progress.add_task("queries: index corpus", total=None)
            generator = QueryGenerator(records, seed=cfg.seed, max_df=max_df)
            progress.update(task, total=1, completed=1)
            wanted = cfg.queries_per_variant * len(VARIANTS) * len(SCOPES)
            task = progress.add_task("queries: generate", total=wanted)
            queries = generator.generate(cfg.queries_per_variant, on_query=lambda: progress.advance(task))
            progress.update(task, total=len(queries), completed=len(queries))
            gt_sizes = sorted(len(q.relevant) for q in queries)
            result["queries"] = {
                "count": len(queries),
                "max_df": max_df,
                "per_variant_scope": {
                    v: {s: sum(1 for q in queries if q.variant == v and q.scope_kind == s) for s in SCOPES}
                    for v in VARIANTS
                },
                "relevant_median": gt_sizes[len(gt_sizes) // 2] if gt_sizes else 0,
                "relevant_max": gt_sizes[-1] if gt_sizes else 0,
            }
            if cfg.keep_per_query:
                result["query_list"] = [q.as_dict() for q in queries]

            live: list[tuple[dict[str, Any], SearchSystem]] = []
            try:
                for label, factory in _build_systems(cfg, state):
                    entry: dict[str, Any] = {"name": label}
                    result["systems"].append(entry)
                    system = _load(
                        label, factory, entry, records, corpus.stats.events, state, progress, console
                    )
                    if system is not None:
                        live.append((entry, system))
                outcomes = _interleaved(queries, live, cfg, progress, console)
                for entry, _ in live:
                    if entry["name"] in outcomes:
                        relevance, latency, per_query = _score(queries, outcomes[entry["name"]], cfg.limit)
                        entry |= {"relevance": relevance, "latency_ms": latency}
                        if cfg.keep_per_query:
                            entry["per_query"] = per_query
            finally:
                for _, system in live:
                    system.close()
            if "pg" in state:
                result["versions"]["postgresql"] = state["pg"].version
            for entry in result["systems"]:
                if entry["name"] == "backscroll" and entry.get("server_version"):
                    result["versions"]["opensearch"] = entry["server_version"]
    finally:
        if "pg" in state:
            state["pg"].stop()
    result["finished_at"] = datetime.now(UTC).isoformat(timespec="seconds")
    result["machine"]["loadavg_at_end"] = list(os.getloadavg())
    out_dir = out or RESULTS_DIR
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"relevance-{cfg.entries}-{started.strftime('%Y%m%dT%H%M%SZ')}.json"
    path.write_text(json.dumps(result, ensure_ascii=False, indent=1), encoding="utf-8")
    return path
