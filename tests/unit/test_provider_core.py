"""The provider core and the reader core, on the embedded backend: strict request types, every
configuration error typed, searching disabled by configuration, cancellation (ABORTED), bounded
waits under a held write lock, read-your-writes from an in-process live log, and imports that
load no server client."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from backscroll.backends import BackendSettings, EmbeddedBackend, backend_from_settings
from backscroll.indexer.sqlite.runner import embedded_runner
from backscroll.ingest.live import LiveLog
from backscroll.ingest.sqlite.log import SQLiteEntryLog
from backscroll.ingest.wire import EventRecord, parse_record
from backscroll.query import AbortSignal, Scope, SessionQueryError, SessionQueryRequest
from backscroll.query.opensearch.provider import OpenSearchProvider
from backscroll.query.opensearch.reader import OpenSearchSessionReader
from backscroll.query.sqlite.provider import SQLiteProvider
from backscroll.query.sqlite.reader import SQLiteSessionReader

T0 = datetime(2026, 11, 4, tzinfo=UTC)


def _event(seq: int, text: str, sid: str = "c-1", ws: str = "w") -> dict[str, Any]:
    return {
        "v": 1, "kind": "event", "workspace_id": ws, "session_id": sid, "seq": seq,
        "type": "user/message", "role": "user", "surface": {"op": "append"},
        "time": (T0 + timedelta(seconds=seq)).isoformat(), "text": text,
    }  # fmt: skip


def _header(sid: str = "c-1", ws: str = "w") -> dict[str, Any]:
    return {"v": 1, "kind": "header", "workspace_id": ws, "session_id": sid, "created_at": T0.isoformat()}


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "core.db"
    with SQLiteEntryLog(path) as log:
        log.append_many([_header(), *(_event(i, f"note {i} about the budget review") for i in range(6))])
    with embedded_runner(path) as indexer:
        indexer.run_until_idle()
    return path


@pytest.fixture
def provider(db: Path) -> Iterator[SQLiteProvider]:
    with SQLiteProvider(Scope.workspace("w"), db) as made:
        yield made


def _code(call: Callable[[], object]) -> str:
    with pytest.raises(SessionQueryError) as err:
        call()
    return err.value.code


# -- strict request types -------------------------------------------------------------------------

BAD_FIELDS: list[tuple[dict[str, Any], str]] = [
    ({"kinds": ("user/message\n",)}, "SESSION_QUERY_INVALID_FILTER"),
    ({"kinds": ("user/message", "x\n")}, "SESSION_QUERY_INVALID_FILTER"),
    ({"kinds": "user/message"}, "SESSION_QUERY_INVALID_FILTER"),
    ({"kinds": (5,)}, "SESSION_QUERY_INVALID_FILTER"),
    ({"limit": True}, "SESSION_QUERY_INVALID_LIMIT"),
    ({"limit": "10"}, "SESSION_QUERY_INVALID_LIMIT"),
    ({"limit": 1.0}, "SESSION_QUERY_INVALID_LIMIT"),
    ({"limit": 2.5}, "SESSION_QUERY_INVALID_LIMIT"),
    ({"excerpt_bytes": True}, "SESSION_QUERY_INVALID_LIMIT"),
    ({"excerpt_bytes": "600"}, "SESSION_QUERY_INVALID_LIMIT"),
    ({"excerpt_bytes": None}, "SESSION_QUERY_INVALID_LIMIT"),
    ({"query": None}, "SESSION_QUERY_INVALID_QUERY"),
    ({"query": b"budget"}, "SESSION_QUERY_INVALID_QUERY"),
    ({"query": 5}, "SESSION_QUERY_INVALID_QUERY"),
    ({"session_id": 5}, "SESSION_QUERY_INVALID_SCOPE"),
    ({"cursor": 5}, "SESSION_QUERY_INVALID_CURSOR"),
    ({"unknown": 1}, "SESSION_QUERY_INVALID_QUERY"),
]


@pytest.mark.parametrize(("fields", "code"), BAD_FIELDS)
def test_a_request_of_wrong_types_is_a_typed_error_at_construction(fields: dict[str, Any], code: str) -> None:
    assert _code(lambda: SessionQueryRequest(**fields)) == code
    assert _code(lambda: SessionQueryRequest.model_validate(fields)) == code


@pytest.mark.parametrize(("fields", "code"), [(f, c) for f, c in BAD_FIELDS if "unknown" not in f])
def test_requests_that_skipped_validation_are_validated_again(
    provider: SQLiteProvider, fields: dict[str, Any], code: str
) -> None:
    constructed = SessionQueryRequest.model_construct(**{"query": "budget", **fields})
    assert _code(lambda: provider.search(constructed)) == code
    copied = SessionQueryRequest(query="budget").model_copy(update=fields)
    assert _code(lambda: provider.search(copied)) == code


def test_a_request_that_is_not_an_object_is_invalid_query() -> None:
    assert _code(lambda: SessionQueryRequest.model_validate(["budget"])) == "SESSION_QUERY_INVALID_QUERY"


def test_valid_requests_still_pass(provider: SQLiteProvider) -> None:
    result = provider.search(
        SessionQueryRequest(query="budget", kinds=["user/message"], limit=2, excerpt_bytes=0)
    )
    assert len(result.matches) == 2 and result.next_cursor is not None


# -- configuration errors --------------------------------------------------------------------------

PROVIDER_CONFIG = [
    {"default_limit": "10"},
    {"default_limit": True},
    {"max_limit": 2.5},
    {"max_limit": 0},
    {"request_timeout_s": "5"},
    {"request_timeout_s": float("nan")},
    {"request_timeout_s": float("inf")},
    {"request_timeout_s": True},
    {"cursor_key": "key"},
    {"cursor_key": b"short"},
    {"live": object()},
    {"search_enabled": "no"},
]


@pytest.mark.parametrize("kwargs", PROVIDER_CONFIG, ids=repr)
def test_every_provider_configuration_error_is_invalid_config(tmp_path: Path, kwargs: dict[str, Any]) -> None:
    assert _code(lambda: SQLiteProvider(Scope.workspace("w"), tmp_path / "x.db", **kwargs)) == (
        "SESSION_QUERY_INVALID_CONFIG"
    )
    assert _code(lambda: OpenSearchProvider(Scope.workspace("w"), **kwargs)) == "SESSION_QUERY_INVALID_CONFIG"


@pytest.mark.parametrize(
    "kwargs",
    [
        {"max_expansions": 0},
        {"max_expansions": "64"},
        {"scan_max_rows": -1},
        {"scan_max_rows": True},
        {"catch_up": 5},
        {"path": 5},
        {"path": " "},
    ],
    ids=repr,
)
def test_embedded_provider_configuration_errors(tmp_path: Path, kwargs: dict[str, Any]) -> None:
    args: dict[str, Any] = {"path": tmp_path / "x.db", **kwargs}
    assert _code(lambda: SQLiteProvider(Scope.workspace("w"), args.pop("path"), **args)) == (
        "SESSION_QUERY_INVALID_CONFIG"
    )


@pytest.mark.parametrize(
    "kwargs",
    [{"settings": "http://x"}, {"hosts": 5}, {"index_prefix": 5}, {"hosts": "not a url"}],
    ids=repr,
)
def test_opensearch_settings_errors_are_invalid_config(kwargs: dict[str, Any]) -> None:
    assert _code(lambda: OpenSearchProvider(Scope.workspace("w"), **kwargs)) == "SESSION_QUERY_INVALID_CONFIG"
    assert (
        _code(lambda: OpenSearchSessionReader(Scope.workspace("w"), **kwargs))
        == "SESSION_QUERY_INVALID_CONFIG"
    )


@pytest.mark.parametrize(
    "kwargs",
    [
        {"persisted_inspect_concurrency": 0},
        {"persisted_inspect_concurrency": -1},
        {"persisted_inspect_concurrency": 1.5},
        {"persisted_inspect_concurrency": True},
        {"persisted_inspect_concurrency": "4"},
        {"persisted_inspect_concurrency": 2**53},
        {"request_timeout_s": 0},
        {"read_window_max": -1},
        {"persistence": "yes"},
        {"live": object()},
    ],
    ids=repr,
)
def test_every_reader_configuration_error_is_invalid_config(tmp_path: Path, kwargs: dict[str, Any]) -> None:
    assert _code(lambda: SQLiteSessionReader(Scope.workspace("w"), tmp_path / "x.db", **kwargs)) == (
        "SESSION_QUERY_INVALID_CONFIG"
    )
    assert (
        _code(lambda: OpenSearchSessionReader(Scope.workspace("w"), **kwargs))
        == "SESSION_QUERY_INVALID_CONFIG"
    )


def test_persisted_inspect_concurrency_is_accepted_in_range(db: Path) -> None:
    with SQLiteSessionReader(Scope.workspace("w"), db, persisted_inspect_concurrency=2**53 - 1) as reader:
        assert reader.persisted_inspect_concurrency == 2**53 - 1


def test_a_signal_that_is_not_an_abort_signal_is_invalid_config(provider: SQLiteProvider) -> None:
    bad: Any = object()
    assert (
        _code(lambda: provider.search(SessionQueryRequest(query="x"), signal=bad))
        == "SESSION_QUERY_INVALID_CONFIG"
    )
    assert _code(lambda: AbortSignal(timeout_s=0)) == "SESSION_QUERY_INVALID_CONFIG"


# -- searching disabled --------------------------------------------------------------------------


def test_search_disabled_refuses_valid_and_invalid_requests_but_reads_work(db: Path) -> None:
    with SQLiteProvider(Scope.workspace("w"), db, search_enabled=False) as provider:
        assert (
            _code(lambda: provider.search(SessionQueryRequest(query="budget")))
            == "SESSION_QUERY_SEARCH_DISABLED"
        )
        invalid = SessionQueryRequest.model_construct(query="\x00", limit=0)
        assert _code(lambda: provider.search(invalid)) == "SESSION_QUERY_SEARCH_DISABLED"
    with SQLiteSessionReader(Scope.workspace("w"), db) as reader:
        assert [r.header.session_id for r in reader.list_sessions()] == ["c-1"]
        assert reader.read_event("c-1", 1).target.seq == 1
        assert reader.trace_session("c-1").complete


def test_search_disabled_by_the_environment(db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BACKSCROLL_SEARCH_ENABLED", "false")
    backend = backend_from_settings(BackendSettings(backend="embedded", sqlite_path=db))
    with backend.open_provider(Scope.workspace("w")) as provider:
        assert (
            _code(lambda: provider.search(SessionQueryRequest(query="x"))) == "SESSION_QUERY_SEARCH_DISABLED"
        )
    with backend.open_reader(Scope.workspace("w")) as reader:
        assert reader.read_event("c-1", 0).target.seq == 0


# -- cancellation (ABORTED) ------------------------------------------------------------------------


def test_an_aborted_signal_stops_searches_and_reads(db: Path) -> None:
    signal = AbortSignal()
    signal.abort("the user pressed stop")
    with SQLiteProvider(Scope.workspace("w"), db) as provider:
        with pytest.raises(SessionQueryError) as err:
            provider.search(SessionQueryRequest(query="budget"), signal=signal)
        assert err.value.code == "SESSION_QUERY_ABORTED" and "stop" in err.value.message
        assert not err.value.retriable
    with SQLiteSessionReader(Scope.workspace("w"), db) as reader:
        assert _code(lambda: reader.read_event("c-1", 0, signal=signal)) == "SESSION_QUERY_ABORTED"
        assert _code(lambda: reader.list_sessions(signal=signal)) == "SESSION_QUERY_ABORTED"


def test_a_search_cancelled_while_it_runs_is_aborted(db: Path) -> None:
    signal = AbortSignal()
    with SQLiteProvider(
        Scope.workspace("w"), db, catch_up=lambda: signal.abort("cancelled mid-search")
    ) as provider:
        assert _code(lambda: provider.search(SessionQueryRequest(query="budget"), signal=signal)) == (
            "SESSION_QUERY_ABORTED"
        )


def test_a_cooperative_timeout_is_aborted_not_index_failed(provider: SQLiteProvider) -> None:
    signal = AbortSignal.timeout(1e-9)
    assert _code(lambda: provider.search(SessionQueryRequest(query="budget"), signal=signal)) == (
        "SESSION_QUERY_ABORTED"
    )
    assert provider.search(SessionQueryRequest(query="budget"), signal=AbortSignal.timeout(60)).matches


def test_an_aborted_opensearch_search_never_reaches_the_server() -> None:
    signal = AbortSignal()
    signal.abort()
    provider = OpenSearchProvider(Scope.workspace("w"), hosts="http://127.0.0.1:9")
    assert (
        _code(lambda: provider.search(SessionQueryRequest(query="x"), signal=signal))
        == "SESSION_QUERY_ABORTED"
    )


# -- bounded waits -------------------------------------------------------------------------------


def _finishes(call: Callable[[], object], within_s: float) -> list[object]:
    """Run ``call`` on a thread; the outcome (result or exception) if it finished in time."""
    outcome: list[object] = []

    def run() -> None:
        try:
            outcome.append(call())
        except Exception as err:
            outcome.append(err)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(within_s)
    return outcome


def test_search_and_reads_under_a_held_write_lock_stay_within_their_timeout(db: Path) -> None:
    backend = EmbeddedBackend(db)  # catches up before each search and read
    with SQLiteEntryLog(db) as log:
        log.append(_event(6, "a fresh line about the zeppelin"))
    blocker = sqlite3.connect(db, isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")  # another process holds the write lock (30 s busy timeout)
    try:
        with backend.open_provider(Scope.workspace("w"), request_timeout_s=1) as provider:
            # Before: the embedded catch-up waited out its 30 s busy timeout.
            (searched,) = _finishes(lambda: provider.search(SessionQueryRequest(query="budget")), 20)
            assert not isinstance(searched, Exception) or isinstance(searched, SessionQueryError), searched
        with backend.open_reader(Scope.workspace("w"), request_timeout_s=1) as reader:
            (listed,) = _finishes(reader.list_sessions, 20)
            assert not isinstance(listed, Exception) or isinstance(listed, SessionQueryError), listed
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    with backend.open_provider(Scope.workspace("w"), request_timeout_s=60) as provider:
        assert [m.seq for m in provider.search(SessionQueryRequest(query="zeppelin")).matches] == [6]


# -- read-your-writes on the embedded backend ------------------------------------------------------


def _append_live(path: Path, live: LiveLog, record: dict[str, Any]) -> None:
    """What the SQLite entry log's live view does: keep the record until the indexer passes it."""
    with SQLiteEntryLog(path) as log:
        position = log.append(record).result()
    parsed = parse_record(record)
    assert isinstance(parsed, EventRecord)
    live.add(parsed)
    live.acknowledged(parsed.session_id, parsed.seq, position.partition, position.offset)


def test_own_appends_are_searchable_before_and_after_indexing(db: Path) -> None:
    live = LiveLog()
    _append_live(db, live, _event(6, "the quarterly forecast for Zürich"))
    with (
        SQLiteProvider(Scope.session("c-1"), db, live=live) as session,
        SQLiteProvider(Scope.workspace("elsewhere"), db, live=live) as other,
    ):
        before = session.search(SessionQueryRequest(query="zurich forcast"))
        assert [(m.session_id, m.seq) for m in before.matches] == [("c-1", 6)]
        assert before.source == "persisted+live" and before.searched == 7
        assert [m.seq for m in session.search(SessionQueryRequest(query="", limit=3)).matches] == [6, 5, 4]
        assert other.search(SessionQueryRequest(query="zurich")).matches == ()  # never another scope
        assert len(live) == 1  # the projection does not show it yet
        with embedded_runner(db) as indexer:
            indexer.run_until_idle()
        after = session.search(SessionQueryRequest(query="zurich forcast"))
        assert [m.seq for m in after.matches] == [6] and after.source == "persisted"
        assert len(live) == 0  # released by the indexer's position
        assert [m.seq for m in session.search(SessionQueryRequest(query="", limit=3)).matches] == [6, 5, 4]


def test_reads_merge_the_live_log(db: Path) -> None:
    live = LiveLog()
    _append_live(db, live, _event(6, "live entry"))
    with SQLiteSessionReader(Scope.workspace("w"), db, live=live) as reader:
        window = reader.read_event("c-1", 6, before=1)
        assert [e.seq for e in window.events] == [5, 6] and window.target.text == "live entry"


def test_a_bare_live_log_needs_a_backend_that_names_its_log() -> None:
    assert (
        _code(lambda: OpenSearchProvider(Scope.workspace("w"), live=LiveLog()))
        == "SESSION_QUERY_INVALID_CONFIG"
    )


# -- imports ---------------------------------------------------------------------------------------

_PROBE = """
import json, sys
import backscroll.query
from backscroll.query import Scope, SessionQueryRequest, SQLiteProvider, SQLiteSessionReader
with SQLiteProvider(Scope.workspace("w"), sys.argv[1]) as provider:
    found = [m.seq for m in provider.search(SessionQueryRequest(query="budget", limit=2)).matches]
with SQLiteSessionReader(Scope.workspace("w"), sys.argv[1]) as reader:
    read = reader.read_event("c-1", 0).target.seq
loaded = sorted({m.split(".")[0] for m in sys.modules} & {"kafka", "opensearchpy", "urllib3"})
print(json.dumps({"found": found, "read": read, "loaded": loaded}))
"""


def test_the_query_package_and_the_embedded_side_load_no_server_client(db: Path) -> None:
    run = subprocess.run(
        [sys.executable, "-c", _PROBE, str(db)], capture_output=True, text=True, timeout=120, check=True
    )
    outcome = json.loads(run.stdout)
    assert outcome["found"] and outcome["read"] == 0
    assert outcome["loaded"] == []
