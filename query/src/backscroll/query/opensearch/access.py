"""OpenSearch access shared by the search engine and the session reader: settings, the pooled
client, and the edge where opensearch-py and urllib3 errors become :class:`SessionQueryError`.

Every request carries the remaining time of the call's :class:`Deadline` as its HTTP timeout, so
no request outlives the caller's ``request_timeout_s`` (or its abort signal's timeout).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Final, TypeVar
from urllib.parse import urlsplit, urlunsplit

from pydantic import ValidationError

from backscroll.indexer.settings import OpenSearchSettings
from backscroll.ingest.settings import describe_settings_error
from backscroll.query.config import config_error
from backscroll.query.deadline import Deadline
from backscroll.query.errors import ErrorCode, SessionQueryError
from backscroll.query.opensearch.settings import resolved_settings

if TYPE_CHECKING:
    from opensearchpy import AsyncOpenSearch, OpenSearch

__all__ = [
    "OpenSearchAccess",
    "async_client",
    "opensearch_access",
    "redact_url",
    "translate_opensearch_error",
]

_TARGET: Final = ("hosts", "index_prefix", "client")

_T = TypeVar("_T")


def redact_url(url: str) -> str:
    """``url`` without credentials (``https://***@host:9200``), for messages."""
    parts = []
    for one in url.split(","):
        split = urlsplit(one.strip())
        if split.username or split.password:
            host = split.netloc.rsplit("@", 1)[1]
            split = split._replace(netloc=f"***@{host}")
        parts.append(urlunsplit(split))
    return ",".join(parts)


def translate_opensearch_error(err: Exception, code: ErrorCode, url: str) -> SessionQueryError | None:
    """``err`` (opensearch-py, urllib3, aiohttp or socket) as a typed error; ``None`` for anything
    else."""
    import urllib3.exceptions
    from opensearchpy import exceptions as osx

    where = redact_url(url)
    if isinstance(err, osx.NotFoundError):
        return SessionQueryError(code, f"index missing ({err.error}); has the indexer run?")
    if isinstance(err, osx.ConnectionTimeout):
        return SessionQueryError(code, f"OpenSearch at {where} timed out")
    if isinstance(err, osx.SSLError):
        return SessionQueryError(code, f"TLS with OpenSearch at {where} failed: {type(err).__name__}")
    if isinstance(err, osx.ConnectionError):
        return SessionQueryError(code, f"OpenSearch unreachable at {where}: {type(err).__name__}")
    if isinstance(err, osx.AuthenticationException | osx.AuthorizationException):
        return SessionQueryError(code, f"OpenSearch at {where} refused the credentials ({err.status_code})")
    if isinstance(err, osx.TransportError):
        return SessionQueryError(code, f"OpenSearch failed ({err.status_code}): {err.error}")
    if isinstance(err, osx.OpenSearchException | osx.ImproperlyConfigured):
        return SessionQueryError(code, f"OpenSearch client failed: {type(err).__name__}: {err}")
    if isinstance(err, urllib3.exceptions.HTTPError | OSError) or _is_aiohttp_error(err):
        return SessionQueryError(code, f"connection to OpenSearch at {where} failed: {type(err).__name__}")
    return None


def _is_aiohttp_error(err: Exception) -> bool:
    """Whether ``err`` is aiohttp's (the async client's driver; opensearch-py wraps most of them)."""
    try:
        import aiohttp
    except ImportError:  # pragma: no cover - the async extra is not installed: no aiohttp error either
        return False
    return isinstance(err, aiohttp.ClientError)


class OpenSearchAccess:
    """The validated settings, the (shared, lazily created) client, and :meth:`call`.

    ``code`` is what a failure raises: ``INDEX_FAILED`` for searches, ``PERSISTENCE_FAILED`` for
    reads."""

    def __init__(
        self,
        code: ErrorCode,
        settings: OpenSearchSettings | None = None,
        *,
        hosts: str | None = None,
        index_prefix: str | None = None,
        client: OpenSearch | None = None,
    ) -> None:
        if settings is not None and not isinstance(settings, OpenSearchSettings):
            raise config_error("settings must be OpenSearchSettings")
        if hosts is not None and not isinstance(hosts, str):
            raise config_error("hosts must be a URL string")
        if index_prefix is not None and not isinstance(index_prefix, str):
            raise config_error("index_prefix must be a string")
        overrides: dict[str, str] = {}
        if hosts:
            overrides["url"] = hosts
        if index_prefix:
            overrides["index_prefix"] = index_prefix
        try:
            if settings is None:  # from the environment: resolved once per environment
                self.settings = resolved_settings(overrides, _from_environment)
            else:
                self.settings = _merged(settings, overrides)
        except (ValidationError, ValueError) as err:
            raise config_error(f"invalid OpenSearch settings: {describe_settings_error(err)}") from None
        self.code: ErrorCode = code
        self._client = client
        self._lock = threading.Lock()

    @property
    def client(self) -> OpenSearch:
        if self._client is None:
            with self._lock:
                if self._client is None:
                    from backscroll.query.opensearch.clients import shared_client

                    self._client = shared_client(self.settings)
        return self._client

    def call(self, method: str, deadline: Deadline, **kwargs: Any) -> Any:
        """``client.<method>(**kwargs)`` within the deadline; only :class:`SessionQueryError` escapes."""
        deadline.check()
        try:
            fn = getattr(self.client, method)
            return fn(**kwargs, request_timeout=max(deadline.remaining(), 0.001))
        except SessionQueryError:
            raise
        except Exception as err:
            raise self._typed(err, deadline) from None

    async def acall(self, client: Any, method: str, deadline: Deadline, **kwargs: Any) -> Any:
        """:meth:`call` on an ``AsyncOpenSearch`` client (same errors, same deadline)."""
        deadline.check()
        try:
            return await getattr(client, method)(**kwargs, request_timeout=max(deadline.remaining(), 0.001))
        except SessionQueryError:
            raise
        except Exception as err:
            raise self._typed(err, deadline) from None

    def _typed(self, err: Exception, deadline: Deadline) -> Exception:
        """The typed error for a failed request (``err`` itself when it is no driver error: a bug).
        A timeout names the server; only an aborted signal wins over the driver's error."""
        if deadline.signal is not None and deadline.signal.aborted:
            return deadline.error()
        from backscroll.indexer.opensearch.security import security_failure

        line = security_failure(err, self.settings)  # TLS, login, permission: fix the configuration
        if line is not None:
            return SessionQueryError("SESSION_QUERY_INVALID_CONFIG", self._redacted(line))
        typed = translate_opensearch_error(err, self.code, self.settings.url)
        if typed is None:
            return deadline.error() if deadline.stopped() else err
        return typed

    def _redacted(self, line: str) -> str:
        return line.replace(self.settings.url, redact_url(self.settings.url))

    def item_error(self, error: object, what: str) -> SessionQueryError:
        """The typed error of one failed ``_msearch`` item (a missing permission: INVALID_CONFIG)."""
        from backscroll.indexer.opensearch.security import item_failure

        line = item_failure(error, self.settings)
        if line is not None:
            return SessionQueryError("SESSION_QUERY_INVALID_CONFIG", self._redacted(line))
        reason = error.get("type") or error.get("reason") or error if isinstance(error, dict) else error
        return SessionQueryError(self.code, f"OpenSearch {what} failed: {reason}")

    def parse(self, what: str, parse: Callable[[], _T]) -> _T:
        """``parse()`` of a response; a response without the expected shape is a typed error."""
        try:
            return parse()
        except (KeyError, IndexError, TypeError, ValueError, AttributeError) as err:
            raise SessionQueryError(
                self.code, f"unexpected OpenSearch response to {what}: {type(err).__name__}: {err}"
            ) from None


def _merged(base: OpenSearchSettings, overrides: dict[str, str]) -> OpenSearchSettings:
    merged = base.model_copy(update=overrides)
    # model_copy does not validate the overrides; validating the merged values does.
    return type(merged).model_validate(merged.model_dump())


def _from_environment(overrides: dict[str, str]) -> OpenSearchSettings:
    return _merged(OpenSearchSettings(), overrides)


def opensearch_access(
    code: ErrorCode, settings: OpenSearchSettings | None, options: Mapping[str, Any]
) -> tuple[OpenSearchAccess, dict[str, Any]]:
    """The access for ``settings`` and the location options among ``options``
    (:class:`~backscroll.query.options.OpenSearchTarget`), and the other options."""
    target = {key: options[key] for key in _TARGET if key in options}
    rest = {key: value for key, value in options.items() if key not in _TARGET}
    return OpenSearchAccess(code, settings, **target), rest


def async_client(access: OpenSearchAccess) -> AsyncOpenSearch:
    """An ``AsyncOpenSearch`` client for ``access``'s settings; INVALID_CONFIG when the ``async``
    extra (aiohttp) is not installed."""
    try:
        from opensearchpy import AsyncOpenSearch

        from backscroll.query.opensearch.serializer import OrjsonSerializer

        return AsyncOpenSearch(**access.settings.client_kwargs(), serializer=OrjsonSerializer())
    except ImportError as err:
        raise SessionQueryError(
            "SESSION_QUERY_INVALID_CONFIG",
            f"the asyncio API on OpenSearch needs aiohttp: pip install 'backscroll-query[async]' ({err})",
        ) from None
    except Exception as err:
        typed = translate_opensearch_error(err, "SESSION_QUERY_INVALID_CONFIG", access.settings.url)
        raise (typed or err) from None
