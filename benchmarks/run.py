"""Benchmark entry point.

    python -m benchmarks.run relevance --entries 100000            # all systems, 100k entries
    python -m benchmarks.run relevance --entries 100000,1000000 --report
    python -m benchmarks.run relevance --entries 20000 --systems pg_trgm,fts5,ilike
    python -m benchmarks.run corpus --entries 1000000 --out /tmp/corpus.jsonl
    python -m benchmarks.run report                                # docs/benchmarks.md + docs/img/*.png

Run from the repository root, with the packages installed (``scripts/setup``). Needs the ``[bench]`` extra
(``pip install -e '.[bench]'``), PostgreSQL server packages for the pg baselines (installed with
apt-get when missing and running as root), and for the backscroll system its provider plus a running
OpenSearch (``backscroll up``). Results go to ``benchmarks/results/`` (git-ignored).
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

from rich.console import Console

from benchmarks.bench_relevance import ALL_SYSTEMS, RESULTS_DIR, RelevanceConfig, run_relevance

ROOT = Path(__file__).resolve().parents[1]


def _sizes(text: str) -> list[int]:
    sizes = []
    for part in text.split(","):
        part = part.strip().lower().replace("_", "")
        scale = 1
        if part.endswith("k"):
            part, scale = part[:-1], 1000
        elif part.endswith("m"):
            part, scale = part[:-1], 1_000_000
        sizes.append(int(float(part) * scale))
    return sizes


def _pg_settings(text: str) -> tuple[tuple[str, float], ...]:
    settings = []
    for part in text.split(","):
        mode, _, threshold = part.partition(":")
        settings.append((mode.strip(), float(threshold)))
    return tuple(settings)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.run",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="command", required=True)

    rel = sub.add_parser("relevance", help="relevance (recall@10, MRR@10) and latency, all systems, one run")
    rel.add_argument("--entries", default="100000", help="corpus size(s), comma separated; 20k, 1M accepted")
    rel.add_argument("--seed", type=int, default=7)
    rel.add_argument("--queries", type=int, default=40, help="queries per variant and scope (default 40)")
    rel.add_argument(
        "--systems", default=",".join(ALL_SYSTEMS), help=f"comma list of {', '.join(ALL_SYSTEMS)}"
    )
    rel.add_argument(
        "--pg-settings",
        default="word:0.6,word:0.4,strict:0.5",
        help="pg_trgm settings, MODE:THRESHOLD with MODE word or strict",
    )
    rel.add_argument("--limit", type=int, default=10)
    rel.add_argument("--warmup", type=int, default=20)
    rel.add_argument(
        "--block", type=int, default=1, help="queries each system runs in a row (default 1: query by query)"
    )
    rel.add_argument("--opensearch", default="http://127.0.0.1:9200")
    rel.add_argument(
        "--index-prefix", default="bench", help="OpenSearch index prefix; '<prefix>*' is deleted"
    )
    rel.add_argument("--max-df", type=int, default=None, help="distinctive word cut-off (default 3 × passes)")
    rel.add_argument("--no-validate", action="store_true", help="skip parse_record on every record")
    rel.add_argument("--no-per-query", action="store_true", help="leave per-query rows out of the JSON")
    rel.add_argument("--out", type=Path, default=RESULTS_DIR)
    rel.add_argument("--report", action="store_true", help="render docs/benchmarks.md and plots afterwards")

    cor = sub.add_parser("corpus", help="write the corpus as JSONL (wire-format records)")
    cor.add_argument("--entries", default="100000")
    cor.add_argument("--seed", type=int, default=7)
    cor.add_argument("--out", type=Path, required=True)

    rep = sub.add_parser("report", help="render docs/benchmarks.md and docs/img/*.png from results")
    rep.add_argument("--results", type=Path, default=RESULTS_DIR)
    rep.add_argument("--docs", type=Path, default=ROOT / "docs" / "benchmarks.md")
    rep.add_argument("--img", type=Path, default=None)

    args = parser.parse_args(argv)
    console = Console()
    command = "python -m benchmarks.run " + shlex.join(argv)

    if args.command == "relevance":
        systems = tuple(s.strip() for s in args.systems.split(",") if s.strip())
        for entries in _sizes(args.entries):
            cfg = RelevanceConfig(
                entries=entries,
                seed=args.seed,
                queries_per_variant=args.queries,
                systems=systems,
                pg_settings=_pg_settings(args.pg_settings),
                limit=args.limit,
                warmup=args.warmup,
                block=args.block,
                opensearch_hosts=args.opensearch,
                index_prefix=args.index_prefix,
                validate=not args.no_validate,
                max_df=args.max_df,
                keep_per_query=not args.no_per_query,
                command=command,
            )
            console.rule(f"relevance · {entries:,} entries")
            path = run_relevance(cfg, console=console, out=args.out)
            console.print(f"result: {path}")
        if args.report:
            from benchmarks.report import write_docs

            docs, images = write_docs(args.out)
            console.print(f"wrote {docs} and {', '.join(str(p) for p in images)}")
        return 0

    if args.command == "corpus":
        from benchmarks.corpus import Corpus, CorpusConfig

        for entries in _sizes(args.entries):
            corpus = Corpus(CorpusConfig(entries=entries, seed=args.seed))
            count = corpus.write_jsonl(args.out)
            console.print(f"wrote {count:,} records ({corpus.stats.events:,} events) to {args.out}")
            console.print(corpus.stats.describe())
        return 0

    from benchmarks.report import write_docs

    docs, images = write_docs(args.results, args.docs, args.img)
    console.print(f"wrote {docs} and {', '.join(str(p) for p in images)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
