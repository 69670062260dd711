"""Where the bytes of the size row are: the embedded file by part, PostgreSQL's table by relation.

    python -m benchmarks.size_parts FILE.db        # the parts of one embedded file

The embedded file's pages are counted per b-tree with SQLite's ``dbstat`` table, then grouped by
what they hold (the log, the events' rows, their b-tree indexes, the full-text indexes, the typo
vocabulary, the session documents); pages on the free list and the WAL are their own parts. The
PostgreSQL peer is split into its heap (with TOAST) and each index. The speed report prints both
under the size rows (``speed_report``), as the profile that explains the embedded ratio.
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
from pathlib import Path
from typing import Any, Final

__all__ = ["PARTS", "parts_table", "pg_parts", "sqlite_parts"]

#: The parts of an embedded file, in report order: (name, what it holds, b-tree names: a name
#: ending in "_" is a prefix, any other is exact).
PARTS: Final[tuple[tuple[str, str, tuple[str, ...]], ...]] = (
    (
        "log",
        "the log: every record as appended (the source of truth) and its session index",
        ("log", "log_", "sqlite_autoindex_log_"),
    ),
    ("events", "the events' rows: filter columns, text, the document's JSON", ("events",)),
    (
        "event indexes",
        "b-tree indexes of the events: session order (unique: the event id), workspace order",
        ("sqlite_autoindex_events_", "events_by_"),
    ),
    (
        "full text",
        "FTS5: whole words, word trigrams, identifiers, CJK bigrams",
        ("events_words_", "events_tri_", "events_ident_", "events_cjk_"),
    ),
    (
        "typo vocabulary",
        "each workspace's terms, their prefix and suffix indexes and their trigrams",
        ("vocab", "vocab_"),
    ),
    (
        "sessions",
        "session documents and their workspace index",
        ("sessions", "sessions_", "sqlite_autoindex_sessions_"),
    ),
)


#: What the parts outside ``PARTS`` hold.
_OTHER_PARTS: Final = {
    "other": "indexer positions, dead letters, the schema",
    "free pages": "pages freed and not reused yet",
    "wal": "the write-ahead log, not checkpointed yet",
}


def _part_of(btree: str) -> str:
    for name, _, patterns in PARTS:
        for pattern in patterns:
            if btree == pattern or (pattern.endswith("_") and btree.startswith(pattern)):
                return name
    return "other"


def sqlite_parts(path: str | Path) -> dict[str, int]:
    """Bytes per part of an embedded file (``PARTS``, ``other``, ``free pages``, ``wal``); they sum
    to the file plus its WAL. Opens the file read-only."""
    target = Path(path)
    conn = sqlite3.connect(f"file:{target}?mode=ro", uri=True)
    try:
        out: dict[str, int] = {name: 0 for name, _, _ in PARTS}
        out["other"] = 0
        for btree, size in conn.execute("SELECT name, sum(pgsize) FROM dbstat GROUP BY name"):
            part = _part_of(str(btree))
            out[part] = out.get(part, 0) + int(size)
        page_size = int(conn.execute("PRAGMA page_size").fetchone()[0])
        out["free pages"] = int(conn.execute("PRAGMA freelist_count").fetchone()[0]) * page_size
    finally:
        conn.close()
    wal = Path(f"{target}-wal")
    out["wal"] = wal.stat().st_size if wal.exists() else 0
    return out


def pg_parts(conn: Any, table: str) -> dict[str, int]:
    """Bytes of a PostgreSQL table's heap (with TOAST) and of each of its indexes, through a
    psycopg connection; they sum to ``pg_total_relation_size``."""
    query = "SELECT pg_total_relation_size(%s) - pg_indexes_size(%s)"
    out = {"table": int(conn.execute(query, (table, table)).fetchone()[0])}
    for name, size in conn.execute(
        "SELECT indexrelid::regclass::text, pg_relation_size(indexrelid) FROM pg_index "
        "WHERE indrelid = %s::regclass ORDER BY 1",
        (table,),
    ):
        out[f"index {name}"] = int(size)
    return out


def parts_table(load: dict[str, Any]) -> list[str]:
    """Markdown lines: the embedded file and the PostgreSQL peer by part, from a load row that
    recorded them (``parts`` of ``embedded`` and ``pg``); none when it did not."""
    ours = ((load.get("embedded") or {}).get("parts")) or {}
    peer = ((load.get("pg") or {}).get("parts")) or {}
    if not ours or not peer:
        return []
    peer_total = sum(peer.values()) or 1
    ours_total = sum(ours.values()) or 1
    held = {name: what for name, what, _ in PARTS} | _OTHER_PARTS
    lines = [
        "| part | what it holds | MiB | share | × pg_trgm's table + indexes |",
        "| --- | --- | --- | --- | --- |",
    ]
    for name, size in ours.items():
        if not size and name in _OTHER_PARTS:
            continue
        lines.append(
            f"| embedded: {name} | {held.get(name, '')} | {size / 2**20:.1f} | "
            f"{100 * size / ours_total:.0f} % | {size / peer_total:.2f}× |"
        )
    projection = ours_total - ours.get("log", 0)
    lines.append(
        f"| embedded without the log | the projection alone | {projection / 2**20:.1f} | "
        f"{100 * projection / ours_total:.0f} % | {projection / peer_total:.2f}× |"
    )
    for name, size in peer.items():
        what = "the rows (ids, scope, folded text), TOAST included" if name == "table" else "an index"
        lines.append(
            f"| PostgreSQL: {name} | {what} | {size / 2**20:.1f} | {100 * size / peer_total:.0f} % | "
            f"{size / peer_total:.2f}× |"
        )
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("path", type=Path, help="an embedded backscroll file")
    args = parser.parse_args(argv)
    if not args.path.is_file():
        parser.error(f"no such file: {args.path}")
    parts = sqlite_parts(args.path)
    total = sum(parts.values()) or 1
    for name, size in parts.items():
        print(f"{name:16} {size / 2**20:9.1f} MiB {100 * size / total:5.1f} %")
    print(f"{'total':16} {total / 2**20:9.1f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
