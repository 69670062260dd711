"""``backscroll sessions``, ``backscroll read`` and ``backscroll trace``: exact reads from a terminal.

Every command reads through the configured backend's session reader (``open_reader`` of the
:class:`~backscroll.backends.Backend`: :class:`~backscroll.query.OpenSearchSessionReader` or the
embedded ``SQLiteSessionReader``) pinned to a scope: the workspace given with ``--workspace``, or the
sessions given with ``--session``. Without either, ``read`` and ``trace`` use the workspace of the
session they name (the CLI is a trusted operator tool: lineage across the workspace is what an operator
expects; the model tools stay pinned), and ``sessions`` lists every workspace's sessions, a page
(``--limit``/``--offset``) at a time.
``--json`` prints the result model as JSON (an error as ``{"error": {"code", "message",
"retriable"}}``, on stdout too); the human output is tables and trees, user text escaped (no
markup, no control characters). Exit status: 0, 1 for a read error (an unknown session or
workspace included), 2 for bad usage or settings.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import orjson
import typer
from rich.table import Table
from rich.text import Text
from rich.tree import Tree

from backscroll.cli import output
from backscroll.query.moments import utc_text
from backscroll.textsafe import safe_text

if TYPE_CHECKING:
    from backscroll.query import (
        EventRecordView,
        EventTraceResult,
        ReadEventResult,
        Scope,
        SessionRecord,
        SessionTrace,
    )
    from backscroll.query.reads.reader import ReaderBase

__all__ = ["read", "register", "sessions", "trace"]

console = output.console
err_console = output.err_console

_WS = re.compile(r"\s+")
Workspace = Annotated[
    str | None,
    typer.Option(
        "--workspace", "-w", metavar="WORKSPACE", help="Read within this workspace (sessions and lineage)."
    ),
]
Sessions = Annotated[
    list[str] | None,
    typer.Option("--session", "-s", metavar="SESSION", help="Read within these sessions (repeatable)."),
]
#: Rows ``sessions`` prints unless ``--limit`` says otherwise.
SESSIONS_SHOWN = 100
AsJson = Annotated[bool, typer.Option("--json", help="Print the result as JSON.")]


def register(app: typer.Typer) -> None:
    """Add the read commands to the ``backscroll`` app."""
    app.command("sessions")(sessions)
    app.command("read")(read)
    app.command("trace")(trace)


# -- plumbing -------------------------------------------------------------------------------------
def _fail(message: str, code: int, as_json: bool, error_code: str = "BACKSCROLL_USAGE") -> NoReturn:
    output.fail(message, code, as_json=as_json, code=error_code)


def _errors(as_json: bool) -> AbstractContextManager[None]:
    return output.errors(as_json)


def _scope(
    workspace: str | None,
    session_ids: list[str] | None,
    default: str | None,
    as_json: bool,
    window: tuple[int, int] | None = None,
) -> Scope:
    from backscroll.query import Scope

    if workspace and session_ids:
        _fail("give --workspace or --session, not both", 2, as_json)
    if workspace:
        return Scope.workspace(workspace)
    if session_ids:
        return Scope.sessions(session_ids)
    if default is not None:
        return _home_scope(default, window)
    _fail("give --workspace W or --session S", 2, as_json)


def _home_scope(session_id: str, window: tuple[int, int] | None = None) -> Scope:
    """The workspace of ``session_id`` (what an operator means by "this session's lineage"); the
    session alone when it has no known workspace. An unknown session raises SESSION_NOT_FOUND.
    ``window`` (``read``'s before/after) is validated first, as a read does before any lookup."""
    from backscroll.query import Scope, SessionQueryError
    from backscroll.query.reads.views import check_window

    alone = Scope.session(session_id)
    with _reader(alone) as reader:
        if window is not None:
            check_window(*window, reader.read_window_max)
        records = reader.list_sessions()
    workspace = next((r.header.workspace_id for r in records if r.header.session_id == session_id), None)
    if not records:
        raise SessionQueryError("SESSION_QUERY_SESSION_NOT_FOUND", f"no session {session_id}")
    return Scope.workspace(workspace) if workspace else alone


def _reader(scope: Scope, **kwargs: Any) -> ReaderBase:
    from backscroll.backends import current_backend

    return current_backend().open_reader(scope, **kwargs)


def _print_json(payload: Any) -> None:
    sys.stdout.write(orjson.dumps(payload).decode() + "\n")


def _time(value: datetime | None) -> str:
    return "—" if value is None else utc_text(value, sep=" ")


def _short(text: str, limit: int = 96) -> str:
    flat = _WS.sub(" ", text).strip()
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _who(event: EventRecordView) -> str:
    return event.tool_name or event.role or ""


def _session_label(record: SessionRecord) -> Text:
    header = record.header
    label = Text.assemble((safe_text(header.session_id), "bold"), "  ", _time(header.created_at))
    if header.title:
        label.append("  " + safe_text(_short(header.title, 48)))
    return label


# -- sessions -------------------------------------------------------------------------------------
def sessions(
    workspace: Workspace = None,
    session: Sessions = None,
    limit: Annotated[
        int, typer.Option("--limit", "-n", metavar="N", help=f"Sessions per page ({SESSIONS_SHOWN}).")
    ] = SESSIONS_SHOWN,
    offset: Annotated[
        int, typer.Option("--offset", metavar="K", help="Skip the K newest sessions (the next page).")
    ] = 0,
    as_json: AsJson = False,
) -> None:
    """List the sessions in scope (without one: in every workspace), newest first, a page at a time."""
    if limit < 1 or offset < 0:
        _fail("--limit needs 1 or more, --offset 0 or more", 2, as_json)
    with _errors(as_json):
        records = _list_sessions(workspace, session, as_json)
        _require_known(records, workspace, session, as_json)
        page = records[offset : offset + limit]
        if offset + limit < len(records):
            shown = f"{offset + 1}–{offset + len(page)} of {len(records)}"
            err_console.print(f"sessions {shown}; next page: --offset {offset + limit}", highlight=False)
        if as_json:
            _print_json([record.model_dump(mode="json") for record in page])
            return
        table = Table(title=f"{len(records)} session{'s' if len(records) != 1 else ''}")
        for column in ("Session", "Workspace", "Created", "Parent", "Events", "Last activity", "Surface"):
            table.add_column(column, justify="right" if column == "Events" else "left")
        for record in page:
            header, stats = record.header, record.stats
            table.add_row(
                safe_text(header.session_id),
                safe_text(header.workspace_id or "—"),
                _time(header.created_at),
                safe_text(header.parent_session_id or "—"),
                str(stats.entry_count) if stats else "—",
                _time(stats.last_activity) if stats else "—",
                "—" if stats is None else ("valid" if stats.surface_valid else Text("invalid", style="red")),
            )
        console.print(table)


def _list_sessions(
    workspace: str | None, session_ids: list[str] | None, as_json: bool
) -> tuple[SessionRecord, ...]:
    """The sessions of the scope given, or of every workspace in the projection when none is (the
    CLI is the operators' tool: it sees them all)."""
    from backscroll.backends import current_backend
    from backscroll.query import Scope

    if workspace or session_ids:
        with _reader(_scope(workspace, session_ids, None, as_json)) as reader:
            return reader.list_sessions()
    backend = current_backend()
    ids = [count.workspace_id for count in backend.workspaces()]
    if not ids:
        return ()
    with backend.open_reader(Scope.workspaces(ids, ops=True)) as reader:
        return reader.list_sessions()


def _require_known(
    records: Sequence[SessionRecord], workspace: str | None, sessions: list[str] | None, as_json: bool
) -> None:
    """Say plainly when the ids given name nothing (exit 1), instead of an empty table."""
    if sessions:
        known = {r.header.session_id for r in records}
        unknown = [sid for sid in sessions if sid not in known]
        if unknown:
            message = f"no session {', '.join(unknown)}"
            _fail(message, 1, as_json, "SESSION_QUERY_SESSION_NOT_FOUND")
    elif workspace and not records:
        message = f"no sessions in workspace {workspace} (unknown workspace, or nothing indexed yet)"
        _fail(message, 1, as_json, "BACKSCROLL_WORKSPACE_NOT_FOUND")


# -- read -----------------------------------------------------------------------------------------
def read(
    session_id: Annotated[str, typer.Argument(metavar="SESSION", help="The session id.")],
    seq: Annotated[int, typer.Argument(metavar="SEQ", help="The event's seq.")],
    before: Annotated[
        int, typer.Option("--before", "-B", metavar="N", help="Events to show before it (0 to 50).")
    ] = 0,
    after: Annotated[
        int, typer.Option("--after", "-A", metavar="N", help="Events to show after it (0 to 50).")
    ] = 0,
    workspace: Workspace = None,
    session: Sessions = None,
    as_json: AsJson = False,
) -> None:
    """Read one event exactly, with a window of neighbours."""
    with _errors(as_json):
        reader = _reader(_scope(workspace, session, session_id, as_json, (before, after)))
        result = reader.read_event(session_id, seq, before, after)
        if as_json:
            _print_json(result.model_dump(mode="json"))
            return
        _print_read(result)


def _print_read(result: ReadEventResult) -> None:
    title = f"{safe_text(result.header.session_id)} · seq {result.start_seq}–{result.end_seq}"
    table = Table(title=title)
    for column in ("", "Seq", "Type", "Time", "Surface", "Who", "Text"):
        table.add_column(column, justify="right" if column == "Seq" else "left", overflow="fold")
    for event in result.events:
        is_target = event.seq == result.target.seq
        table.add_row(
            "▶" if is_target else "",
            str(event.seq),
            safe_text(event.type),
            _time(event.time),
            event.surface,
            safe_text(_who(event)),
            safe_text(_short(event.text)),
            style="bold" if is_target else None,
        )
    console.print(table)
    target = result.target
    console.print(
        Text.assemble("\n", (f"seq {target.seq}", "bold"), f" · {safe_text(target.type)} · {target.surface}")
    )
    if target.sources is not None:
        console.print(f"sources: {list(target.sources)}", highlight=False)
    if target.replaced_by is not None:
        console.print(f"replaced by: {target.replaced_by}", highlight=False)
    console.print(safe_text(target.text or "(no text)", keep_newlines=True))


# -- trace ----------------------------------------------------------------------------------------
def trace(
    session_id: Annotated[str, typer.Argument(metavar="SESSION", help="The session id.")],
    seq: Annotated[
        int | None, typer.Argument(metavar="SEQ", help="Trace this event instead of the session.")
    ] = None,
    workspace: Workspace = None,
    session: Sessions = None,
    depth: Annotated[int, typer.Option("--depth", metavar="N", help="Descendant levels to draw.")] = 12,
    as_json: AsJson = False,
) -> None:
    """Trace a session's lineage, or (with SEQ) an event's replacements and provenance."""
    with _errors(as_json):
        reader = _reader(_scope(workspace, session, session_id, as_json))
        if seq is None:
            lineage = reader.trace_session(session_id)
            if as_json:
                _print_json(lineage.model_dump(mode="json"))
            else:
                _print_lineage(lineage, max(1, depth))
            return
        traced = reader.trace_event(session_id, seq)
        if as_json:
            _print_json(traced.model_dump(mode="json"))
        else:
            _print_event_trace(traced)


_MAX_ANCESTORS_SHOWN = 12
_MAX_NODES_SHOWN = 400


def _print_lineage(lineage: SessionTrace, depth: int) -> None:
    ancestors = list(lineage.ancestors)
    chain = [Text(safe_text(a.header.session_id)) for a in ancestors[:_MAX_ANCESTORS_SHOWN]]
    if len(ancestors) > _MAX_ANCESTORS_SHOWN:
        chain.append(Text(f"… {len(ancestors) - _MAX_ANCESTORS_SHOWN - 1} more"))
        chain.append(Text(safe_text(ancestors[-1].header.session_id)))
    if lineage.unresolved_parent_id is not None:
        missing = safe_text(lineage.unresolved_parent_id)
        chain.append(Text(f"{missing} (missing or outside the scope)", style="yellow"))
    state = Text("complete") if lineage.complete else Text("incomplete", style="yellow")
    line = Text.assemble("ancestors (", state, "): ")
    line.append_text(Text(" ← ").join(chain) if chain else Text("none"))
    console.print(line)
    if lineage.root is not None:
        console.print(f"root: {safe_text(lineage.root.header.session_id)}")
    tree = Tree(Text.assemble(_session_label(lineage.target), ("  (target)", "dim")))
    branches: dict[int, Tree] = {0: tree}
    shown = hidden = 0
    for node in lineage.descendants:
        parent = branches.get(node.depth - 1)
        if parent is None or node.depth > depth or shown >= _MAX_NODES_SHOWN:
            hidden += 1
            continue
        branches[node.depth] = parent.add(_session_label(node.session))
        shown += 1
    console.print(tree)
    if hidden:
        more = f"… {hidden} more descendants (deeper than {depth} or past {_MAX_NODES_SHOWN})"
        console.print(Text(more, style="dim"))


def _print_event_trace(traced: EventTraceResult) -> None:
    target = traced.target
    where = f"{safe_text(traced.header.session_id)} · seq {target.seq}"
    console.print(Text.assemble((where, "bold"), f" · {safe_text(target.type)} · {target.surface}"))
    table = Table()
    table.add_column("Edge")
    table.add_column("Seqs", overflow="fold")

    def seqs(values: tuple[int, ...]) -> str:
        return ", ".join(map(str, values)) if values else "—"

    table.add_row("replaced by", "—" if traced.replaced_by is None else str(traced.replaced_by))
    table.add_row("replacement chain", seqs(traced.replacement_chain))
    table.add_row("replaced (removed by this event)", seqs(traced.replaced_event_seqs))
    table.add_row("sources (cited by this event)", seqs(traced.source_event_seqs))
    table.add_row("derived (events citing this one)", seqs(traced.derived_event_seqs))
    console.print(table)
    console.print(safe_text(target.text or "(no text)", keep_newlines=True))
