"""``backscroll demo``: the whole path (append → index → search), with timings.

Runs on the embedded backend (one SQLite file, no servers) by default and on the real Kafka and
OpenSearch with ``stack=True``; both go through :class:`backscroll.backends.Backend`, so the demo body
is one code path.
"""

from __future__ import annotations

import contextlib
import shlex
import shutil
import sys
import time
import uuid
from pathlib import Path

from rich.console import Console
from rich.text import Text

from backscroll.backends import (
    Backend,
    BackendSettings,
    EmbeddedBackend,
    KafkaOpenSearchBackend,
    default_sqlite_path,
    settings_from_env,
)
from backscroll.cli.workload import demo_records
from backscroll.query import Scope, SessionQueryRequest, render_result
from backscroll.textsafe import safe_text

__all__ = ["DEMO_SEARCHES", "command_prefix", "demo_backend", "run_demo"]

#: (what it shows, scope workspace, query)
DEMO_SEARCHES = [
    ("one-edit typo", "ws-0", "revnue forcast"),
    ("accents stripped", "ws-1", "Sao Paulo"),
    ("accents added", "ws-0", "Zúrich ófice"),
    ("đ folded to d", "ws-1", "don hang"),
    ("identifier substring", "ws-2", "9931"),
    ("typo in a name", "ws-1", "Nguyen Huong aproved"),
]


def demo_backend(*, stack: bool, run: str, path: Path | None = None) -> tuple[Backend, str, str]:
    """A backend for one demo run, the environment that searches it afterwards, and a note on
    where the demo writes.

    Embedded: ``path``, else the file ``BACKSCROLL_SQLITE_PATH`` names (appended to, never
    deleted: the demo's records are the same on every run, so a second run only replays them),
    else a fresh ``demo.db`` next to the default database. Stack: a topic, index prefix and
    consumer group of the run's own on the configured servers."""
    if not stack:
        settings = BackendSettings()
        named = path or (settings.sqlite_path if "sqlite_path" in settings.model_fields_set else None)
        if named is not None:
            target = Path(named).expanduser()
            note = (
                f"appending to the existing {target} (a second run only replays the same records)"
                if target.exists()
                else ""
            )
        else:
            target = default_sqlite_path().with_name("demo.db")
            for suffix in ("", "-wal", "-shm"):
                Path(f"{target}{suffix}").unlink(missing_ok=True)
            note = ""
        env = {"BACKSCROLL_BACKEND": "embedded", "BACKSCROLL_SQLITE_PATH": str(target)}
        return EmbeddedBackend(target), _assignments(env), note
    from backscroll.indexer import IndexerSettings, OpenSearchSettings
    from backscroll.ingest import KafkaSettings

    kafka = KafkaSettings().model_copy(update={"topic": f"backscroll.demo.{run}"})
    opensearch = settings_from_env(OpenSearchSettings).model_copy(
        update={"index_prefix": f"backscroll-demo-{run}"}
    )
    indexer = settings_from_env(IndexerSettings).model_copy(update={"group_id": f"backscroll-demo-{run}"})
    backend = KafkaOpenSearchBackend(kafka, opensearch, indexer)
    env = {
        "BACKSCROLL_BACKEND": "kafka-opensearch",
        "BACKSCROLL_KAFKA_TOPIC": kafka.topic,
        "BACKSCROLL_OPENSEARCH_INDEX_PREFIX": opensearch.index_prefix,
    }
    return backend, _assignments(env), ""


def _assignments(env: dict[str, str]) -> str:
    return " ".join(f"{name}={shlex.quote(value)}" for name, value in env.items())


def command_prefix() -> str:
    """How to run this ``backscroll`` again, as a shell runs it from any directory: ``backscroll``
    when that name on PATH is this program, else its absolute path (``python -m`` when run so)."""
    program = Path(sys.argv[0]) if sys.argv and sys.argv[0] else None
    if program is None or program.suffix == ".py" or not program.exists():
        return f"{shlex.quote(sys.executable)} -m backscroll.cli.main"
    found = shutil.which("backscroll")
    if found is not None and Path(found).resolve() == program.resolve():
        return "backscroll"
    return shlex.quote(str(program.absolute()))


def run_demo(
    console: Console,
    *,
    workspaces: int = 3,
    sessions: int = 9,
    stack: bool = False,
    path: Path | None = None,
    run: str | None = None,
    keep: bool = False,
) -> None:
    """Append the workload, index it, run :data:`DEMO_SEARCHES` and print how to search it again.

    With ``stack`` the run's topics, consumer group and indices are deleted at the end (also when
    the run fails) unless ``keep``; ``run`` names them (default: a random id)."""
    backend, env, note = demo_backend(stack=stack, run=run or uuid.uuid4().hex[:8], path=path)
    dropping = stack and not keep
    started = time.monotonic()
    try:
        _run(console, backend, workspaces=workspaces, sessions=sessions, note=note)
    except BaseException:
        if dropping:
            with contextlib.suppress(Exception):  # the run's own error is the one to report
                backend.drop()
        raise
    finally:
        backend.close()
    total = f"{time.monotonic() - started:.1f}s"
    if dropping:
        dropped = backend.drop()
        console.print(
            Text.assemble(
                "\n",
                ("done", "green"),
                f" in {total}; deleted the run's {', '.join(dropped)} (--keep keeps them to search)",
            )
        )
        return
    search = f"{env} {command_prefix()} search 'revnue' --workspace ws-0"
    console.print(Text.assemble("\n", ("done", "green"), f" in {total}; try: ", safe_text(search)))


def _run(console: Console, backend: Backend, *, workspaces: int, sessions: int, note: str) -> None:
    console.print(Text.assemble(("backscroll demo", "bold"), f" — {safe_text(backend.describe())}"))
    if note:
        console.print(safe_text(note))

    started = time.monotonic()
    records = list(demo_records(workspaces=workspaces, sessions=sessions))
    with backend.open_log() as log:
        handles = [log.append(r) for r in records]
        log.flush(timeout=60)
        for handle in handles:
            handle.result(timeout=30)
    console.print(
        f"appended {len(records)} records ({sessions} sessions, {workspaces} workspaces) "
        f"in {time.monotonic() - started:.2f}s"
    )

    started = time.monotonic()
    with backend.open_indexer() as indexer:
        stats = indexer.run(until_idle=True)
    console.print(
        f"indexed {stats.indexed} events (dead-lettered {stats.dead_lettered}) "
        f"in {time.monotonic() - started:.2f}s"
    )

    for label, workspace, query in DEMO_SEARCHES:
        with backend.open_provider(Scope.workspace(workspace)) as provider:
            t0 = time.monotonic()
            result = provider.search(SessionQueryRequest(query=query, limit=3, excerpt_bytes=160))
            took = (time.monotonic() - t0) * 1000
        console.rule(f"{label}: {query!r} in {workspace} — {took:.0f} ms")
        rendered = safe_text(render_result(result, query, scope_noun="workspace"), keep_newlines=True)
        console.print(rendered, highlight=False, markup=False)
