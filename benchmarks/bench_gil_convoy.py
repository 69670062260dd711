"""Why the embedded index step does not overlap its Python with its SQLite writes (on demand).

    python -m benchmarks.bench_gil_convoy [--rows 2000] [--rounds 5] [--switch-ms 5]

The embedded load spends about half its time in Python (decode, projection, rows) and half in
SQLite (b-trees, FTS5). Overlapping them means writing batch N on one thread while another
projects batch N+1. The sqlite3 module releases the GIL around every ``sqlite3_step``; an
``executemany`` of N rows steps N times, and each time the writing thread must take the GIL back
from a thread running Python, which hands it over only when Python's switch interval
(``sys.getswitchinterval()``, 5 ms) runs out. This measures one batch written into an FTS5
trigram table (as ``events_tri``) on a second thread, in temporary files:

* ``executemany``: one ``INSERT`` per row;
* ``json_each``: one ``INSERT … SELECT … FROM json_each(?)`` for the whole batch (one step);

each alone and while the main thread runs pure Python, rounds interleaved. Prints wall and CPU
time of the writing thread per batch (median of the rounds).
"""

from __future__ import annotations

import argparse
import json
import random
import sqlite3
import statistics
import string
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

__all__ = ["main", "measure"]

_TABLE = "CREATE VIRTUAL TABLE t USING fts5(body, content='', columnsize=0, tokenize='trigram')"


def _texts(rows: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    words = ["".join(rng.choices(string.ascii_lowercase, k=rng.randint(3, 9))) for _ in range(20_000)]
    return [" ".join(rng.choices(words, k=40)) for _ in range(rows)]


def _writer(conn: sqlite3.Connection, how: str, texts: list[str]) -> Callable[[int], None]:
    def write(first: int) -> None:
        conn.execute("BEGIN")
        if how == "executemany":
            conn.executemany(
                "INSERT INTO t (rowid, body) VALUES (?, ?)", [(first + i, t) for i, t in enumerate(texts)]
            )
        else:
            conn.execute(
                "INSERT INTO t (rowid, body) SELECT ? + key, value FROM json_each(?)",
                (first, json.dumps(texts)),
            )
        conn.execute("COMMIT")

    return write


def _on_thread(write: Callable[[int], None], first: int) -> tuple[float, float]:
    out: list[tuple[float, float]] = []

    def run() -> None:
        wall, cpu = time.perf_counter(), time.thread_time()
        write(first)
        out.append((time.perf_counter() - wall, time.thread_time() - cpu))

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    return out[0]


def _busy(stop: threading.Event, laps: list[int]) -> None:
    while not stop.is_set():
        total = 0
        for i in range(1000):
            total += i * i
        laps[0] += 1


def _python_rate(seconds: float = 0.5) -> float:
    """Laps per second of the busy loop with nothing beside it."""
    stop, laps = threading.Event(), [0]
    timer = threading.Timer(seconds, stop.set)
    timer.start()
    started = time.perf_counter()
    _busy(stop, laps)
    return laps[0] / (time.perf_counter() - started)


def measure(rows: int, rounds: int, seed: int = 7) -> dict[str, dict[str, float]]:
    """Per way of writing: the median wall and CPU seconds of one batch of ``rows`` alone and beside
    busy Python, and the Python thread's speed meanwhile (1.0: as fast as alone), whose sum with
    ``alone / beside`` wall is the two threads' combined speed-up (2.0 on two free cores)."""
    texts = _texts(rows, seed)
    samples: dict[str, dict[str, list[tuple[float, float]]]] = {
        how: {"alone": [], "busy": []} for how in ("executemany", "json_each")
    }
    python: dict[str, list[float]] = {how: [] for how in samples}
    with tempfile.TemporaryDirectory(prefix="backscroll-convoy-") as tmp:
        conn = sqlite3.connect(Path(tmp) / "t.db", isolation_level=None, check_same_thread=False)
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute(_TABLE)
        first = 1
        for _ in range(rounds):
            for how, modes in samples.items():
                write = _writer(conn, how, texts)
                modes["alone"].append(_on_thread(write, first))
                first += rows
                rate = _python_rate()
                stop, laps = threading.Event(), [0]
                busy = threading.Thread(target=_busy, args=(stop, laps))
                busy.start()
                try:
                    modes["busy"].append(_on_thread(write, first))
                finally:
                    stop.set()
                    busy.join()
                python[how].append(laps[0] / modes["busy"][-1][0] / rate)
                first += rows
        conn.close()
    out: dict[str, dict[str, float]] = {}
    for how, modes in samples.items():
        row = out[how] = {}
        for mode, got in modes.items():
            row[f"{mode}_wall_s"] = statistics.median(w for w, _ in got)
            row[f"{mode}_cpu_s"] = statistics.median(c for _, c in got)
        row["python_speed"] = statistics.median(python[how])
        row["combined"] = row["python_speed"] + row["alone_wall_s"] / row["busy_wall_s"]
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=2000, help="rows per batch (the indexer's batch_max)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--switch-ms", type=float, default=None, help="set Python's switch interval first")
    args = parser.parse_args(argv)
    if args.switch_ms is not None:
        sys.setswitchinterval(args.switch_ms / 1000)
    print(
        f"{args.rows} rows per batch, switch interval {sys.getswitchinterval() * 1000:g} ms, "
        f"median of {args.rounds} rounds"
    )
    for how, row in measure(args.rows, args.rounds).items():
        ms = {k: f"{v * 1000:.0f} ms" for k, v in row.items() if k.endswith("_s")}
        print(
            f"{how:12} alone {ms['alone_wall_s']} wall, {ms['alone_cpu_s']} CPU"
            f" | beside busy Python {ms['busy_wall_s']} wall, {ms['busy_cpu_s']} CPU,"
            f" Python at {row['python_speed']:.2f}x its speed | both threads {row['combined']:.2f}x one"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
