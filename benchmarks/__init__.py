"""On-demand benchmarks: relevance and latency of backscroll vs pg_trgm, SQLite FTS5, ILIKE; the speed
table; the append, index, read and console paths.

A package of the repository, outside the test tree and outside every distribution: pytest never
collects it, and the installed ``backscroll`` command does not run it. Run it from the repository
root with the packages installed (``scripts/setup``) and the ``bench`` extra: ``python -m
benchmarks.run --help`` (relevance), ``python -m benchmarks.speed --help`` (the speed table in one
run), or any ``python -m benchmarks.bench_*`` module.
"""
