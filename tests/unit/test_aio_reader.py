"""The asyncio reader on OpenSearch without a server (the contract in tests/contracts runs it on the
real one): every driver error typed at the edge, the request timeout, cancellation, closing, and
no worker thread anywhere on its path."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import aiohttp
import pytest
from test_query_driver_errors import OPENSEARCH_ERRORS

from backscroll.indexer.opensearch.security import security_failure
from backscroll.indexer.settings import OpenSearchSettings
from backscroll.query import AbortSignal, Scope, SessionQueryError
from backscroll.query.opensearch.async_reader import AsyncOpenSearchReader

ASYNC_ERRORS: list[Exception] = [
    *OPENSEARCH_ERRORS,
    aiohttp.ServerDisconnectedError(),
    aiohttp.ClientPayloadError("truncated body"),
    TimeoutError(),
]


class NoThreads(ThreadPoolExecutor):
    """A default executor that refuses work: anything run through ``asyncio.to_thread`` or
    ``run_in_executor(None, …)`` fails the test."""

    def submit(self, *args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a worker thread was used")


def no_threads() -> None:
    asyncio.get_running_loop().set_default_executor(NoThreads(max_workers=1))


class FakeAsyncOpenSearch:
    """``AsyncOpenSearch`` as far as the reader uses it: ``msearch``/``search`` raise ``error`` (when
    given) or wait ``hang`` seconds first; every request's keyword arguments are recorded."""

    def __init__(self, error: Exception | None = None, *, hang: bool = False) -> None:
        self.error = error
        self.hang = hang
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.closes = 0
        self.started = asyncio.Event()

    async def _answer(self, method: str, kwargs: dict[str, Any]) -> dict[str, Any]:
        self.calls.append((method, kwargs))
        self.started.set()
        if self.hang:
            await asyncio.sleep(kwargs["request_timeout"])
            from opensearchpy.exceptions import ConnectionTimeout

            raise ConnectionTimeout("TIMEOUT", "read timed out", Exception("timeout"))
        if self.error is not None:
            raise self.error
        return {"responses": [{"hits": {"hits": []}}] * (len(kwargs.get("body", [])) // 2)}

    async def msearch(self, **kwargs: Any) -> dict[str, Any]:
        return await self._answer("msearch", kwargs)

    async def search(self, **kwargs: Any) -> dict[str, Any]:
        return await self._answer("search", kwargs)

    async def close(self) -> None:
        self.closes += 1


def reader(client: FakeAsyncOpenSearch, **options: Any) -> AsyncOpenSearchReader:
    return AsyncOpenSearchReader(Scope.workspace("w"), async_client=client, **options)  # type: ignore[arg-type]


@pytest.mark.parametrize("error", ASYNC_ERRORS, ids=lambda e: type(e).__name__)
@pytest.mark.parametrize("read", ["aread_event", "alist_sessions"])
def test_every_driver_error_is_typed_at_the_edge(error: Exception, read: str) -> None:
    client = FakeAsyncOpenSearch(error)

    async def run() -> SessionQueryError:
        no_threads()
        async with reader(client) as areader:
            with pytest.raises(SessionQueryError) as err:
                if read == "aread_event":
                    await areader.aread_event("a-1", 0)
                else:
                    await areader.alist_sessions()
            return err.value

    err = asyncio.run(run())
    security = security_failure(error, OpenSearchSettings()) is not None
    assert err.code == ("SESSION_QUERY_INVALID_CONFIG" if security else "SESSION_QUERY_PERSISTENCE_FAILED")
    assert err.retriable is not security
    assert client.closes == 1


def test_a_malformed_response_is_typed_at_the_edge() -> None:
    class Garbled(FakeAsyncOpenSearch):
        async def _answer(self, method: str, kwargs: dict[str, Any]) -> dict[str, Any]:
            self.calls.append((method, kwargs))
            return {"responses": [{}]} if method == "msearch" else {"hits": None}

    async def run() -> list[SessionQueryError]:
        no_threads()
        errors = []
        async with reader(Garbled()) as areader:
            for call in (areader.aread_event("a-1", 0), areader.alist_sessions()):
                with pytest.raises(SessionQueryError) as err:
                    await call
                errors.append(err.value)
        return errors

    errors = asyncio.run(run())
    assert [(e.code, e.retriable) for e in errors] == [("SESSION_QUERY_PERSISTENCE_FAILED", True)] * 2
    assert all("unexpected OpenSearch response" in e.message for e in errors)


def test_a_missing_session_reads_as_not_found_without_threads() -> None:
    client = FakeAsyncOpenSearch()

    async def run() -> str:
        no_threads()
        async with reader(client) as areader:
            with pytest.raises(SessionQueryError) as err:
                await areader.aread_event("a-1", 0)
            return err.value.code

    assert asyncio.run(run()) == "SESSION_QUERY_SESSION_NOT_FOUND"
    [(method, kwargs)] = client.calls
    assert method == "msearch" and kwargs["body"][0]["routing"] == "a-1"


def test_validation_comes_before_any_request() -> None:
    client = FakeAsyncOpenSearch()

    async def run() -> list[str]:
        async with reader(client, read_window_max=3) as areader:
            codes: list[str] = []
            for call in (
                areader.aread_event("a-1", 0, before=4),
                areader.alist_sessions([{"kind": "nope"}]),
                areader.atrace_session(" "),
            ):
                with pytest.raises(SessionQueryError) as err:
                    await call
                codes.append(err.value.code)
            return codes

    assert asyncio.run(run()) == [
        "SESSION_QUERY_INVALID_WINDOW",
        "SESSION_QUERY_INVALID_FILTER",
        "SESSION_QUERY_INVALID_SCOPE",
    ]
    assert client.calls == []


def test_each_request_carries_the_remaining_time_and_a_timeout_is_retriable() -> None:
    client = FakeAsyncOpenSearch(hang=True)

    async def run() -> SessionQueryError:
        async with reader(client, request_timeout_s=0.2) as areader:
            with pytest.raises(SessionQueryError) as err:
                await areader.alist_events("a-1")
            return err.value

    err = asyncio.run(run())
    assert err.code == "SESSION_QUERY_PERSISTENCE_FAILED" and err.retriable
    [(_, kwargs)] = client.calls
    assert 0 < kwargs["request_timeout"] <= 0.2


def test_cancelling_the_task_stops_the_request_and_an_aborted_signal_is_aborted() -> None:
    client = FakeAsyncOpenSearch(hang=True)

    async def run() -> str:
        async with reader(client, request_timeout_s=600) as areader:
            task = asyncio.create_task(areader.atrace_event("a-1", 0))
            await client.started.wait()
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            signal = AbortSignal()
            signal.abort()
            with pytest.raises(SessionQueryError) as err:
                await areader.aread_surface("a-1", signal=signal)
            return err.value.code

    assert asyncio.run(run()) == "SESSION_QUERY_ABORTED"
    assert len(client.calls) == 1  # the aborted read sent nothing


def test_aclose_is_idempotent_and_refuses_later_reads() -> None:
    client = FakeAsyncOpenSearch()

    async def run() -> str:
        areader = reader(client)
        await areader.aclose()
        await areader.aclose()
        assert areader.closed
        with pytest.raises(SessionQueryError) as err:
            await areader.afilter_events("a-1", [])
        return err.value.code

    assert asyncio.run(run()) == "SESSION_QUERY_PROVIDER_CLOSED"
    assert client.closes == 1  # the given client is closed once, like the async provider's
    assert client.calls == []


def test_the_default_client_is_opensearch_pys_async_one() -> None:
    from opensearchpy import AsyncOpenSearch
    from opensearchpy._async.http_aiohttp import AIOHttpConnection

    async def run() -> None:
        areader = AsyncOpenSearchReader(Scope.workspace("w"), hosts="http://127.0.0.1:9")
        client = areader.client
        assert isinstance(client, AsyncOpenSearch)
        assert all(isinstance(c, AIOHttpConnection) for c in client.transport.connection_pool.connections)
        await areader.aclose()
        await areader.aclose()

    asyncio.run(run())


def test_without_aiohttp_the_async_reader_says_which_extra_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import opensearchpy

    def missing(**_: Any) -> Any:
        raise ImportError("No module named 'aiohttp'")

    monkeypatch.setattr(opensearchpy, "AsyncOpenSearch", missing)

    async def run() -> SessionQueryError:
        async with AsyncOpenSearchReader(Scope.workspace("w")) as areader:
            with pytest.raises(SessionQueryError) as err:
                await areader.aread_event("a-1", 0)
            return err.value

    err = asyncio.run(run())
    assert err.code == "SESSION_QUERY_INVALID_CONFIG" and not err.retriable
    assert "backscroll-query[async]" in str(err)
