"""``forget`` reads each bulk item's answer: a principal refused the delete (the indexer's, whose
role never deletes) gets one typed line at once, not an endless search-and-delete loop."""

from __future__ import annotations

from typing import Any

import pytest

from backscroll.indexer.errors import ViewAccessDenied, ViewUnavailable
from backscroll.indexer.opensearch.view import OpenSearchView
from backscroll.indexer.settings import OpenSearchSettings

_REFUSED = {
    "type": "security_exception",
    "reason": "no permissions for [indices:data/write/delete] and User [name=sl-indexer]",
}


class ForgetClient:
    """Answers the search with two documents until they are deleted, the bulk per ``item``."""

    def __init__(self, item: dict[str, Any]) -> None:
        self.item = item
        self.left = ["s:0", "s:1"]
        self.searches = 0

    def search(self, **_: Any) -> dict[str, Any]:
        self.searches += 1
        assert self.searches < 5, "forget searched again and again"
        return {"hits": {"hits": [{"_id": i} for i in self.left]}}

    def bulk(self, body: list[dict[str, Any]], **_: Any) -> dict[str, Any]:
        items = [{"delete": {"_id": line["delete"]["_id"], **self.item}} for line in body]
        if self.item.get("result") == "deleted":
            self.left = []
        return {"errors": "error" in self.item, "items": items}

    def delete(self, **_: Any) -> None:
        return None


def _view(client: ForgetClient) -> OpenSearchView:
    settings = OpenSearchSettings(username="sl-indexer")
    return OpenSearchView(settings, client=client, parallelism=1)  # type: ignore[arg-type]


def test_a_refused_delete_is_one_typed_line() -> None:
    client = ForgetClient({"status": 403, "error": _REFUSED})
    with pytest.raises(ViewAccessDenied) as refused:
        _view(client).forget_session("s")
    assert "user 'sl-indexer' lacks permission indices:data/write/delete (403)" in str(refused.value)
    assert client.searches == 1


def test_another_item_failure_is_retriable_and_stops() -> None:
    client = ForgetClient({"status": 429, "error": {"type": "es_rejected_execution_exception"}})
    with pytest.raises(ViewUnavailable):
        _view(client).forget_session("s")
    assert client.searches == 1


def test_deleted_items_are_counted() -> None:
    client = ForgetClient({"status": 200, "result": "deleted"})
    assert _view(client).forget_session("s") == 2
