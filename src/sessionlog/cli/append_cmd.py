"""``sessionlog append FILE|-``: bulk-append wire records, streamed, validated, batched.

Lines are read one at a time with the record cap applied **before** anything is parsed: a line
longer than :data:`~sessionlog.ingest.wire.MAX_RECORD_BYTES` is skipped in bounded chunks and
reported, never held whole. Each line is decoded and validated on its own (a bad line is reported
with its number and reason and costs nothing else), and the valid records go to the log in batches
through ``append_many`` when the log has it (one transaction per batch on the embedded backend).

Progress goes to stderr: a bar with records, rate and (for a file, whose size is known) ETA on a
terminal; otherwise a plain counter line every few seconds. The summary goes to stdout, every
rejection up to :data:`MAX_REASONS_SHOWN` and then one ``… N more`` line (``--json``: one JSON
object). Exit status 0, 1 when a line was rejected or the log failed, 2 for bad usage.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Annotated, Any, Final

import typer

from sessionlog.cli.meter import Meter
from sessionlog.cli.output import EXIT_FAILED, EXIT_USAGE, errors, fail, print_json, say

if TYPE_CHECKING:
    from sessionlog.ingest.wire import EventRecord, HeaderRecord

__all__ = ["BATCH_RECORDS", "MAX_REASONS_SHOWN", "AppendSummary", "append", "iter_lines"]

#: Records per ``append_many`` call (one SQLite transaction; bounded memory).
BATCH_RECORDS: Final = 2000
#: Bytes per batch, whatever the record count.
BATCH_BYTES: Final = 8 * 1024 * 1024
#: Rejection reasons printed before the ``… N more`` line.
MAX_REASONS_SHOWN: Final = 100
_CHUNK: Final = 1024 * 1024


@dataclass
class AppendSummary:
    """What one run did: counts and the first rejections (line number, field, reason)."""

    lines: int = 0
    appended: int = 0
    rejected: int = 0
    reasons: list[tuple[int, str, str]] = field(default_factory=list)

    def reject(self, line: int, field_name: str, reason: str) -> None:
        self.rejected += 1
        if len(self.reasons) < MAX_REASONS_SHOWN:
            self.reasons.append((line, field_name, reason))


def iter_lines(stream: IO[bytes], cap: int) -> Iterator[tuple[int, bytes | None, int]]:
    """``(line number, bytes or None, size)`` for every non-blank line; ``None`` when the line is
    longer than ``cap`` bytes (its size is then counted in chunks, never buffered)."""
    limit = cap + 2  # the record plus "\r\n"
    number = 0
    while True:
        line = stream.readline(limit)
        if not line:
            return
        number += 1
        if len(line) == limit and not line.endswith(b"\n"):
            size = len(line)
            while True:
                chunk = stream.readline(_CHUNK)
                size += len(chunk)
                if not chunk or chunk.endswith(b"\n"):
                    break
            yield number, None, size
            continue
        if line.strip():
            yield number, line, len(line)


def _append_batch(
    log: Any, batch: list[tuple[int, HeaderRecord | EventRecord]], summary: AppendSummary
) -> None:
    """Append a batch of validated records; a batch the log refuses as a whole (a record over the
    cap once encoded) is retried one record at a time so only the bad ones are rejected."""
    from sessionlog.ingest import RecordRejected

    append_many = getattr(log, "append_many", None)
    if append_many is not None:
        try:
            append_many([record for _, record in batch])
            summary.appended += len(batch)
            return
        except RecordRejected:
            pass
    for number, record in batch:
        try:
            log.append(record)
            summary.appended += 1
        except RecordRejected as err:
            summary.reject(number, err.field, str(err))


def _open(source: str, as_json: bool) -> tuple[IO[bytes], int | None]:
    if source == "-":
        return sys.stdin.buffer, None
    path = Path(source)
    if not path.is_file():
        fail(f"no such file: {source}", EXIT_USAGE, as_json=as_json)
    return path.open("rb"), path.stat().st_size


def append(
    source: Annotated[str, typer.Argument(help="JSONL file of wire records, or - for stdin.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary (or error) as JSON.")] = False,
) -> None:
    """Append wire-format records (one JSON object per line) to the session log (SESSIONLOG_BACKEND)."""
    from sessionlog.backend import open_log
    from sessionlog.ingest import IngestError, RecordRejected
    from sessionlog.ingest.wire import MAX_RECORD_BYTES, decode_record

    summary = AppendSummary()
    started = time.monotonic()
    with errors(as_json):
        stream, size = _open(source, as_json)
        with ExitStack() as stack:
            if source != "-":
                stack.enter_context(stream)
            log: Any = stack.enter_context(open_log(live=False))  # appends and exits: no reader here
            meter = Meter(stack, "appending", size)
            batch: list[tuple[int, HeaderRecord | EventRecord]] = []
            batch_bytes = done_bytes = 0
            try:
                for number, line, length in iter_lines(stream, MAX_RECORD_BYTES):
                    summary.lines = number
                    done_bytes += length
                    if line is None:
                        reason = f"line is {length} bytes, over the {MAX_RECORD_BYTES} byte record cap"
                        summary.reject(number, "record", f"record: {reason}")
                        continue
                    try:
                        batch.append((number, decode_record(line)))
                        batch_bytes += length
                    except RecordRejected as err:
                        summary.reject(number, err.field, str(err))
                    if len(batch) >= BATCH_RECORDS or batch_bytes >= BATCH_BYTES:
                        _append_batch(log, batch, summary)
                        batch, batch_bytes = [], 0
                        meter.update(summary.appended, done_bytes=done_bytes)
                if batch:
                    _append_batch(log, batch, summary)
                meter.update(summary.appended, done_bytes=done_bytes)
                log.flush(timeout=60)
            except IngestError:
                # The log failed (not a bad record): say how far it got before the one-line error.
                _report(summary, time.monotonic() - started, as_json, partial=True)
                raise
    _report(summary, time.monotonic() - started, as_json)
    if summary.rejected:
        raise typer.Exit(EXIT_FAILED)


def _report(summary: AppendSummary, seconds: float, as_json: bool, *, partial: bool = False) -> None:
    more = summary.rejected - len(summary.reasons)
    if as_json:
        if partial:
            return  # the error object follows on stdout; one JSON document per run
        print_json(
            {
                "appended": summary.appended,
                "rejected": summary.rejected,
                "lines": summary.lines,
                "seconds": round(seconds, 3),
                "rejections": [
                    {"line": number, "field": name, "reason": reason}
                    for number, name, reason in summary.reasons
                ],
                "more_rejections": more,
            }
        )
        return
    rate = int(summary.appended / seconds) if seconds > 0 else summary.appended
    prefix = "before the failure: " if partial else ""
    say(
        f"{prefix}appended {summary.appended} records, rejected {summary.rejected} "
        f"in {seconds:.1f}s ({rate} rec/s)"
    )
    for number, _, reason in summary.reasons:
        say(f"  line {number}: {reason}")
    if more > 0:
        say(f"  … {more} more rejected lines not shown")
