"""Facts about the machine and the software versions, recorded with every result."""

from __future__ import annotations

import importlib.metadata
import os
import platform
import re
import sqlite3
import sys
from pathlib import Path
from typing import Any

__all__ = ["machine_info", "package_versions"]


def _read(path: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def machine_info() -> dict[str, Any]:
    cpuinfo = _read("/proc/cpuinfo")
    model = re.search(r"^model name\s*:\s*(.+)$", cpuinfo, re.MULTILINE)
    meminfo = re.search(r"^MemTotal:\s*(\d+) kB", _read("/proc/meminfo"), re.MULTILINE)
    os_release = re.search(r'^PRETTY_NAME="?([^"\n]+)"?', _read("/etc/os-release"), re.MULTILINE)
    try:
        nproc = len(os.sched_getaffinity(0))
    except AttributeError:
        nproc = os.cpu_count() or 0
    return {
        "nproc": nproc,
        "memory_bytes": int(meminfo.group(1)) * 1024 if meminfo else None,
        "cpu_model": model.group(1).strip() if model else platform.processor() or "unknown",
        "os": os_release.group(1) if os_release else platform.platform(),
        "kernel": platform.release(),
        "hostname": platform.node(),
    }


def _dist_version(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def _backscroll_version() -> str | None:
    installed = _dist_version("backscroll")
    if installed:
        return installed
    pyproject = Path(__file__).resolve().parents[1] / "pyproject.toml"
    found = re.search(r'^version\s*=\s*"([^"]+)"', _read(str(pyproject)), re.MULTILINE)
    return f"{found.group(1)} (source tree)" if found else None


def package_versions() -> dict[str, Any]:
    return {
        "python": sys.version.split()[0],
        "sqlite": sqlite3.sqlite_version,
        "backscroll": _backscroll_version(),
        "chitchat-dataset": _dist_version("chitchat-dataset"),
        "psycopg": _dist_version("psycopg"),
        "opensearch-py": _dist_version("opensearch-py"),
        "rapidfuzz": _dist_version("rapidfuzz"),
        "pydantic": _dist_version("pydantic"),
        "matplotlib": _dist_version("matplotlib"),
        "rich": _dist_version("rich"),
    }
