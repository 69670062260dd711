"""Routed bulk writes to OpenSearch: NDJSON encoding, size-capped requests, per-item outcomes and
retries of only the items that failed retriably (the write path of
:class:`~backscroll.indexer.opensearch.view.OpenSearchView`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import orjson
from opensearchpy import OpenSearch
from opensearchpy.exceptions import ConnectionError as OSConnectionError
from opensearchpy.exceptions import ConnectionTimeout, SSLError, TransportError
from tenacity import Retrying, retry_if_exception_type, stop_after_attempt, wait_random_exponential

from backscroll.indexer.errors import ViewFailed, ViewUnavailable
from backscroll.indexer.opensearch.errors import os_edge_method
from backscroll.indexer.opensearch.security import deny
from backscroll.indexer.pipeline import lane_of
from backscroll.indexer.projector import Action
from backscroll.indexer.settings import OpenSearchSettings

__all__ = ["RETRIABLE_STATUS", "BulkWriter", "ItemResult", "is_retriable_status"]


RETRIABLE_STATUS = frozenset({408, 429, 500, 502, 503, 504})


def is_retriable_status(status: int) -> bool:
    return status in RETRIABLE_STATUS or status >= 500


@dataclass(frozen=True, slots=True)
class ItemResult:
    """The outcome of one bulk action: ``status`` is the HTTP status of the item."""

    action: Action
    status: int
    error: str | None

    @property
    def ok(self) -> bool:
        return self.status < 300

    @property
    def exists(self) -> bool:
        return self.status == 409 and self.action.op == "create"


_MIN_SPLIT = 250
#: The bulk response keeps only what the per-item outcome needs (not _index, _id, _version, ...).
_BULK_FILTER = "errors,items.*.status,items.*.error.type,items.*.error.reason"


class _RetryItems(Exception):
    """Some items (or the whole request) failed retriably; try those again after a backoff."""


class BulkWriter:
    """The bulk half of :class:`~backscroll.indexer.opensearch.view.OpenSearchView` (a mixin: the
    view sets the attributes declared here in its ``__init__``)."""

    settings: OpenSearchSettings
    client: OpenSearch
    events: str
    sessions: str
    retry_budget: int
    _sleep: Callable[[float], None]
    #: Bulk requests sent (retries included) and items re-sent after a retriable failure.
    attempts: int
    item_retries: int
    parallelism: int
    #: Bulk requests are cut at this many body bytes (one record may exceed it alone).
    max_bulk_bytes: int
    _pool: ThreadPoolExecutor | None

    def _bulk_once(self, actions: Sequence[Action]) -> list[ItemResult]:
        # NDJSON serialised by orjson (the client's own serialiser is json.dumps per line), cut into
        # requests of at most ``max_bulk_bytes`` (in order), reading back only status and error.
        dumps = orjson.dumps
        items: list[Any] = []
        parts: list[bytes] = []
        size = 0
        for action in actions:
            index = self.events if action.target == "events" else self.sessions
            meta = dumps({action.op: {"_index": index, "_id": action.doc_id, "routing": action.routing}})
            body = dumps(action.body)
            if parts and size + len(meta) + len(body) + 2 > self.max_bulk_bytes:
                items.extend(self._send(parts))
                parts, size = [], 0
            parts += (meta, body)
            size += len(meta) + len(body) + 2
        if parts:
            items.extend(self._send(parts))
        if len(items) != len(actions):
            raise ViewFailed(f"bulk responses hold {len(items)} items for {len(actions)} actions")
        results = []
        for action, item in zip(actions, items, strict=True):
            (info,) = item.values()
            error = info.get("error")
            reason = None
            if error:
                reason = f"{error.get('type')}: {error.get('reason')}"
            results.append(ItemResult(action, int(info.get("status", 500)), reason))
        return results

    def _send(self, parts: list[bytes]) -> list[Any]:
        parts.append(b"")
        response = self.client.bulk(body=b"\n".join(parts), params={"filter_path": _BULK_FILTER})
        return list(response.get("items") or ())

    @os_edge_method("bulk")
    def bulk(self, actions: Sequence[Action]) -> list[ItemResult]:
        """Send actions; re-send only the items that failed retriably, with capped jittered backoff.

        Large batches go out as ``parallelism`` concurrent requests, split by session, so that a
        session's actions stay in order in one request (a shadow update never overtakes the create
        of the document it updates) while OpenSearch uses more than one write thread.

        Raises :class:`ViewUnavailable` when OpenSearch cannot be reached or items keep failing
        retriably past the budget; the caller then retries the whole batch later (writes are
        idempotent). Non-retriable item failures are returned for dead-lettering.
        """
        if self.parallelism <= 1 or len(actions) < 2 * _MIN_SPLIT:
            return self._bulk_serial(list(enumerate(actions)), len(actions))
        groups: list[list[tuple[int, Action]]] = [[] for _ in range(self.parallelism)]
        for index, action in enumerate(actions):
            groups[lane_of(action.routing, self.parallelism)].append((index, action))
        if sum(1 for g in groups if g) == 1:  # one write lane of a pipelined runner
            return self._bulk_serial(list(enumerate(actions)), len(actions))
        if self._pool is None:  # kept for the view's life: no thread start-up per batch
            self._pool = ThreadPoolExecutor(self.parallelism, thread_name_prefix="backscroll-bulk")
        parts = list(self._pool.map(lambda group: self._bulk_serial(group, None), [g for g in groups if g]))
        merged: dict[int, ItemResult] = {}
        for group, results in zip([g for g in groups if g], parts, strict=True):
            for (index, _), result in zip(group, results, strict=True):
                merged[index] = result
        return [merged[i] for i in range(len(actions))]

    def _bulk_serial(self, indexed: list[tuple[int, Action]], _total: int | None) -> list[ItemResult]:
        final: dict[int, ItemResult] = {}
        pending = list(indexed)
        retrying = Retrying(
            stop=stop_after_attempt(self.retry_budget + 1),
            wait=wait_random_exponential(multiplier=0.2, max=10.0),
            retry=retry_if_exception_type(_RetryItems),
            sleep=self._sleep,
            reraise=True,
        )
        try:
            for attempt in retrying:
                with attempt:
                    self.attempts += 1
                    self._send_pending(pending, final)
        except _RetryItems as err:
            raise ViewUnavailable(str(err)) from err
        return [final[i] for i, _ in indexed]

    def _send_pending(self, pending: list[tuple[int, Action]], final: dict[int, ItemResult]) -> None:
        """Send ``pending``; record final results and leave only the retriable failures in it."""
        try:
            results = self._bulk_once([a for _, a in pending])
        except SSLError:
            raise
        except (OSConnectionError, ConnectionTimeout) as err:
            deny(err, self.settings)
            raise _RetryItems(f"OpenSearch unreachable at {self.settings.url}: {type(err).__name__}") from err
        except TransportError as err:
            deny(err, self.settings)
            status = err.status_code if isinstance(err.status_code, int) else 500
            if not is_retriable_status(status):
                raise ViewFailed(f"bulk request rejected ({status}): {err.error}") from err
            raise _RetryItems(f"bulk request failed ({status})") from err
        retry = []
        for (index, action), result in zip(pending, results, strict=True):
            if not result.ok and not result.exists and is_retriable_status(result.status):
                self.item_retries += 1
                retry.append((index, action))
            else:
                final[index] = result
        pending[:] = retry
        if retry:
            raise _RetryItems(f"{len(retry)} bulk items failing retriably ({retry[0][1].doc_id} ...)")
