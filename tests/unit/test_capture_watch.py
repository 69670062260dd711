"""``backscroll watch``: lines appended as they are written, a half-written line waited for,
rotation and its own restart without a gap or a duplicate."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

pytest.importorskip("watchdog")

from tests.unit.capture_helpers import embedded, events

from backscroll.capture.runner import FORMATS, open_capture
from backscroll.capture.watch import watch


def _line(uuid: str, text: str) -> bytes:
    value = {
        "type": "user",
        "uuid": uuid,
        "sessionId": "sess-w",
        "cwd": "/w/proj",
        "timestamp": "2026-11-01T10:00:00Z",
        "message": {"role": "user", "content": text},
    }
    return json.dumps(value).encode() + b"\n"


@contextmanager
def watching(root: Path) -> Iterator[None]:
    stop, ready = threading.Event(), threading.Event()
    failure: list[BaseException] = []

    def run() -> None:
        try:
            with open_capture() as capture:
                watch(capture, [(FORMATS["claude-code"](), root)], stop, ready=ready)
        except BaseException as err:
            failure.append(err)
            ready.set()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    assert ready.wait(30)
    try:
        yield
    finally:
        stop.set()
        thread.join(30)
    assert not failure, failure


def _until(check: Callable[[], bool], timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def test_watch_follows_writes_rotation_and_restarts(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    db = embedded(monkeypatch, tmp_path)
    root = tmp_path / "projects"
    path = root / "-w-proj" / "sess-w.jsonl"
    path.parent.mkdir(parents=True)
    path.write_bytes(_line("w-1", "one"))

    def texts() -> list[str]:
        return [e["text"] for e in events(db, "sess-w")]

    with watching(root):
        _until(lambda: texts() == ["one"])
        half = _line("w-2", "two")
        with path.open("ab") as out:
            out.write(half[:15])
            out.flush()
            time.sleep(0.6)
            assert texts() == ["one"]  # the half line waits
            out.write(half[15:] + _line("w-3", "three"))
        _until(lambda: texts() == ["one", "two", "three"])
    with path.open("ab") as out:  # written while the watcher is down
        out.write(_line("w-4", "four"))
    with watching(root):
        _until(lambda: len(texts()) == 4)
        path.rename(path.with_name("sess-w.jsonl.1"))  # rotated: a new file takes the name
        path.write_bytes(_line("w-5", "five"))
        _until(lambda: len(texts()) == 5)
        time.sleep(0.5)
    assert texts() == ["one", "two", "three", "four", "five"]
    assert [e["seq"] for e in events(db, "sess-w")] == [0, 1, 2, 3, 4]
