"""What OpenSearch's text analysis costs to index the corpus, by analysis (on demand).

    python -m benchmarks.bench_analysis --entries 272000 --rounds 2

The corpus's event documents (the load row's corpus, seed 7, projected as the indexer projects
them) are bulk-loaded into a fresh events index once per analysis, from bodies serialized before
the clock starts, by two threads (2,000 documents a request), until refreshed. Per analysis: the
wall time, OpenSearch's CPU seconds (``/proc``), and the index's primary store. The analyses:

* ``simple_pattern``: the product's (:mod:`backscroll.indexer.opensearch.analysis`);
* ``java_pattern``: the same, with the Java ``pattern`` tokenizers the product used before
  (Unicode property classes, a look-behind for identifiers): the peer;
* ``no_subfields``: the product's mapping without the subfields of ``text`` and ``args`` (the
  floor: one analysis of each text).

The analyses alternate order from round to round; each index is dropped once measured.
"""

from __future__ import annotations

import argparse
import copy
import json
import time
import uuid
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

from backscroll.indexer import OpenSearchSettings, OpenSearchView
from backscroll.indexer.document import event_document
from backscroll.indexer.opensearch.analysis import analysis_settings
from backscroll.indexer.opensearch.mappings import events_index_body
from backscroll.indexer.textfold import CJK_RANGES
from backscroll.ingest import parse_record
from backscroll.ingest.wire import EventRecord
from benchmarks.corpus import Corpus, CorpusConfig
from benchmarks.cpuacct import CpuWindow
from benchmarks.machine import machine_info

__all__ = ["ANALYSES", "bodies", "java_pattern_tokenizers", "main", "measure"]

ANALYSES = ("simple_pattern", "java_pattern", "no_subfields")
_RESULTS = Path(__file__).parent / "results"


def java_pattern_tokenizers() -> dict[str, Any]:
    """The tokenizers of the product before ``simple_pattern``: Java regular expressions."""
    cjk = "".join(f"\\x{{{a:X}}}-\\x{{{b:X}}}" if a != b else f"\\x{{{a:X}}}" for a, b in CJK_RANGES)
    word, cjk_word = f"[\\p{{L}}\\p{{N}}\\p{{M}}&&[^{cjk}]]", f"[\\p{{L}}\\p{{N}}\\p{{M}}&&[{cjk}]]"
    return {
        "sl_words": {"type": "pattern", "pattern": f"{cjk_word}++|{word}++", "group": 0},
        "sl_idents": {"type": "pattern", "pattern": f"(?<!{word}){word}++(?:[_.:\\-]{word}++)+", "group": 0},
    }


def _index_body(analysis_name: str) -> dict[str, Any]:
    mappings = copy.deepcopy(events_index_body()["mappings"])
    analysis = analysis_settings()
    if analysis_name == "java_pattern":
        analysis["tokenizer"] = java_pattern_tokenizers()
        ident = analysis["analyzer"]["sl_ident"]
        ident["filter"] = [f for f in ident["filter"] if f not in ("sl_joined", "sl_non_empty")]
    if analysis_name == "no_subfields":
        for field in ("text", "args"):
            mappings["properties"][field].pop("fields")
    settings = {
        "number_of_shards": 1,
        "number_of_replicas": 0,
        "refresh_interval": "-1",
        "analysis": analysis,
    }
    return {"settings": settings, "mappings": mappings}


def bodies(rows: Iterable[dict[str, Any]], per_request: int = 2000) -> tuple[int, list[bytes]]:
    """The event documents of ``rows`` (wire records) as ``_bulk`` bodies: index actions, routed by
    session, projected as the indexer projects them."""
    lines: list[bytes] = []
    for row in rows:
        record = parse_record(row)
        if isinstance(record, EventRecord):
            action = {"index": {"_id": record.doc_id, "routing": record.session_id}}
            document = event_document(record, surface_state="current")
            lines.append(orjson.dumps(action) + b"\n" + orjson.dumps(document) + b"\n")
    return len(lines), [b"".join(lines[i : i + per_request]) for i in range(0, len(lines), per_request)]


def measure(view: OpenSearchView, analysis_name: str, payload: list[bytes]) -> dict[str, Any]:
    """Bulk ``payload`` into a fresh index of ``analysis_name``: wall, OpenSearch CPU, store."""
    index = f"{view.prefix}-{analysis_name.replace('_', '-')}"
    client = view.client
    client.indices.create(index=index, body=_index_body(analysis_name))

    def send(body: bytes) -> None:
        answer = client.transport.perform_request(
            "POST", f"/{index}/_bulk", body=body, params={"filter_path": "errors", "request_timeout": 300}
        )
        if answer.get("errors"):
            raise RuntimeError(f"bulk into {index} reported errors")

    try:
        window = CpuWindow.over_servers()
        window.start()
        started = time.monotonic()
        with ThreadPoolExecutor(2) as pool:
            list(pool.map(send, payload))
        client.indices.refresh(index=index)
        seconds = time.monotonic() - started
        window.stop()
        stats = client.indices.stats(index=index, metric="store")
        store = int(stats["_all"]["primaries"]["store"]["size_in_bytes"])
    finally:
        client.indices.delete(index=index)
    return {"analysis": analysis_name, "seconds": seconds, "store_bytes": store, "cpu": window.report()}


def _line(label: str, run: dict[str, Any]) -> str:
    cpu = run["cpu"]
    busy = 100 * (cpu["machine_busy_fraction"] or 0)
    return (
        f"{label} {run['seconds']:6.1f} s  OpenSearch {cpu.get('opensearch_cpu_s', 0):6.1f} CPU s"
        f"  machine {busy:3.0f}% busy  store {run['store_bytes'] / 2**20:6.1f} MiB"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=272_000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--analyses", default=",".join(ANALYSES))
    args = parser.parse_args(argv)
    names = args.analyses.split(",")
    events, payload = bodies(Corpus(CorpusConfig(entries=args.entries, seed=7)).records())
    print(f"{events:,} event documents in {len(payload)} requests", flush=True)
    view = OpenSearchView(
        OpenSearchSettings().model_copy(update={"index_prefix": f"bench-an-{uuid.uuid4().hex[:8]}"})
    )
    runs: list[dict[str, Any]] = []
    started = datetime.now(UTC)
    try:
        for round_ in range(args.rounds):
            shift = round_ % len(names)
            for name in names[shift:] + names[:shift]:
                run = measure(view, name, payload) | {"round": round_}
                runs.append(run)
                print(_line(f"round {round_} {name:15s}", run), flush=True)
    finally:
        view.close()
    _RESULTS.mkdir(exist_ok=True)
    out = _RESULTS / f"analysis-{started:%Y%m%dT%H%M%SZ}.json"
    result = {"started": started.isoformat(), "events": events, "machine": machine_info(), "runs": runs}
    out.write_text(json.dumps(result, indent=2))
    for name in names:
        mine = [r for r in runs if r["analysis"] == name]
        wall = sum(r["seconds"] for r in mine) / len(mine)
        cpu_s = sum(r["cpu"].get("opensearch_cpu_s", 0) for r in mine) / len(mine)
        print(f"mean {name:15s} {wall:6.1f} s  OpenSearch {cpu_s:6.1f} CPU s  ({events / wall:,.0f} docs/s)")
    print(f"result: {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
