"""``backscroll import``: summaries, filters, idempotence and usage errors."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from tests.unit.capture_helpers import copy_fixtures, embedded, logged
from typer.testing import CliRunner

from backscroll.cli.main import app


def _run(*args: str, code: int = 0) -> str:
    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == code, result.output
    return result.stdout


def test_import_twice_appends_once(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    db = embedded(monkeypatch, tmp_path)
    root = copy_fixtures(tmp_path)
    first = json.loads(_run("import", "claude-code", str(root), "--json"))
    assert (first["transcripts"], first["duplicates"], first["invalid_lines"]) == (4, 2, 0)
    assert first["workspaces"] == {"blog": 1, "shop": 3}
    count = len(logged(db))
    second = json.loads(_run("import", "claude-code", str(root), "--json"))
    assert (second["entries"], second["lines"], len(logged(db))) == (0, 0, count)
    human = _run("import", "codex", str(copy_fixtures(tmp_path, "codex")))
    assert "imported 15 entries" in human and "workspace shop: 1 sessions" in human


def test_project_and_since_filters(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    embedded(monkeypatch, tmp_path)
    root = copy_fixtures(tmp_path)
    old = root / "-home-dev-blog"
    for path in old.glob("*.jsonl"):
        os.utime(path, (1_600_000_000, 1_600_000_000))  # written in 2020
    recent = json.loads(_run("import", "claude-code", str(root), "--since", "2021-01-01", "--json"))
    assert "blog" not in recent["workspaces"] and recent["transcripts"] == 3
    blog = json.loads(_run("import", "claude-code", str(root), "--project", "/home/dev/blog", "--json"))
    assert (blog["transcripts"], blog["workspaces"]) == (1, {"blog": 1})


def test_usage_errors(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    embedded(monkeypatch, tmp_path)
    missing = json.loads(_run("import", "codex", str(tmp_path / "nowhere"), "--json", code=2))
    assert "no such folder" in missing["error"]["message"]
    _run("import", "claude-code", str(tmp_path), "--since", "yesterday-ish", code=2)
    monkeypatch.setenv("BACKSCROLL_CAPTURE_WORKSPACES", '{"/x": "not an id!"}')
    _run("import", "claude-code", str(tmp_path), code=2)
    _run("capture", "claude-code", "--dry-run", code=2)
