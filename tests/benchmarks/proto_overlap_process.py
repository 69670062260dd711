"""The ``overlap-process`` mode of :mod:`tests.benchmarks.proto_overlap` (prototype, on demand).

As ``overlap``, but the writes run in a second process (spawned, its own connection) instead of a
second thread: the writer never waits for the main thread's GIL between its statements. The jobs
(one batch's JSON texts) cross a ``multiprocessing`` queue of two.
"""

from __future__ import annotations

import multiprocessing
import queue
import time
from multiprocessing.queues import Queue
from pathlib import Path

from tests.benchmarks.proto_overlap import Job, Parts, build_jobs, open_writer, write_job

from sessionlog.indexer.collector import gc_headroom
from sessionlog.indexer.sqlite_view import SQLiteView
from sessionlog.ingest.sqlite_log import connect

__all__ = ["project_in_two_processes"]


def _writer(path: str, jobs: Queue[Job | None], results: Queue[dict[str, float | str]]) -> None:
    conn = open_writer(Path(path))
    view = SQLiteView(conn=conn)
    spent: dict[str, float | str] = {}
    numbers: dict[str, float] = {"write_cpu_s": 0.0, "batches": 0.0, "entries": 0.0}
    numbers["writer waits for a batch (wall s)"] = 0.0
    parts = Parts(numbers)
    try:
        with gc_headroom():
            while True:
                started = time.perf_counter()
                job = jobs.get()
                numbers["writer waits for a batch (wall s)"] += time.perf_counter() - started
                if job is None:
                    break
                cpu = time.thread_time()
                write_job(conn, view, job, parts)
                numbers["write_cpu_s"] += time.thread_time() - cpu
                numbers["batches"] += 1
                numbers["entries"] += job.created
        wal = Path(f"{path}-wal")
        numbers["wal_mib_at_end"] = wal.stat().st_size / 2**20 if wal.exists() else 0.0
        spent.update(numbers)
    except BaseException as err:
        spent["error"] = repr(err)
    finally:
        conn.close()
        results.put(spent)


def project_in_two_processes(path: Path) -> dict[str, float]:
    """Project the whole log of ``path``: the Python side here, the writes in a child process."""
    open_writer(path).close()  # the projection's tables exist before either side reads them
    ctx = multiprocessing.get_context("spawn")
    jobs: Queue[Job | None] = ctx.Queue(maxsize=2)
    results: Queue[dict[str, float | str]] = ctx.Queue()
    child = ctx.Process(target=_writer, args=(str(path), jobs, results), name="proto-writer")
    child.start()
    read = connect(path, create=False)
    spent: dict[str, float] = {"python_cpu_s": 0.0, "main waits for the writer (wall s)": 0.0}
    parts = Parts(spent)
    started = time.perf_counter()
    with gc_headroom():
        produced = build_jobs(read, parts)
        while child.is_alive():
            cpu = time.thread_time()
            job = next(produced, None)
            spent["python_cpu_s"] += time.thread_time() - cpu
            waited = time.perf_counter()
            while child.is_alive():
                try:
                    jobs.put(job, timeout=1.0)
                    break
                except queue.Full:
                    continue
            spent["main waits for the writer (wall s)"] += time.perf_counter() - waited
            if job is None:
                break
        got = results.get()
        child.join()
    spent["projection loop: wall s"] = time.perf_counter() - started
    read.close()
    if "error" in got or child.exitcode != 0:
        raise SystemExit(f"the writer process failed: {got.get('error')} (exit {child.exitcode})")
    spent.update({k: float(v) for k, v in got.items()})
    return spent
