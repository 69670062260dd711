"""Paging for ``backscroll search``: ``--cursor`` continues a chain, ``--all`` streams every page.

Cursors are signed; set ``BACKSCROLL_CURSOR_KEY`` to the same secret everywhere so that a cursor
printed by one process is accepted by the next (the console uses the same key).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

from rich.console import Console

from backscroll.query import MAX_LIMIT, SessionQueryError, SessionQueryRequest, SessionQueryResult
from backscroll.query.contract import parse_time
from backscroll.query.cursor import MAX_PAGED

__all__ = ["iter_pages", "print_all", "print_next", "time_option"]


def time_option(flag: str, value: str | None, *, end: bool = False) -> datetime | None:
    """``--since``/``--until`` as typed (a date, a local-less time taken as UTC, or RFC 3339);
    a malformed one is INVALID_FILTER, printed as one line with exit code 2."""
    try:
        return parse_time(value, end=end)
    except ValueError:
        raise SessionQueryError(
            "SESSION_QUERY_INVALID_FILTER", f"{flag} needs a date like 2026-11-30 or 2026-11-30T10:00"
        ) from None


def iter_pages(provider: Any, request: SessionQueryRequest) -> Iterator[SessionQueryResult]:
    """The request's page and every following one, until there is no next cursor."""
    while True:
        result: SessionQueryResult = provider.search(request)
        yield result
        if not result.next_cursor or not result.matches:
            return
        request = request.model_copy(update={"cursor": result.next_cursor})


def _line(match: Any, several: bool) -> str:
    parts = [f"session {match.session_id}", f"seq {match.seq}"] if several else [f"seq {match.seq}"]
    if match.turn is not None:
        parts.append(f"turn {match.turn}")
    parts.append(match.role or match.kind)
    line = f"[{', '.join(parts)}] score {match.score:.1f}"
    if match.created_at is not None:
        line += f" · {match.created_at.astimezone(UTC).strftime('%Y-%m-%dT%H:%M:%SZ')}"
    return line


def print_all(
    provider: Any, request: SessionQueryRequest, *, as_json: bool, several: bool, out: Console, err: Console
) -> int:
    """Stream every match (JSONL with ``as_json``); returns how many. A short summary goes to stderr."""
    if request.limit is None:
        request = request.model_copy(update={"limit": MAX_LIMIT})
    count = 0
    partial = False
    searched = 0
    for page in iter_pages(provider, request):
        partial = partial or page.partial
        searched = page.searched
        for match in page.matches:
            count += 1
            if as_json:
                sys.stdout.write(match.model_dump_json() + "\n")
            else:
                out.print(f"\n{_line(match, several)}\n{match.excerpt}", highlight=False, markup=False)
        if as_json:
            sys.stdout.flush()
    kind = "closest matches (no entry matched every word)" if partial else "matches"
    err.print(f"{count} {kind}, searched {searched} entries", highlight=False, markup=False)
    if count >= MAX_PAGED:
        err.print(
            f"stopped at the paging limit of {MAX_PAGED} matches; narrow the query for the rest",
            highlight=False,
            markup=False,
        )
    return count


def print_next(result: SessionQueryResult, err: Console) -> None:
    """Tell a human how to fetch the next page."""
    if result.next_cursor:
        err.print(f"next page: --cursor {result.next_cursor}", highlight=False, markup=False)
