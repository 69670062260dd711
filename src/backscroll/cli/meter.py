"""Progress of long CLI operations on stderr: a Rich bar on a terminal, a plain counter otherwise.

``append`` shows records, rate and (when the input size is known) bytes and ETA; ``index`` shows
records, rate and the lag left. When stderr is not a terminal (CI logs, pipes) a one-line counter
is printed every few seconds instead, so logs stay readable.
"""

from __future__ import annotations

import time
from contextlib import ExitStack
from typing import Any, Final

from rich.progress import (
    BarColumn,
    DownloadColumn,
    Progress,
    TaskProgressColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.text import Text

from backscroll.cli.output import err_console

__all__ = ["PLAIN_EVERY_S", "Meter"]

#: How often the plain (non-terminal) counter prints a line.
PLAIN_EVERY_S: Final = 5.0


class Meter:
    """Progress of one operation: ``verb`` names it ("appending", "indexing"); with ``total_bytes``
    the bar measures bytes done and shows the ETA."""

    def __init__(self, stack: ExitStack, verb: str, total_bytes: int | None = None) -> None:
        self.verb = verb
        self.started = time.monotonic()
        self._last_plain = self.started
        self._progress: Progress | None = None
        if err_console.is_terminal:
            columns: list[Any] = [
                TextColumn(verb),
                BarColumn(),
                TextColumn("{task.fields[records]} records"),
                TextColumn("{task.fields[rate]} rec/s"),
                TextColumn("{task.fields[note]}"),
            ]
            if total_bytes:
                columns[2:2] = [TaskProgressColumn(), DownloadColumn()]
                columns.append(TimeRemainingColumn())
            else:
                columns.append(TimeElapsedColumn())
            self._progress = stack.enter_context(Progress(*columns, console=err_console, transient=True))
            self._task = self._progress.add_task(verb, total=total_bytes or None, records=0, rate=0, note="")

    def update(self, records: int, *, done_bytes: int = 0, note: str = "") -> None:
        """Report ``records`` done so far (and ``done_bytes`` of the input when its size is known)."""
        now = time.monotonic()
        rate = int(records / max(now - self.started, 1e-6))
        if self._progress is not None:
            self._progress.update(self._task, completed=done_bytes, records=records, rate=rate, note=note)
        elif now - self._last_plain >= PLAIN_EVERY_S:
            self._last_plain = now
            suffix = f", {note}" if note else ""
            err_console.print(Text(f"{self.verb}: {records} records ({rate} rec/s{suffix})"))

    def stop(self) -> None:
        """Take the bar off the terminal before the command goes on with other output."""
        if self._progress is not None:
            self._progress.stop()
