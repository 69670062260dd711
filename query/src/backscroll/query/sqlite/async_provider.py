"""The embedded provider for asyncio: the SQLite engine's calls run on worker threads (the driver
blocks), never on the event loop."""

from __future__ import annotations

import os
from typing import Unpack

from backscroll.query.aio import AsyncSearchProvider, ThreadedEngine
from backscroll.query.options import SQLiteProviderOptions
from backscroll.query.scope import Scope
from backscroll.query.sqlite.provider import sqlite_engine

__all__ = ["AsyncSQLiteProvider"]


class AsyncSQLiteProvider(AsyncSearchProvider):
    """:class:`~backscroll.query.sqlite.provider.SQLiteProvider`, awaitable (the engine runs on
    worker threads)."""

    def __init__(
        self, scope: Scope, path: str | os.PathLike[str], **options: Unpack[SQLiteProviderOptions]
    ) -> None:
        engine, rest = sqlite_engine(scope, path, options)
        super().__init__(scope, ThreadedEngine(engine), **rest)
