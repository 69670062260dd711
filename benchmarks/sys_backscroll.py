"""backscroll's own provider: the OpenSearch projection, queried through ``OpenSearchProvider``.

Written against the API the lead is building (``backscroll.indexer`` and ``backscroll.query``)::

    view = OpenSearchView(hosts=..., index_prefix="bench")
    view.ensure_schema()
    view.write_records([EventRecord | HeaderRecord, ...])  # bulk, routed
    view.refresh()
    view.compact()  # one segment per index, as `backscroll rebuild` leaves them
    scope = Scope.session(sid)  # or Scope.workspace(wid)
    provider = OpenSearchProvider(scope=scope, hosts=..., index_prefix="bench")
    request = SessionQueryRequest(session_id=sid_or_None, query=q, limit=10)
    provider.search(request).matches  # each with .session_id and .seq

The import is guarded: while those modules do not exist (or OpenSearch is not reachable), building
this system raises :class:`SystemUnavailable` with the reason, and the harness runs the others and
records the reason in the result. Every record (headers, compaction summaries included) is written:
which kinds are searchable is the provider's business, exactly as in production.

Loading starts with ``OpenSearchView.drop()`` (this prefix's indices and template only), so use a
prefix of its own (default ``bench``). ``write_records`` keeps per-session state only within one
call, so batches are cut at session boundaries (the corpus emits sessions contiguously).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable
from typing import Any

from benchmarks.base import SystemUnavailable

__all__ = ["BackscrollSystem", "unavailable_reason"]

try:
    from backscroll.indexer.opensearch.view import OpenSearchView
    from backscroll.ingest.wire import parse_record
    from backscroll.query import OpenSearchProvider, Scope, SessionQueryRequest
except ImportError as err:  # the provider is being built
    _IMPORT_ERROR: ImportError | None = err
else:
    _IMPORT_ERROR = None

_BATCH = 2000  # records per write_records call, cut at the next session boundary
_MAX_PROVIDERS = 256


def unavailable_reason(hosts: str) -> str | None:
    """Why the backscroll system cannot run here, or ``None`` when it can."""
    if _IMPORT_ERROR is not None:
        return f"backscroll provider not importable yet ({_IMPORT_ERROR})"
    from opensearchpy import OpenSearch

    client = OpenSearch(hosts=[hosts], timeout=10)
    try:
        client.info()
    except Exception as err:
        return f"OpenSearch not reachable at {hosts} ({type(err).__name__})"
    finally:
        client.close()
    return None


class BackscrollSystem:
    name = "backscroll"

    def __init__(self, *, hosts: str = "http://127.0.0.1:9200", index_prefix: str = "bench") -> None:
        reason = unavailable_reason(hosts)
        if reason:
            raise SystemUnavailable(reason)
        self.hosts = hosts
        self.index_prefix = index_prefix
        self.view = OpenSearchView(hosts=hosts, index_prefix=index_prefix)
        self._providers: OrderedDict[tuple[str, str], Any] = OrderedDict()

    @property
    def server_version(self) -> str:
        return str(self.view.client.info()["version"]["number"])

    def load(self, entries: Iterable[dict[str, Any]]) -> None:
        self.view.drop()
        self.view.ensure_schema()
        batch: list[Any] = []
        for entry in entries:
            if entry["kind"] == "header" and len(batch) >= _BATCH:
                self.view.write_records(batch)
                batch = []
            batch.append(parse_record(entry))
        if batch:
            self.view.write_records(batch)
        self.view.refresh()
        self.view.compact()  # what `backscroll rebuild` and `index --until-idle --compact` do

    def _provider(self, scope_kind: str, scope_id: str) -> Any:
        key = (scope_kind, scope_id)
        provider = self._providers.get(key)
        if provider is None:
            scope = Scope.session(scope_id) if scope_kind == "session" else Scope.workspace(scope_id)
            provider = OpenSearchProvider(scope=scope, hosts=self.hosts, index_prefix=self.index_prefix)
            self._providers[key] = provider
            if len(self._providers) > _MAX_PROVIDERS:
                _, evicted = self._providers.popitem(last=False)
                evicted.close()
        else:
            self._providers.move_to_end(key)
        return provider

    def search(self, scope_kind: str, scope_id: str, query: str, limit: int = 10) -> list[str]:
        provider = self._provider(scope_kind, scope_id)
        request = SessionQueryRequest(
            session_id=scope_id if scope_kind == "session" else None, query=query, limit=limit
        )
        return [f"{m.session_id}:{m.seq}" for m in provider.search(request).matches]

    def index_bytes(self) -> int:
        indices = f"{self.view.events},{self.view.sessions}"
        self.view.client.indices.flush(index=indices)
        stats = self.view.client.indices.stats(index=indices, metric="store")
        return int(stats["_all"]["primaries"]["store"]["size_in_bytes"])

    def close(self) -> None:
        while self._providers:
            _, provider = self._providers.popitem()
            provider.close()
        self.view.close()
