"""The three pages (search, session, health), the export and the two operator actions.

Each handler resolves the workspaces the caller's token allows, pins a :class:`Scope` to them, and
only then reads; a session outside them is "not found" (never "forbidden"), so a limited token
learns nothing about other workspaces.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

import orjson
from starlette.concurrency import iterate_in_threadpool, run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from backscroll.backends import ParkedRecord, WorkspaceCount
from backscroll.console.letters import scoped_letters
from backscroll.console.settings import Access
from backscroll.console.source import SourceUnavailable
from backscroll.console.state import Page, render, state_of
from backscroll.console.views import (
    SEARCH_KINDS,
    LineageView,
    highlight,
    lineage_from_listing,
)
from backscroll.query import EventRecordView, ReadEventResult, Scope, SessionQueryError, SessionQueryRequest
from backscroll.query.contract import parse_time

__all__ = ["export", "forget", "health", "replay", "search", "session"]

PAGE_SIZE = 50
_WINDOW = 50  # events each side of a page's centre: 101 per page (the readers' default maximum)
_STATUS = {
    "SESSION_QUERY_SESSION_NOT_FOUND": 404,
    "SESSION_QUERY_EVENT_NOT_FOUND": 404,
    "SESSION_QUERY_STALE_CURSOR": 409,
    "SESSION_QUERY_INDEX_FAILED": 503,
    "SESSION_QUERY_PERSISTENCE_FAILED": 503,
    "SESSION_QUERY_ABORTED": 504,
}
_T = TypeVar("_T")


async def _call(fn: Callable[[], _T]) -> _T:
    """Run a blocking backend call; its typed errors become error pages."""
    try:
        return await run_in_threadpool(fn)
    except SessionQueryError as err:
        if err.code == "SESSION_QUERY_STALE_CURSOR":
            raise Page(409, "the results changed since this page was issued; search again") from err
        raise Page(_STATUS.get(err.code, 400), f"{err.code}: {err.message}") from err
    except SourceUnavailable as err:
        raise Page(503, str(err)) from err


def _visible(access: Access, catalog: list[WorkspaceCount]) -> list[WorkspaceCount]:
    return [ws for ws in catalog if access.allows(ws.workspace_id)]


def _scope(workspace_ids: list[str]) -> Scope:
    if len(workspace_ids) == 1:
        return Scope.workspace(workspace_ids[0])
    return Scope.workspaces(workspace_ids, ops=True)


async def _session_scope(request: Request, access: Access, session_id: str) -> Scope:
    """The session's own workspace, when the token may see it (else "not found"). Reads of one
    session list only that workspace's sessions for its lineage, not every workspace's."""
    source = state_of(request).source
    workspace = await _call(lambda: source.workspace_of(session_id))
    if workspace is None or not access.allows(workspace):
        raise Page(404, f"no session {session_id!r} in the workspaces you can see")
    return Scope.workspace(workspace)


# -- search ---------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class _Form:
    query: str
    workspaces: list[str]
    session: str
    kinds: list[str]
    time_from: str
    time_to: str
    cursor: str | None
    page: int

    def link(self, **changes: Any) -> str:
        from urllib.parse import urlencode

        values: dict[str, Any] = {
            "q": self.query,
            "ws": self.workspaces,
            "session": self.session,
            "kind": self.kinds,
            "from": self.time_from,
            "to": self.time_to,
        }
        values.update(changes)
        pairs = [(k, v) for k, vs in values.items() for v in (vs if isinstance(vs, list) else [vs]) if v]
        return "/search?" + urlencode(pairs)


def _search_form(request: Request) -> _Form:
    params = request.query_params
    try:
        page = max(1, min(int(params.get("page", "1")), 10_000))
    except ValueError:
        page = 1
    return _Form(
        query=params.get("q", ""),
        workspaces=[w for w in params.getlist("ws") if w],
        session=params.get("session", "").strip(),
        kinds=[k for k in params.getlist("kind") if k],
        time_from=params.get("from", ""),
        time_to=params.get("to", ""),
        cursor=params.get("cursor") or None,
        page=page,
    )


async def search(request: Request, access: Access) -> Response:
    source = state_of(request).source
    form = _search_form(request)
    catalog = _visible(access, await _call(source.workspaces))
    known = {ws.workspace_id for ws in catalog}
    if any(ws not in known for ws in form.workspaces):  # newer than the cached catalog?
        catalog = _visible(access, await _call(lambda: source.workspaces(fresh=True)))
        known = {ws.workspace_id for ws in catalog}
    context: dict[str, Any] = {
        "form": form,
        "catalog": catalog,
        "kinds": SEARCH_KINDS,
        "page_title": "Search",
    }
    unknown = [ws for ws in form.workspaces if ws not in known]
    if unknown:
        raise Page(404, f"no workspace {unknown[0]!r} among the workspaces you can see")
    selected = form.workspaces or sorted(known)
    if not selected:
        return render(request, "search.html", result=None, rows=[], empty=True, **context)
    try:
        low, high = parse_time(form.time_from), parse_time(form.time_to, end=True)
    except ValueError:
        raise Page(400, "the time range needs dates like 2026-11-30 or 2026-11-30T10:00") from None
    request_model = await _call(
        lambda: SessionQueryRequest(
            query=form.query,
            session_id=form.session or None,
            kinds=tuple(form.kinds),
            limit=PAGE_SIZE,
            cursor=form.cursor,
            since=low,
            until=high,
        )
    )
    scope = await _call(lambda: _scope(selected))
    result = await _call(lambda: source.search(scope, request_model))
    rows = [(m, highlight(m.excerpt, form.query)) for m in result.matches]
    next_link = form.link(cursor=result.next_cursor, page=form.page + 1) if result.next_cursor else None
    return render(
        request,
        "search.html",
        result=result,
        rows=rows,
        empty=False,
        first=(form.page - 1) * PAGE_SIZE,
        next_link=next_link,
        **context,
    )


# -- session --------------------------------------------------------------------------------------
def _int(request: Request, name: str, default: int, low: int, high: int) -> int:
    try:
        value = int(request.query_params.get(name, default))
    except ValueError:
        raise Page(400, f"{name} must be an integer") from None
    return max(low, min(value, high))


def _lineage(source: Any, scope: Scope, session_id: str) -> LineageView:
    """Lineage from the scope's (briefly cached) listing; a session newer than the cache refreshes it."""
    for fresh in (False, True):
        view = lineage_from_listing(session_id, source.listing(scope, fresh=fresh))
        if view is not None:
            return view
    raise SessionQueryError("SESSION_QUERY_SESSION_NOT_FOUND", f"no session {session_id!r}")


def _window(reader: Any, session_id: str, centre: int, before: int, after: int) -> ReadEventResult | None:
    try:
        result: ReadEventResult = reader.read_event(session_id, centre, before, after)
        return result
    except SessionQueryError as err:
        if err.code == "SESSION_QUERY_EVENT_NOT_FOUND":
            return None
        raise


def _gapped(reader: Any, session_id: str) -> list[EventRecordView]:
    """The events of a log with seq gaps, where the first page by seq finds nothing: all of them if
    the fold accepts the log, else the first page by position (a gap is a surface violation)."""
    try:
        return list(reader.list_events(session_id))
    except SessionQueryError as err:
        if err.code != "SESSION_QUERY_INVALID_SURFACE":
            raise
    first = _window(reader, session_id, 0, 0, _WINDOW)
    return list(first.events) if first is not None else []


async def session(request: Request, access: Access) -> Response:
    source = state_of(request).source
    session_id = request.path_params["session_id"]
    scope = await _session_scope(request, access, session_id)
    target = request.query_params.get("seq")

    def load() -> tuple[LineageView, ReadEventResult | None, list[EventRecordView] | None, int]:
        def run(reader: Any) -> tuple[LineageView, ReadEventResult | None, list[EventRecordView] | None, int]:
            lineage = _lineage(source, scope, session_id)
            stats = lineage.target.stats
            last = stats.last_seq if stats is not None and stats.last_seq is not None else -1
            if target is not None:
                seq = _int(request, "seq", 0, 0, 1 << 62)
                before = _int(request, "before", 5, 0, _WINDOW)
                after = _int(request, "after", 5, 0, _WINDOW)
                return lineage, reader.read_event(session_id, seq, before, after), None, last
            page = _int(request, "page", 0, 0, 1 << 40)
            size = 2 * _WINDOW + 1
            start = min(page, max(last, 0) // size) * size  # a page past the end shows the last one
            centre = min(start + _WINDOW, max(last, 0))
            window = _window(reader, session_id, centre, centre - start, _WINDOW)
            if window is None and page == 0 and last >= 0:
                return lineage, None, _gapped(reader, session_id), last
            return lineage, window, None, last

        return source.read(scope, run)

    lineage, window, events, last = await _call(load)
    page = _int(request, "page", 0, 0, 1 << 40)
    pages = (last // (2 * _WINDOW + 1)) + 1 if last >= 0 else 1
    page = min(page, pages - 1)
    return render(
        request,
        "session.html",
        page_title=f"Session {session_id}",
        session_id=session_id,
        lineage=lineage,
        header=lineage.target.header,
        stats=lineage.target.stats,
        window=window,
        events=events if events is not None else (list(window.events) if window is not None else []),
        target_seq=window.target.seq if window is not None and target is not None else None,
        page=page,
        pages=pages,
    )


def _export_lines(source: Any, scope: Scope, session_id: str) -> Iterator[bytes]:
    def first(reader: Any) -> tuple[Any, int]:
        records = reader.list_sessions([{"kind": "id", "values": [session_id]}])
        if not records:
            raise SessionQueryError("SESSION_QUERY_SESSION_NOT_FOUND", f"no session {session_id!r}")
        stats = records[0].stats
        return records[0], (stats.last_seq if stats is not None and stats.last_seq is not None else -1)

    record, last = source.read(scope, first)
    yield orjson.dumps({"header": record.header.model_dump(mode="json")}) + b"\n"
    centre = _WINDOW
    while centre - _WINDOW <= last:
        window = source.read(
            scope, lambda r, c=centre: _window(r, session_id, min(c, last), _WINDOW, _WINDOW)
        )
        if window is None:  # a log with seq gaps: the whole log in one read
            events = source.read(scope, lambda r: r.list_events(session_id))
            for event in events:
                if event.seq >= centre - _WINDOW:
                    yield event.model_dump_json().encode() + b"\n"
            return
        for event in window.events:
            if event.seq >= centre - _WINDOW:
                yield event.model_dump_json().encode() + b"\n"
        centre += 2 * _WINDOW + 1


async def export(request: Request, access: Access) -> Response:
    """The session as JSONL: a ``{"header": ...}`` line, then every event with its surface state."""
    source = state_of(request).source
    session_id = request.path_params["session_id"]
    scope = await _session_scope(request, access, session_id)
    lines = _export_lines(source, scope, session_id)
    head = await _call(lambda: next(lines))  # errors (not found) before the response starts
    safe = "".join(ch if ch.isalnum() or ch in "._-" else "_" for ch in session_id)

    async def body() -> Any:
        yield head
        async for line in iterate_in_threadpool(lines):
            yield line

    return StreamingResponse(
        body(),
        media_type="application/x-ndjson",
        headers={"content-disposition": f'attachment; filename="{safe}.jsonl"'},
    )


async def forget(request: Request, access: Access) -> Response:
    source = state_of(request).source
    session_id = request.path_params["session_id"]
    await _session_scope(request, access, session_id)  # "not found" outside the token's workspaces
    forgotten = await _call(lambda: source.operate(lambda: source.backend.forget(session_id)))
    source.forget_listings()
    return render(
        request,
        "done.html",
        page_title="Forgotten",
        message=f"Deleted {forgotten.events} events of {session_id} from the projection; "
        "the log keeps its records.",
    )


# -- health ---------------------------------------------------------------------------------------
async def health(request: Request, access: Access) -> Response:
    source = state_of(request).source
    facts = await run_in_threadpool(source.backend.health)
    problems = list(facts.problems)
    try:
        every_workspace = await run_in_threadpool(source.workspaces, fresh=True)
    except SourceUnavailable as err:
        every_workspace, problems = [], [*problems, str(err)]
    catalog = _visible(access, every_workspace)
    letters: list[ParkedRecord] = []
    try:
        letters = await run_in_threadpool(source.operate, source.backend.dead_letters)
    except SourceUnavailable as err:
        problems = [*problems, f"cannot read the dead letters: {err}"]
    visible, hidden = scoped_letters(letters, access, (ws.workspace_id for ws in every_workspace))
    return render(
        request,
        "health.html",
        page_title="Health",
        facts=facts,
        problems=problems,
        catalog=catalog,
        letters=visible,
        hidden_letters=hidden,
        limited=access.workspaces is not None,
        can_replay=access.workspaces is None,
        describe=source.backend.describe() if access.workspaces is None else source.backend.name,
    )


async def replay(request: Request, access: Access) -> Response:
    source = state_of(request).source
    if access.workspaces is not None:
        raise Page(403, "replaying dead letters needs a token for every workspace")
    sent = await _call(lambda: source.operate(source.backend.replay_dead_letters))
    return render(
        request, "done.html", page_title="Replayed", message=f"Re-sent {sent} dead letters to the log."
    )
