"""How far each transcript was captured, shared by ``import``, the hook and ``watch``.

One SQLite file (``capture.db`` in the state folder) per machine, keyed by the log the entries went
to (so switching the backend or the embedded file starts over for the new log):

* ``transcripts``: per file, the byte offset and line number after the last captured line and a
  fingerprint of its first line (a rewritten or rotated file is told from a grown one);
* ``sessions``: per session, its :class:`~backscroll.capture.entries.SessionState`;
* ``lines``: the transcript line ids (Claude Code's ``uuid``) already captured, with the entry they
  became, so a line copied into a resumed session's file is not captured twice and a resumed
  session names the session it continues.

Every pass over a transcript runs inside one write transaction (:meth:`Progress.transaction`): two
captures of the same transcript at once (parallel hook events, a watcher and an import) take
turns, and the progress moves only after the log accepted the entries.
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Self

import orjson

from backscroll.capture.entries import SessionState

__all__ = ["FINGERPRINT_BYTES", "Progress", "TranscriptMark", "fingerprint"]

#: Bytes of a transcript's first line that identify the file.
FINGERPRINT_BYTES: Final = 4096

_SCHEMA: Final = """
CREATE TABLE IF NOT EXISTS transcripts (
  log TEXT NOT NULL, path TEXT NOT NULL, fingerprint TEXT NOT NULL,
  offset INTEGER NOT NULL, line INTEGER NOT NULL, PRIMARY KEY (log, path));
CREATE TABLE IF NOT EXISTS sessions (
  log TEXT NOT NULL, session TEXT NOT NULL, state BLOB NOT NULL, PRIMARY KEY (log, session));
CREATE TABLE IF NOT EXISTS lines (
  log TEXT NOT NULL, uuid TEXT NOT NULL, session TEXT NOT NULL, seq INTEGER NOT NULL,
  PRIMARY KEY (log, uuid));
"""


def fingerprint(first_line: bytes) -> str:
    """The identity of a transcript: a hash of the start of its first complete line."""
    return hashlib.sha256(first_line[:FINGERPRINT_BYTES]).hexdigest()


@dataclass
class TranscriptMark:
    """Where the next pass over a transcript starts."""

    fingerprint: str = ""
    offset: int = 0
    line: int = 0


class Progress:
    """The progress store of one log (``log_id``) in ``path``; ``wait_s`` bounds the wait for
    another capture's transaction (then :class:`sqlite3.OperationalError`)."""

    def __init__(self, path: Path, log_id: str, *, wait_s: float = 30.0) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.log_id = log_id
        # One pass at a time uses it, whichever thread runs it (the hook's worker, the watcher).
        self._db = sqlite3.connect(path, timeout=wait_s, isolation_level=None, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.executescript(_SCHEMA)

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """One write transaction: committed when the block ends, rolled back on an error."""
        self._db.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    def mark(self, path: str) -> TranscriptMark | None:
        row = self._db.execute(
            "SELECT fingerprint, offset, line FROM transcripts WHERE log=? AND path=?", (self.log_id, path)
        ).fetchone()
        return None if row is None else TranscriptMark(row[0], row[1], row[2])

    def moved_from(self, print_: str, exists: set[str] | None = None) -> tuple[str, TranscriptMark] | None:
        """A transcript captured under another path with this fingerprint whose file is gone (it
        was moved or rotated to the path now being read)."""
        rows = self._db.execute(
            "SELECT path, offset, line FROM transcripts WHERE log=? AND fingerprint=?",
            (self.log_id, print_),
        ).fetchall()
        for path, offset, line in rows:
            if not Path(path).exists():
                return path, TranscriptMark(print_, offset, line)
        return None

    def set_mark(self, path: str, mark: TranscriptMark, *, moved_from: str | None = None) -> None:
        if moved_from is not None:
            self._db.execute("DELETE FROM transcripts WHERE log=? AND path=?", (self.log_id, moved_from))
        self._db.execute(
            "INSERT OR REPLACE INTO transcripts VALUES (?, ?, ?, ?, ?)",
            (self.log_id, path, mark.fingerprint, mark.offset, mark.line),
        )

    def session(self, session_id: str) -> SessionState | None:
        row = self._db.execute(
            "SELECT state FROM sessions WHERE log=? AND session=?", (self.log_id, session_id)
        ).fetchone()
        return None if row is None else SessionState.from_json(orjson.loads(row[0]))

    def save_sessions(self, sessions: dict[str, SessionState]) -> None:
        self._db.executemany(
            "INSERT OR REPLACE INTO sessions VALUES (?, ?, ?)",
            [(self.log_id, sid, orjson.dumps(state.to_json())) for sid, state in sessions.items()],
        )

    def line(self, uuid: str) -> tuple[str, int] | None:
        """The session and seq a transcript line id became, if it was captured."""
        row = self._db.execute(
            "SELECT session, seq FROM lines WHERE log=? AND uuid=?", (self.log_id, uuid)
        ).fetchone()
        return None if row is None else (str(row[0]), int(row[1]))

    def save_lines(self, lines: dict[str, tuple[str, int]]) -> None:
        self._db.executemany(
            "INSERT OR IGNORE INTO lines VALUES (?, ?, ?, ?)",
            [(self.log_id, uuid, sid, seq) for uuid, (sid, seq) in lines.items()],
        )

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
