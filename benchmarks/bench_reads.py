"""Benchmark: exact reads of one long session with repeated compactions.

Builds a 10,000-event agent session (turns of user message, streamed chunks, assistant message
citing its chunks, tool calls and results; a compaction every ~400 events that replaces the whole
current surface with a summary citing every node it removes; occasional tool-result rewrites),
writes it into a fresh index prefix on the local OpenSearch through the projector
(``OpenSearchView.write_records``, the same documents the worker writes), then times the reads of
``OpenSearchSessionReader`` and reports medians and 95th percentiles. Not collected by pytest.

    python -m benchmarks.bench_reads [--events 10000] [--runs 60] [--keep]
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

from backscroll.indexer import OpenSearchSettings, OpenSearchView
from backscroll.ingest.wire import EventRecord, HeaderRecord, parse_record
from backscroll.query import OpenSearchSessionReader, Scope
from backscroll.query.reads import entry_from_record, fold_log_strict

WORDS = [
    "deploy", "cluster", "metrics", "invoice", "ledger", "budget", "backlog", "sprint", "review", "pipeline",
    "staging", "customer", "account", "balance", "migration", "schema", "rollout", "incident", "postmortem",
    "latency", "report", "forecast", "query", "index", "shard",
]  # fmt: skip
T0 = datetime(2026, 11, 1, tzinfo=UTC)


def _text(rng: random.Random, low: int, high: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(low, high)))


def build_session(
    session_id: str, workspace: str, events: int, seed: int = 7
) -> list[HeaderRecord | EventRecord]:
    """A valid log (the fold accepts it) of exactly ``events`` events, with compactions."""
    rng = random.Random(seed)
    header = parse_record({"v": 1, "kind": "header", "workspace_id": workspace, "session_id": session_id,
                           "created_at": T0.isoformat(), "title": "benchmark session"})  # fmt: skip
    out: list[dict[str, Any]] = []
    surface: list[int] = []  # current nodes in model order
    tools: dict[int, str] = {}  # current tool/result seq -> call id
    turn = 0
    next_compaction = 400

    def add(type_: str, text: str = "", **fields: Any) -> int:
        seq = len(out)
        at = (T0 + timedelta(milliseconds=250 * seq)).isoformat()
        record = {"v": 1, "kind": "event", "workspace_id": workspace, "session_id": session_id, "seq": seq,
                  "type": type_, "time": at, "turn": turn}  # fmt: skip
        if text:
            record["text"] = text
        record.update(fields)
        out.append(record)
        return seq

    while len(out) < events:
        turn += 1
        add("turn/start")
        surface.append(add("user/message", _text(rng, 8, 40), role="user", surface={"op": "append"}))
        for _ in range(rng.randint(1, 3)):
            call = f"call-{len(out)}"
            chunks = [add("assistant/chunk", _text(rng, 3, 10)) for _ in range(rng.randint(1, 4))]
            surface.append(add("assistant/message", _text(rng, 10, 60), role="assistant",
                               surface={"op": "append"}, sources=chunks))  # fmt: skip
            add("tool/call", f"grep -rn {rng.choice(WORDS)} src/", tool_name="grep", attrs={"call_id": call})
            seq = add("tool/result", _text(rng, 40, 400), role="tool", tool_name="grep",
                      surface={"op": "append"}, attrs={"call_id": call})  # fmt: skip
            surface.append(seq)
            tools[seq] = call
        add("turn/end", "completed")
        if tools and rng.random() < 0.2:  # rewrite one tool result's content in place
            old = rng.choice(sorted(tools))
            new = add("tool/result", "[output elided]", role="tool", tool_name="grep",
                      surface={"op": "replace", "start": old, "end": old}, sources=[old],
                      attrs={"call_id": tools.pop(old)})  # fmt: skip
            surface[surface.index(old)] = new
            tools[new] = out[new]["attrs"]["call_id"]
        if len(out) >= next_compaction and len(surface) > 2:  # compact all but the last node
            next_compaction += 400
            removed = surface[:-1]
            replace = {"op": "replace", "start": removed[0], "end": removed[-1]}
            summary = add("user/message", "summary: " + _text(rng, 60, 120), role="user", surface=replace,
                          sources=removed)  # fmt: skip
            surface = [summary, surface[-1]]
            tools = {s: c for s, c in tools.items() if s in surface}
    del out[events:]
    records: list[HeaderRecord | EventRecord] = [header]
    records += [parse_record(r) for r in out]
    events_only = [entry_from_record(r) for r in records if isinstance(r, EventRecord)]
    fold_log_strict(session_id, events_only)  # the fixture itself must be valid
    return records


def timed(fn: Callable[[], object], runs: int) -> list[float]:
    samples = []
    for _ in range(runs):
        started = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - started) * 1000)
    return samples


def summary(samples: list[float]) -> tuple[float, float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered), ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))], ordered[-1]


def cycle(values: list[int]) -> Iterator[int]:
    while True:
        yield from values


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=60)
    parser.add_argument("--keep", action="store_true", help="Keep the benchmark index prefix.")
    args = parser.parse_args()

    prefix = f"bench-reads-{uuid.uuid4().hex[:8]}"
    settings = OpenSearchSettings().model_copy(update={"index_prefix": prefix})
    view = OpenSearchView(settings)
    session_id, workspace = "bench-long", "bench-ws"
    try:
        records = build_session(session_id, workspace, args.events)
        compactions = sum(
            1 for r in records if isinstance(r, EventRecord) and r.text and r.text.startswith("summary:")
        )
        view.ensure_schema()
        started = time.perf_counter()
        written = view.write_records(records)
        view.refresh()
        load_s = time.perf_counter() - started

        scope = Scope.workspace(workspace)
        warm = OpenSearchSessionReader(scope, settings)
        cold = OpenSearchSessionReader(scope, settings, cache=False)  # loads the whole log on every read
        surface = warm.read_surface(session_id)
        rng = random.Random(1)
        seqs = cycle([rng.randrange(args.events) for _ in range(args.runs)])
        few = max(5, args.runs // 4)
        results = {
            "read_surface, cold": timed(lambda: cold.read_surface(session_id), few),
            "trace_event (random seq), cold": timed(lambda: cold.trace_event(session_id, next(seqs)), few),
            "read_event (random seq ±5), cold": timed(
                lambda: cold.read_event(session_id, next(seqs), 5, 5), few
            ),
            "read_surface": timed(lambda: warm.read_surface(session_id), args.runs),
            "trace_event (random seq)": timed(lambda: warm.trace_event(session_id, next(seqs)), args.runs),
            "read_event (random seq ±5)": timed(
                lambda: warm.read_event(session_id, next(seqs), 5, 5), args.runs
            ),
            "list_events (all, with text)": timed(lambda: warm.list_events(session_id), few),
            "trace_session": timed(lambda: warm.trace_session(session_id), args.runs),
        }
        entries = [entry_from_record(r) for r in records if isinstance(r, EventRecord)]
        results["fold only (pure, in memory)"] = timed(
            lambda: fold_log_strict(session_id, entries), args.runs
        )

        print(f"session: {args.events} events, {compactions} compactions, current surface "
              f"{len(surface.events)} nodes; {written} documents written in {load_s:.1f}s "
              f"(prefix {prefix})")  # fmt: skip
        title = "read (warm: log cache; cold: cache=False)"
        print(f"{title:42} {'median ms':>10} {'p95 ms':>10} {'max ms':>10}   runs")
        for name, samples in results.items():
            median, p95, worst = summary(samples)
            print(f"{name:42} {median:10.1f} {p95:10.1f} {worst:10.1f}   {len(samples)}")
    finally:
        if not args.keep:
            view.drop()
        view.close()


if __name__ == "__main__":
    main()
