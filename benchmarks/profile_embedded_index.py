"""Where the embedded index step spends its CPU: one catch-up of a copy of an appended file, with
the thread CPU time of each part (decoding, projection, event rows, full-text rows, vocabulary,
commits) and of each SQL statement the view runs.

    python -m benchmarks.profile_embedded_index APPENDED.db [--batch-max 2000]

``APPENDED.db`` is a file that ``backscroll append`` filled and nothing indexed yet (it is copied
first, never changed). The runner's collector headroom applies, as in ``backscroll index``.
Parts nest: ``events`` and ``fts+vocab`` are inside ``view.write``, ``vocab`` inside
``fts+vocab``; ``sql:`` lines are the statements inside them.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import sqlite3
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

from backscroll.indexer.sqlite.runner import embedded_runner


class _TimedConnection:
    """A connection whose ``execute``/``executemany`` add their thread CPU time to ``spent``."""

    def __init__(self, conn: sqlite3.Connection, spent: dict[str, float]) -> None:
        self._conn = conn
        self._spent = spent

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)

    def _timed(self, call: Callable[..., Any], sql: str, *args: Any) -> Any:
        started = time.thread_time()
        try:
            return call(sql, *args)
        finally:
            self._spent["sql: " + " ".join(sql.split()[:5])[:60]] += time.thread_time() - started

    def execute(self, sql: str, *args: Any) -> Any:
        return self._timed(self._conn.execute, sql, *args)

    def executemany(self, sql: str, *args: Any) -> Any:
        return self._timed(self._conn.executemany, sql, *args)


def _time_method(obj: object, name: str, key: str, spent: dict[str, float]) -> None:
    method = getattr(obj, name)

    def timed(*args: Any, **kwargs: Any) -> Any:
        started = time.thread_time()
        try:
            return method(*args, **kwargs)
        finally:
            spent[key] += time.thread_time() - started

    setattr(obj, name, timed)


def profile(appended: Path, batch_max: int) -> None:
    with tempfile.TemporaryDirectory(prefix="backscroll-index-profile-") as tmp:
        path = Path(tmp) / "copy.db"
        shutil.copyfile(appended, path)
        spent: dict[str, float] = defaultdict(float)
        with embedded_runner(path, batch_max=batch_max) as runner:
            view: Any = runner.view
            for obj, name, key in (
                (runner.source, "poll", "poll (read + decode)"),
                (runner.source, "commit", "commit"),
                (runner.processor, "prepare", "prepare (projection)"),
                (view, "write", "view.write"),
                (view, "_create_events", "events"),
                (view, "_index_text", "fts+vocab"),
                (view, "_add_vocab", "vocab"),
            ):
                _time_method(obj, name, key, spent)
            view.conn = _TimedConnection(view.conn, spent)
            before = resource.getrusage(resource.RUSAGE_SELF)
            started = time.monotonic()
            stats = runner.run(until_idle=True)
            wall = time.monotonic() - started
            after = resource.getrusage(resource.RUSAGE_SELF)
        cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
        print(
            f"consumed {stats.consumed}, indexed {stats.indexed}: wall {wall:.1f} s, CPU {cpu:.1f} s, "
            f"load average {os.getloadavg()[0]:.2f}"
        )
        for key, seconds in sorted(spent.items(), key=lambda item: -item[1]):
            print(f"  {seconds:7.2f} s  {key}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("appended", type=Path)
    parser.add_argument("--batch-max", type=int, default=2000)
    args = parser.parse_args(argv)
    profile(args.appended, args.batch_max)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
