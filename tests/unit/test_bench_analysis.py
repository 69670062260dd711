"""The analysis benchmark's indices differ from the product's only where each analysis says."""

from __future__ import annotations

import orjson
from tests.benchmarks.bench_analysis import _index_body, bodies

from sessionlog.indexer.document import events_template_body
from sessionlog.indexer.os_analysis import analysis_settings


def test_the_product_analysis_is_the_products() -> None:
    body = _index_body("simple_pattern")
    assert body["settings"]["analysis"] == analysis_settings()
    assert body["mappings"] == events_template_body("x")["template"]["mappings"]


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
    events, payload = bodies(300, per_request=100)
    lines = b"".join(payload).splitlines()
    assert len(lines) == 2 * events and len(payload) == -(-events // 100)
    action = orjson.loads(lines[0])["index"]
    assert action["_id"].startswith(action["routing"] + ":")


def test_the_floor_leaves_the_products_mapping_alone() -> None:
    _index_body("no_subfields")
    assert "fields" in events_template_body("x")["template"]["mappings"]["properties"]["text"]
