"""What a format module sees while it maps one transcript's lines: the batch, the file, the ids."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Protocol

import orjson

from backscroll.capture.entries import Batch, clean_id, workspace_for
from backscroll.capture.settings import CaptureSettings

__all__ = ["Context", "Format", "find_transcripts", "first_cwd", "started_at"]

#: Lines read from a transcript's start to find its working folder.
_CWD_SCAN_LINES: Final = 64
_CWD: Final = re.compile(rb'"cwd"\s*:\s*"((?:[^"\\]|\\.)*)"')
_TIMESTAMP: Final = re.compile(rb'"timestamp"\s*:\s*"([^"]{10,40})"')


def find_transcripts(root: Path, pattern: str) -> list[Path]:
    """``root`` itself when it is a file, else the files below it matching ``pattern``, in the
    order they were started (:func:`started_at`)."""
    if root.is_file():
        return [root]
    return sorted((p for p in root.rglob(pattern) if p.is_file()), key=started_at)


def started_at(path: Path) -> tuple[str, str]:
    """Sort key of transcripts: the first timestamp in the file's first lines, then the path (a
    session resumed from another is then captured after it, whatever the files' names)."""
    try:
        with path.open("rb") as stream:
            for _ in range(_CWD_SCAN_LINES):
                line = stream.readline(1024 * 1024)
                if not line:
                    break
                found = _TIMESTAMP.search(line)
                if found:
                    return found.group(1).decode("ascii", "replace"), str(path)
    except OSError:
        pass
    return "", str(path)


def first_cwd(path: Path) -> str | None:
    """The first working folder a transcript names (``cwd``), from its first lines."""
    try:
        with path.open("rb") as stream:
            for _ in range(_CWD_SCAN_LINES):
                line = stream.readline(1024 * 1024)
                if not line:
                    return None
                found = _CWD.search(line)
                if found:
                    value = orjson.loads(b'"' + found.group(1) + b'"')
                    return value if isinstance(value, str) else None
    except (OSError, orjson.JSONDecodeError):
        return None
    return None


@dataclass
class Context:
    """One pass over ``path``: ``batch`` collects the entries, ``seen``/``remember`` the line ids."""

    batch: Batch
    settings: CaptureSettings
    path: Path
    default_session: str
    lookup: Callable[[str], tuple[str, int] | None]
    lines: dict[str, tuple[str, int]] = field(default_factory=dict)
    duplicates: int = 0
    _cwd: list[str | None] = field(default_factory=list)

    def file_cwd(self) -> str | None:
        if not self._cwd:
            self._cwd.append(first_cwd(self.path))
        return self._cwd[0]

    def workspace(self, cwd: str | None) -> str:
        return workspace_for(
            cwd or self.file_cwd(), self.settings, clean_id(self.path.parent.name, "default")
        )

    def seen(self, uuid: str) -> tuple[str, int] | None:
        return self.lines.get(uuid) or self.lookup(uuid)

    def remember(self, uuid: str, session_id: str, seq: int) -> None:
        self.lines.setdefault(uuid, (session_id, seq))


class Format(Protocol):
    """A transcript format: where its files are and how a line becomes entries."""

    name: str

    def default_dir(self) -> Path: ...

    def transcripts(self, root: Path) -> list[Path]:
        """The transcript files under ``root``, oldest first."""
        ...

    def default_session(self, path: Path) -> str: ...

    def map_line(self, ctx: Context, number: int, obj: dict[str, Any], notes: dict[str, Any]) -> None:
        """Append the entries of one parsed line (``notes``: attrs every entry of it carries)."""
        ...
