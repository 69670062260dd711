"""Per-item bulk retries of the OpenSearch view, against a scripted fake client (no server)."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from opensearchpy.exceptions import ConnectionError as OSConnectionError
from opensearchpy.exceptions import TransportError

from backscroll.indexer.errors import ViewFailed, ViewUnavailable
from backscroll.indexer.opensearch.view import OpenSearchView, is_retriable_status
from backscroll.indexer.projector import Action


def _actions(n: int) -> list[Action]:
    return [Action("create", "events", f"s:{i}", "s", {"seq": i, "content_hash": str(i)}) for i in range(n)]


class FakeClient:
    """Answers each bulk call with the next scripted outcome: a list of statuses, or an exception."""

    def __init__(self, script: list[Any]) -> None:
        self.script = list(script)
        self.calls: list[list[str]] = []
        self.sizes: list[int] = []

    def bulk(self, body: bytes, params: dict[str, Any] | None = None) -> dict[str, Any]:
        assert body.endswith(b"\n")  # NDJSON, as the bulk API wants it
        lines = [orjson.loads(line) for line in body.splitlines()]
        ids = [line["create"]["_id"] for line in lines[::2]]
        self.calls.append(ids)
        self.sizes.append(len(body))
        outcome = self.script.pop(0)
        if isinstance(outcome, Exception):
            raise outcome
        statuses = outcome(ids) if callable(outcome) else outcome
        items = []
        for status in statuses:
            info: dict[str, Any] = {"status": status}
            if status >= 300:
                info["error"] = {"type": "x", "reason": f"status {status}"}
            items.append({"create": info})
        return {"items": items}

    def close(self) -> None:
        pass


def _view(client: FakeClient, sleeps: list[float], budget: int = 4) -> OpenSearchView:
    return OpenSearchView(client=client, retry_budget=budget, sleep=sleeps.append, parallelism=1)  # type: ignore[arg-type]


def test_only_failed_items_are_resent_with_backoff() -> None:
    client = FakeClient([[201, 429, 201, 503], [201, 201]])
    sleeps: list[float] = []
    results = _view(client, sleeps).bulk(_actions(4))
    assert [r.status for r in results] == [201, 201, 201, 201]
    assert client.calls == [["s:0", "s:1", "s:2", "s:3"], ["s:1", "s:3"]]
    assert len(sleeps) == 1 and 0 <= sleeps[0] <= 10


def test_non_retriable_items_are_returned_not_retried() -> None:
    client = FakeClient([[201, 400, 409]])
    results = _view(client, []).bulk(_actions(3))
    assert [r.status for r in results] == [201, 400, 409]
    assert results[1].error == "x: status 400" and not results[1].ok
    assert results[2].exists
    assert len(client.calls) == 1


def test_budget_exhausted_raises_view_unavailable() -> None:
    client = FakeClient([[429]] * 4)
    sleeps: list[float] = []
    with pytest.raises(ViewUnavailable):
        _view(client, sleeps, budget=3).bulk(_actions(1))
    assert len(client.calls) == 4 and len(sleeps) == 3


def test_backoff_is_capped_and_jittered() -> None:
    client = FakeClient([[429]] * 9 + [[201]])
    sleeps: list[float] = []
    _view(client, sleeps, budget=9).bulk(_actions(1))
    assert all(0 <= s <= 10.0 for s in sleeps)
    assert len(set(sleeps)) > 1


def test_connection_errors_and_5xx_requests_are_retried() -> None:
    client = FakeClient([OSConnectionError("N/A", "refused", None), TransportError(503, "busy", {}), [201]])
    sleeps: list[float] = []
    assert [r.status for r in _view(client, sleeps).bulk(_actions(1))] == [201]
    assert len(sleeps) == 2


def test_a_rejected_request_is_not_retried() -> None:
    client = FakeClient([TransportError(400, "bad request", {})])
    with pytest.raises(ViewFailed) as raised:
        _view(client, []).bulk(_actions(1))
    assert len(client.calls) == 1 and not raised.value.retriable


@pytest.mark.parametrize(
    ("status", "retriable"), [(429, True), (500, True), (503, True), (400, False), (404, False)]
)
def test_retriable_is_a_property_of_the_status(status: int, retriable: bool) -> None:
    assert is_retriable_status(status) is retriable


def test_bulk_requests_are_cut_by_bytes_in_order() -> None:
    client = FakeClient([lambda ids: [201] * len(ids)] * 10)
    view = OpenSearchView(client=client, parallelism=1, max_bulk_bytes=400)  # type: ignore[arg-type]
    results = view.bulk(_actions(12))
    assert [r.status for r in results] == [201] * 12
    sent = [i for call in client.calls for i in call]
    assert len(client.calls) > 1 and sent == [f"s:{i}" for i in range(12)]
    assert all(size <= 400 + 2 for size in client.sizes)


def test_one_action_larger_than_the_cut_goes_alone() -> None:
    big = Action("create", "events", "s:big", "s", {"seq": 0, "text": "x" * 1000})
    client = FakeClient([lambda ids: [201] * len(ids)] * 3)
    view = OpenSearchView(client=client, parallelism=1, max_bulk_bytes=400)  # type: ignore[arg-type]
    assert [r.ok for r in view.bulk([*_actions(1), big, *_actions(1)])] == [True, True, True]
    assert client.calls == [["s:0"], ["s:big"], ["s:0"]]
