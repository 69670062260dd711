"""On-demand benchmarks (issue 4): relevance and latency of backscroll vs pg_trgm, SQLite FTS5, ILIKE.

Never collected by the default test run (``testpaths`` are tests/unit and tests/integration, and no
file here is named ``test_*.py``). Entry points: ``python -m tests.benchmarks.run --help``, and for
issue 15's speed table in one run ``python -m tests.benchmarks.speed --help``.
"""
