"""The watermark publisher's pacing: at most once per interval while the worker keeps up, further
apart while it is behind, and never holding ``close`` for an interval."""

from __future__ import annotations

import threading
import time
from typing import cast

from backscroll.indexer.metrics import IndexerMetrics
from backscroll.indexer.ports import SessionView
from backscroll.indexer.watermark import WatermarkPublisher


class _View:
    """Records what was published (refresh first, then the offsets)."""

    def __init__(self) -> None:
        self.published: list[dict[int, tuple[int, int]]] = []
        self.refreshes = 0
        self.event = threading.Event()

    def refresh(self) -> None:
        self.refreshes += 1

    def publish_watermarks(self, topic: str, through: dict[int, tuple[int, int]]) -> None:
        assert topic == "t"
        self.published.append(dict(through))
        self.event.set()


def _publisher(view: _View, interval_s: float, behind_interval_s: float) -> WatermarkPublisher:
    return WatermarkPublisher(cast(SessionView, view), "t", IndexerMetrics(), interval_s, behind_interval_s)


def _wait_published(view: _View, count: int) -> None:
    deadline = time.monotonic() + 10
    while len(view.published) < count and time.monotonic() < deadline:
        view.event.wait(0.05)
        view.event.clear()
    assert len(view.published) >= count, view.published


def test_offers_are_refreshed_and_published_as_the_last_offset_of_each_partition() -> None:
    view = _View()
    publisher = _publisher(view, 0.01, 0.01)
    try:
        publisher.offer_many([(0, 5, 1_000), (1, 7, 2_000), (0, 6, 3_000)])
        _wait_published(view, 1)
        assert view.published[0] == {0: (6, 3_000), 1: (7, 2_000)} and view.refreshes == 1
    finally:
        publisher.close()


def test_while_behind_publications_wait_for_the_longer_interval() -> None:
    view = _View()
    publisher = _publisher(view, 0.01, 60.0)
    try:
        publisher.offer_many([(0, 1, 1_000)])  # the first publication is due at once
        _wait_published(view, 1)
        publisher.pace(True)
        publisher.offer_many([(0, 2, 2_000)])
        time.sleep(0.3)  # 30 of the short intervals
        assert len(view.published) == 1
        publisher.pace(False)  # caught up: the short interval applies again, at once
        _wait_published(view, 2)
        assert view.published[1] == {0: (2, 2_000)}
    finally:
        publisher.close()


def test_close_publishes_what_is_pending_without_waiting_for_the_interval() -> None:
    view = _View()
    publisher = _publisher(view, 60.0, 60.0)
    publisher.offer_many([(0, 1, 1_000)])
    _wait_published(view, 1)
    publisher.offer_many([(0, 2, 2_000)])
    started = time.monotonic()
    publisher.close()
    publisher.close()  # idempotent
    assert time.monotonic() - started < 30  # not the 60 s interval
    assert view.published == [{0: (1, 1_000)}, {0: (2, 2_000)}]


def test_the_behind_interval_is_never_shorter_than_the_interval() -> None:
    view = _View()
    publisher = _publisher(view, 2.0, 0.5)
    try:
        assert publisher.behind_interval_s == 2.0
    finally:
        publisher.close()
