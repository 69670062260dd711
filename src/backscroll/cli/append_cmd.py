"""``backscroll append FILE|-``: bulk-append wire records, streamed, validated, batched.

Lines are read one at a time with a length limit applied **before** anything is parsed: a line
longer than :data:`~backscroll.ingest.wire.MAX_INPUT_BYTES` (room for any ``\\u``-escaped spelling
of a record under the record cap) is skipped in bounded chunks and reported, never held whole. The
record cap itself (:data:`~backscroll.ingest.wire.MAX_RECORD_BYTES`) is checked on each record's
canonical encoding, as every append does. Lines go in chunks of :data:`BATCH_RECORDS` (embedded:
:data:`~backscroll.cli.append_pipeline.EMBEDDED_BATCH_RECORDS`) through
:func:`~backscroll.ingest.bulk.prepare_lines` (each line decoded, validated and encoded on its
own: a bad line is reported with its number and reason and costs nothing else; on a big input in
worker processes, see ``append_pipeline``), and each chunk's valid records go to the log in one
``append_encoded`` call (one transaction on the embedded backend; one spool write and one
acknowledgement per batch on Kafka). The command succeeds only when the log acknowledged every
valid record.

Progress goes to stderr once per chunk: a bar with records, rate and (for a file, whose size is
known) ETA on a terminal; otherwise a plain counter line every few seconds. The summary goes to
stdout, every rejection up to :data:`MAX_REASONS_SHOWN` and then one ``… N more`` line
(``--json``: one JSON object). Exit status 0, 1 when a line was rejected or the log failed, 2 for
bad usage.
"""

from __future__ import annotations

import os
import stat
import sys
import time
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Annotated, Final

import typer

from backscroll.cli.append_pipeline import BATCH_BYTES, BATCH_RECORDS, iter_lines
from backscroll.cli.meter import Meter
from backscroll.cli.output import EXIT_FAILED, EXIT_USAGE, errors, fail, print_json, say

if TYPE_CHECKING:
    from backscroll.ingest.bulk import BatchAck

__all__ = [
    "BATCH_BYTES",
    "BATCH_RECORDS",
    "MAX_REASONS_SHOWN",
    "AppendSummary",
    "append",
    "iter_lines",
]

#: Rejection reasons printed before the ``… N more`` line.
MAX_REASONS_SHOWN: Final = 100


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


def _open(source: str, as_json: bool) -> tuple[IO[bytes], int | None]:
    """The input and its size when known: a regular file has one; stdin, a FIFO or a device
    (``/dev/null``) is read as a stream."""
    if source == "-":
        return sys.stdin.buffer, None
    path = Path(source)
    try:
        mode = path.stat().st_mode
    except (FileNotFoundError, NotADirectoryError):
        fail(f"no such file: {source}", EXIT_USAGE, as_json=as_json)
    if stat.S_ISDIR(mode):
        fail(f"{source} is a directory, not a file of records", EXIT_USAGE, as_json=as_json)
    stream = path.open("rb")
    return stream, (os.fstat(stream.fileno()).st_size if stat.S_ISREG(mode) else None)


def _check_acknowledged(acks: list[BatchAck], summary: AppendSummary, timeout: float) -> None:
    """After ``flush``: every record acknowledged, or the command fails with the first cause."""
    from backscroll.ingest import LogRefused, LogUnavailable

    deadline = time.monotonic() + timeout
    for ack in acks:  # flush saw them all answered; their batch counts follow right after
        if not ack.wait(max(0.0, deadline - time.monotonic())):
            raise LogUnavailable(f"{ack.size - ack.acknowledged - ack.failed} records not acknowledged")
    summary.appended = sum(ack.acknowledged for ack in acks)
    failed = sum(ack.failed for ack in acks)
    first = next((ack.error() for ack in acks if ack.error() is not None), None)
    if failed or first is not None:
        raise LogRefused(f"{failed} records were not appended, the first because: {first}")


def append(
    source: Annotated[
        str, typer.Argument(metavar="FILE", help="JSONL file of wire records, or - for stdin.")
    ],
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary (or error) as JSON.")] = False,
    workers: Annotated[
        int | None,
        typer.Option(
            "--workers",
            min=0,
            metavar="N",
            help="Processes validating records beside this one on a big input "
            "(default: one per idle CPU, up to 4; 0: validate in this process).",
        ),
    ] = None,
) -> None:
    """Append wire-format records (one JSON object per line) to the session log (BACKSCROLL_BACKEND)."""
    from backscroll.backends import current_backend
    from backscroll.cli.append_pipeline import (
        EMBEDDED_BATCH_RECORDS,
        PARALLEL_MIN_BYTES,
        Preparer,
        auto_workers,
        bulk_gc,
        iter_chunks,
    )
    from backscroll.ingest import IngestError
    from backscroll.ingest.wire import MAX_INPUT_BYTES

    summary = AppendSummary()
    started = time.monotonic()
    acks: list[BatchAck] = []
    with errors(as_json):
        stream, size = _open(source, as_json)
        with ExitStack() as stack:
            if source != "-":
                stack.enter_context(stream)
            stack.enter_context(bulk_gc())
            eager = size is not None and size >= PARALLEL_MIN_BYTES  # workers start while the log opens
            preparer = stack.enter_context(
                Preparer(auto_workers() if workers is None else workers, eager=eager)
            )
            backend = current_backend()
            log = stack.enter_context(backend.open_log(live=False))  # appends and exits: no reader
            meter = Meter(stack, "appending", size)
            queued = 0
            per_chunk = EMBEDDED_BATCH_RECORDS if backend.commits_each_append else BATCH_RECORDS
            chunks = iter_chunks(stream, MAX_INPUT_BYTES, per_chunk)
            try:
                for chunk, records, rejections in preparer.run(chunks):
                    summary.lines = chunk.last_line
                    for rejection in rejections:
                        summary.reject(*rejection)
                    if records:
                        acks.append(log.append_encoded(records))
                        queued += len(records)
                    meter.update(queued, done_bytes=chunk.done_bytes)
                log.flush(timeout=60)
                _check_acknowledged(acks, summary, timeout=10)
            except IngestError:
                # The log failed (not a bad record): say how far it got before the one-line error.
                summary.appended = sum(ack.acknowledged for ack in acks)
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
    if not partial and summary.lines == 0:
        say("appended 0 records: the input holds no records")
        return
    say(
        f"{prefix}appended {summary.appended} records, rejected {summary.rejected} "
        f"in {seconds:.1f}s ({rate} rec/s)"
    )
    for number, _, reason in summary.reasons:
        say(f"  line {number}: {reason}")
    if more > 0:
        say(f"  … {more} more rejected lines not shown")
