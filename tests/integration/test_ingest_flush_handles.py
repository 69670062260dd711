"""``Appender.flush`` against the real broker: when it returns, every handle of every entry appended
before it is resolved (the last response's handles included, not only the spool's count)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.integration.conftest import Pipeline

from backscroll.ingest import Appender, AppenderSettings


@pytest.fixture
def eager_switching() -> Iterator[None]:
    # Thread switches at every chance: a flush that returned between the spool's acknowledgement
    # and the resolution of the handles would then see some of them unresolved.
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        yield
    finally:
        sys.setswitchinterval(before)


@pytest.mark.usefixtures("eager_switching")
def test_flush_returns_with_every_handle_resolved(pipeline: Pipeline, tmp_path: Path) -> None:
    options = AppenderSettings(spool_dir=tmp_path / "spool", fsync="never")
    unresolved: list[int] = []
    with Appender(pipeline.kafka, options) as appender:
        for round_ in range(5):
            handles = [
                appender.append(
                    {
                        "v": 1,
                        "kind": "event",
                        "workspace_id": "ws-flush",
                        "session_id": f"flush-{i % 3}",
                        "seq": round_ * 2000 + i // 3,
                        "type": "user/message",
                        "role": "user",
                        "surface": {"op": "append"},
                        "time": "2026-11-30T10:00:00Z",
                        "text": f"entry {i} of round {round_}",
                    }
                )
                for i in range(6000)
            ]
            appender.flush(timeout=60)
            unresolved.append(sum(1 for handle in handles if not handle.done()))
    assert unresolved == [0] * 5
