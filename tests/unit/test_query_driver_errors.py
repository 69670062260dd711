"""Errors stop at the edge: every driver error kind, raised by a fake driver in every method of each
query adapter (OpenSearch engine and reader, SQLite engine and reader), comes out as the adapter's
typed :class:`SessionQueryError`, never as the driver's exception."""

from __future__ import annotations

import functools
import socket
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import urllib3.exceptions
from opensearchpy import exceptions as osx

from backscroll.indexer.opensearch.security import security_failure
from backscroll.indexer.settings import OpenSearchSettings
from backscroll.ingest.errors import IngestError, LogUnavailable
from backscroll.query import Scope, SessionQueryError, SessionQueryRequest
from backscroll.query.opensearch.provider import OpenSearchProvider
from backscroll.query.opensearch.reader import OpenSearchSessionReader
from backscroll.query.reads.reader import ReaderBase
from backscroll.query.sqlite.provider import SQLiteProvider
from backscroll.query.sqlite.reader import SQLiteSessionReader

OPENSEARCH_ERRORS: list[Exception] = [
    osx.ConnectionError("N/A", "connection refused", Exception("refused")),
    osx.ConnectionTimeout("TIMEOUT", "read timed out", Exception("timeout")),
    osx.SSLError("N/A", "certificate verify failed", Exception("ssl")),
    osx.NotFoundError(404, "index_not_found_exception", {}),
    osx.AuthenticationException(401, "unauthorized", {}),
    osx.AuthorizationException(403, "security_exception", {}),
    osx.RequestError(400, "parsing_exception", {}),
    osx.ConflictError(409, "version_conflict", {}),
    osx.TransportError(500, "internal_server_error", {}),
    osx.TransportError(503, "no_shard_available_action_exception", {}),
    osx.SerializationError("cannot decode the response"),
    osx.ImproperlyConfigured("bad client configuration"),
    urllib3.exceptions.ProtocolError("Connection aborted.", ConnectionResetError()),
    urllib3.exceptions.ReadTimeoutError(None, "/", "Read timed out."),  # type: ignore[arg-type]
    urllib3.exceptions.NewConnectionError(None, "Failed to establish a new connection"),  # type: ignore[arg-type]
    ConnectionRefusedError(111, "Connection refused"),
]

SQLITE_ERRORS: list[Exception] = [
    sqlite3.OperationalError("database is locked"),
    sqlite3.OperationalError("no such table: events"),
    sqlite3.OperationalError("disk I/O error"),
    sqlite3.DatabaseError("file is not a database"),
    sqlite3.DatabaseError("database disk image is malformed"),
    sqlite3.IntegrityError("constraint failed"),
    sqlite3.InterfaceError("bad parameter"),
    sqlite3.ProgrammingError("Cannot operate on a closed database."),
    sqlite3.DataError("string or blob too big"),
    sqlite3.InternalError("internal"),
    sqlite3.NotSupportedError("not supported"),
    LogUnavailable("the file is busy"),
]

_EMPTY_HITS: dict[str, Any] = {"hits": {"total": {"value": 0}, "hits": []}}
_COUNT: dict[str, Any] = {
    "hits": {"total": {"value": 1}, "hits": []},
    "aggregations": {"searched": {"doc_count": 1}, "max_offset": {"value": None}},
}


class FakeOpenSearch:
    """A client whose ``failing`` methods raise ``error``; the others answer an index of one entry
    that matches nothing (so a search of several words asks for closest matches)."""

    def __init__(self, error: Exception, failing: set[str]) -> None:
        self.error = error
        self.failing = failing

    def _maybe_fail(self, method: str) -> None:
        if method in self.failing:
            raise self.error

    def msearch(self, *, body: list[dict[str, Any]], **_: Any) -> dict[str, Any]:
        self._maybe_fail("msearch")
        return {"responses": [_COUNT] + [_EMPTY_HITS] * (len(body) // 2 - 1)}

    def search(self, **_: Any) -> dict[str, Any]:
        self._maybe_fail("search")
        return _EMPTY_HITS


READS: dict[str, Callable[[ReaderBase], object]] = {
    "list_sessions": lambda r: r.list_sessions(),
    "list_events": lambda r: r.list_events("s-1"),
    "filter_events": lambda r: r.filter_events("s-1", [{"kind": "type", "values": ["user/message"]}]),
    "read_surface": lambda r: r.read_surface("s-1"),
    "read_event": lambda r: r.read_event("s-1", 0, 1, 1),
    "trace_session": lambda r: r.trace_session("s-1"),
    "trace_event": lambda r: r.trace_event("s-1", 0),
}


def _typed(call: Callable[[], object], code: str) -> SessionQueryError:
    with pytest.raises(SessionQueryError) as err:
        call()
    assert err.value.code == code, err.value
    assert err.value.retriable == (code != "SESSION_QUERY_INVALID_CONFIG")
    return err.value


def _expected(error: Exception, code: str) -> str:
    """TLS, login and permission failures are the configuration's (one clear line), not outages."""
    return "SESSION_QUERY_INVALID_CONFIG" if security_failure(error, OpenSearchSettings()) else code


# -- OpenSearch ------------------------------------------------------------------------------------


@pytest.mark.parametrize("error", OPENSEARCH_ERRORS, ids=lambda e: type(e).__name__)
@pytest.mark.parametrize(
    ("query", "failing"),
    [("budget", {"msearch"}), ("budget review", {"search"})],  # the page, the closest-matches fallback
    ids=["search", "rank"],
)
def test_opensearch_engine_translates_every_driver_error(
    error: Exception, query: str, failing: set[str]
) -> None:
    client = FakeOpenSearch(error, failing)
    provider = OpenSearchProvider(
        Scope.workspace("w"),
        hosts="https://admin:secret@os.example:9200",
        client=client,  # type: ignore[arg-type]
    )
    code = _expected(error, "SESSION_QUERY_INDEX_FAILED")
    typed = _typed(lambda: provider.search(SessionQueryRequest(query=query)), code)
    assert "secret" not in typed.message


def test_opensearch_engine_types_a_malformed_response() -> None:
    class Garbled(FakeOpenSearch):
        def msearch(self, *, body: list[dict[str, Any]], **_: Any) -> dict[str, Any]:
            return {"responses": [{"hits": {}}]}

    provider = OpenSearchProvider(Scope.workspace("w"), client=Garbled(Exception(), set()))  # type: ignore[arg-type]
    _typed(lambda: provider.search(SessionQueryRequest(query="x")), "SESSION_QUERY_INDEX_FAILED")


@pytest.mark.parametrize("error", OPENSEARCH_ERRORS, ids=lambda e: type(e).__name__)
@pytest.mark.parametrize("method", sorted(READS))
def test_opensearch_reader_translates_every_driver_error(error: Exception, method: str) -> None:
    client = FakeOpenSearch(error, {"msearch", "search"})
    reader = OpenSearchSessionReader(Scope.workspace("w"), client=client, cache=False)  # type: ignore[arg-type]
    _typed(lambda: READS[method](reader), _expected(error, "SESSION_QUERY_PERSISTENCE_FAILED"))


class GarbledOpenSearch(FakeOpenSearch):
    """A client answering every request with hits of an unexpected shape."""

    def msearch(self, *, body: list[dict[str, Any]], **_: Any) -> dict[str, Any]:
        return {"responses": [{"hits": {}}] * (len(body) // 2)}

    def search(self, **_: Any) -> dict[str, Any]:
        return {"hits": {}}


@pytest.mark.parametrize("method", sorted(READS))
def test_opensearch_reader_types_a_malformed_response(method: str) -> None:
    client = GarbledOpenSearch(Exception(), set())
    reader = OpenSearchSessionReader(Scope.workspace("w"), client=client, cache=False)  # type: ignore[arg-type]
    typed = _typed(lambda: READS[method](reader), "SESSION_QUERY_PERSISTENCE_FAILED")
    assert "unexpected OpenSearch response" in typed.message


# -- SQLite ----------------------------------------------------------------------------------------


class FakeConnection:
    """A ``sqlite3.Connection`` stand-in whose every statement raises ``error``."""

    in_transaction = False

    def __init__(self, error: Exception) -> None:
        self.error = error

    def execute(self, sql: str, params: Any = ()) -> sqlite3.Cursor:
        raise self.error

    def set_progress_handler(self, handler: Callable[[], int] | None, n: int) -> None:
        pass

    def close(self) -> None:
        pass


def _connector(error: Exception, at_connect: bool) -> Callable[[Path, float], sqlite3.Connection]:
    def connect(path: Path, busy_timeout_s: float) -> sqlite3.Connection:
        if at_connect:
            raise error
        return FakeConnection(error)  # type: ignore[return-value]

    return connect


@pytest.fixture
def db_file(tmp_path: Path) -> Path:
    path = tmp_path / "fake.db"
    path.write_bytes(b"")
    return path


@pytest.mark.parametrize("error", SQLITE_ERRORS, ids=lambda e: f"{type(e).__name__}:{e}")
@pytest.mark.parametrize("at_connect", [True, False], ids=["connect", "statement"])
def test_sqlite_engine_translates_every_driver_error(
    db_file: Path, error: Exception, at_connect: bool
) -> None:
    if at_connect and not isinstance(error, IngestError | sqlite3.Error):
        pytest.skip("not a connect error")
    provider = SQLiteProvider(Scope.workspace("w"), db_file, connector=_connector(error, at_connect))
    for query in ("", "budget", "budget review"):
        request = SessionQueryRequest(query=query)
        _typed(functools.partial(provider.search, request), "SESSION_QUERY_INDEX_FAILED")


@pytest.mark.parametrize("error", SQLITE_ERRORS, ids=lambda e: f"{type(e).__name__}:{e}")
@pytest.mark.parametrize("at_connect", [True, False], ids=["connect", "statement"])
@pytest.mark.parametrize("method", sorted(READS))
def test_sqlite_reader_translates_every_driver_error(
    db_file: Path, error: Exception, at_connect: bool, method: str
) -> None:
    reader = SQLiteSessionReader(Scope.workspace("w"), db_file, connector=_connector(error, at_connect))
    _typed(lambda: READS[method](reader), "SESSION_QUERY_PERSISTENCE_FAILED")


def test_a_missing_database_is_typed_for_reads_and_empty_for_search(tmp_path: Path) -> None:
    absent = tmp_path / "absent.db"
    assert SQLiteProvider(Scope.workspace("w"), absent).search(SessionQueryRequest(query="x")).searched == 0
    _typed(
        lambda: SQLiteSessionReader(Scope.workspace("w"), absent).list_sessions(),
        "SESSION_QUERY_PERSISTENCE_FAILED",
    )
    assert not absent.exists()


# -- an unreachable server is an error, never empty results ----------------------------------------


def test_an_unreachable_opensearch_is_an_error_for_search_and_reads() -> None:
    url = "http://127.0.0.1:9"  # discard port: nothing listens
    provider = OpenSearchProvider(Scope.workspace("w"), hosts=url, request_timeout_s=2)
    _typed(lambda: provider.search(SessionQueryRequest(query="")), "SESSION_QUERY_INDEX_FAILED")
    reader = OpenSearchSessionReader(Scope.workspace("w"), hosts=url, request_timeout_s=2)
    for read in READS.values():
        _typed(functools.partial(read, reader), "SESSION_QUERY_PERSISTENCE_FAILED")


def test_a_server_that_never_answers_is_a_timeout_naming_the_server() -> None:
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(16)  # accepts connections (kernel backlog) and never answers
        where = f"127.0.0.1:{silent.getsockname()[1]}"
        provider = OpenSearchProvider(Scope.workspace("w"), hosts=f"http://{where}", request_timeout_s=0.5)
        typed = _typed(lambda: provider.search(SessionQueryRequest(query="x")), "SESSION_QUERY_INDEX_FAILED")
        assert where in typed.message
        reader = OpenSearchSessionReader(Scope.workspace("w"), hosts=f"http://{where}", request_timeout_s=0.5)
        typed = _typed(reader.list_sessions, "SESSION_QUERY_PERSISTENCE_FAILED")
        assert where in typed.message
