"""Bulk-load settings for indices nobody reads yet (a rebuild's new version, an initial load).

While a whole log is replayed into fresh indices, periodic refreshes and replica copies are wasted
work: every refresh writes a new segment that is merged away again, and every replica indexes each
document a second time. :func:`bulk_load_settings` turns both off for the duration of a block and
puts the previous values back afterwards, whether the block succeeds or fails, then refreshes so
that what was written is searchable.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator, Sequence
from typing import Any

from opensearchpy import OpenSearch

from backscroll.indexer.errors import IndexerError
from backscroll.indexer.opensearch.errors import opensearch_edge
from backscroll.indexer.settings import OpenSearchSettings

__all__ = ["LOAD_SETTINGS", "bulk_load_settings"]

log = logging.getLogger("backscroll.indexer")

#: What a load turns off: no periodic refresh, no replica.
LOAD_SETTINGS: dict[str, Any] = {"refresh_interval": "-1", "number_of_replicas": 0}


def _current(client: OpenSearch, indices: Sequence[str]) -> dict[str, dict[str, Any]]:
    response = client.indices.get_settings(
        index=",".join(indices), name="index.refresh_interval,index.number_of_replicas", flat_settings=True
    )
    out: dict[str, dict[str, Any]] = {}
    for name, body in response.items():
        flat = body.get("settings", {})
        out[name] = {
            # An index without an explicit interval uses the default (1 s): restore it explicitly.
            "refresh_interval": flat.get("index.refresh_interval", "1s"),
            "number_of_replicas": int(flat.get("index.number_of_replicas", 0)),
        }
    return out


@contextlib.contextmanager
def bulk_load_settings(
    client: OpenSearch, indices: Sequence[str], settings: OpenSearchSettings | None = None
) -> Iterator[None]:
    """Within the block, ``indices`` have no periodic refresh and no replicas; afterwards (also
    when the block raises) each gets its own previous values back and is refreshed. A failure to
    restore is raised (after the block's own error, if any, is logged) as an indexer error."""
    where = f"bulk-load settings of {', '.join(indices)}"
    with opensearch_edge(where, settings=settings):
        before = _current(client, indices)
        client.indices.put_settings(index=",".join(before), body={"index": LOAD_SETTINGS})
    failed = False
    try:
        yield
    except BaseException:
        failed = True
        raise
    finally:
        try:
            with opensearch_edge(f"restoring {where}", settings=settings):
                for name, values in before.items():
                    client.indices.put_settings(index=name, body={"index": values})
                client.indices.refresh(index=",".join(before))
        except IndexerError as err:
            if not failed:
                raise
            log.error("could not restore the %s after a failed load: %s", where, err)
