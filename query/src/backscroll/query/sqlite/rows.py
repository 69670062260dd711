"""Rows the embedded engine reads by rowid: a page's hits, entries' ids, the entries holding words."""

from __future__ import annotations

import sqlite3

import orjson

import backscroll.query.sqlite.candidates as arms_of
from backscroll.indexer.sqlite.docs import event_instant
from backscroll.ingest.wire import entry_id
from backscroll.query.engine import EngineHit
from backscroll.query.moments import stored_time
from backscroll.query.sqlite.column import read_column

__all__ = ["doc_ids", "holding", "page_hits"]

_CHUNK = 500  # rids per ``IN`` list


def doc_ids(conn: sqlite3.Connection, rids: list[int]) -> dict[int, str]:
    """The entry id of each of ``rids``."""
    out: dict[int, str] = {}
    for start in range(0, len(rids), _CHUNK):
        chunk = rids[start : start + _CHUNK]
        marks = ",".join("?" * len(chunk))
        rows = conn.execute(f"SELECT rid, session_id, seq FROM events WHERE rid IN ({marks})", chunk)
        out.update((int(rid), entry_id(session_id, seq)) for rid, session_id, seq in rows)
    return out


def page_hits(
    conn: sqlite3.Connection, page: list[tuple[int, float]], hints: tuple[str, ...]
) -> list[EngineHit]:
    """The hits of a page of ``(rid, score)``, in its order."""
    if not page:
        return []
    marks = ",".join("?" * len(page))
    rows = {
        int(r[0]): r
        for r in conn.execute(
            f"SELECT rid, session_id, seq, type, text, time_us, doc FROM events WHERE rid IN ({marks})",
            [rid for rid, _ in page],
        )
    }
    out = []
    for rid, score in page:
        _, session_id, seq, kind, text, micros, doc_blob = rows[rid]
        doc = orjson.loads(doc_blob)
        out.append(
            EngineHit(
                session_id=session_id,
                entry_id=entry_id(session_id, seq),
                seq=int(seq),
                kind=kind,
                text=text,
                turn=doc.get("turn"),
                role=doc.get("role"),
                created_at=stored_time(doc["time"]) if "time" in doc else event_instant(micros),
                score=score,
                hints=hints,
            )
        )
    return out


def holding(conn: sqlite3.Connection, words: frozenset[str], rids: tuple[int, int] | None) -> list[int]:
    """The entries holding any of ``words`` as a word (within the rowid range, if any)."""
    match = " OR ".join(arms_of.phrase(word) for word in sorted(words))
    sql = "SELECT rowid FROM events_words WHERE events_words MATCH ?"
    if rids is None:
        return read_column(conn, sql, (match,))
    return read_column(conn, f"{sql} AND rowid BETWEEN ? AND ?", (match, *rids))
