"""The three packages declare their public API, and every name in it resolves."""

from __future__ import annotations

import importlib
from types import ModuleType

import pytest

PACKAGES = ("backscroll.ingest", "backscroll.indexer", "backscroll.query")


def package(name: str) -> ModuleType:
    return importlib.import_module(name)


@pytest.mark.parametrize("name", PACKAGES)
def test_all_is_declared_and_resolves(name: str) -> None:
    module = package(name)
    exported = getattr(module, "__all__", None)
    assert isinstance(exported, list | tuple) and exported, f"{name} has no __all__"
    assert all(isinstance(item, str) for item in exported)
    assert len(set(exported)) == len(exported), "duplicates in __all__"
    missing = [item for item in exported if not hasattr(module, item)]
    assert missing == [], f"{name}.__all__ names what it does not define: {missing}"


@pytest.mark.parametrize("name", PACKAGES)
def test_star_import_gives_exactly_all(name: str) -> None:
    namespace: dict[str, object] = {}
    exec(f"from {name} import *", namespace)
    assert set(namespace) - {"__builtins__"} == set(package(name).__all__)


@pytest.mark.parametrize("name", PACKAGES)
def test_exports_are_not_private(name: str) -> None:
    assert [item for item in package(name).__all__ if item.startswith("_")] == []


def test_key_names_are_public() -> None:
    expected = {
        "backscroll.ingest": {"Appender", "EventRecord", "HeaderRecord", "RecordRejected", "decode_record"},
        "backscroll.indexer": {"Runner", "DeadLetter", "decode_envelope"},
        "backscroll.query": {"Scope", "SessionQueryRequest", "SessionQueryResult", "SessionQueryError"},
    }
    for name, names in expected.items():
        assert names <= set(package(name).__all__), name
