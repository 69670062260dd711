"""Shared by the capture tests: an embedded log and a state folder in a temporary directory, the
fixture transcripts copied there, and the records the log holds."""

from __future__ import annotations

import shutil
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

import orjson
import pytest

from backscroll.capture.runner import FORMATS, ImportSummary, open_capture, select

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "capture"
S1 = "4f1c2d3e-0000-4000-8000-000000000001"
S2 = "4f1c2d3e-0000-4000-8000-000000000002"
CX = "0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"


def embedded(monkeypatch: pytest.MonkeyPatch, tmp: Path, state: str = "state") -> Path:
    """Select an embedded file under ``tmp`` and a state folder; the file's path."""
    db = tmp / "backscroll.db"
    monkeypatch.setenv("BACKSCROLL_BACKEND", "embedded")
    monkeypatch.setenv("BACKSCROLL_SQLITE_PATH", str(db))
    monkeypatch.setenv("BACKSCROLL_CAPTURE_STATE_DIR", str(tmp / state))
    return db


def copy_fixtures(tmp: Path, name: str = "claude") -> Path:
    target = tmp / name
    shutil.copytree(FIXTURES / name, target)
    return target


def run_import(source: str, root: Path) -> ImportSummary:
    fmt = FORMATS[source]()
    summary = ImportSummary()
    with open_capture() as capture:
        for path in select(fmt, root):
            summary.add(capture.transcript(path, fmt))
    return summary


def logged(db: Path) -> list[dict[str, Any]]:
    """Every record in the embedded log, in order."""
    if not db.exists():
        return []
    with closing(sqlite3.connect(db)) as conn:
        return [orjson.loads(row[0]) for row in conn.execute("SELECT value FROM log ORDER BY offset")]


def events(db: Path, session: str) -> list[dict[str, Any]]:
    return [r for r in logged(db) if r["kind"] == "event" and r["session_id"] == session]


def headers(db: Path) -> dict[str, dict[str, Any]]:
    return {r["session_id"]: r for r in logged(db) if r["kind"] == "header"}
