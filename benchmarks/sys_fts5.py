"""SQLite FTS5 with the ``trigram`` tokenizer (the TypeScript family's reference provider).

Needs SQLite ≥ 3.34 (trigram tokenizer). The indexed column holds the accent-folded, lower-cased text
(:func:`benchmarks.folding.fold`; the tokenizer's own ``remove_diacritics`` option needs 3.45).
A query is every folded word as a quoted trigram phrase, ``AND``-ed (exact substring match per word:
FTS5 has no typo tolerance), ranked by ``bm25`` then recency. Scope lives in a plain table joined on
rowid, with a btree index on ``session_id`` and on ``workspace_id``. The database is a file in a temp
directory (journal off, synchronous off while loading; 256 MiB page cache).
"""

from __future__ import annotations

import shutil
import sqlite3
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from benchmarks.base import SystemUnavailable, doc_id, query_words, searchable_rows
from benchmarks.folding import fold

__all__ = ["Fts5System"]

_SCOPE_COLUMN = {"session": "session_id", "workspace": "workspace_id"}


class Fts5System:
    name = "sqlite_fts5_trigram"

    def __init__(self) -> None:
        if sqlite3.sqlite_version_info < (3, 34, 0):
            raise SystemUnavailable(
                f"SQLite {sqlite3.sqlite_version} has no FTS5 trigram tokenizer (needs 3.34)"
            )
        self.dir = Path(tempfile.mkdtemp(prefix="backscroll-bench-fts5-"))
        self.path = self.dir / "fts.db"
        self._db: sqlite3.Connection | None = None

    def load(self, entries: Iterable[dict[str, Any]]) -> None:
        db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        db.execute("PRAGMA journal_mode=OFF")
        db.execute("PRAGMA synchronous=OFF")
        db.execute("PRAGMA cache_size=-262144")
        db.execute("CREATE VIRTUAL TABLE fts USING fts5(key, tokenize='trigram')")
        db.execute(
            "CREATE TABLE meta (id INTEGER PRIMARY KEY, doc_id TEXT NOT NULL, workspace_id TEXT NOT NULL, "
            "session_id TEXT NOT NULL, seq INTEGER NOT NULL)"
        )
        db.execute("BEGIN")
        batch_meta: list[tuple[int, str, str, str, int]] = []
        batch_fts: list[tuple[int, str]] = []
        for rowid, e in enumerate(searchable_rows(entries), start=1):
            batch_meta.append((rowid, doc_id(e), e["workspace_id"], e["session_id"], e["seq"]))
            batch_fts.append((rowid, fold(e["text"])))
            if len(batch_fts) >= 5000:
                db.executemany("INSERT INTO meta VALUES (?, ?, ?, ?, ?)", batch_meta)
                db.executemany("INSERT INTO fts (rowid, key) VALUES (?, ?)", batch_fts)
                batch_meta.clear()
                batch_fts.clear()
        db.executemany("INSERT INTO meta VALUES (?, ?, ?, ?, ?)", batch_meta)
        db.executemany("INSERT INTO fts (rowid, key) VALUES (?, ?)", batch_fts)
        db.execute("COMMIT")
        db.execute("CREATE INDEX meta_session ON meta (session_id)")
        db.execute("CREATE INDEX meta_workspace ON meta (workspace_id)")
        db.execute("INSERT INTO fts (fts) VALUES ('optimize')")
        db.execute("ANALYZE")
        self._db = db

    def search(self, scope_kind: str, scope_id: str, query: str, limit: int = 10) -> list[str]:
        assert self._db is not None, "load() first"
        words = query_words(query)
        if not words:
            return []
        match = " AND ".join('"' + w.replace('"', '""') + '"' for w in words)
        sql = (
            "SELECT meta.doc_id FROM fts JOIN meta ON meta.id = fts.rowid "
            f"WHERE fts MATCH ? AND meta.{_SCOPE_COLUMN[scope_kind]} = ? "
            "ORDER BY bm25(fts), meta.seq DESC LIMIT ?"
        )
        return [r[0] for r in self._db.execute(sql, (match, scope_id, limit))]

    def index_bytes(self) -> int:
        assert self._db is not None
        pages = self._db.execute("PRAGMA page_count").fetchone()[0]
        size = self._db.execute("PRAGMA page_size").fetchone()[0]
        return int(pages) * int(size)

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None
        shutil.rmtree(self.dir, ignore_errors=True)
