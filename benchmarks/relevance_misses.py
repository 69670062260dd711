"""Why relevance queries miss: re-run the queries of a relevance result with the current code and
show, per missed query, the readings of its window and where its ground truth lands.

Takes a result file of ``benchmarks.run relevance`` (it keeps its query list) and a corpus
that run loaded: an OpenSearch index prefix, or an embedded file built with ``--load`` (the same
seed and size give the same corpus). Prints, per variant, recall@10 now and (embedded) its
*ceiling*: the share of the ground truth (up to 10 entries) that ``score_text`` matches at all. The
benchmark's ground truth counts the clean word inside longer words, which ``score_text`` alone
cannot reach for a typo of it; the provider core reaches them through the typo's readings
(``readings.add_inside``), so recall may now pass this ceiling. Not collected by pytest.

    python -m benchmarks.relevance_misses --load 1000000 --sqlite DIR           # build DIR
    python -m benchmarks.relevance_misses RESULT.json --sqlite DIR --variants id_substring
    python -m benchmarks.relevance_misses RESULT.json --index-prefix P            # OpenSearch
"""

from __future__ import annotations

import argparse
import json
import sqlite3
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from backscroll.query import OpenSearchProvider, Scope, SessionQueryRequest
from backscroll.query import typo_readings as readings
from backscroll.query.deadline import Deadline
from backscroll.query.engine import EngineHit, EngineQuery
from backscroll.query.provider import SearchProvider
from backscroll.query.scoring import score_text, text_reading
from backscroll.query.sqlite.provider import SQLiteProvider
from benchmarks.corpus import Corpus, CorpusConfig
from benchmarks.sys_embedded import EmbeddedSystem

_MISSED = ("typo1_insert", "typo1_delete", "id_substring")


def _load(entries: int, seed: int, directory: Path) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    system = EmbeddedSystem(directory)
    system.load(Corpus(CorpusConfig(entries=entries, seed=seed)).records())
    system._own_dir = False  # keep the file
    system.close()


class _Providers:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.cache: dict[tuple[str, str], SearchProvider] = {}

    def get(self, scope_kind: str, scope_id: str) -> SearchProvider:
        key = (scope_kind, scope_id)
        if key not in self.cache:
            scope = Scope.session(scope_id) if scope_kind == "session" else Scope.workspace(scope_id)
            if self.args.sqlite is not None:
                path = self.args.sqlite / "backscroll.db"
                self.cache[key] = SQLiteProvider(scope, path, request_timeout_s=60.0)
            else:
                self.cache[key] = OpenSearchProvider(
                    scope=scope, hosts=self.args.opensearch, index_prefix=self.args.index_prefix
                )
        return self.cache[key]

    def close(self) -> None:
        for provider in self.cache.values():
            provider.close()


def _window(provider: SearchProvider, request: SessionQueryRequest) -> tuple[Any, list[EngineHit]]:
    """The plan and the first :data:`readings.WINDOW` hits in the order inside a tier
    (before the readings)."""
    plan, session_id = provider._plan(request)
    query = EngineQuery(plan=plan, session_id=session_id, single=session_id is not None, size=readings.WINDOW)
    engine: Any = provider.engine
    hits: list[EngineHit] = engine.rank(query, Deadline(60.0, "SESSION_QUERY_INDEX_FAILED"))
    return plan, hits


def _explain(
    query: dict[str, Any], provider: SearchProvider, request: SessionQueryRequest, recall: float
) -> None:
    plan, hits = _window(provider, request)
    relevant = set(query["relevant"])
    order = readings.diversify(plan, hits)
    found = [text_reading(h.text, plan.raw_words, plan.words) for h in hits]
    counts = Counter(
        (readings.tier_of(h.score), f[1] if f else ("?",)) for h, f in zip(hits, found, strict=True)
    )
    where = [i for i, h in enumerate(order) if f"{h.session_id}:{h.seq}" in relevant]
    print(
        f"{query['variant']} {query['scope_kind']} {query['text']!r} ({query.get('note', '')}): "
        f"ground truth {len(relevant)}, recall {recall:.2f}, window {len(hits)}, ground truth at {where[:10]}"
    )
    top = sorted(counts.items(), key=lambda kv: (-kv[0][0], -kv[1]))[:16]
    print("    readings " + ", ".join(f"{tier:g}:{'/'.join(r) or '-'}×{n}" for (tier, r), n in top))


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("result", type=Path, nargs="?", help="a relevance result JSON with its query list")
    parser.add_argument("--sqlite", type=Path, help="directory of the embedded file (backscroll.db)")
    parser.add_argument("--index-prefix", help="OpenSearch index prefix the run loaded")
    parser.add_argument("--opensearch", default="http://127.0.0.1:9200")
    parser.add_argument("--variants", default=",".join(_MISSED), help="comma list ('all': every variant)")
    parser.add_argument("--load", type=int, help="build the embedded file of this many entries in --sqlite")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--quiet", action="store_true", help="only the per-variant lines")
    args = parser.parse_args()
    if args.load:
        if args.sqlite is None:
            raise SystemExit("--load needs --sqlite DIR")
        _load(args.load, args.seed, args.sqlite)
        return
    if args.result is None or (args.sqlite is None) == (args.index_prefix is None):
        raise SystemExit("give RESULT.json and one of --sqlite DIR or --index-prefix P")
    queries = json.loads(args.result.read_text("utf-8"))["query_list"]
    wanted = None if args.variants == "all" else set(args.variants.split(","))
    providers = _Providers(args)
    db = sqlite3.connect(args.sqlite / "backscroll.db") if args.sqlite is not None else None
    recall: dict[str, list[float]] = defaultdict(list)
    ceiling: dict[str, list[float]] = defaultdict(list)
    try:
        for query in queries:
            if wanted is not None and query["variant"] not in wanted:
                continue
            provider = providers.get(query["scope_kind"], query["scope_id"])
            request = SessionQueryRequest(
                session_id=query["scope_id"] if query["scope_kind"] == "session" else None,
                query=query["text"],
                limit=10,
            )
            relevant = set(query["relevant"])
            got = [f"{m.session_id}:{m.seq}" for m in provider.search(request).matches]
            share = len(relevant.intersection(got)) / min(len(relevant), 10)
            recall[query["variant"]].append(share)
            if db is not None:
                plan, _ = provider._plan(request)
                reachable = sum(
                    1
                    for doc in relevant
                    if score_text(_text(db, doc), plan.raw_words, plan.words) is not None
                )
                ceiling[query["variant"]].append(min(reachable, 10) / min(len(relevant), 10))
            if share < 1 and not args.quiet:
                _explain(query, provider, request, share)
    finally:
        providers.close()
        if db is not None:
            db.close()
    for variant, shares in recall.items():
        line = f"{variant:18} n={len(shares):4} recall@10 {sum(shares) / len(shares):.3f}"
        if ceiling[variant]:  # embedded only: the ground truth's texts are read from the file
            line += f"  ceiling {sum(ceiling[variant]) / len(ceiling[variant]):.3f}"
        print(line)


def _text(db: sqlite3.Connection, doc: str) -> str:
    session_id, seq = doc.rsplit(":", 1)
    row = db.execute(
        "SELECT text FROM events WHERE session_id = ? AND seq = ?", (session_id, int(seq))
    ).fetchone()
    return str(row[0]) if row else ""


if __name__ == "__main__":
    main()
