"""``backscroll capture claude-code --install``: merges, never disturbs, and is idempotent."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from backscroll.capture.hook import HOOK_EVENTS
from backscroll.capture.install import merge_hooks, merge_mcp
from backscroll.cli.main import app

OTHER_HOOK = {"type": "command", "command": "notify-send done"}
EXISTING: dict[str, Any] = {
    "model": "opus",
    "permissions": {"allow": ["Bash(git status)"]},
    "hooks": {"Stop": [{"hooks": [OTHER_HOOK]}], "PreToolUse": [{"matcher": "Bash", "hooks": [OTHER_HOOK]}]},
}


def test_merge_keeps_other_hooks_and_is_idempotent() -> None:
    once = merge_hooks(EXISTING, "/opt/bin/backscroll")
    assert once["model"] == "opus" and once["permissions"] == EXISTING["permissions"]
    assert once["hooks"]["PreToolUse"] == EXISTING["hooks"]["PreToolUse"]
    assert once["hooks"]["Stop"][0] == {"hooks": [OTHER_HOOK]}
    for event in HOOK_EVENTS:
        commands = [h["command"] for g in once["hooks"][event] for h in g["hooks"]]
        assert commands.count("/opt/bin/backscroll capture claude-code") == 1, event
    assert next(g for g in once["hooks"]["PostToolUse"])["matcher"] == "*"
    assert merge_hooks(once, "/opt/bin/backscroll") == once
    moved = merge_hooks(once, "/usr/local/bin/backscroll")  # a new path replaces ours, adds nothing
    assert sum(len(g["hooks"]) for g in moved["hooks"]["Stop"]) == 2
    assert EXISTING["hooks"]["Stop"] == [{"hooks": [OTHER_HOOK]}]  # the input is not changed


def test_merge_mcp_keeps_other_servers() -> None:
    config = {"mcpServers": {"github": {"command": "gh-mcp"}}, "numStartups": 4}
    merged = merge_mcp(config, "/opt/bin/backscroll", "shop")
    assert merged["mcpServers"]["github"] == {"command": "gh-mcp"} and merged["numStartups"] == 4
    assert merged["mcpServers"]["backscroll"]["args"] == ["mcp", "--workspace", "shop"]
    assert merge_mcp(merged, "/opt/bin/backscroll", "shop") == merged


@pytest.fixture
def places(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> tuple[Path, Path]:
    home, project = tmp_path / "home", tmp_path / "shop"
    home.mkdir()
    project.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(project)
    monkeypatch.delenv("BACKSCROLL_CAPTURE_WORKSPACES", raising=False)
    return home, project


def test_project_install_twice_changes_nothing(places: tuple[Path, Path]) -> None:
    _, project = places
    settings = project / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(json.dumps(EXISTING))
    runner = CliRunner()
    dry = runner.invoke(app, ["capture", "claude-code", "--install", "--dry-run"])
    assert dry.exit_code == 0, dry.output
    assert "+++" in dry.output and "capture claude-code" in dry.output
    assert json.loads(settings.read_text()) == EXISTING and not (project / ".mcp.json").exists()
    first = runner.invoke(app, ["capture", "claude-code", "--install"])
    assert first.exit_code == 0, first.output
    assert "workspace shop" in first.output
    written = json.loads(settings.read_text())
    assert written["hooks"]["PreToolUse"] == EXISTING["hooks"]["PreToolUse"]
    mcp = json.loads((project / ".mcp.json").read_text())
    assert mcp["mcpServers"]["backscroll"]["args"] == ["mcp", "--workspace", "shop"]
    texts = settings.read_text(), (project / ".mcp.json").read_text()
    second = runner.invoke(app, ["capture", "claude-code", "--install"])
    assert second.exit_code == 0 and "nothing changed" in second.output
    assert (settings.read_text(), (project / ".mcp.json").read_text()) == texts
    again = runner.invoke(app, ["capture", "claude-code", "--install", "--dry-run"])
    assert "nothing would change" in again.output


def test_user_install_goes_to_the_home_files(places: tuple[Path, Path]) -> None:
    home, project = places
    (home / ".claude.json").write_text(json.dumps({"projects": {"/x": {}}, "mcpServers": {}}))
    result = CliRunner().invoke(app, ["capture", "claude-code", "--install", "--user"])
    assert result.exit_code == 0, result.output
    assert "SessionEnd" in json.loads((home / ".claude" / "settings.json").read_text())["hooks"]
    config = json.loads((home / ".claude.json").read_text())
    assert config["projects"] == {"/x": {}} and "backscroll" in config["mcpServers"]
    assert not (project / ".claude").exists()


def test_install_refuses_a_broken_settings_file(places: tuple[Path, Path]) -> None:
    _, project = places
    (project / ".claude").mkdir()
    (project / ".claude" / "settings.json").write_text("{not json")
    result = CliRunner().invoke(app, ["capture", "claude-code", "--install"])
    assert result.exit_code == 2 and "not valid JSON" in result.output
    assert (project / ".claude" / "settings.json").read_text() == "{not json"
    both = CliRunner().invoke(app, ["capture", "claude-code", "--install", "--user", "--project"])
    assert both.exit_code == 2
