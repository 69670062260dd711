"""Operator actions on either backend: rebuild the projection, forget a session.

Dead letters are listed and replayed through :class:`~backscroll.indexer.ports.DeadLetters`
(:class:`~backscroll.indexer.kafka.deadletters.KafkaDeadLetters` or
:class:`~backscroll.indexer.sqlite.deadletters.SQLiteDeadLetters`). Kafka and OpenSearch are imported
only by the functions of that backend.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from backscroll.indexer.errors import IndexerError
from backscroll.indexer.ports import SessionView
from backscroll.indexer.runner import RunStats
from backscroll.indexer.translate import sqlite_edge

if TYPE_CHECKING:
    from backscroll.indexer.settings import IndexerSettings, OpenSearchSettings
    from backscroll.ingest.settings import KafkaSettings

__all__ = ["Progress", "RebuildReport", "forget_embedded", "forget_session", "rebuild", "rebuild_embedded"]

log = logging.getLogger("backscroll.indexer")

#: Called after every batch with the run's stats and the records still to project (as last read:
#: the runner reads the lag every few seconds, not per batch).
Progress = Callable[[RunStats, int], None]


def _compact(view: SessionView) -> None:
    """Compact a replayed view; a failure (a role without the force-merge permission, a merge that
    outlasts its timeout) is logged, not raised: the view is complete without it."""
    try:
        view.compact()
    except IndexerError as err:
        log.warning("the rebuilt projection was not compacted (searches work, maybe slower): %s", err)


@dataclass(frozen=True)
class RebuildReport:
    """What a rebuild did (versions are 0 on the embedded backend, which has none)."""

    old_version: int
    new_version: int
    stats: RunStats
    seconds: float
    kept_old: bool


def rebuild(
    kafka: KafkaSettings,
    opensearch: OpenSearchSettings,
    settings: IndexerSettings,
    *,
    keep: bool = False,
    on_batch: Progress | None = None,
) -> RebuildReport:
    """Replay the topic from the beginning into a new index version while the current one keeps
    serving; move the read aliases atomically once caught up, then catch up once more.

    Nobody reads the new version during the replay, so it runs without periodic refresh or
    replicas (:func:`~backscroll.indexer.opensearch.load.bulk_load_settings`); both are restored,
    and the version refreshed, before the aliases move (and when the replay fails). The version is
    compacted (:meth:`~backscroll.indexer.opensearch.view.OpenSearchView.compact`) before it
    serves."""
    from backscroll.indexer.kafka.worker import kafka_runner
    from backscroll.indexer.opensearch.load import bulk_load_settings
    from backscroll.indexer.opensearch.view import OpenSearchView

    started = time.monotonic()
    admin_view = OpenSearchView(opensearch)
    try:
        admin_view.ensure_schema()
        old = admin_view.current_version()
        new = old + 1
        admin_view.create_version(new)
        group = settings.model_copy(
            update={"group_id": f"{settings.group_id}-rebuild-v{new}-{int(time.time())}"}
        )
        target = OpenSearchView(opensearch, pinned_version=new, retry_budget=settings.retry_budget)
        with kafka_runner(kafka, opensearch, group, view=target) as runner:

            def progress(stats: RunStats) -> None:
                if on_batch is not None:
                    on_batch(stats, runner.last_lag or 0)  # read every few seconds by the runner

            with bulk_load_settings(admin_view.client, [target.events, target.sessions], opensearch):
                runner.run(until_idle=True, on_batch=progress)
            _compact(target)
            admin_view.switch_aliases(old, new)
            stats = runner.run(until_idle=True, on_batch=progress)
        if not keep:
            admin_view.delete_version(old)
        return RebuildReport(old, new, stats, time.monotonic() - started, keep)
    finally:
        admin_view.close()


def forget_session(opensearch: OpenSearchSettings, session_id: str) -> int:
    """Delete a session's documents from the OpenSearch projection; how many events were deleted.

    The Kafka topic still holds the records until retention removes them (or, on a compacted
    topic, until tombstones for every key are compacted); a rebuild would bring them back until then."""
    from backscroll.indexer.opensearch.view import OpenSearchView

    view = OpenSearchView(opensearch)
    try:
        return view.forget_session(session_id)
    finally:
        view.close()


def rebuild_embedded(path: str | os.PathLike[str], *, on_batch: Progress | None = None) -> RebuildReport:
    """Empty the projection of a SQLite file and project its whole log again.

    The emptying and the reset of the position are one transaction; readers see an empty (then
    growing) projection until the replay finishes (the embedded backend has no index versions).
    The projection is compacted (:meth:`~backscroll.indexer.sqlite.view.SQLiteView.compact`) at
    the end."""
    from backscroll.indexer.sqlite.runner import embedded_runner, open_embedded
    from backscroll.indexer.sqlite.view import clear_projection

    started = time.monotonic()
    conn = open_embedded(Path(path))
    try:
        with sqlite_edge(f"cannot reset the projection of {path}"):
            conn.execute("BEGIN IMMEDIATE")
            try:
                clear_projection(conn)
                conn.execute("DELETE FROM indexer_positions WHERE name = 'default'")
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
    finally:
        conn.close()
    with embedded_runner(path, bulk_catch_up=True) as runner:

        def progress(stats: RunStats) -> None:
            if on_batch is not None:
                on_batch(stats, runner.last_lag or 0)

        stats = runner.run(until_idle=True, on_batch=progress)
        _compact(runner.view)
    return RebuildReport(0, 0, stats, time.monotonic() - started, False)


def forget_embedded(path: str | os.PathLike[str], session_id: str) -> int:
    """Delete a session's documents from the projection of a SQLite file (the log keeps its rows,
    so a rebuild would bring them back)."""
    from backscroll.indexer.sqlite.runner import open_embedded
    from backscroll.indexer.sqlite.view import SQLiteView

    conn = open_embedded(Path(path))
    try:
        with SQLiteView(conn=conn) as view:
            return view.forget_session(session_id)
    finally:
        conn.close()
