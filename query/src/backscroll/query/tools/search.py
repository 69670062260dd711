"""The search tools: ``session_query`` (ranked hits) and ``session_search`` (hits grouped
by session across a workspace). The model supplies only the query (and a limit for the first);
scope, kinds, excerpt size and the excluded tool names are fixed by whoever builds the tool."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from backscroll.query.contract import (
    DEFAULT_EXCERPT_BYTES,
    DEFAULT_LIMIT,
    MAX_LIMIT,
    SELF_TOOL_NAMES,
    SessionMatch,
    SessionQuery,
    SessionQueryRequest,
    SessionQueryResult,
)
from backscroll.query.cursor import MAX_PAGED
from backscroll.query.errors import SessionQueryError
from backscroll.query.render import _echo, render_result
from backscroll.query.tools.args import optional_int, optional_str, parse_object
from backscroll.query.tools.base import DEFAULT_MAX_OUTPUT_CHARS, ModelTool
from backscroll.query.tools.render import render_grouped

__all__ = [
    "MAX_TOOL_LIMIT",
    "SEARCH_DESCRIPTION",
    "TOOL_NAME",
    "WORKSPACE_DESCRIPTION",
    "SessionQueryTool",
    "SessionSearchTool",
    "session_query_tool",
]

TOOL_NAME: Final = "session_query"
#: The highest ``max_limit`` of ``session_query``: the most matches one chain of pages may return.
MAX_TOOL_LIMIT: Final = MAX_PAGED

SEARCH_DESCRIPTION: Final = (
    "Search this session's own durable history, including parts that context compaction has "
    "summarised away. Use it to recover a detail that is no longer in context (an earlier tool "
    "result, a number, an identifier, a decision) instead of re-running the tool that produced it. "
    "Every query word must match; matching ignores case and accents and tolerates small typos, and "
    "words of 3+ characters also match inside longer words. Omit `query` to list the most recent "
    "entries. Each match shows its seq, turn and role, and an excerpt around the match."
)
WORKSPACE_DESCRIPTION: Final = (
    "Search the durable history of every session in this workspace (other agents' sessions "
    "included), with the same matching rules as session_query. Omit `query` to list the most "
    "recent entries across the workspace."
)
CROSS_SESSION_DESCRIPTION: Final = (
    "Find which other sessions of this workspace discussed something: searches every session you "
    "may read and groups the hits by session, best session first, with each session's best "
    "excerpt and the seqs of its other hits. Same matching rules as session_query (every word, "
    "typos and accents tolerated). Follow up with session_event_read to read a hit in full."
)


def _config(message: str) -> SessionQueryError:
    return SessionQueryError("SESSION_QUERY_INVALID_CONFIG", message)


def _check_names(names: Sequence[str] | None, own: str) -> tuple[str, ...]:
    if names is None:
        names = SELF_TOOL_NAMES
    if isinstance(names, str) or not all(isinstance(n, str) and n for n in names):
        raise _config("exclude_tools must be a sequence of tool names")
    return tuple(dict.fromkeys((own, *names)))


class _SearchBase(ModelTool):
    def __init__(
        self,
        provider: SessionQuery | None,
        *,
        name: str,
        description: str,
        excerpt_bytes: int,
        exclude_tools: Sequence[str] | None,
        max_output_chars: int,
    ) -> None:
        super().__init__(name=name, description=description, max_output_chars=max_output_chars)
        if isinstance(excerpt_bytes, bool) or not isinstance(excerpt_bytes, int) or excerpt_bytes < 1:
            raise _config("excerpt_bytes must be a positive integer")
        self.provider = provider
        self.excerpt_bytes = excerpt_bytes
        #: The searching tools' own calls are left out of every search, whatever they are named.
        self.exclude_tools = _check_names(exclude_tools, name)

    @property
    def configured(self) -> bool:
        return self.provider is not None

    def _provider_limit(self, attribute: str, fallback: int) -> int:
        value = getattr(self.provider, attribute, fallback)
        return value if isinstance(value, int) and not isinstance(value, bool) and value >= 1 else fallback

    def _collect(
        self, request: SessionQueryRequest, want: int, skip_session: str | None = None
    ) -> tuple[list[SessionMatch], SessionQueryResult, bool]:
        """Up to ``want`` matches of ``request`` (whose limit is the page size), following the
        provider's cursors: ``(matches, first page, whether more matches exist than returned)``.
        Matches of ``skip_session`` are left out. A corpus that moves under the cursor (an agent
        appended) restarts the chain once from the top."""
        assert self.provider is not None
        for attempt in (1, 2):
            hits: list[SessionMatch] = []
            cursor: str | None = None
            first: SessionQueryResult | None = None
            try:
                while True:
                    page = self.provider.search(request.model_copy(update={"cursor": cursor}))
                    first = first or page
                    hits.extend(m for m in page.matches if m.session_id != skip_session)
                    cursor = page.next_cursor
                    if cursor is None or len(hits) >= want:
                        # More exist when a later page does, or the last page overflowed ``want``.
                        return hits[:want], first, cursor is not None or len(hits) > want
            except SessionQueryError as err:
                if err.code != "SESSION_QUERY_STALE_CURSOR" or attempt == 2:
                    raise
        raise AssertionError("unreachable")  # pragma: no cover


class SessionQueryTool(_SearchBase):
    """``session_query``: ranked hits in the provider's scope (or one pinned session of it).

    ``SessionQueryTool(None)`` is a valid, unconfigured tool: every call answers
    SESSION_QUERY_TOOL_NOT_CONFIGURED (use :func:`session_query_tool` to decline instead)."""

    def __init__(
        self,
        provider: SessionQuery | None,
        *,
        session_id: str | None = None,
        name: str = TOOL_NAME,
        description: str = SEARCH_DESCRIPTION,
        default_limit: int | None = None,
        max_limit: int | None = None,
        excerpt_bytes: int = DEFAULT_EXCERPT_BYTES,
        exclude_tools: Sequence[str] | None = None,
        max_output_chars: int = DEFAULT_MAX_OUTPUT_CHARS,
    ) -> None:
        super().__init__(
            provider,
            name=name,
            description=description,
            excerpt_bytes=excerpt_bytes,
            exclude_tools=exclude_tools,
            max_output_chars=max_output_chars,
        )
        if session_id is not None and (not isinstance(session_id, str) or not session_id.strip()):
            raise SessionQueryError("SESSION_QUERY_INVALID_SCOPE", "session_id must be a non-blank string")
        # The tool's own maximum decides (it pages through the provider past the provider's
        # maximum); without one, the provider's maximum is the tool's.
        self.page_size = self._provider_limit("max_limit", MAX_LIMIT)
        if max_limit is None:
            max_limit = min(self.page_size, MAX_TOOL_LIMIT)
        if (
            isinstance(max_limit, bool)
            or not isinstance(max_limit, int)
            or not 1 <= max_limit <= MAX_TOOL_LIMIT
        ):
            raise _config(f"max_limit must be an integer in [1, {MAX_TOOL_LIMIT}]")
        if default_limit is None:
            default_limit = min(self._provider_limit("default_limit", DEFAULT_LIMIT), max_limit)
        if not 1 <= default_limit <= max_limit:
            raise _config("need 1 <= default_limit <= max_limit")
        self.session_id = session_id
        self.default_limit = default_limit
        self.max_limit = max_limit

    @property
    def parameters(self) -> dict[str, Any]:
        """``query`` and ``limit``, both optional."""
        return {
            "type": "object",
            "properties": {
                "query": {
                    "type": "string",
                    "description": "Words that must all appear (typos and accents tolerated); omit to browse "
                    "recent entries.",
                },
                "limit": {
                    "type": "integer",
                    "description": (
                        f"Maximum matches (default {self.default_limit}, at most {self.max_limit})."
                    ),
                },
            },
        }

    def parse_arguments(self, arguments: object) -> tuple[str, int]:
        """``(query, limit)`` from the model's arguments (limit clamped to the maximum)."""
        return self._parse(parse_object(arguments))

    def _parse(self, data: dict[str, Any]) -> tuple[str, int]:
        query = optional_str(data, "query") or ""
        limit = optional_int(data, "limit")
        if limit is None or limit <= 0:
            limit = self.default_limit
        return query, min(limit, self.max_limit)

    def _call(self, data: dict[str, Any]) -> str:
        assert self.provider is not None
        query, limit = self._parse(data)
        request = SessionQueryRequest(
            session_id=self.session_id,
            query=query,
            limit=min(limit, self.page_size),
            excerpt_bytes=self.excerpt_bytes,
            exclude_tools=self.exclude_tools,
        )
        if limit <= self.page_size:
            result = self.provider.search(request)
        else:
            matches, first, more = self._collect(request, limit)
            result = first.model_copy(
                update={"matches": tuple(matches), "next_cursor": "more" if more else None}
            )
        scope = getattr(self.provider, "scope", None)
        several = getattr(scope, "kind", "sessions") == "workspaces" or len(getattr(scope, "ids", ())) > 1
        noun = "workspace" if self.session_id is None and several else "session"
        return render_result(result, query, scope_noun=noun)


def session_query_tool(
    provider: SessionQuery | None, *, workspace: bool = False, **kwargs: Any
) -> SessionQueryTool | None:
    """The tool, or ``None`` (decline: advertise nothing) when there is no provider to search.
    ``workspace=True`` names it ``workspace_query`` and describes it as searching the workspace."""
    if provider is None:
        return None
    if workspace:
        kwargs.setdefault("name", "workspace_query")
        kwargs.setdefault("description", WORKSPACE_DESCRIPTION)
    return SessionQueryTool(provider, **kwargs)


class SessionSearchTool(_SearchBase):
    """``session_search``: hits across the scope grouped by session (for workspace scopes).

    Drains the provider's pages up to ``max_results`` hits (then says the cap was reached); the
    caller's own session (``exclude_session_id``) is left out, as ``session_query`` covers it."""

    def __init__(
        self,
        provider: SessionQuery | None,
        *,
        exclude_session_id: str | None = None,
        name: str = "session_search",
        description: str = CROSS_SESSION_DESCRIPTION,
        max_results: int = 100,
        excerpt_bytes: int = 300,
        exclude_tools: Sequence[str] | None = None,
        max_output_chars: int = DEFAULT_MAX_OUTPUT_CHARS,
    ) -> None:
        super().__init__(
            provider,
            name=name,
            description=description,
            excerpt_bytes=excerpt_bytes,
            exclude_tools=exclude_tools,
            max_output_chars=max_output_chars,
        )
        if isinstance(max_results, bool) or not isinstance(max_results, int) or not 1 <= max_results <= 1000:
            raise _config("max_results must be an integer in [1, 1000]")
        self.exclude_session_id = exclude_session_id
        self.max_results = max_results

    @property
    def parameters(self) -> dict[str, Any]:
        return {
            "type": "object",
            "properties": {
                "query": {
                    "type": "string",
                    "description": "Words that must all appear (typos and accents tolerated); omit to list "
                    "the sessions with the most recent activity.",
                },
            },
        }

    def _drain(self, query: str) -> tuple[list[SessionMatch], int, bool, bool]:
        page_size = min(self._provider_limit("max_limit", MAX_LIMIT), self.max_results)
        request = SessionQueryRequest(
            query=query, limit=page_size, excerpt_bytes=self.excerpt_bytes, exclude_tools=self.exclude_tools
        )
        hits, first, capped = self._collect(request, self.max_results, skip_session=self.exclude_session_id)
        return hits, first.searched, first.partial, capped

    def _call(self, data: dict[str, Any]) -> str:
        query = optional_str(data, "query") or ""
        hits, searched, partial, capped = self._drain(query)
        groups: dict[str, list[SessionMatch]] = {}
        for match in hits:
            groups.setdefault(match.session_id, []).append(match)
        scope = getattr(self.provider, "scope", None)
        noun = "workspace" if getattr(scope, "kind", "sessions") == "workspaces" else "scope"
        return render_grouped(
            groups.items(),
            query_echo=_echo(query),
            searched=searched,
            partial=partial,
            capped=capped,
            noun=noun,
        )
