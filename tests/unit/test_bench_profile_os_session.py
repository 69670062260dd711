"""The session profile's "other work between searches" touches the buffer page by page."""

from __future__ import annotations

from benchmarks.profile_os_session import _busy


def test_no_time_means_no_work() -> None:
    buffer = bytearray(64 * 4096)
    _busy(0.0, buffer)
    assert not any(buffer)


def test_the_work_writes_one_byte_per_page_and_wraps_around() -> None:
    buffer = bytearray(4 * 4096)
    _busy(0.001, buffer)  # at least one round of 256 writes: every page written, many times over
    assert [buffer[i] for i in range(0, len(buffer), 4096)] == [1, 1, 1, 1]
    assert sum(buffer) == 4  # nothing but the first byte of each page
