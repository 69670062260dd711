"""The analysis benchmark's indices differ from the product's only where each analysis says."""

from __future__ import annotations

from typing import Any

import orjson

from backscroll.indexer.opensearch.analysis import analysis_settings
from backscroll.indexer.opensearch.mappings import events_index_body
from benchmarks.bench_analysis import _index_body, bodies


def test_the_product_analysis_is_the_products() -> None:
    body = _index_body("simple_pattern")
    assert body["settings"]["analysis"] == analysis_settings()
    assert body["mappings"] == events_index_body()["mappings"]


def test_the_java_peer_changes_only_the_tokenizers_and_the_identifier_filter() -> None:
    body, product = _index_body("java_pattern")["settings"]["analysis"], analysis_settings()
    assert {t["type"] for t in body["tokenizer"].values()} == {"pattern"}
    assert body["analyzer"]["sl_ident"]["filter"] == ["sl_truncate", "lowercase", "sl_fold"]
    body["analyzer"]["sl_ident"] = product["analyzer"]["sl_ident"]
    assert body["analyzer"] == product["analyzer"] and body["filter"] == product["filter"]


def test_the_floor_has_no_subfields() -> None:
    properties = _index_body("no_subfields")["mappings"]["properties"]
    assert "fields" not in properties["text"] and "fields" not in properties["args"]


def test_bodies_are_routed_index_actions() -> None:
    rows: list[dict[str, Any]] = [
        {
            "v": 1,
            "kind": "header",
            "workspace_id": "w",
            "session_id": "s",
            "created_at": "2026-12-05T08:00:00+00:00",
        }
    ]
    rows += [
        {
            "v": 1,
            "kind": "event",
            "workspace_id": "w",
            "session_id": "s",
            "seq": seq,
            "type": "user/message",
            "time": "2026-12-05T08:00:00+00:00",
            "text": f"entry {seq}",
            "surface": {"op": "append"},
        }
        for seq in range(250)
    ]
    events, payload = bodies(rows, per_request=100)
    lines = b"".join(payload).splitlines()
    assert events == 250 and len(lines) == 2 * events and len(payload) == 3
    assert orjson.loads(lines[0])["index"] == {"_id": "s:0", "routing": "s"}
    assert orjson.loads(lines[1])["text"] == "entry 0"


def test_the_floor_leaves_the_products_mapping_alone() -> None:
    _index_body("no_subfields")
    assert "fields" in events_index_body()["mappings"]["properties"]["text"]
