"""Paging for ``backscroll search``: ``--cursor`` continues a chain, ``--all`` streams every page.

Cursors are signed with the user's key (``$XDG_DATA_HOME/backscroll/cursor.key``, made on first use),
so a cursor printed by one command is accepted by the next; ``BACKSCROLL_CURSOR_KEY`` overrides it
for processes of other users or hosts (the console uses the same key). A chain of pages stops at
``MAX_PAGED`` matches.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from datetime import datetime
from typing import Any

from rich.console import Console

from backscroll.query import MAX_LIMIT, SessionQueryError, SessionQueryRequest, SessionQueryResult
from backscroll.query.contract import parse_time
from backscroll.query.cursor import MAX_PAGED
from backscroll.query.moments import utc_text

__all__ = ["check_kinds", "describe_empty", "iter_pages", "print_all", "print_next", "time_option"]


def time_option(flag: str, value: str | None, *, end: bool = False) -> datetime | None:
    """``--since``/``--until`` as typed (a date, a local-less time taken as UTC, or RFC 3339);
    a malformed one is INVALID_FILTER, printed as one line with exit code 2."""
    try:
        return parse_time(value, end=end)
    except ValueError:
        raise SessionQueryError(
            "SESSION_QUERY_INVALID_FILTER", f"{flag} needs a date like 2026-11-30 or 2026-11-30T10:00"
        ) from None


def check_kinds(kinds: list[str] | None) -> tuple[str, ...]:
    """``--kind`` values: event types the wire format knows. The Python API takes any well-formed
    type (one nothing has written matches nothing); on the command line an unknown name is far more
    likely a typo, so it is INVALID_FILTER, naming the kinds."""
    from backscroll.ingest.wire import KNOWN_EVENT_TYPES

    unknown = [kind for kind in kinds or () if kind not in KNOWN_EVENT_TYPES]
    if unknown:
        listed = ", ".join(sorted(KNOWN_EVENT_TYPES))
        raise SessionQueryError(
            "SESSION_QUERY_INVALID_FILTER", f"unknown kind {', '.join(map(repr, unknown))}; kinds: {listed}"
        )
    return tuple(kinds or ())


def describe_empty(
    query: str,
    workspace: str | None,
    session: str | None,
    kinds: tuple[str, ...],
    since: str | None,
    until: str | None,
    searched: int,
) -> str | None:
    """What an empty page of a filtered search says: the query, the scope and every filter that
    narrowed it (``None`` when no filter was given: the renderer's text then fits)."""
    filters = []
    if kinds:
        filters.append(f"kind {' or '.join(kinds)}")
    if since:
        filters.append(f"since {since}")
    if until:
        filters.append(f"until {until}")
    if not filters:
        return None
    where = f"session {session}" if session else f"workspace {workspace}"
    if workspace and session:
        where = f"session {session} of workspace {workspace}"
    what = f"no matches for {query!r}" if query.strip() else "no entries"
    looked = f" (searched {searched} entries)" if searched else ""
    return f"{what} in {where} with {', '.join(filters)}{looked}"


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
        line += f" · {utc_text(match.created_at)}"
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
