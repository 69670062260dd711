"""The pipeline end to end: append → Kafka → indexer → OpenSearch → scoped fuzzy search."""

from __future__ import annotations

import random
import shutil
import subprocess
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson
import pytest
from conftest import Pipeline, make_pipeline

from backscroll.ingest import Appender, RecordRejected
from backscroll.query import Scope, SessionQueryError, SessionQueryRequest

WORKSPACES = 3
SESSIONS = 20
EVENTS = 50
_BASE = datetime(2026, 11, 1, tzinfo=UTC)

_VOCAB = [
    "report",
    "deploy",
    "cluster",
    "metrics",
    "invoice",
    "ledger",
    "budget",
    "backlog",
    "sprint",
    "review",
    "pipeline",
    "staging",
    "customer",
    "account",
    "balance",
    "migration",
    "schema",
    "rollout",
    "incident",
    "postmortem",
    "latency",
]

#: (session index, seq, text) planted needles; each distinctive word occurs exactly once.
NEEDLES = {
    (4, 17): "the quarterly forecast mentions Zürich and the Kraków warehouse",
    (9, 33): "Nguyễn approved the reconciliation spreadsheet yesterday",
    (13, 8): "restarted the gateway after certificate rotation in São Paulo",
    (17, 41): "the café ledger shows a discrepancy in Ærøskøbing",
}


def _session(i: int) -> tuple[str, str]:
    return f"ws-{i % WORKSPACES}", f"s-{i:02d}"


def _records() -> list[dict[str, Any]]:
    rng = random.Random(42)
    out: list[dict[str, Any]] = []
    for i in range(SESSIONS):
        ws, sid = _session(i)
        out.append(
            {
                "v": 1,
                "kind": "header",
                "workspace_id": ws,
                "session_id": sid,
                "created_at": (_BASE + timedelta(hours=i)).isoformat(),
            }
        )
        for seq in range(EVENTS):
            text = NEEDLES.get((i, seq)) or " ".join(rng.choice(_VOCAB) for _ in range(8))
            role = "user" if seq % 2 == 0 else "assistant"
            out.append(
                {
                    "v": 1,
                    "kind": "event",
                    "workspace_id": ws,
                    "session_id": sid,
                    "seq": seq,
                    "type": f"{role}/message",
                    "role": role,
                    "surface": {"op": "append"},
                    "time": (_BASE + timedelta(hours=i, seconds=seq)).isoformat(),
                    "text": text,
                }
            )
    return out


@pytest.fixture(scope="module")
def loaded() -> Iterator[Pipeline]:
    with make_pipeline() as pipeline:
        pipeline.append_all(_records())
        stats = pipeline.index()
        assert stats.indexed == SESSIONS * EVENTS
        assert stats.dead_lettered == 0
        yield pipeline


def _top3(pipeline: Pipeline, scope: Scope, query: str, session: str | None = None) -> list[tuple[str, int]]:
    result = pipeline.provider(scope).search(SessionQueryRequest(session_id=session, query=query, limit=3))
    return [(m.session_id, m.seq) for m in result.matches]


@pytest.mark.parametrize(
    ("query", "target"),
    [
        ("forcast", (4, 17)),  # one deletion
        ("reconcilaition", (9, 33)),  # adjacent swap
        ("certificat rotaton", (13, 8)),  # two one-edit words
        ("Zurich", (4, 17)),  # accent stripped
        ("Krakow", (4, 17)),  # accent stripped (ó)
        ("Nguyen", (9, 33)),  # accent stripped (ễ)
        ("Aeroskobing", (17, 41)),  # letters without decomposition (æ, ø)
        ("Sáo Paulö", (13, 8)),  # accents added
        ("cafë", (17, 41)),  # accent changed
    ],
)
def test_typos_and_accents_find_target_in_top3(loaded: Pipeline, query: str, target: tuple[int, int]) -> None:
    ws, sid = _session(target[0])
    expected = (sid, target[1])
    assert expected in _top3(loaded, Scope.workspace(ws), query)
    assert expected in _top3(loaded, Scope.session(sid), query)


def test_session_scope_never_returns_another_session(loaded: Pipeline) -> None:
    for i in range(SESSIONS):
        _, sid = _session(i)
        provider = loaded.provider(Scope.session(sid))
        for query in ("report deploy", "", "ledger", "zzzz"):
            result = provider.search(SessionQueryRequest(query=query, limit=50))
            assert all(m.session_id == sid for m in result.matches)
        # Naming another session is refused exactly like a missing one.
        with pytest.raises(SessionQueryError) as err:
            provider.search(SessionQueryRequest(session_id="s-99", query="report"))
        assert err.value.code == "SESSION_QUERY_SESSION_NOT_FOUND"
        other = _session((i + 1) % SESSIONS)[1]
        with pytest.raises(SessionQueryError) as err2:
            provider.search(SessionQueryRequest(session_id=other, query="report"))
        assert err2.value.code == err.value.code


def test_workspace_scope_never_returns_another_workspace(loaded: Pipeline) -> None:
    for w in range(WORKSPACES):
        ws = f"ws-{w}"
        provider = loaded.provider(Scope.workspace(ws))
        allowed = {_session(i)[1] for i in range(SESSIONS) if _session(i)[0] == ws}
        for query in ("report deploy", "", "Zurich", "ledger budget"):
            result = provider.search(SessionQueryRequest(query=query, limit=50))
            assert result.matches or query == "Zurich"  # only ws-1 holds the Zürich needle
            assert {m.session_id for m in result.matches} <= allowed
        foreign = next(_session(i)[1] for i in range(SESSIONS) if _session(i)[0] != ws)
        with pytest.raises(SessionQueryError) as err:
            provider.search(SessionQueryRequest(session_id=foreign, query="report"))
        assert err.value.code == "SESSION_QUERY_SESSION_NOT_FOUND"


def test_searched_counts_in_scope_entries(loaded: Pipeline) -> None:
    result = loaded.provider(Scope.session("s-00")).search(SessionQueryRequest(query="zzzzqqq"))
    assert result.matches == ()
    assert result.searched == EVENTS


@pytest.mark.parametrize(
    ("record", "field"),
    [
        (
            {
                "v": 1,
                "kind": "event",
                "workspace_id": "w",
                "session_id": "s",
                "type": "user/message",
                "time": "2026-11-01T00:00:00Z",
                "surface": {"op": "append"},
            },
            "seq",
        ),
        (
            {
                "v": 1,
                "kind": "event",
                "workspace_id": "w",
                "session_id": "s",
                "seq": "3",
                "type": "turn/start",
                "time": "2026-11-01T00:00:00Z",
            },
            "seq",
        ),
        (
            {
                "v": 1,
                "kind": "event",
                "workspace_id": "w w",
                "session_id": "s",
                "seq": 3,
                "type": "turn/start",
                "time": "2026-11-01T00:00:00Z",
            },
            "workspace_id",
        ),
        (
            {
                "v": 1,
                "kind": "event",
                "workspace_id": "w",
                "session_id": "s",
                "seq": 3,
                "type": "user/message",
                "time": "2026-11-01T00:00:00Z",
            },
            "surface",
        ),
        ({"v": 1, "kind": "header", "workspace_id": "w", "session_id": "s"}, "created_at"),
    ],
)
def test_appender_rejects_invalid_records_naming_the_field(
    pipeline: Pipeline, record: dict[str, Any], field: str
) -> None:
    with Appender(pipeline.kafka) as appender, pytest.raises(RecordRejected) as err:
        appender.append(record)
    assert err.value.field == field
    assert field in str(err.value)


def _raw_producer(pipeline: Pipeline) -> Any:
    from kafka import KafkaProducer

    return KafkaProducer(**pipeline.kafka.client_config())


def test_invalid_records_from_other_clients_do_not_stop_the_indexer(pipeline: Pipeline) -> None:
    good = [r for r in _records() if r["session_id"] in ("s-00", "s-01")]
    producer = _raw_producer(pipeline)
    bad_values = [
        b"not json",
        b"[1,2]",
        b'{"v":1,"kind":"event","session_id":"s-00"}',
        orjson.dumps({**good[5], "seq": "five"}),
    ]
    try:
        for i, record in enumerate(good):
            producer.send(pipeline.kafka.topic, key=record["session_id"].encode(), value=orjson.dumps(record))
            if i % 20 == 0 and bad_values:
                producer.send(pipeline.kafka.topic, key=b"s-00", value=bad_values.pop())
        producer.flush()
    finally:
        producer.close()
    stats = pipeline.index()
    assert stats.indexed == 2 * EVENTS
    assert stats.dead_lettered == 4
    result = pipeline.provider(Scope.workspace("ws-0")).search(SessionQueryRequest(query="", limit=50))
    assert result.searched == EVENTS


@pytest.mark.skipif(shutil.which("kcat") is None, reason="kcat is not installed (apt-get install kcat)")
def test_record_from_kcat_is_indexed_and_searchable(pipeline: Pipeline) -> None:
    record = {
        "v": 1,
        "kind": "event",
        "workspace_id": "ws-k",
        "session_id": "kcat-1",
        "seq": 0,
        "type": "tool/result",
        "role": "tool",
        "tool_name": "grep",
        "surface": {"op": "append"},
        "time": "2026-11-30T10:00:00+01:00",
        "text": "written by kcat: Ωmega façade 7f3a9",
    }
    line = b"kcat-1\t" + orjson.dumps(record) + b"\n"
    servers = pipeline.kafka.bootstrap_servers
    subprocess.run(
        ["kcat", "-P", "-b", servers, "-t", pipeline.kafka.topic, "-K", "\t"],
        input=line,
        check=True,
        timeout=60,
    )
    stats = pipeline.index()
    assert stats.indexed == 1
    result = pipeline.provider(Scope.workspace("ws-k")).search(SessionQueryRequest(query="facade omega"))
    assert [(m.session_id, m.seq) for m in result.matches] == [("kcat-1", 0)]
