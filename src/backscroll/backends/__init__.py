"""Backends: the whole pipeline embedded in one SQLite file, or Kafka + OpenSearch.

``BACKSCROLL_BACKEND=embedded|kafka-opensearch`` chooses; when it is unset the embedded backend is
used unless ``BACKSCROLL_KAFKA_BOOTSTRAP_SERVERS`` or ``BACKSCROLL_OPENSEARCH_URL`` is set (servers
configured means servers wanted). The embedded file is ``BACKSCROLL_SQLITE_PATH`` (default
``$XDG_DATA_HOME/backscroll/backscroll.db``, i.e. ``~/.local/share/backscroll/backscroll.db``).

Every backend is a :class:`Backend` with the same surfaces:

* the factories — :meth:`Backend.open_log` (``append`` / ``append_header`` / ``flush`` /
  ``close``), :meth:`Backend.open_indexer` (a :class:`~backscroll.indexer.runner.Runner`),
  :meth:`Backend.open_dead_letters`, :meth:`Backend.open_provider` and :meth:`Backend.open_reader`
  (and their asyncio twins :meth:`Backend.open_async_provider` / :meth:`Backend.open_async_reader`);
* the operator operations — :meth:`Backend.health`, :meth:`Backend.workspaces`,
  :meth:`Backend.sessions`, :meth:`Backend.workspace_of`, :meth:`Backend.forget`,
  :meth:`Backend.export`, :meth:`Backend.rebuild`, :meth:`Backend.dead_letters` and
  :meth:`Backend.replay_dead_letters`.

On the embedded backend providers and readers also catch the projection up with the log before each
search or read (``BACKSCROLL_SQLITE_INDEX_ON_SEARCH``, default on), so nothing has to run in the
background. The drivers (kafka-python, opensearch-py, sqlite3) load only when an operation uses them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Final

from backscroll.backends.base import (
    BACKENDS,
    DEAD_LETTERS_SHOWN,
    Backend,
    BackendName,
    BackendSettings,
    RebuildProgress,
    default_sqlite_path,
    settings_from_env,
)
from backscroll.backends.embedded import EmbeddedBackend
from backscroll.backends.kafka_opensearch import KafkaOpenSearchBackend
from backscroll.backends.reports import (
    Forgotten,
    Health,
    LogRetention,
    ParkedRecord,
    PartitionLag,
    Rebuilt,
    WorkspaceCount,
)

if TYPE_CHECKING:
    from backscroll.backends.base import Provider as Provider
    from backscroll.backends.base import Reader as Reader

__all__ = [
    "BACKENDS",
    "DEAD_LETTERS_SHOWN",
    "FACTORIES",
    "Backend",
    "BackendName",
    "BackendSettings",
    "EmbeddedBackend",
    "Forgotten",
    "Health",
    "KafkaOpenSearchBackend",
    "LogRetention",
    "ParkedRecord",
    "PartitionLag",
    "RebuildProgress",
    "Rebuilt",
    "WorkspaceCount",
    "backend_from_settings",
    "current_backend",
    "default_sqlite_path",
    "settings_from_env",
]

#: The factory of each backend, by its ``BACKSCROLL_BACKEND`` value.
FACTORIES: Final[dict[BackendName, Callable[[BackendSettings], Backend]]] = {
    EmbeddedBackend.name: EmbeddedBackend.from_settings,
    KafkaOpenSearchBackend.name: KafkaOpenSearchBackend.from_settings,
}


def backend_from_settings(settings: BackendSettings) -> Backend:
    """The backend ``settings`` select, built by its factory."""
    return FACTORIES[settings.selected()](settings)


def current_backend() -> Backend:
    """The backend the environment (and ``.env``) selects."""
    return backend_from_settings(BackendSettings())
