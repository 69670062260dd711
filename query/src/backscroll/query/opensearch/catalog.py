"""The workspace catalog of the OpenSearch projection: which workspaces it holds, with their
session and event counts (a terms aggregation on each alias), and the workspace of one session.

An alias that does not exist yet holds no workspaces; every other failure of the client becomes
:class:`~backscroll.query.errors.SessionQueryError` (``SESSION_QUERY_INDEX_FAILED``).
"""

from __future__ import annotations

from typing import Any, Final

from opensearchpy.exceptions import NotFoundError

from backscroll.indexer.opensearch.mappings import events_alias, sessions_alias
from backscroll.indexer.settings import OpenSearchSettings
from backscroll.query.opensearch.access import translate_opensearch_error
from backscroll.query.opensearch.clients import shared_client

__all__ = ["MAX_WORKSPACES", "workspace_counts", "workspace_of"]

#: Buckets of the aggregation: the catalog lists at most this many workspaces.
MAX_WORKSPACES: Final = 10_000


def _typed(err: Exception, settings: OpenSearchSettings) -> Exception:
    typed = translate_opensearch_error(err, "SESSION_QUERY_INDEX_FAILED", settings.url)
    return typed if typed is not None else err


def _counts(settings: OpenSearchSettings, index: str) -> dict[str, int]:
    body = {"size": 0, "aggs": {"ws": {"terms": {"field": "workspace_id", "size": MAX_WORKSPACES}}}}
    try:
        response: Any = shared_client(settings).search(
            index=index, body=body, request_timeout=settings.timeout_s
        )
    except NotFoundError:
        return {}
    except Exception as err:
        raise _typed(err, settings) from err
    return {b["key"]: int(b["doc_count"]) for b in response["aggregations"]["ws"]["buckets"]}


def workspace_counts(settings: OpenSearchSettings) -> list[tuple[str, int, int]]:
    """Every workspace in the projection, by id, with its session and event counts."""
    sessions = _counts(settings, sessions_alias(settings.index_prefix))
    events = _counts(settings, events_alias(settings.index_prefix))
    ids = sorted(set(sessions) | set(events))
    return [(ws, sessions.get(ws, 0), events.get(ws, 0)) for ws in ids]


def workspace_of(settings: OpenSearchSettings, session_id: str) -> str | None:
    """The workspace of a projected session (``None``: not in the projection)."""
    try:
        found: Any = shared_client(settings).get(
            index=sessions_alias(settings.index_prefix),
            id=session_id,
            routing=session_id,
            _source_includes="workspace_id",
            request_timeout=settings.timeout_s,
        )
    except NotFoundError:
        return None
    except Exception as err:
        raise _typed(err, settings) from err
    workspace = found.get("_source", {}).get("workspace_id")
    return workspace if isinstance(workspace, str) else None
