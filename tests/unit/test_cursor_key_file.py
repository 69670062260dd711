"""The per-user cursor key file: made once, private, the same for every process that races to make
it; a damaged one is a clear settings error; ``BACKSCROLL_CURSOR_KEY`` still overrides it."""

from __future__ import annotations

import multiprocessing
import os
import stat
from multiprocessing.synchronize import Barrier
from pathlib import Path
from typing import Any

import pytest

from backscroll.backends import BackendSettings, EmbeddedBackend
from backscroll.backends.cursor_key import load_or_create_key
from backscroll.query import SessionQueryError
from backscroll.query.cursor import derive_key


def test_the_key_is_made_once_private_and_then_reused(tmp_path: Path) -> None:
    path = tmp_path / "data" / "backscroll" / "cursor.key"
    key = load_or_create_key(path)
    assert key is not None and len(key) == 32
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and path.stat().st_size == 64
    assert load_or_create_key(path) == key == derive_key(path.read_text())
    assert [p.name for p in path.parent.iterdir()] == ["cursor.key"]  # no temporary file left


def test_a_process_that_loses_the_race_takes_the_winners_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "cursor.key"
    real_link = os.link

    def link_after_another_process(src: Any, dst: Any) -> None:
        path.write_text("f" * 64)  # the other process linked its key first
        os.chmod(path, 0o600)
        real_link(src, dst)

    monkeypatch.setattr(os, "link", link_after_another_process)
    assert load_or_create_key(path) == derive_key("f" * 64)
    assert [p.name for p in tmp_path.iterdir()] == ["cursor.key"]


def _make(path: str, barrier: Barrier, results: Any) -> None:
    barrier.wait()
    results.put(load_or_create_key(Path(path)))


def test_processes_creating_the_key_at_once_end_with_one_key(tmp_path: Path) -> None:
    context = multiprocessing.get_context("fork")
    path = tmp_path / "cursor.key"
    count = 6
    barrier = context.Barrier(count)
    results = context.Queue()
    workers = [context.Process(target=_make, args=(str(path), barrier, results)) for _ in range(count)]
    for worker in workers:
        worker.start()
    keys = {results.get(timeout=60) for _ in workers}
    for worker in workers:
        worker.join(timeout=60)
    assert len(keys) == 1 and keys == {derive_key(path.read_text())}
    assert [p.name for p in tmp_path.iterdir()] == ["cursor.key"]


@pytest.mark.parametrize(
    ("content", "mode", "problem"),
    [
        (b"a" * 64, 0o644, "permissions 644"),
        (b"a" * 64, 0o640, "permissions 640"),
        (b"a" * 12, 0o600, "12 bytes instead of 64"),
        (b"", 0o600, "0 bytes"),
        (b"\xff" * 64, 0o600, "does not hold a key"),
    ],
)
def test_a_damaged_key_file_is_a_settings_error(
    tmp_path: Path, content: bytes, mode: int, problem: str
) -> None:
    path = tmp_path / "cursor.key"
    path.write_bytes(content)
    os.chmod(path, mode)
    with pytest.raises(SessionQueryError) as caught:
        load_or_create_key(path)
    assert caught.value.code == "SESSION_QUERY_INVALID_CONFIG"
    assert str(path) in caught.value.message and problem in caught.value.message
    assert "BACKSCROLL_CURSOR_KEY" in caught.value.message
    assert path.read_bytes() == content  # never replaced behind the operator's back


def test_a_directory_in_the_way_is_a_settings_error(tmp_path: Path) -> None:
    (tmp_path / "cursor.key").mkdir()
    with pytest.raises(SessionQueryError) as caught:
        load_or_create_key(tmp_path / "cursor.key")
    assert caught.value.code == "SESSION_QUERY_INVALID_CONFIG"


def test_a_key_file_that_cannot_be_made_falls_back_to_a_key_per_provider(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def refuse(src: Any, dst: Any) -> None:
        raise PermissionError(13, "Permission denied", str(dst))

    monkeypatch.setattr(os, "link", refuse)  # a read-only home, or no hard links there
    assert load_or_create_key(tmp_path / "cursor.key") is None
    assert list(tmp_path.iterdir()) == []
    assert "BACKSCROLL_CURSOR_KEY" in caplog.text


def test_the_settings_use_the_data_directory_unless_a_key_is_set(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.delenv("BACKSCROLL_CURSOR_KEY", raising=False)
    options = BackendSettings().query_options()
    assert options["cursor_key_file"] == tmp_path / "data" / "backscroll" / "cursor.key"
    backend = EmbeddedBackend(tmp_path / "x.db", **options)
    assert not options["cursor_key_file"].exists()  # made on the first search, not before
    assert backend._query_options({})["cursor_key"] == load_or_create_key(options["cursor_key_file"])
    monkeypatch.setenv("BACKSCROLL_CURSOR_KEY", "a-shared-secret-for-cursors")
    options = BackendSettings().query_options()
    assert options["cursor_key"] == derive_key("a-shared-secret-for-cursors")
    assert "cursor_key_file" not in options
