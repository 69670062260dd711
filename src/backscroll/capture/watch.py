"""``backscroll watch``: follow the transcript folders and capture lines as they are written.

On start every transcript is caught up (as ``backscroll import`` would, from the same progress),
then file-system events (``watchdog``, the ``capture`` extra) name the transcripts to capture
again: a created, written or moved-in ``.jsonl`` file. A line still being written (no newline
yet) waits for the event that completes it; a rotated or rewritten file is told by its first line
(:mod:`~backscroll.capture.progress`); a restart continues from the saved progress.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

from backscroll.capture.context import Format
from backscroll.capture.runner import Capture
from backscroll.capture.transcripts import Outcome

__all__ = ["MissingWatchdog", "watch"]

#: Wait between a file event and its capture, so a burst of writes is read once.
SETTLE_S: Final = 0.2

log = logging.getLogger("backscroll.capture.watch")


class MissingWatchdog(RuntimeError):
    """``watchdog`` is not installed (``pip install 'backscroll[capture]'``)."""


def _observer() -> Any:
    try:
        from watchdog.observers import Observer
    except ImportError as err:
        raise MissingWatchdog("backscroll watch needs watchdog: pip install 'backscroll[capture]'") from err
    return Observer()


def watch(
    capture: Capture,
    roots: list[tuple[Format, Path]],
    stop: threading.Event,
    *,
    on_outcome: Callable[[Outcome], None] | None = None,
    ready: threading.Event | None = None,
) -> None:
    """Catch up every transcript under ``roots``, then capture each change until ``stop`` is set."""
    from watchdog.events import FileSystemEvent, FileSystemEventHandler

    pending: queue.Queue[tuple[Format, Path]] = queue.Queue()

    class Handler(FileSystemEventHandler):
        def __init__(self, fmt: Format) -> None:
            self.fmt = fmt

        def on_any_event(self, event: FileSystemEvent) -> None:
            if event.is_directory or event.event_type not in ("created", "modified", "moved", "closed"):
                return
            target = getattr(event, "dest_path", "") or event.src_path
            path = Path(target if isinstance(target, str) else target.decode())
            if path.suffix == ".jsonl":
                pending.put((self.fmt, path))

    observer = _observer()
    for fmt, root in roots:
        root.mkdir(parents=True, exist_ok=True)
        observer.schedule(Handler(fmt), str(root), recursive=True)
    observer.start()
    try:
        for fmt, root in roots:  # after the observer started: no write falls between the two
            for path in fmt.transcripts(root):
                _one(capture, fmt, path, on_outcome)
        if ready is not None:
            ready.set()
        while not stop.is_set():
            try:
                first = pending.get(timeout=0.2)
            except queue.Empty:
                continue
            stop.wait(SETTLE_S)
            batch = {first}
            while True:
                try:
                    batch.add(pending.get_nowait())
                except queue.Empty:
                    break
            for fmt, path in sorted(batch, key=lambda item: str(item[1])):
                _one(capture, fmt, path, on_outcome)
    finally:
        observer.stop()
        observer.join(timeout=10)


def _one(capture: Capture, fmt: Format, path: Path, on_outcome: Callable[[Outcome], None] | None) -> None:
    if not path.is_file():
        return
    import sqlite3

    from backscroll.ingest.errors import IngestError

    try:
        outcome = capture.transcript(path, fmt)
    except (OSError, IngestError, sqlite3.OperationalError) as err:  # the next event retries
        log.warning("cannot capture %s now: %s", path, err)
        return
    try:
        capture.log.flush(timeout=30)
    except Exception as err:  # the appender keeps them (spool); the watcher goes on
        log.warning("log not reachable: %s", err)
    if on_outcome is not None and (outcome.entries or outcome.invalid):
        on_outcome(outcome)
