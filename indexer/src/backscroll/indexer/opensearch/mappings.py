"""The OpenSearch side of the read model: index names, settings and mappings. Pure data; no I/O.

Text is analysed several ways (see :mod:`backscroll.indexer.opensearch.analysis`):

* ``text`` — words split on anything that is not a letter, digit or mark, lower-cased and
  ASCII-folded (``Đơn`` → ``don``): the folded field, and the one fuzzy queries run on;
* ``text.exact`` — the same words lower-cased only, so an exact accented match outranks a folded one;
* ``text.tri`` — 3-grams of the folded words, for substrings of 3+ characters (``9931`` in
  ``acct_9931``);
* ``text.ident`` — identifiers whole (``get_type``, ``2.2.1-3``), for identifier prefixes;
* ``text.mixed`` — words with digits as ``skeleton|letters``, for typos in their letters only;
* ``text.cjk`` — character bigrams of CJK runs (``cjk_bigram``), for words inside them.

Words are runs of CJK characters or of other letters, digits and marks (the same as
:data:`backscroll.indexer.textfold.WORD_RE`).

Tool-call arguments go to ``args`` with the same three analyses, so message text can be weighted
above them.
"""

from __future__ import annotations

from typing import Any, Final

from backscroll.indexer.document import SCHEMA_VERSION
from backscroll.indexer.opensearch.analysis import analysis_settings

__all__ = [
    "PERIODIC_REFRESH",
    "events_alias",
    "events_index_body",
    "sessions_alias",
    "sessions_index_body",
    "watermarks_index",
]


def events_alias(prefix: str) -> str:
    return f"{prefix}-events"


def sessions_alias(prefix: str) -> str:
    return f"{prefix}-sessions"


def watermarks_index(prefix: str) -> str:
    return f"{prefix}-watermarks"


def _analysed_text(*, message: bool) -> dict[str, Any]:
    # Every query on these fields is a filter inside ``constant_score`` (the tiers of
    # backscroll.query.opensearch.body), so no score needs norms. Message text keeps them on its main field
    # (``exists`` on it, the field bonus, reads them) and positions on ``exact`` (the phrase bonus);
    # tool arguments need neither.
    docs_only = {"index_options": "docs", "norms": False}
    exact: dict[str, Any] = {"type": "text", "analyzer": "sl_exact", "norms": False}
    if not message:
        exact |= docs_only
    return {
        "type": "text",
        "analyzer": "sl_folded",
        # Positions: match_phrase (identifier parts, the phrase bonus) and intervals (occurrences).
        "norms": message,
        "fields": {
            "exact": exact,
            "tri": {"type": "text", "analyzer": "sl_trigram", **docs_only},
            "ident": {"type": "text", "analyzer": "sl_ident", **docs_only},
            "mixed": {"type": "text", "analyzer": "sl_mixed", **docs_only},
            # Positions kept: a CJK word of 3+ characters is a phrase of its bigrams.
            "cjk": {"type": "text", "analyzer": "sl_cjk", "norms": False},
        },
    }


def _stored(kind: str) -> dict[str, Any]:
    """A field only ever read back from ``_source``: no inverted index, no doc values."""
    return {"type": kind, "index": False, "doc_values": False}


# Indexed: what a query filters, sorts or aggregates on (scope, kinds, seq/time order, the excluded
# tools, has_text, the offset of the corpus generation, the text fields). The rest is only read.
_EVENT_PROPERTIES: Final[dict[str, Any]] = {
    "schema": _stored("integer"),
    "workspace_id": {"type": "keyword"},
    "session_id": {"type": "keyword"},
    "seq": {"type": "long"},
    "type": {"type": "keyword"},
    "time": {"type": "date"},
    "turn": _stored("long"),
    "role": _stored("keyword"),
    "tool_name": {"type": "keyword"},
    "text": _analysed_text(message=True),
    "args": _analysed_text(message=False),
    "has_text": {"type": "boolean"},
    "text_bytes": _stored("integer"),
    "surface_op": _stored("keyword"),
    "replace_start": _stored("long"),
    "replace_end": _stored("long"),
    "sources": _stored("long"),
    "surface_state": _stored("keyword"),
    "replaced_by": _stored("long"),
    "attrs": {"type": "object", "enabled": False},
    "content_hash": _stored("keyword"),
    "partition": _stored("integer"),
    # The corpus generation's max aggregation reads doc values only.
    "offset": {"type": "long", "index": False},
}


#: The indices' own refresh is only a safety net. The indexer refreshes them itself before it publishes
#: a watermark (at most once per watermark interval, 1 s by default, and only after it has written),
#: which is what makes entries searchable; a periodic refresh of 1 s on top of that doubled the
#: segments written during a catch-up (about 14% of the indexer's end-to-end time).
PERIODIC_REFRESH: Final = "30s"


def _index_settings(shards: int, replicas: int) -> dict[str, Any]:
    return {
        "number_of_shards": shards,
        "number_of_replicas": replicas,
        "refresh_interval": PERIODIC_REFRESH,
        # Tool outputs may be 1 MiB; highlighting must not refuse them.
        "highlight": {"max_analyzed_offset": 2_000_000},
        "analysis": analysis_settings(),
    }


def events_index_body(shards: int = 1, replicas: int = 0) -> dict[str, Any]:
    """Settings and mappings of a concrete events index version.

    Every version is created with its whole body rather than from an index template: templates
    are a cluster-wide permission that no security plugin narrows to one index pattern, so a
    principal allowed to write templates could attach our aliases to another application's
    indices. No principal of ours needs that permission."""
    return {
        "settings": _index_settings(shards, replicas),
        "mappings": {
            "dynamic": "strict",
            "_routing": {"required": True},
            "_meta": {"owner": "backscroll", "schema": SCHEMA_VERSION},
            "properties": _EVENT_PROPERTIES,
        },
    }


_SESSION_PROPERTIES: Final[dict[str, Any]] = {
    "workspace_id": {"type": "keyword"},
    "session_id": {"type": "keyword"},
    "created_at": {"type": "date"},
    "parent_session_id": {"type": "keyword", "null_value": "__none__"},
    "seed_length": {"type": "long"},
    "delegation_depth": {"type": "long"},
    "origin": {"type": "keyword"},
    "agent_preset": {"type": "keyword"},
    "title": {"type": "text", "analyzer": "sl_folded"},
    "has_header": {"type": "boolean"},
    "last_seq": {"type": "long"},
    "entry_count": {"type": "long"},
    "last_activity": {"type": "date"},
    "surface_valid": {"type": "boolean"},
    "violations": {"type": "object", "enabled": False},
    "seq_gaps": {"type": "long"},
}


def sessions_index_body(shards: int = 1, replicas: int = 0) -> dict[str, Any]:
    return {
        "settings": {
            "number_of_shards": shards,
            "number_of_replicas": replicas,
            "refresh_interval": PERIODIC_REFRESH,
            "analysis": analysis_settings(),
        },
        "mappings": {"dynamic": "strict", "_routing": {"required": True}, "properties": _SESSION_PROPERTIES},
    }
