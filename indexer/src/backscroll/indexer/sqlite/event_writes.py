"""The event creates of the embedded projection (a mixin of
:class:`~backscroll.indexer.sqlite.view.SQLiteView`): the ``events`` rows, a run of creates in
one statement, and the full-text rows and vocabulary terms of a bulk, written last."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from backscroll.indexer.ports import Outcome, WriteResult
from backscroll.indexer.projector import Action
from backscroll.indexer.sqlite.docs import pack_event_doc, text_field
from backscroll.indexer.sqlite.rows import (
    KnownTerms,
    TextRows,
    terms_by_workspace,
    text_rows,
    time_us,
    vocab_rows,
)
from backscroll.indexer.sqlite.schema import EVENT_ROW_COLUMNS

__all__ = [
    "EVENT_ROW_TEXT",
    "EVENT_ROW_WORKSPACE",
    "INSERT_EVENTS",
    "INSERT_VOCAB",
    "EventWrites",
    "event_row",
    "stored_hashes",
]

_CHUNK: Final = 500  # SQLite's host-parameter limit is 32766; keep IN lists modest

#: The head of an ``events`` insert, the columns in the order of :func:`event_row`.
INSERT_EVENTS: Final = f"INSERT INTO events ({EVENT_ROW_COLUMNS})"
#: Where :func:`event_row` puts the workspace and the text.
EVENT_ROW_WORKSPACE: Final = 0
EVENT_ROW_TEXT: Final = 10
#: The head of a ``vocab`` insert, the columns in the order of a ``vocab_rows`` row.
INSERT_VOCAB: Final = "INSERT INTO vocab (ws, term, len, rterm)"
_INSERT_EVENT: Final = INSERT_EVENTS + " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"


def event_row(action: Action) -> tuple[Any, ...]:
    """The ``events`` row of a create (raises ``KeyError``/``ValueError``/``TypeError`` on a
    malformed document)."""
    body = action.body
    offset = int(body.get("offset") or 0)
    return (
        body["workspace_id"], body["session_id"], int(body["seq"]), body["type"], time_us(body["time"]),
        body.get("tool_name"), 1 if body.get("has_text") else 0, body["surface_state"],
        body["content_hash"], offset, str(body.get(text_field(body["type"])) or ""),
        pack_event_doc(body, offset),
    )  # fmt: skip


def stored_hashes(conn: sqlite3.Connection, keys: Iterable[tuple[str, int]]) -> dict[tuple[str, int], str]:
    """The content hash of each stored event of ``keys`` (``(session_id, seq)`` pairs), by pair; one
    lookup per session (raises sqlite3 errors)."""
    by_session: dict[str, list[int]] = {}
    for session_id, seq in keys:
        by_session.setdefault(session_id, []).append(seq)
    found: dict[tuple[str, int], str] = {}
    for session_id, seqs in by_session.items():
        for start in range(0, len(seqs), _CHUNK):
            chunk = seqs[start : start + _CHUNK]
            marks = ",".join("?" * len(chunk))
            rows = conn.execute(
                f"SELECT seq, content_hash FROM events WHERE session_id = ? AND seq IN ({marks})",
                [session_id, *chunk],
            )
            found.update(((session_id, int(seq)), str(digest)) for seq, digest in rows)
    return found


class EventWrites:
    """Event creates and full-text rows (the view sets the attributes declared here)."""

    conn: sqlite3.Connection
    _known_terms: KnownTerms
    _pending_terms: dict[str, set[str]]

    def _create_events(
        self, run: Sequence[Action], staged: list[tuple[int, str, TextRows]]
    ) -> list[WriteResult] | None:
        """A run of event creates in one statement (the usual bulk: new entries of the log), with
        the outcomes :meth:`_create_event` gives one by one. ``None`` (nothing written) when any
        item needs the one-by-one path to tell its outcome: a malformed document, a constraint."""
        try:
            rows = [event_row(action) for action in run]
        except (KeyError, ValueError, TypeError):
            return None
        keys = [(str(row[1]), int(row[2])) for row in rows]
        existing = set(stored_hashes(self.conn, keys))
        results: list[WriteResult | None] = [None] * len(run)
        fresh: list[int] = []
        for k, key in enumerate(keys):
            if key in existing:
                results[k] = WriteResult(
                    run[k], Outcome.REPLAY
                )  # ViewWrites.write tells replay from conflict
            else:
                existing.add(key)  # a second create of the same id in the run replays the first
                fresh.append(k)
        if fresh:
            self.conn.execute("SAVEPOINT events_run")
            try:
                self.conn.executemany(_INSERT_EVENT, [rows[k] for k in fresh])
                last = int(self.conn.execute("SELECT last_insert_rowid()").fetchone()[0])
            except (sqlite3.IntegrityError, sqlite3.DataError, sqlite3.InterfaceError):
                self.conn.execute("ROLLBACK TO events_run")
                self.conn.execute("RELEASE events_run")
                return None
            self.conn.execute("RELEASE events_run")
            # Under the write lock a rowid table's new rows take the next rowids, in order.
            for rid, k in zip(range(last - len(fresh) + 1, last + 1), fresh, strict=True):
                row = rows[k]
                staged.append((rid, str(row[EVENT_ROW_WORKSPACE]), text_rows(str(row[EVENT_ROW_TEXT]))))
                results[k] = WriteResult(run[k], Outcome.CREATED)
        return [r for r in results if r is not None]

    def _create_event(self, action: Action, staged: list[tuple[int, str, TextRows]]) -> WriteResult:
        row = event_row(action)
        cursor = self.conn.execute(_INSERT_EVENT + " ON CONFLICT (session_id, seq) DO NOTHING", row)
        if cursor.rowcount == 0:
            return WriteResult(action, Outcome.REPLAY)  # exists: ViewWrites.write tells replay from conflict
        # The full-text rows are written for the whole bulk at once (_index_text), last.
        staged.append(
            (int(cursor.lastrowid or 0), str(row[EVENT_ROW_WORKSPACE]), text_rows(str(row[EVENT_ROW_TEXT])))
        )
        return WriteResult(action, Outcome.CREATED)

    def _index_text(self, staged: list[tuple[int, str, TextRows]]) -> None:
        """The full-text rows of the events created by one bulk, and their workspaces' new terms."""
        if not staged:
            return
        words = [(rid, rows.words) for rid, _, rows in staged]
        self.conn.executemany("INSERT INTO events_words (rowid, body) VALUES (?, ?)", words)
        self.conn.executemany(
            "INSERT INTO events_tri (rowid, body) VALUES (?, ?)", [(rid, f" {body} ") for rid, body in words]
        )
        self.conn.executemany(
            "INSERT INTO events_ident (rowid, body) VALUES (?, ?)",
            [(rid, rows.idents) for rid, _, rows in staged if rows.idents],
        )
        self.conn.executemany(
            "INSERT INTO events_cjk (rowid, body) VALUES (?, ?)",
            [(rid, rows.cjk) for rid, _, rows in staged if rows.cjk],
        )
        self._add_vocab(terms_by_workspace((ws, rows) for _, ws, rows in staged))

    def _add_vocab(self, by_ws: Mapping[str, set[str]]) -> None:
        """Add the unseen terms of each workspace to the vocabulary (``vocab`` and ``vocab_tri``):
        set differences against the cached vocabulary, then two statements per bulk."""
        fresh = self._known_terms.unseen(by_ws, self._pending_terms)
        if not fresh:
            return
        for ws, terms in fresh.items():
            self._pending_terms.setdefault(ws, set()).update(terms)
        # Under the write lock a rowid table's new rows take rowids above its largest: the terms
        # this bulk added are exactly the rows past that mark (a term already stored is ignored).
        mark = int(self.conn.execute("SELECT coalesce(max(tid), 0) FROM vocab").fetchone()[0])
        self.conn.executemany(
            INSERT_VOCAB + " VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING",
            vocab_rows(fresh),
        )
        self.conn.execute(
            "INSERT INTO vocab_tri (rowid, body) SELECT tid, ' ' || term || ' ' FROM vocab WHERE tid > ?",
            (mark,),
        )
