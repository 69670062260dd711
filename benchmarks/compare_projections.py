"""Compares two embedded projections of the same log (e.g. the serial runner's and the bulk
catch-up's, :mod:`backscroll.indexer.sqlite.catchup`).

    python -m benchmarks.compare_projections EXPECTED.db GOT.db

Every row of ``events`` (rowid included), ``sessions``, ``indexer_positions`` and ``dead_letters``;
the vocabulary as a set of rows (its term ids follow set iteration order, which differs from process
to process in the product too); each full-text table's index as its ``fts5vocab`` rows (term,
documents, occurrences); and ``MATCH`` results for a sample of vocabulary terms (event rowids, and
the ``(ws, term)`` pairs ``vocab_tri`` finds).
"""

from __future__ import annotations

import hashlib
import random
import sqlite3
import sys
from collections.abc import Iterable
from pathlib import Path

__all__ = ["compare", "main"]

_FTS = ("events_words", "events_tri", "events_ident", "events_cjk", "vocab_tri")
_SAMPLE = 60


def _digest(rows: Iterable[tuple[object, ...]]) -> tuple[int, str]:
    h, n = hashlib.sha256(), 0
    for row in rows:
        h.update(repr(row).encode())
        n += 1
    return n, h.hexdigest()[:16]


def _open(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    for table in _FTS:
        conn.execute(f"CREATE VIRTUAL TABLE temp.v_{table} USING fts5vocab(main, {table}, row)")
    return conn


def _facts(conn: sqlite3.Connection, terms: list[tuple[str, str]]) -> dict[str, object]:
    facts: dict[str, object] = {
        "events": _digest(conn.execute("SELECT * FROM events ORDER BY rid")),
        "sessions": _digest(conn.execute("SELECT * FROM sessions ORDER BY session_id")),
        "vocab": _digest(
            sorted(conn.execute("SELECT ws, term, len, rterm, typeof(len) FROM vocab").fetchall())
        ),
        "indexer_positions": conn.execute("SELECT * FROM indexer_positions ORDER BY name").fetchall(),
        "dead_letters": conn.execute("SELECT count(*) FROM dead_letters").fetchone()[0],
    }
    for table in _FTS:
        facts[f"fts5vocab {table}"] = _digest(conn.execute(f"SELECT * FROM v_{table} ORDER BY term"))
    for ws, term in terms:
        quoted = '"' + term.replace('"', '""') + '"'
        facts[f"events_words {term!r}"] = conn.execute(
            "SELECT rowid FROM events_words WHERE events_words MATCH ? ORDER BY rowid", (quoted,)
        ).fetchall()
        if len(term) >= 3:
            facts[f"events_tri {term!r}"] = conn.execute(
                "SELECT rowid FROM events_tri WHERE events_tri MATCH ? ORDER BY rowid", (quoted,)
            ).fetchall()
            facts[f"vocab_tri {term!r}"] = sorted(
                conn.execute(
                    "SELECT ws, term FROM vocab WHERE ws = ? AND tid IN "
                    "(SELECT rowid FROM vocab_tri WHERE vocab_tri MATCH ?)",
                    (ws, " AND ".join(f'"{term[i : i + 3]}"' for i in range(len(term) - 2))),
                ).fetchall()
            )
    return facts


def compare(expected: Path, got: Path) -> str:
    """``"same (…)"`` or the facts that differ."""
    a, b = _open(expected), _open(got)
    try:
        every = a.execute("SELECT ws, term FROM vocab ORDER BY ws, term").fetchall()
        terms = random.Random(7).sample(every, min(_SAMPLE, len(every)))
        left, right = _facts(a, terms), _facts(b, terms)
    finally:
        a.close()
        b.close()
    differ = [key for key in left if left[key] != right[key]]
    if differ:
        return "DIFFERENT: " + "; ".join(f"{k}: {left[k]!r} vs {right[k]!r}" for k in differ[:10])
    counts = {k: v[0] for k, v in left.items() if isinstance(v, tuple)}
    return f"same ({len(left)} facts; rows: {counts})"


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    result = compare(Path(args[0]), Path(args[1]))
    print(result)
    return 0 if result.startswith("same") else 1


if __name__ == "__main__":
    raise SystemExit(main())
