"""One pass over one transcript: the lines after its mark, mapped, appended, the mark moved.

Only complete lines are read: a last line without its newline is still being written, so it waits
for the next pass. Each line has one clear outcome, counted in the :class:`Outcome`:

* a JSON object → the entries its format maps it to (every line at least one);
* a line already captured (its id was seen) → nothing, counted as a duplicate;
* not JSON, not an object, or over :data:`MAX_LINE_BYTES` → a ``capture/invalid-line`` entry
  with the reason and the start of the line, counted as invalid;
* bytes that are not UTF-8 → read with U+FFFD in their place, ``attrs.invalid_utf8``.

The entries go to the log chunk by chunk; after each chunk the log has accepted, the transcript's
mark and its sessions' state are saved in the same transaction that read them.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Final

import orjson

from backscroll.capture.context import Context, Format, started_at
from backscroll.capture.entries import Batch, parse_time
from backscroll.capture.progress import Progress, TranscriptMark, fingerprint
from backscroll.capture.settings import CaptureSettings

if TYPE_CHECKING:
    from backscroll.ingest.bulk import EncodedRecord
    from backscroll.ingest.entry_log import EntryLog

__all__ = ["MAX_LINE_BYTES", "Outcome", "capture_transcript", "log_identity"]

log = logging.getLogger("backscroll.capture")

#: A longer line is not read (its start is kept in a ``capture/invalid-line`` entry).
MAX_LINE_BYTES: Final = 256 * 1024 * 1024
#: Lines mapped before their entries go to the log and the mark moves.
CHUNK_LINES: Final = 2000
_INVALID_TEXT_BYTES: Final = 64 * 1024
_READ: Final = 1024 * 1024


@dataclass
class Outcome:
    """What one pass did to one transcript."""

    path: Path
    lines: int = 0
    entries: int = 0
    duplicates: int = 0
    invalid: int = 0
    waiting: bool = False
    sessions: dict[str, str] = field(default_factory=dict)
    reasons: list[str] = field(default_factory=list)


def log_identity(backend: Any) -> str:
    """Which log the entries go to (the progress of one log never counts for another)."""
    kafka = getattr(backend, "kafka", None)
    if kafka is not None:
        return f"kafka {kafka.bootstrap_servers} {kafka.topic}"
    path = getattr(backend, "sqlite_path", None)
    return f"sqlite {Path(path).resolve()}" if path is not None else str(backend.describe())


def _first_line(stream: IO[bytes]) -> bytes | None:
    stream.seek(0)
    line = stream.readline(_READ)
    return line if line.endswith(b"\n") or len(line) >= _READ else None


def _read_line(stream: IO[bytes]) -> tuple[bytes | None, int, bool]:
    """``(line or None when over the cap, bytes consumed, complete)``; at the end ``(b"", 0, True)``."""
    start = stream.tell()
    parts: list[bytes] = []
    size = 0
    while True:
        chunk = stream.readline(_READ)
        if not chunk:
            if size:
                stream.seek(start)
                return None, 0, False  # no newline yet: still being written
            return b"", 0, True
        size += len(chunk)
        if size <= MAX_LINE_BYTES:
            parts.append(chunk)
        elif parts:
            parts = [parts[0][:_INVALID_TEXT_BYTES]]
        if chunk.endswith(b"\n"):
            return (b"".join(parts) if size <= MAX_LINE_BYTES else None), size, True


def _parse(raw: bytes) -> tuple[dict[str, Any] | None, dict[str, Any], str | None]:
    """``(object, notes, reason)``: the object and what to note on its entries, or why not."""
    notes: dict[str, Any] = {}
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError:
        import json

        text = raw.decode("utf-8", "replace")
        if "\ufffd" in text and text != raw.decode("utf-8", "ignore"):
            notes["invalid_utf8"] = True
        try:
            value = json.loads(text)  # also takes lone surrogates, which the entries then replace
        except ValueError as err:
            return None, notes, f"not JSON ({err})"
    if not isinstance(value, dict):
        return None, notes, f"not a JSON object but {type(value).__name__}"
    return value, notes, None


class _Pass:
    def __init__(self, path: Path, fmt: Format, progress: Progress, settings: CaptureSettings) -> None:
        self.path, self.fmt, self.progress, self.settings = path, fmt, progress, settings
        self.key = str(path.resolve())

    def start(self, stream: IO[bytes]) -> tuple[TranscriptMark, str | None]:
        """Where to start reading, and the transcript's previous path when it was moved."""
        first = _first_line(stream)
        print_ = fingerprint(first) if first is not None else ""
        mark = self.progress.mark(self.key)
        size = os.fstat(stream.fileno()).st_size
        if mark is None:
            moved = self.progress.moved_from(print_) if print_ else None
            if moved is not None:
                return moved[1], moved[0]
            return TranscriptMark(print_), None
        if (mark.fingerprint and print_ != mark.fingerprint) or size < mark.offset:
            log.warning("%s was rewritten or rotated: reading it from its start", self.path)
            if mark.fingerprint and print_ != mark.fingerprint:
                # Kept under a name no file has: if the old content shows up under another path
                # (rotated away), that path continues from here (Progress.moved_from).
                self.progress.set_mark(f"{self.key}#{mark.fingerprint[:16]}", mark)
            return TranscriptMark(print_), None
        mark.fingerprint = mark.fingerprint or print_
        return mark, None


def capture_transcript(
    path: Path,
    fmt: Format,
    log_: EntryLog,
    progress: Progress,
    settings: CaptureSettings,
    *,
    deadline: float | None = None,
) -> Outcome:
    """Capture the lines of ``path`` after its mark (until ``deadline``, a ``time.monotonic()``
    value, when given: the rest waits for the next pass)."""
    import time

    outcome = Outcome(path)
    step = _Pass(path, fmt, progress, settings)
    with path.open("rb") as stream:
        # Lines without a time of their own (a title line first) take the transcript's first time.
        started = parse_time(started_at(path)[0]) or datetime.fromtimestamp(
            os.fstat(stream.fileno()).st_mtime, UTC
        )
        done = False
        while not done:
            with progress.transaction():
                mark, moved = step.start(stream)
                stream.seek(mark.offset)
                batch = Batch(settings, progress.session, fallback_time=started)
                ctx = Context(batch, settings, path, fmt.default_session(path), progress.line)
                read = 0
                while read < CHUNK_LINES:
                    raw, size, complete = _read_line(stream)
                    if not complete:
                        outcome.waiting = True
                        done = True
                        break
                    if size == 0:
                        done = True
                        break
                    read += 1
                    mark.line += 1
                    mark.offset += size
                    _map(ctx, fmt, mark.line, raw, outcome)
                if not mark.fingerprint and mark.offset:
                    first = _first_line(stream)
                    mark.fingerprint = fingerprint(first) if first else ""
                    stream.seek(mark.offset)
                _append(log_, batch.records)
                outcome.lines += read
                outcome.entries += sum(1 for r in batch.records if r["kind"] == "event")
                outcome.duplicates += ctx.duplicates
                for sid, state in batch.sessions.items():
                    outcome.sessions[sid] = state.workspace_id
                progress.save_sessions(batch.sessions)
                progress.save_lines(ctx.lines)
                progress.set_mark(step.key, mark, moved_from=moved)
            if deadline is not None and time.monotonic() > deadline:
                break
    return outcome


def _map(ctx: Context, fmt: Format, number: int, raw: bytes | None, outcome: Outcome) -> None:
    if raw is not None and not raw.strip():
        return
    obj, notes, reason = (None, {}, None) if raw is None else _parse(raw)
    if raw is None:
        reason = f"line over the {MAX_LINE_BYTES} byte cap"
    if obj is not None:
        try:
            fmt.map_line(ctx, number, obj, notes)
            return
        except Exception as err:  # a shape the format did not expect: kept, never a crash
            log.warning("line %d of %s could not be mapped: %r", number, ctx.path, err)
            reason = f"could not be mapped: {type(err).__name__}: {err}"
    outcome.invalid += 1
    if len(outcome.reasons) < 20:
        outcome.reasons.append(f"{ctx.path}:{number}: {reason}")
    sid = ctx.default_session
    batch = ctx.batch
    batch.session(sid, workspace_id=ctx.workspace(None), time=None, origin=fmt.name)
    text = (raw or b"")[:_INVALID_TEXT_BYTES].decode("utf-8", "replace")
    batch.event(
        sid, "capture/invalid-line", time=None, text=text, attrs={"line": number, "reason": reason, **notes}
    )


def _append(log_: EntryLog, records: list[dict[str, Any]]) -> None:
    """Validate and append; a record the wire format refuses becomes a ``capture/rejected`` entry
    in its place (same seq: the session stays contiguous)."""
    if not records:
        return
    from backscroll.ingest.bulk import encode_for_log
    from backscroll.ingest.errors import RecordRejected
    from backscroll.ingest.wire import parse_record

    encoded: list[EncodedRecord] = []
    for record in records:
        try:
            encoded.append(encode_for_log(parse_record(record)))
        except RecordRejected as err:
            if record.get("kind") != "event":
                raise
            keep = {k: record[k] for k in ("v", "kind", "workspace_id", "session_id", "seq", "time", "turn")}
            keep.update(type="capture/rejected", attrs={"reason": str(err)[:1024], "was": record["type"]})
            encoded.append(encode_for_log(parse_record(keep)))
    log_.append_encoded(encoded)
