"""The floor: ``text ILIKE '%word%' AND ...`` on PostgreSQL, what several agent frameworks ship.

The raw text is stored as is (no folding: ``ILIKE`` handles case, not accents) and the query's words
are matched as typed, every word required, newest first (``ORDER BY seq DESC``). Scope is a ``WHERE``
filter with a btree index on ``session_id`` and on ``workspace_id``; there is no trigram index, so
every entry in scope is scanned.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from benchmarks.base import doc_id, searchable_rows
from benchmarks.folding import TOKEN_RE
from benchmarks.pg import PgCluster

__all__ = ["IlikeSystem"]

TABLE = "ilike_entries"
_SCOPE_COLUMN = {"session": "session_id", "workspace": "workspace_id"}


def _like_pattern(word: str) -> str:
    escaped = word.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


class IlikeSystem:
    name = "ilike"

    def __init__(self, cluster: PgCluster) -> None:
        self.cluster = cluster
        self._conn: Any = None

    def load(self, entries: Iterable[dict[str, Any]]) -> None:
        with self.cluster.connect() as conn:
            conn.execute(f"DROP TABLE IF EXISTS {TABLE}")
            conn.execute(
                f"CREATE TABLE {TABLE} (doc_id text NOT NULL, workspace_id text NOT NULL, "
                "session_id text NOT NULL, seq bigint NOT NULL, text text NOT NULL)"
            )
            with (
                conn.cursor() as cur,
                cur.copy(f"COPY {TABLE} (doc_id, workspace_id, session_id, seq, text) FROM STDIN") as copy,
            ):
                for e in searchable_rows(entries):
                    copy.write_row((doc_id(e), e["workspace_id"], e["session_id"], e["seq"], e["text"]))
            conn.execute(f"CREATE INDEX {TABLE}_session ON {TABLE} (session_id)")
            conn.execute(f"CREATE INDEX {TABLE}_workspace ON {TABLE} (workspace_id)")
            conn.execute(f"VACUUM ANALYZE {TABLE}")
        self._conn = self.cluster.connect(prepare_threshold=1)

    def search(self, scope_kind: str, scope_id: str, query: str, limit: int = 10) -> list[str]:
        words: list[str] = []
        for word in TOKEN_RE.findall(query):
            if word.lower() not in (w.lower() for w in words):
                words.append(word)
        if not words:
            return []
        where = " AND ".join("text ILIKE %s" for _ in words)
        sql = (
            f"SELECT doc_id FROM {TABLE} WHERE {_SCOPE_COLUMN[scope_kind]} = %s AND {where} "
            "ORDER BY seq DESC LIMIT %s"
        )
        rows = self._conn.execute(sql, (scope_id, *(_like_pattern(w) for w in words), limit)).fetchall()
        return [r[0] for r in rows]

    def index_bytes(self) -> int:
        with self.cluster.connect() as conn:
            row = conn.execute("SELECT pg_total_relation_size(%s)", (TABLE,)).fetchone()
        return int(row[0]) if row else 0

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None
