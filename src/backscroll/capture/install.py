"""``backscroll capture claude-code --install``: the hooks and the MCP server in Claude Code's files.

The hooks go to ``~/.claude/settings.json`` (``--user``) or ``.claude/settings.json`` of the
project (``--project``): for each event of :data:`~backscroll.capture.hook.HOOK_EVENTS`, one
command hook running ``backscroll capture claude-code``, added beside the hooks already there. The
MCP server ``backscroll`` (``backscroll mcp --workspace W``, W the workspace of the current folder)
goes to the project's ``.mcp.json`` (``--project``) or the ``mcpServers`` of ``~/.claude.json``
(``--user``). Nothing else in those files changes, and a second install changes nothing.
"""

from __future__ import annotations

import copy
import difflib
import json
import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal

from backscroll.capture.hook import HOOK_EVENTS

__all__ = ["Change", "backscroll_command", "merge_hooks", "merge_mcp", "plan", "write"]

#: How long Claude Code lets the hook run (seconds); the hook itself stops well before.
HOOK_TIMEOUT_S: Final = 30
_SUFFIX: Final = "capture claude-code"
_SERVER: Final = "backscroll"
#: Events whose hooks Claude Code matches by tool name.
_TOOL_EVENTS: Final = frozenset(("PostToolUse",))


@dataclass
class Change:
    """One file's text before (``""``: it does not exist) and after the install."""

    path: Path
    before: str
    after: str

    @property
    def changed(self) -> bool:
        return self.before != self.after

    def diff(self) -> str:
        return "".join(
            difflib.unified_diff(
                self.before.splitlines(keepends=True),
                self.after.splitlines(keepends=True),
                fromfile=f"{self.path} (now)",
                tofile=f"{self.path} (after install)",
            )
        )


def backscroll_command() -> str:
    """The ``backscroll`` executable the hooks run: this one, by absolute path when known."""
    found = shutil.which("backscroll")
    if found:
        return str(Path(found).resolve())
    candidate = Path(sys.executable).parent / "backscroll"
    return str(candidate) if candidate.exists() else "backscroll"


def _is_ours(hook: Any) -> bool:
    return isinstance(hook, dict) and str(hook.get("command", "")).rstrip().endswith(_SUFFIX)


def merge_hooks(settings: dict[str, Any], command: str) -> dict[str, Any]:
    """``settings`` with the capture hook on every event (a copy; other hooks kept as they are)."""
    merged = copy.deepcopy(settings)
    hooks = merged.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise ValueError("the settings' hooks is not a JSON object")
    ours = {"type": "command", "command": f"{command} {_SUFFIX}", "timeout": HOOK_TIMEOUT_S}
    for event in HOOK_EVENTS:
        groups = hooks.setdefault(event, [])
        if not isinstance(groups, list):
            raise ValueError(f"the settings' hooks.{event} is not a list")
        present = [h for g in groups if isinstance(g, dict) for h in g.get("hooks", []) if _is_ours(h)]
        if present:
            for hook in present:
                hook.update(ours)
            continue
        group: dict[str, Any] = {"hooks": [dict(ours)]}
        if event in _TOOL_EVENTS:
            group = {"matcher": "*", **group}
        groups.append(group)
    return merged


def merge_mcp(config: dict[str, Any], command: str, workspace: str) -> dict[str, Any]:
    """``config`` with the ``backscroll`` MCP server for ``workspace`` (a copy)."""
    merged = copy.deepcopy(config)
    servers = merged.setdefault("mcpServers", {})
    if not isinstance(servers, dict):
        raise ValueError("mcpServers is not a JSON object")
    servers[_SERVER] = {"type": "stdio", "command": command, "args": ["mcp", "--workspace", workspace]}
    return merged


def _load(path: Path) -> tuple[str, dict[str, Any]]:
    if not path.exists():
        return "", {}
    text = path.read_text(encoding="utf-8")
    if not text.strip():
        return text, {}
    try:
        value = json.loads(text)
    except ValueError as err:
        raise ValueError(f"{path} is not valid JSON ({err}); fix or move it, then install again") from err
    if not isinstance(value, dict):
        raise ValueError(f"{path} does not hold a JSON object")
    return text, value


def _dump(value: dict[str, Any]) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False) + "\n"


def _change(path: Path, merge: Any) -> Change:
    before, value = _load(path)
    merged = merge(value)
    after = before if merged == value and before else _dump(merged)
    return Change(path, before, after)


def plan(
    scope: Literal["user", "project"], *, cwd: Path, home: Path, workspace: str, command: str | None = None
) -> list[Change]:
    """The changes an install makes (nothing written)."""
    command = command or backscroll_command()
    if scope == "user":
        settings_path, mcp_path = home / ".claude" / "settings.json", home / ".claude.json"
    else:
        settings_path, mcp_path = cwd / ".claude" / "settings.json", cwd / ".mcp.json"
    return [
        _change(settings_path, lambda value: merge_hooks(value, command)),
        _change(mcp_path, lambda value: merge_mcp(value, command, workspace)),
    ]


def write(changes: list[Change]) -> list[Path]:
    """Write the changed files (each replaced whole, atomically); the paths written."""
    written: list[Path] = []
    for change in changes:
        if not change.changed:
            continue
        change.path.parent.mkdir(parents=True, exist_ok=True)
        temporary = change.path.with_name(f".{change.path.name}.backscroll-{os.getpid()}")
        temporary.write_text(change.after, encoding="utf-8")
        if change.path.exists():
            shutil.copymode(change.path, temporary)
        os.replace(temporary, change.path)
        written.append(change.path)
    return written
