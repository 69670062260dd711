"""The embedded bulk catch-up (what ``backscroll index`` runs on a long backlog), timed per thread,
optionally against another checkout, the two run alternately.

    python -m benchmarks.bench_catch_up APPENDED.db [--runs 3] [--against CHECKOUT]

``APPENDED.db`` is a file that ``backscroll append`` filled and nothing indexed yet; each run
catches up a fresh copy of it, in a process of its own. For the load row's corpus (272k entries,
seed 7):

    python -c 'from pathlib import Path; from benchmarks.bench_load import _write_corpus;
               _write_corpus(272000, 7, Path("corpus.jsonl"))'
    BACKSCROLL_SQLITE_PATH=appended.db backscroll append corpus.jsonl

Each run prints its wall time, its process CPU time and the CPU time of the catch-up's two threads:
the writer (SQLite statements) and the projecting thread (read, decode, project, build rows). With
``--against``, a checkout of another commit (``git worktree add /tmp/before HEAD~1``), runs
alternate between it and this checkout: its ``ingest/src``, ``indexer/src``, ``query/src`` and
``src`` go first on ``PYTHONPATH``, so only the product code differs, not this harness.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

_SOURCE_DIRS = ("ingest/src", "indexer/src", "query/src", "src")
_HARNESS_ROOT = Path(__file__).resolve().parents[1]


def _one(appended: Path) -> dict[str, Any]:
    """One catch-up of a copy of ``appended`` in this process."""
    import backscroll.indexer as indexer_package
    import backscroll.indexer.sqlite.catchup as catchup
    from backscroll.indexer.sqlite.runner import embedded_runner

    threads: dict[str, float] = {}

    def timed(name: str, key: str) -> None:
        method = getattr(catchup.SQLiteCatchUp, name)

        def wrapper(*args: Any) -> Any:
            started = time.thread_time()
            try:
                return method(*args)
            finally:
                threads[key] = time.thread_time() - started

        setattr(catchup.SQLiteCatchUp, name, wrapper)

    timed("_write_all", "writer_cpu_s")
    timed("_overlapped", "projecting_cpu_s")
    with tempfile.TemporaryDirectory(prefix="backscroll-catch-up-") as tmp:
        path = Path(tmp) / "copy.db"
        shutil.copyfile(appended, path)
        with embedded_runner(path, bulk_catch_up=True) as runner:
            before = resource.getrusage(resource.RUSAGE_SELF)
            started = time.perf_counter()
            stats = runner.run(until_idle=True)
            wall = time.perf_counter() - started
            after = resource.getrusage(resource.RUSAGE_SELF)
        size = path.stat().st_size
    return {
        "code": str(Path(indexer_package.__path__[0]).parents[3]),
        "indexed": stats.indexed,
        "wall_s": wall,
        "user_s": after.ru_utime - before.ru_utime,
        "sys_s": after.ru_stime - before.ru_stime,
        "file_mib": size / 2**20,
        **threads,
    }


def _run(appended: Path, checkout: Path | None) -> dict[str, Any]:
    env = dict(os.environ)
    if checkout is not None:
        paths = [str(checkout / part) for part in _SOURCE_DIRS]
        env["PYTHONPATH"] = os.pathsep.join([*paths, env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    out = subprocess.run(
        [sys.executable, "-m", "benchmarks.bench_catch_up", "--one", str(appended)],
        env=env,
        cwd=_HARNESS_ROOT,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    result: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    return result


def _line(label: str, result: dict[str, Any]) -> str:
    threads = " ".join(
        f"{key.removesuffix('_cpu_s')} {result[key]:.1f}"
        for key in ("writer_cpu_s", "projecting_cpu_s")
        if key in result
    )
    return (
        f"{label:7} wall {result['wall_s']:6.2f} s  user {result['user_s']:5.1f} s"
        f"  sys {result['sys_s']:4.1f} s"
        f"  thread CPU: {threads or '-'}  ({result['indexed']} indexed, {result['file_mib']:.1f} MiB)"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("appended", type=Path)
    parser.add_argument("--runs", type=int, default=3, help="runs of each side (default 3)")
    parser.add_argument("--against", type=Path, help="a checkout to run alternately with this one")
    parser.add_argument("--one", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one:
        print(json.dumps(_one(args.appended)))
        return 0
    sides: list[tuple[str, Path | None]] = [("this", None)]
    if args.against is not None:
        sides.insert(0, ("against", args.against.resolve()))
    results: dict[str, list[dict[str, Any]]] = {label: [] for label, _ in sides}
    for _ in range(args.runs):
        for label, checkout in sides:
            result = _run(args.appended, checkout)
            results[label].append(result)
            print(_line(label, result), flush=True)
    for label, runs in results.items():
        print(f"{label}: {runs[0]['code']}: mean wall {statistics.fmean(r['wall_s'] for r in runs):.2f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
