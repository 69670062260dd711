"""PostgreSQL ``pg_trgm``: GIN trigram index over an accent-folded, lower-cased key.

The key is folded in Python before ``COPY`` with the same function as the ground truth
(:func:`benchmarks.folding.fold`, what ``unaccent`` + ``lower`` would give), so query words are
folded the same way. Every query word must match (``AND``), with

* ``word``   mode: ``word <% key``  (``word_similarity(word, key) >= pg_trgm.word_similarity_threshold``)
* ``strict`` mode: ``word <<% key`` (``strict_word_similarity`` against
  ``pg_trgm.strict_word_similarity_threshold``)

ranked by the summed similarity of the words, then by recency (``seq DESC``). Scope is a ``WHERE``
filter on ``session_id`` / ``workspace_id``, each with its own btree index; the planner picks between
them and the GIN index. One table serves every threshold setting; each setting is its own system with
its own connection and ``SET``.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

from benchmarks.base import doc_id, query_words, searchable_rows
from benchmarks.folding import fold
from benchmarks.pg import PgCluster

__all__ = ["PgTrgmSystem", "PgTrgmTable", "label"]

TABLE = "trgm_entries"
_SCOPE_COLUMN = {"session": "session_id", "workspace": "workspace_id"}


def label(mode: str, threshold: float) -> str:
    function = "word_similarity" if mode == "word" else "strict_word_similarity"
    return f"pg_trgm {function}≥{threshold:g}"


class PgTrgmTable:
    """The folded table and its indexes, built once and shared by the threshold settings."""

    def __init__(self, cluster: PgCluster) -> None:
        self.cluster = cluster
        self.loaded = False
        self.load_seconds = 0.0

    def load(self, entries: Iterable[dict[str, Any]]) -> None:
        started = time.perf_counter()
        with self.cluster.connect() as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
            conn.execute(f"DROP TABLE IF EXISTS {TABLE}")
            conn.execute(
                f"CREATE TABLE {TABLE} (doc_id text NOT NULL, workspace_id text NOT NULL, "
                "session_id text NOT NULL, seq bigint NOT NULL, key text NOT NULL)"
            )
            with (
                conn.cursor() as cur,
                cur.copy(f"COPY {TABLE} (doc_id, workspace_id, session_id, seq, key) FROM STDIN") as copy,
            ):
                for e in searchable_rows(entries):
                    copy.write_row((doc_id(e), e["workspace_id"], e["session_id"], e["seq"], fold(e["text"])))
            conn.execute(f"CREATE INDEX {TABLE}_key_trgm ON {TABLE} USING gin (key gin_trgm_ops)")
            conn.execute(f"CREATE INDEX {TABLE}_session ON {TABLE} (session_id)")
            conn.execute(f"CREATE INDEX {TABLE}_workspace ON {TABLE} (workspace_id)")
            conn.execute(f"VACUUM ANALYZE {TABLE}")
        self.loaded = True
        self.load_seconds = time.perf_counter() - started

    def size_bytes(self) -> int:
        with self.cluster.connect() as conn:
            row = conn.execute("SELECT pg_total_relation_size(%s)", (TABLE,)).fetchone()
        return int(row[0]) if row else 0


class PgTrgmSystem:
    def __init__(self, table: PgTrgmTable, *, mode: str = "word", threshold: float = 0.6) -> None:
        if mode not in ("word", "strict"):
            raise ValueError("mode must be 'word' or 'strict'")
        self.table = table
        self.mode = mode
        self.threshold = threshold
        self.name = label(mode, threshold)
        self.shared_load = False
        self._conn: Any = None

    def load(self, entries: Iterable[dict[str, Any]]) -> None:
        if self.table.loaded:
            self.shared_load = True
        else:
            self.table.load(entries)
        self._conn = self.table.cluster.connect(prepare_threshold=1)
        setting = "word_similarity_threshold" if self.mode == "word" else "strict_word_similarity_threshold"
        self._conn.execute(f"SET pg_trgm.{setting} = {float(self.threshold)}")

    def search(self, scope_kind: str, scope_id: str, query: str, limit: int = 10) -> list[str]:
        words = query_words(query)
        if not words:
            return []
        op, fn = ("<%%", "word_similarity") if self.mode == "word" else ("<<%%", "strict_word_similarity")
        where = " AND ".join(f"%s {op} key" for _ in words)
        score = " + ".join(f"{fn}(%s, key)" for _ in words)
        sql = (
            f"SELECT doc_id FROM {TABLE} WHERE {_SCOPE_COLUMN[scope_kind]} = %s AND {where} "
            f"ORDER BY {score} DESC, seq DESC LIMIT %s"
        )
        rows = self._conn.execute(sql, (scope_id, *words, *words, limit)).fetchall()
        return [r[0] for r in rows]

    def index_bytes(self) -> int:
        return self.table.size_bytes()

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None
