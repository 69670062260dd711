"""``backscroll capture claude-code``: what Claude Code runs on its hook events.

Claude Code passes the event as JSON on stdin (``session_id``, ``transcript_path``, ``cwd``,
``hook_event_name``). The hook captures the transcript's lines after the last captured one, and
those of the session's subagent transcripts (``<session>/subagents/*.jsonl`` beside it). It never
holds the agent up: it prints nothing, always exits 0, gives up after
``BACKSCROLL_CAPTURE_HOOK_TIMEOUT_S`` (what is left is captured by the next event, or by
``backscroll import``), and writes its errors to ``capture.log`` in the state folder. When the
log is down, nothing is lost: the progress only moves once the log (or, on Kafka, the appender's
disk spool) took the entries, and the transcript itself keeps the rest.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from pathlib import Path
from typing import Any, BinaryIO, Final

import orjson

from backscroll.capture.settings import CaptureSettings

__all__ = ["HOOK_EVENTS", "run_hook", "transcripts_of"]

#: The Claude Code hook events the installer registers.
HOOK_EVENTS: Final = (
    "SessionStart",
    "UserPromptSubmit",
    "PostToolUse",
    "PreCompact",
    "Stop",
    "SubagentStop",
    "SessionEnd",
)
_MAX_INPUT_BYTES: Final = 1024 * 1024

log = logging.getLogger("backscroll.capture.hook")


def _error_log(settings: CaptureSettings) -> logging.Handler | None:
    try:
        settings.state_dir.mkdir(parents=True, exist_ok=True)
        handler = logging.FileHandler(settings.state_dir / "capture.log", encoding="utf-8")
    except OSError:
        return None
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    return handler


def transcripts_of(event: dict[str, Any]) -> list[Path]:
    """The transcript of the event and its session's subagent transcripts."""
    given = event.get("transcript_path")
    if not isinstance(given, str) or not given:
        raise ValueError("the hook input has no transcript_path")
    path = Path(given).expanduser()
    found = [path] if path.is_file() else []
    subagents = path.with_suffix("") / "subagents"
    if subagents.is_dir():
        found.extend(sorted(subagents.glob("*.jsonl")))
    agent = event.get("agent_transcript_path")
    if isinstance(agent, str) and agent and Path(agent).is_file() and Path(agent) not in found:
        found.append(Path(agent))
    return found


def _capture(raw: bytes, settings: CaptureSettings, deadline: float) -> None:
    from backscroll.capture.claude_code import ClaudeCode
    from backscroll.capture.runner import open_capture

    event = orjson.loads(raw)
    if not isinstance(event, dict):
        raise ValueError("the hook input is not a JSON object")
    paths = transcripts_of(event)
    if not paths:
        return
    fmt = ClaudeCode()
    wait = max(0.5, deadline - time.monotonic() - 1.0)
    with open_capture(wait_s=wait, settings=settings, spool_when_down=True) as capture:
        for path in paths:
            capture.transcript(path, fmt, deadline=deadline)
            if time.monotonic() > deadline:
                log.warning("hook time used up; the rest of %s waits for the next event", path)
                break
        # Kafka: the entries are in the disk spool already; a short wait sends what it can now.
        try:
            capture.log.flush(timeout=max(0.1, min(1.0, deadline - time.monotonic())))
        except Exception as err:  # the spool keeps them; the next appender sends them
            log.warning("log not reachable now (%s); the entries wait in the spool", err)
        capture.log.close(timeout=max(0.1, min(1.0, deadline - time.monotonic())))


def read_event(stream: BinaryIO) -> bytes:
    """The hook event's JSON from ``stream``, read up to one byte past the input limit (so an
    oversized event is seen as such, never read whole)."""
    return stream.read(_MAX_INPUT_BYTES + 1)


def run_hook(raw: bytes, settings: CaptureSettings | None = None) -> None:
    """Capture what one hook event names, within the time limit; never raises."""
    try:
        settings = settings or CaptureSettings()
    except Exception as err:  # bad settings: nothing can be captured, the agent must go on
        logging.getLogger("backscroll.capture.hook").error("capture settings: %s", err)
        return
    handler = _error_log(settings)
    loggers = [logging.getLogger("backscroll.capture")] if handler is not None else []
    for logger in loggers:
        logger.addHandler(handler)  # type: ignore[arg-type]
    try:
        _run_bounded(raw, settings)
    finally:
        for logger in loggers:
            logger.removeHandler(handler)  # type: ignore[arg-type]
        if handler is not None:
            handler.close()


def _run_bounded(raw: bytes, settings: CaptureSettings) -> None:
    deadline = time.monotonic() + settings.hook_timeout_s
    failure: list[BaseException] = []

    def work() -> None:
        try:
            _capture(raw[:_MAX_INPUT_BYTES], settings, deadline)
        except BaseException as err:
            failure.append(err)

    worker = threading.Thread(target=work, name="backscroll-capture", daemon=True)
    worker.start()
    worker.join(settings.hook_timeout_s + 2.0)
    if worker.is_alive():
        log.error(
            "capture took longer than %.1fs; stopped (the next event catches up)", settings.hook_timeout_s
        )
        for handler in log.handlers:
            handler.flush()
        os._exit(0)  # a stuck driver must not hold the agent; progress moves only after an append
    if failure:
        log.error("capture failed: %s: %s", type(failure[0]).__name__, failure[0])
