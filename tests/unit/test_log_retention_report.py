"""What an operator reads about the log's retention: the words of :class:`LogRetention`, and the
embedded backend's log, which is always complete."""

from __future__ import annotations

from pathlib import Path

from backscroll.backends import LogRetention
from backscroll.backends.embedded import EmbeddedBackend


def test_a_complete_log_kept_for_good_has_nothing_to_say() -> None:
    retention = LogRetention()
    assert retention.complete and retention.gone() == "" and retention.warnings() == []


def test_a_truncated_log_names_each_partition_and_its_first_offset() -> None:
    retention = LogRetention(truncated={2: 9, 0: 4})
    assert not retention.complete
    assert retention.gone() == (
        "partition 0 starts at offset 4: its first 4 records are gone; "
        "partition 2 starts at offset 9: its first 9 records are gone"
    )
    (line,) = retention.warnings()
    assert line.startswith("the log is truncated (partition 0 starts at offset 4")
    assert "a rebuild cannot restore those records" in line


def test_a_finite_retention_names_the_settings_to_change() -> None:
    retention = LogRetention(finite={"retention.ms": "604800000", "retention.bytes": "1073741824"})
    assert retention.complete
    (line,) = retention.warnings()
    assert "retention.bytes=1073741824, retention.ms=604800000" in line and "set both to -1" in line


def test_the_embedded_log_is_complete_even_before_its_file_exists(tmp_path: Path) -> None:
    backend = EmbeddedBackend(tmp_path / "none.db")
    assert backend.log_retention() == LogRetention()
    assert not (tmp_path / "none.db").exists()
