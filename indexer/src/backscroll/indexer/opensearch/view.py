"""The OpenSearch projection (write side): schema, versions and aliases, watermarks, restoring
projection state; the routed bulk writes live in :mod:`backscroll.indexer.opensearch.bulk`."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from opensearchpy import OpenSearch
from opensearchpy.exceptions import (
    AuthorizationException,
    ConnectionTimeout,
    NotFoundError,
    SSLError,
    TransportError,
)
from opensearchpy.exceptions import ConnectionError as OSConnectionError

from backscroll.indexer.document import fold_event
from backscroll.indexer.errors import ViewAccessDenied, ViewUnavailable
from backscroll.indexer.fold import FoldEvent
from backscroll.indexer.opensearch.bulk import BulkWriter, ItemResult, is_retriable_status
from backscroll.indexer.opensearch.errors import os_edge_method
from backscroll.indexer.opensearch.mappings import (
    events_alias,
    events_index_body,
    sessions_alias,
    sessions_index_body,
    watermarks_index,
)
from backscroll.indexer.opensearch.security import deny, item_failure
from backscroll.indexer.ports import Outcome, WriteResult
from backscroll.indexer.projector import Action, SessionProjection, project_records
from backscroll.indexer.settings import OpenSearchSettings
from backscroll.indexer.view_writes import ViewWrites
from backscroll.ingest.wire import EventRecord, HeaderRecord

__all__ = ["COMPACT_TIMEOUT_S", "ItemResult", "OpenSearchView", "is_retriable_status", "make_client"]

#: How long :meth:`OpenSearchView.compact` waits for the force merge (a 272,000-entry index merges
#: in about 4 s; the server finishes a merge the client stopped waiting for).
COMPACT_TIMEOUT_S = 900.0


def make_client(settings: OpenSearchSettings) -> OpenSearch:
    return OpenSearch(**settings.client_kwargs())


class OpenSearchView(BulkWriter, ViewWrites):
    """Owns the indices of one ``index_prefix``: events (alias over versions) and sessions.

    Implements :class:`~backscroll.indexer.ports.SessionView`; every public method raises only
    indexer errors (opensearch-py and urllib3 exceptions are translated at this edge)."""

    def __init__(
        self,
        settings: OpenSearchSettings | None = None,
        *,
        hosts: str | None = None,
        index_prefix: str | None = None,
        client: OpenSearch | None = None,
        retry_budget: int = 8,
        sleep: Callable[[float], None] = time.sleep,
        pinned_version: int | None = None,
        parallelism: int = 2,
        max_bulk_bytes: int = 8 * 1024 * 1024,
    ) -> None:
        overrides: dict[str, Any] = {}
        if hosts:
            overrides["url"] = hosts
        if index_prefix:
            overrides["index_prefix"] = index_prefix
        self.settings = (settings or OpenSearchSettings()).model_copy(update=overrides)
        self.client = client or make_client(self.settings)
        self.prefix = self.settings.index_prefix
        self.events = events_alias(self.prefix)
        self.sessions = sessions_alias(self.prefix)
        #: A pinned view writes one concrete index version (a rebuild) instead of the aliases; it
        #: creates no schema and publishes no watermark.
        self.pinned_version = pinned_version
        if pinned_version is not None:
            self.events = f"{self.events}-v{pinned_version}"
            self.sessions = f"{self.sessions}-v{pinned_version}"
        self.retry_budget = retry_budget
        self._sleep = sleep
        self.attempts = 0
        self.item_retries = 0
        self.parallelism = parallelism
        #: Bulk requests are cut at this many body bytes (one record may exceed it alone).
        self.max_bulk_bytes = max_bulk_bytes
        self._pool: ThreadPoolExecutor | None = None

    # -- schema ---------------------------------------------------------------------------------
    @os_edge_method("ensure schema")
    def ensure_schema(self) -> None:
        """Create the first events index version, the sessions index and their aliases.

        Existence is asked of the alias by name (``HEAD <alias>``), which a principal limited
        to our index pattern may ask even before any index of ours exists; ``HEAD _alias/...``
        is refused to it then."""
        if self.pinned_version is not None:
            return
        try:
            if not self.client.indices.exists(index=self.events):
                body = events_index_body(self.settings.shards, self.settings.replicas)
                body["aliases"] = {self.events: {}}
                self._create_index(f"{self.events}-v1", body)
            if not self.client.indices.exists(index=watermarks_index(self.prefix)):
                self._create_index(
                    watermarks_index(self.prefix),
                    {"settings": {"number_of_shards": 1, "number_of_replicas": self.settings.replicas}},
                )
            if not self.client.indices.exists(index=self.sessions):
                body = sessions_index_body(self.settings.shards, self.settings.replicas)
                body["aliases"] = {self.sessions: {}}
                self._create_index(f"{self.sessions}-v1", body)
        except SSLError:
            raise  # translated at the edge: a certificate problem is not an outage
        except (OSConnectionError, ConnectionTimeout) as err:
            deny(err, self.settings)
            raise ViewUnavailable(f"OpenSearch unreachable at {self.settings.url}: {err}") from err
        except TransportError as err:
            deny(err, self.settings)
            raise

    def _create_index(self, name: str, body: dict[str, Any]) -> None:
        try:
            self.client.indices.create(index=name, body=body)
        except TransportError as err:
            if "resource_already_exists_exception" not in str(err):
                raise

    @os_edge_method("current version")
    def current_version(self) -> int:
        """The version number of the index the events alias points at."""
        names = list(self.client.indices.get_alias(name=events_alias(self.prefix)))
        return max(int(name.rsplit("-v", 1)[1]) for name in names)

    @os_edge_method("create version")
    def create_version(self, version: int) -> None:
        """Create (empty) events and sessions indices of ``version``, without aliases."""
        body = events_index_body(self.settings.shards, self.settings.replicas)
        self._create_index(f"{events_alias(self.prefix)}-v{version}", body)
        body = sessions_index_body(self.settings.shards, self.settings.replicas)
        self._create_index(f"{sessions_alias(self.prefix)}-v{version}", body)

    @os_edge_method("switch aliases")
    def switch_aliases(self, old: int, new: int) -> None:
        """Point both read aliases at ``new`` in one atomic alias update."""
        actions: list[dict[str, Any]] = []
        for alias in (events_alias(self.prefix), sessions_alias(self.prefix)):
            actions.append({"remove": {"index": f"{alias}-v{old}", "alias": alias}})
            actions.append({"add": {"index": f"{alias}-v{new}", "alias": alias}})
        self.client.indices.update_aliases(body={"actions": actions})

    @os_edge_method("delete version")
    def delete_version(self, version: int) -> None:
        names = f"{events_alias(self.prefix)}-v{version},{sessions_alias(self.prefix)}-v{version}"
        self.client.indices.delete(index=names, ignore_unavailable=True)

    @os_edge_method("forget session")
    def forget_session(self, session_id: str) -> int:
        """Delete every document of a session (routed; no delete-by-query module is needed)."""
        deleted = 0
        while True:
            hits = self.client.search(
                index=self.events,
                routing=session_id,
                body={"size": 5000, "_source": False, "query": {"term": {"session_id": session_id}}},
            )["hits"]["hits"]
            if not hits:
                break
            lines: list[dict[str, Any]] = [
                {"delete": {"_index": self.events, "_id": h["_id"], "routing": session_id}} for h in hits
            ]
            answer = self.client.bulk(body=lines, refresh="true")
            deleted += self._count_deleted(answer)
        with contextlib.suppress(NotFoundError):
            self.client.delete(index=self.sessions, id=session_id, routing=session_id, refresh="true")
        return deleted

    def _count_deleted(self, answer: dict[str, Any]) -> int:
        """Deleted items of a bulk answer; a refused or failed item stops ``forget`` (searching
        again would find the same documents forever)."""
        deleted = 0
        for item in answer.get("items", ()):
            result = item.get("delete", {})
            error = result.get("error")
            if error is None:
                deleted += result.get("result") == "deleted"
                continue
            refused = item_failure(error, self.settings)
            if refused is not None:
                raise ViewAccessDenied(refused)
            raise ViewUnavailable(f"forget: OpenSearch did not delete {result.get('_id')}: {error}")
        return deleted

    @os_edge_method("drop")
    def drop(self) -> None:
        """Delete every index of this prefix, and the index template older versions created
        (tests and ``forget --all`` only)."""
        self.client.indices.delete(
            index=f"{self.events}-v*,{self.sessions}-v*,{watermarks_index(self.prefix)}",
            ignore_unavailable=True,
        )
        # a principal without template permissions simply leaves an old template behind
        with contextlib.suppress(NotFoundError, AuthorizationException):
            self.client.indices.delete_index_template(name=f"{self.events}-template")

    @os_edge_method("refresh")
    def refresh(self) -> None:
        try:
            self.client.indices.refresh(index=f"{self.events},{self.sessions}")
        except SSLError:
            raise
        except (OSConnectionError, ConnectionTimeout) as err:
            raise ViewUnavailable(f"OpenSearch unreachable: {err}") from err

    @os_edge_method("compact")
    def compact(self) -> None:
        """Force-merge the events and sessions indices into one segment each (waits up to
        :data:`COMPACT_TIMEOUT_S`). A replay leaves a dozen segments that every search probes; the
        textbook moment to merge them is before a rebuilt version takes the aliases."""
        self.client.indices.forcemerge(
            index=f"{self.events},{self.sessions}", max_num_segments=1, request_timeout=COMPACT_TIMEOUT_S
        )

    @os_edge_method("content hashes")
    def content_hashes(self, actions: Iterable[Action]) -> dict[str, str | None]:
        """Content hashes of existing event documents (realtime get, routed)."""
        docs = [{"_id": a.doc_id, "routing": a.routing} for a in actions]
        if not docs:
            return {}
        response = self.client.mget(index=self.events, body={"docs": docs}, _source_includes="content_hash")
        out: dict[str, str | None] = {}
        for doc in response["docs"]:
            out[doc["_id"]] = (doc.get("_source") or {}).get("content_hash") if doc.get("found") else None
        return out

    @os_edge_method("get event source")
    def get_event_source(self, doc_id: str, routing: str) -> dict[str, Any] | None:
        try:
            return dict(self.client.get(index=self.events, id=doc_id, routing=routing)["_source"])
        except NotFoundError:
            return None

    # -- searchability watermark -----------------------------------------------------------------
    @os_edge_method("publish watermarks")
    def publish_watermarks(self, topic: str, through: dict[int, tuple[int, int]]) -> None:
        """Record, per partition, the offset (and record time, ms) through which entries are searchable."""
        if self.pinned_version is not None:
            return
        index = watermarks_index(self.prefix)
        lines: list[dict[str, Any]] = []
        for partition, (offset, record_ms) in through.items():
            lines.append({"index": {"_index": index, "_id": f"{topic}:{partition}"}})
            lines.append(
                {
                    "topic": topic,
                    "partition": partition,
                    "offset": offset,
                    "record_time_ms": record_ms,
                    "published_ms": int(time.time() * 1000),
                }
            )
        self.client.bulk(body=lines, refresh="true")

    @os_edge_method("read watermarks")
    def read_watermarks(self, topic: str) -> dict[int, dict[str, Any]]:
        """Per partition: ``offset`` and ``record_time_ms`` through which entries are searchable."""
        try:
            response = self.client.search(
                index=watermarks_index(self.prefix), body={"size": 1000, "query": {"term": {"topic": topic}}}
            )
        except NotFoundError:
            return {}
        return {int(h["_source"]["partition"]): dict(h["_source"]) for h in response["hits"]["hits"]}

    # -- restoring projection state --------------------------------------------------------------
    @os_edge_method("restore session")
    def restore_session(self, session_id: str) -> SessionProjection:
        """Rebuild a session's projection state from the index (after an assignment or restart)."""
        try:
            doc = self.client.get(index=self.sessions, id=session_id, routing=session_id)["_source"]
        except NotFoundError:
            doc = None
        events: list[FoldEvent] = []
        if doc and int(doc.get("last_seq", -1)) >= 0:
            events = list(self._fold_events(session_id))
        return SessionProjection.restore(session_id, doc, events)

    @os_edge_method("restore sessions")
    def restore_sessions(self, session_ids: Sequence[str]) -> dict[str, SessionProjection]:
        """:meth:`restore_session` for many sessions: one routed multi-get for their session
        documents, then the fold events only of sessions that already have events."""
        if not session_ids:
            return {}
        docs = [{"_id": sid, "routing": sid} for sid in session_ids]
        response = self.client.mget(index=self.sessions, body={"docs": docs})
        out: dict[str, SessionProjection] = {}
        for sid, doc in zip(session_ids, response["docs"], strict=True):
            source = doc.get("_source") if doc.get("found") else None
            events: list[FoldEvent] = []
            if source and int(source.get("last_seq", -1)) >= 0:
                events = list(self._fold_events(sid))
            out[sid] = SessionProjection.restore(sid, source, events)
        return out

    def _fold_events(self, session_id: str) -> Iterable[FoldEvent]:
        fields = [
            "seq",
            "type",
            "surface_op",
            "replace_start",
            "replace_end",
            "sources",
            "tool_name",
            "role",
            "attrs",
        ]
        search_after: list[Any] | None = None
        while True:
            body: dict[str, Any] = {
                "size": 5000,
                "query": {"term": {"session_id": session_id}},
                "sort": [{"seq": "asc"}],
                "_source": fields,
            }
            if search_after:
                body["search_after"] = search_after
            hits = self.client.search(index=self.events, routing=session_id, body=body)["hits"]["hits"]
            for hit in hits:
                yield fold_event(hit["_source"])
            if len(hits) < 5000:
                return
            search_after = hits[-1]["sort"]

    # -- convenience for benchmarks and tools ----------------------------------------------------
    def write_records(self, records: Iterable[HeaderRecord | EventRecord]) -> int:
        """Project and write records directly (no Kafka): for bulk loads into a fresh prefix."""
        actions = project_records(records)
        written = 0
        for start in range(0, len(actions), 2000):
            results = self.bulk(actions[start : start + 2000])
            written += sum(1 for r in results if r.ok)
        return written

    # -- SessionView ----------------------------------------------------------------------------
    def _apply(self, actions: Sequence[Action]) -> list[WriteResult]:
        out = []
        for result in self.bulk(actions):
            if result.exists:
                out.append(WriteResult(result.action, Outcome.REPLAY))
            elif result.ok:
                created = result.action.op == "create"
                out.append(WriteResult(result.action, Outcome.CREATED if created else Outcome.WRITTEN))
            else:
                out.append(WriteResult(result.action, Outcome.REJECTED, f"{result.status} {result.error}"))
        return out

    def available(self) -> bool:
        try:
            return bool(self.client.ping())
        except Exception:  # a probe: any failure means "not now"
            return False

    def settle(self, committed: bool) -> None:
        """Nothing to do: OpenSearch writes are not transactional (they are idempotent)."""

    @property
    def publishes_watermarks(self) -> bool:
        return self.pinned_version is None

    def close(self) -> None:
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True)
        with contextlib.suppress(Exception):
            self.client.close()
