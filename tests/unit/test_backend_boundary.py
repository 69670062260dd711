"""The command line and the console reach the data only through a
:class:`~backscroll.backends.Backend`: they import no driver, hold no SQL and never ask which backend
they run on (what differs is a method or a describing attribute of the backend)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src" / "backscroll"
FRONTS = ("cli", "console")
DRIVERS = ("sqlite3", "kafka", "opensearchpy")
#: A backend's name compared with (or branched on) rather than only shown.
NAME_TEST = re.compile(r"""(==|!=|\bin)\s*\(?\s*["'](embedded|kafka-opensearch)["']|\.name\s*(==|!=)""")
SQL = re.compile(r"\b(SELECT|INSERT INTO|DELETE FROM|CREATE TABLE)\b")


def _files(pattern: str) -> list[Path]:
    return sorted(path for front in FRONTS for path in (SRC / front).rglob(pattern))


def _imported(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module.split(".")[0])
    return found


@pytest.mark.parametrize("path", _files("*.py"), ids=lambda p: str(p.relative_to(SRC)))
def test_the_fronts_import_no_driver_and_hold_no_sql(path: Path) -> None:
    assert not _imported(path) & set(DRIVERS), path
    assert not SQL.search(path.read_text(encoding="utf-8")), path


@pytest.mark.parametrize("path", [*_files("*.py"), *_files("*.html")], ids=lambda p: str(p.relative_to(SRC)))
def test_the_fronts_never_branch_on_the_backend_name(path: Path) -> None:
    assert not NAME_TEST.search(path.read_text(encoding="utf-8")), path


def test_the_boundary_checks_are_not_vacuous(tmp_path: Path) -> None:
    assert len(_files("*.py")) > 10 and _files("*.html")
    assert NAME_TEST.search('if backend.name == "embedded":')
    assert NAME_TEST.search('{% if backend == "embedded" %}')
    assert not NAME_TEST.search('help="embedded or kafka-opensearch"')
    assert SQL.search('conn.execute("SELECT workspace_id FROM sessions")')
    module = tmp_path / "m.py"
    module.write_text("def f():\n    import sqlite3\n    from kafka import KafkaConsumer\n")
    assert _imported(module) == {"sqlite3", "kafka"}
