"""What the console reads, all through the configured :class:`~backscroll.backends.Backend`.

Searches and reads go through ``Backend.open_provider`` / ``Backend.open_reader`` only, pinned to a
scope the request's token allows. Providers and readers are thread-safe and reused per scope (a
small LRU). The workspace catalog (``Backend.workspaces``) and the scopes' session listings are
kept for a few seconds; the operator operations run through :meth:`ConsoleSource.operate`.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from backscroll.backends import WorkspaceCount
from backscroll.query import Scope, SessionQueryError, SessionQueryRequest, SessionQueryResult, SessionRecord

if TYPE_CHECKING:
    from backscroll.backends import Backend, Provider, Reader

__all__ = ["ConsoleSource", "SourceUnavailable", "WorkspaceCount"]

_T = TypeVar("_T")
_CACHE_MAX = 32
#: Oldest a cached catalog or listing may be served while it reloads in the background.
_STALE_MAX_S = 60.0


class SourceUnavailable(RuntimeError):
    """The backend did not answer (an error page, never "no results")."""


class _Pool:
    """Opened objects per scope, least recently used closed first."""

    def __init__(self, opener: Callable[[Scope], Any]) -> None:
        self._opener = opener
        self._lock = threading.Lock()
        self._items: OrderedDict[Scope, Any] = OrderedDict()

    def get(self, scope: Scope) -> Any:
        with self._lock:
            item = self._items.pop(scope, None)
            if item is None:
                item = self._opener(scope)
            self._items[scope] = item
            evicted = []
            while len(self._items) > _CACHE_MAX:
                evicted.append(self._items.popitem(last=False)[1])
        for old in evicted:
            old.close()
        return item

    def drop(self, scope: Scope, item: Any) -> None:
        with self._lock:
            if self._items.get(scope) is item:
                del self._items[scope]

    def close(self) -> None:
        with self._lock:
            items, self._items = list(self._items.values()), OrderedDict()
        for item in items:
            item.close()


class ConsoleSource:
    """Everything the pages read, for one backend."""

    def __init__(self, backend: Backend, *, catalog_ttl_s: float = 3.0) -> None:
        self.backend = backend
        self.catalog_ttl_s = catalog_ttl_s
        self._providers = _Pool(lambda scope: backend.open_provider(scope))
        self._readers = _Pool(lambda scope: backend.open_reader(scope))
        self._catalog_lock = threading.Lock()
        self._catalog: tuple[float, list[WorkspaceCount]] | None = None
        self._listing_lock = threading.Lock()
        self._listings: OrderedDict[Scope, tuple[float, tuple[SessionRecord, ...]]] = OrderedDict()
        self._refresh_lock = threading.Lock()
        self._refreshing: set[tuple[Any, ...]] = set()

    # -- search and reads -------------------------------------------------------------------------
    def _with(self, pool: _Pool, scope: Scope, call: Callable[[Any], _T]) -> _T:
        for attempt in range(2):
            item = pool.get(scope)
            try:
                return call(item)
            except SessionQueryError as err:
                # Evicted and closed by a concurrent request between get() and the call: reopen once.
                if err.code != "SESSION_QUERY_PROVIDER_CLOSED" or attempt:
                    raise
                pool.drop(scope, item)
        raise AssertionError("unreachable")  # pragma: no cover

    def search(self, scope: Scope, request: SessionQueryRequest) -> SessionQueryResult:
        def run(provider: Provider) -> SessionQueryResult:
            return provider.search(request)

        return self._with(self._providers, scope, run)

    def read(self, scope: Scope, call: Callable[[Reader], _T]) -> _T:
        """``call(reader)`` with the reader pinned to ``scope``."""
        return self._with(self._readers, scope, call)

    def listing(self, scope: Scope, *, fresh: bool = False) -> tuple[SessionRecord, ...]:
        """The scope's sessions (a reader's ``list_sessions``), reused for ``catalog_ttl_s``: the
        session view draws lineage from it, and an operator browsing one workspace should not
        list it again for every page."""
        with self._listing_lock:
            hit = self._listings.get(scope)
        if (
            hit is not None
            and not fresh
            and self._usable(("listing", scope), hit[0], lambda: self._list(scope))
        ):
            return hit[1]
        return self._list(scope)

    def _list(self, scope: Scope) -> tuple[SessionRecord, ...]:
        records: tuple[SessionRecord, ...] = self.read(scope, lambda reader: reader.list_sessions())
        with self._listing_lock:
            self._listings.pop(scope, None)
            self._listings[scope] = (time.monotonic(), records)
            while len(self._listings) > _CACHE_MAX:
                self._listings.popitem(last=False)
        return records

    def _usable(self, key: tuple[Any, ...], loaded: float, reload: Callable[[], object]) -> bool:
        """Whether a cached value loaded at ``loaded`` may be served. Past ``catalog_ttl_s`` it is
        still served while one background thread reloads it (a page does not wait for a catalog
        or listing it showed seconds ago); past :data:`_STALE_MAX_S` the caller reloads it in the
        foreground, so a failing reload shows as an error instead of old data forever."""
        age = time.monotonic() - loaded
        if age < self.catalog_ttl_s:
            return True
        if age >= max(_STALE_MAX_S, self.catalog_ttl_s):
            return False
        with self._refresh_lock:
            if key in self._refreshing:
                return True
            self._refreshing.add(key)

        def run() -> None:
            try:
                reload()
            except Exception:  # the old value stays; past _STALE_MAX_S a page reloads it in the foreground
                pass
            finally:
                with self._refresh_lock:
                    self._refreshing.discard(key)

        threading.Thread(target=run, name="backscroll-console-refresh", daemon=True).start()
        return True

    def forget_listings(self) -> None:
        """Drop the cached listings (after a write changed the projection)."""
        with self._listing_lock:
            self._listings.clear()

    # -- catalog ----------------------------------------------------------------------------------
    def workspaces(self, *, fresh: bool = False) -> list[WorkspaceCount]:
        """Every workspace in the projection, by id, with its session and event counts."""
        cached = self._catalog
        if not fresh and cached is not None and self._usable(("catalog",), cached[0], self._load_catalog):
            return cached[1]
        return self._load_catalog()

    def _load_catalog(self) -> list[WorkspaceCount]:
        with self._catalog_lock:
            found = self._read_catalog()
            self._catalog = (time.monotonic(), found)
            return found

    def _read_catalog(self) -> list[WorkspaceCount]:
        return self.operate(self.backend.workspaces)

    def workspace_of(self, session_id: str) -> str | None:
        """The workspace of a projected session (``None``: not in the projection)."""
        return self.operate(lambda: self.backend.workspace_of(session_id))

    def operate(self, operation: Callable[[], _T]) -> _T:
        """``operation()``, one of the backend's operator operations; the typed errors of the
        stages become :class:`SourceUnavailable` (an error page, never "nothing there")."""
        from backscroll.indexer.errors import IndexerError
        from backscroll.ingest.errors import IngestError

        try:
            return operation()
        except (IndexerError, IngestError) as err:
            raise SourceUnavailable(str(err)) from err
        except SessionQueryError as err:
            raise SourceUnavailable(err.message) from err

    def close(self) -> None:
        """Close the pooled providers and readers and what the backend keeps open."""
        self._providers.close()
        self._readers.close()
        with self._catalog_lock:
            self.backend.close()
