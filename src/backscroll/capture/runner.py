"""Capture runs over many transcripts (``backscroll import``) and the hook's single transcript."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from backscroll.capture.claude_code import ClaudeCode
from backscroll.capture.codex import Codex
from backscroll.capture.context import Format, first_cwd
from backscroll.capture.progress import Progress
from backscroll.capture.settings import CaptureSettings
from backscroll.capture.transcripts import Outcome, capture_transcript, log_identity

if TYPE_CHECKING:
    from backscroll.ingest.entry_log import EntryLog

__all__ = ["FORMATS", "Capture", "ImportSummary", "open_capture", "select"]

FORMATS: dict[str, Callable[[], Format]] = {"claude-code": ClaudeCode, "codex": Codex}


@dataclass
class ImportSummary:
    """What a run over several transcripts did."""

    transcripts: int = 0
    lines: int = 0
    entries: int = 0
    duplicates: int = 0
    invalid: int = 0
    waiting: int = 0
    workspaces: dict[str, set[str]] = field(default_factory=dict)
    reasons: list[str] = field(default_factory=list)

    def add(self, outcome: Outcome) -> None:
        self.transcripts += 1
        self.lines += outcome.lines
        self.entries += outcome.entries
        self.duplicates += outcome.duplicates
        self.invalid += outcome.invalid
        self.waiting += int(outcome.waiting)
        for sid, workspace in outcome.sessions.items():
            self.workspaces.setdefault(workspace, set()).add(sid)
        self.reasons.extend(outcome.reasons[: max(0, 20 - len(self.reasons))])

    def as_json(self, seconds: float) -> dict[str, Any]:
        return {
            "transcripts": self.transcripts,
            "lines": self.lines,
            "entries": self.entries,
            "duplicates": self.duplicates,
            "invalid_lines": self.invalid,
            "waiting_for_newline": self.waiting,
            "workspaces": {ws: len(sessions) for ws, sessions in sorted(self.workspaces.items())},
            "reasons": self.reasons,
            "seconds": round(seconds, 3),
        }


@dataclass
class Capture:
    """An open log and progress store, and the settings: what every capture command needs."""

    log: EntryLog
    progress: Progress
    settings: CaptureSettings

    def transcript(self, path: Path, fmt: Format, *, deadline: float | None = None) -> Outcome:
        return capture_transcript(path, fmt, self.log, self.progress, self.settings, deadline=deadline)


@contextmanager
def open_capture(
    *, wait_s: float = 30.0, settings: CaptureSettings | None = None, spool_when_down: bool = False
) -> Iterator[Capture]:
    """The configured backend's log (``BACKSCROLL_BACKEND``) and the progress store for it
    (``spool_when_down``: see :meth:`~backscroll.backends.base.Backend.open_log`)."""
    from backscroll.backends import current_backend

    settings = settings or CaptureSettings()
    backend = current_backend()
    with ExitStack() as stack:
        progress = stack.enter_context(
            Progress(settings.state_dir / "capture.db", log_identity(backend), wait_s=wait_s)
        )
        log = stack.enter_context(backend.open_log(live=False, spool_when_down=spool_when_down))
        yield Capture(log, progress, settings)


def select(
    fmt: Format, root: Path, *, since: datetime | None = None, project: Path | None = None
) -> list[Path]:
    """The transcripts under ``root``: changed at or after ``since``, of sessions started in
    ``project`` (or a folder below it)."""
    found = fmt.transcripts(root)
    if since is not None:
        stamp = since.timestamp()
        found = [p for p in found if p.stat().st_mtime >= stamp]
    if project is not None:
        wanted = str(project.resolve()).rstrip("/")

        def inside(path: Path) -> bool:
            cwd = first_cwd(path)
            return cwd is not None and (cwd.rstrip("/") == wanted or cwd.startswith(wanted + "/"))

        found = [p for p in found if inside(p)]
    return found


def elapsed(started: float) -> float:
    return time.monotonic() - started
