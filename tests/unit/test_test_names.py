"""pytest imports test modules by their basename (no packages under tests/): two test files of the
same name in different folders make the whole run stop at collection."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

_TESTS = Path(__file__).resolve().parents[1]


def test_every_test_module_has_a_basename_of_its_own() -> None:
    names = Counter(path.name for path in _TESTS.rglob("test_*.py"))
    assert names, "no test modules found"
    assert [name for name, count in names.items() if count > 1] == []
