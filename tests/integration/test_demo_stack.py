"""``backscroll demo --stack`` leaves nothing behind on the servers: its topics, consumer group and
indices are the run's own and are deleted at the end; ``--keep`` keeps them, and its closing hint
then searches them as printed."""

from __future__ import annotations

import os
import subprocess
import sys
import urllib.request
import uuid
from pathlib import Path

import orjson
from kafka import KafkaAdminClient
from rich.console import Console

from backscroll.cli.demo import demo_backend, run_demo
from backscroll.indexer import OpenSearchSettings
from backscroll.ingest import KafkaSettings


def _leftovers(run: str) -> list[str]:
    """Every topic, consumer group and index whose name holds ``run``."""
    kafka = KafkaSettings()
    admin = KafkaAdminClient(**kafka.client_config())
    try:
        found = [f"topic {t}" for t in admin.list_topics() if run in t]
        found += [f"group {g}" for g in map(str, admin.list_groups()) if run in g]
    finally:
        admin.close()
    url = OpenSearchSettings().url.split(",")[0].rstrip("/")
    with urllib.request.urlopen(f"{url}/_cat/indices?format=json&expand_wildcards=all", timeout=30) as reply:
        found += [f"index {i['index']}" for i in orjson.loads(reply.read()) if run in i["index"]]
    return found


def test_the_stack_demo_deletes_what_it_made(tmp_path: Path) -> None:
    run = f"t{uuid.uuid4().hex[:10]}"
    console = Console(file=(tmp_path / "out.txt").open("w"), soft_wrap=True)
    run_demo(console, workspaces=2, sessions=4, stack=True, run=run)
    console.file.close()
    printed = (tmp_path / "out.txt").read_text()
    assert "indexed 96 events" in printed and f"deleted the run's topic backscroll.demo.{run}" in printed
    assert _leftovers(run) == []


def test_with_keep_the_hint_searches_what_the_demo_kept(tmp_path: Path) -> None:
    run = f"t{uuid.uuid4().hex[:10]}"
    console = Console(file=(tmp_path / "out.txt").open("w"), soft_wrap=True)
    try:
        run_demo(console, workspaces=2, sessions=4, stack=True, run=run, keep=True)
        console.file.close()
        assert _leftovers(run) != []
        hint = (tmp_path / "out.txt").read_text().rsplit("try: ", 1)[1].strip()
        env = {name: value for name, value in os.environ.items() if not name.startswith("BACKSCROLL_")}
        env["PATH"] = os.pathsep.join(
            p for p in env.get("PATH", "").split(os.pathsep) if Path(p) != Path(sys.executable).parent
        )
        done = subprocess.run(
            ["bash", "-c", hint], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, done.stderr
        assert "revenue forecast" in done.stdout
    finally:
        backend, _, _ = demo_backend(stack=True, run=run)
        backend.drop()
    assert _leftovers(run) == []
