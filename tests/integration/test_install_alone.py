"""Each distribution installs as a user installs it, and a light install stays light.

``scripts/build`` builds the four wheels and sdists once; every test then makes a new virtual
environment and runs ``pip install`` there with the wheelhouse as ``--find-links`` and CI's
constraints (PyPI, or the machine's pip cache, serves the third-party packages):

- ``backscroll-ingest`` alone appends to an embedded file, and kafka-python is not installed;
  ``backscroll-ingest[kafka]`` appends to the shared Kafka;
- ``backscroll-query`` alone searches and reads an embedded file, without any driver (Kafka,
  OpenSearch, gRPC) or prometheus-client installed;
- ``backscroll-query[opensearch]`` brings the OpenSearch provider;
- ``backscroll[mcp,console]`` lists the four distributions in ``backscroll --version`` and
  searches an embedded file from the command line;
- every ``pip install`` line of the READMEs and docs/*.md that names a backscroll distribution
  resolves against the wheelhouse, with every extra it names.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import textwrap
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from backscroll.ingest import KafkaSettings

ROOT = Path(__file__).resolve().parents[2]
VERSION = (ROOT / "VERSION").read_text(encoding="utf-8").strip()
OURS = ("backscroll", "backscroll-ingest", "backscroll-indexer", "backscroll-query")
#: Packages a light install must not bring: drivers, their gRPC stack and the metrics client.
HEAVY = ("kafka", "opensearchpy", "grpc", "prometheus_client")
HEAVY_DISTRIBUTIONS = ("kafka-python", "opensearch-py", "opensearch-protobufs", "grpcio", "prometheus-client")

#: Writes one session (a header and two entries) to the embedded file named by argv[1].
APPEND = textwrap.dedent(
    """
    import sys
    from backscroll.ingest import SQLiteEntryLog

    with SQLiteEntryLog(sys.argv[1]) as log:
        with log.session("ws-0", "s-1") as writer:
            writer.header()
            writer.append(type="user/message", role="user", surface={"op": "append"},
                          text="what is the weather forecast for tomorrow")
            writer.append(type="assistant/message", role="assistant", surface={"op": "append"},
                          text="sunny with a light breeze")
        log.flush()
        print("appended", log.end_offset())
    """
)

#: Imports nothing heavy, checks that none of it could be imported, and reports what was loaded.
LIGHT = textwrap.dedent(
    """
    import importlib.util, json, sys

    heavy = {heavy!r}
    installed = [name for name in heavy if importlib.util.find_spec(name) is not None]
    loaded = sorted({{name.split(".")[0] for name in sys.modules}} & set(heavy))
    print(json.dumps({{"installed": installed, "loaded": loaded}}))
    """
)

#: Catches the projection up, searches with a typo and reads the entry found with its neighbours.
SEARCH_AND_READ = textwrap.dedent(
    """
    import sys
    from backscroll.indexer import embedded_runner
    from backscroll.query import Scope, SessionQueryRequest, SQLiteProvider, SQLiteSessionReader

    path = sys.argv[1]
    with embedded_runner(path) as indexer:
        with SQLiteProvider(Scope.workspace("ws-0"), path, catch_up=indexer.catch_up) as provider:
            result = provider.search(SessionQueryRequest(query="forcast"))
    (match,) = result.matches
    assert match.session_id == "s-1", match
    with SQLiteSessionReader(Scope.workspace("ws-0"), path) as reader:
        window = reader.read_event("s-1", match.seq, before=1, after=1)
    print("found", match.seq, len(window.events))
    """
)


@dataclass(frozen=True)
class Wheelhouse:
    """The built distributions and the constraints that keep our four at the built version."""

    dist: Path
    constraints: Path


@dataclass(frozen=True)
class Env:
    """A fresh virtual environment."""

    path: Path

    @property
    def python(self) -> str:
        return str(self.path / "bin" / "python")

    def run(self, *args: str, cwd: Path | None = None, env: dict[str, str] | None = None) -> str:
        done = _run([self.python, *args], cwd=cwd or self.path, env=env)
        assert done.returncode == 0, f"{args}\n{done.stdout}\n{done.stderr}"
        return done.stdout

    def script(self, source: str, *args: str) -> str:
        path = self.path / f"script-{uuid.uuid4().hex[:8]}.py"
        path.write_text(source, encoding="utf-8")
        return self.run(str(path), *args)

    def pip_install(self, wheels: Wheelhouse, *requirements: str) -> str:
        args = ["-m", "pip", "install", "-q", "--find-links", str(wheels.dist), "-c", str(wheels.constraints)]
        return self.run(*args, *requirements)

    def installed(self) -> set[str]:
        listed = json.loads(self.run("-m", "pip", "list", "--format", "json"))
        return {str(item["name"]).lower().replace("_", "-") for item in listed}

    def light_report(self) -> dict[str, list[str]]:
        report = json.loads(self.script(LIGHT.format(heavy=HEAVY)))
        assert isinstance(report, dict)
        return report


def _run(
    args: list[str], cwd: Path | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    # The environment of the test run selects the stack; the new environments choose for themselves.
    clean = {
        k: v for k, v in os.environ.items() if not k.startswith(("BACKSCROLL_", "PYTHON", "VIRTUAL_ENV"))
    }
    clean["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return subprocess.run(
        args, capture_output=True, text=True, check=False, timeout=600, cwd=cwd, env={**clean, **(env or {})}
    )


@pytest.fixture(scope="module")
def wheels(tmp_path_factory: pytest.TempPathFactory) -> Wheelhouse:
    dist = tmp_path_factory.mktemp("dist")
    built = _run(["bash", str(ROOT / "scripts" / "build"), str(dist)], cwd=ROOT)
    assert built.returncode == 0, built.stdout + built.stderr
    names = sorted(p.name for p in dist.iterdir())
    stems = ("backscroll", "backscroll_ingest", "backscroll_indexer", "backscroll_query")
    assert names == sorted(
        [f"{stem}-{VERSION}-py3-none-any.whl" for stem in stems]
        + [f"{stem}-{VERSION}.tar.gz" for stem in stems]
    )
    constraints = dist.parent / "constraints.txt"
    pinned = "".join(f"{name}=={VERSION}\n" for name in OURS)
    constraints.write_text((ROOT / "constraints.txt").read_text(encoding="utf-8") + pinned, encoding="utf-8")
    return Wheelhouse(dist, constraints)


@pytest.fixture
def fresh(tmp_path: Path) -> Iterator[Env]:
    path = tmp_path / "venv"
    made = _run([sys.executable, "-m", "venv", str(path)])
    assert made.returncode == 0, made.stderr
    yield Env(path)


def test_the_ingest_distribution_alone_appends_to_an_embedded_file(wheels: Wheelhouse, fresh: Env) -> None:
    fresh.pip_install(wheels, "backscroll-ingest")
    assert fresh.installed() & {"kafka-python", "backscroll-indexer", "backscroll-query"} == set()
    assert fresh.script(APPEND, str(fresh.path / "log.db")).split() == ["appended", "3"]
    assert fresh.light_report() == {"installed": [], "loaded": []}


def test_the_ingest_distribution_with_kafka_appends_to_the_shared_kafka(
    wheels: Wheelhouse, fresh: Env, tmp_path: Path
) -> None:
    fresh.pip_install(wheels, "backscroll-ingest[kafka]")
    installed = fresh.installed()
    assert "kafka-python" in installed
    unneeded = {"opensearch-py", "typer", "rich", "prometheus-client", "rapidfuzz", "zstandard"}
    assert installed & unneeded == set(), "installed although ingest does not need them"
    topic = f"backscroll.test.fresh-{uuid.uuid4().hex[:10]}"
    try:
        out = fresh.script(KAFKA_APPEND, KafkaSettings().bootstrap_servers, topic, str(tmp_path / "spool"))
        assert out.strip() == "appended 4"
    finally:
        _delete_topics(topic, f"{topic}.dlq")


def test_the_query_distribution_alone_searches_and_reads_an_embedded_file(
    wheels: Wheelhouse, fresh: Env
) -> None:
    fresh.pip_install(wheels, "backscroll-query")
    installed = fresh.installed()
    assert installed >= {"backscroll-query", "backscroll-indexer", "backscroll-ingest"}
    assert "backscroll" not in installed
    assert installed & set(HEAVY_DISTRIBUTIONS) == set()
    assert fresh.light_report() == {"installed": [], "loaded": []}
    path = str(fresh.path / "log.db")
    fresh.script(APPEND, path)
    assert fresh.script(SEARCH_AND_READ, path).split() == ["found", "0", "2"]


def test_the_query_distribution_with_opensearch_brings_the_opensearch_provider(
    wheels: Wheelhouse, fresh: Env
) -> None:
    fresh.pip_install(wheels, "backscroll-query[opensearch]")
    installed = fresh.installed()
    assert "opensearch-py" in installed
    assert installed & {"kafka-python", "prometheus-client"} == set()
    out = fresh.script(
        "from backscroll.indexer import OpenSearchSettings\n"
        "from backscroll.query import OpenSearchProvider, Scope\n"
        "provider = OpenSearchProvider(Scope.workspace('ws-0'), OpenSearchSettings(url='http://127.0.0.1:9'))\n"
        "provider.close()\n"
        "print(OpenSearchProvider.__name__)\n"
    )
    assert out.strip() == "OpenSearchProvider"


def test_the_backscroll_distribution_lists_its_versions_and_searches_an_embedded_file(
    wheels: Wheelhouse, fresh: Env
) -> None:
    fresh.pip_install(wheels, "backscroll[mcp,console]")
    cli = str(fresh.path / "bin" / "backscroll")
    versions = _run([cli, "--version"])
    assert versions.returncode == 0, versions.stderr
    assert sorted(versions.stdout.splitlines()) == sorted(f"{name} {VERSION}" for name in OURS)
    path = fresh.path / "log.db"
    fresh.script(APPEND, str(path))
    env = {"BACKSCROLL_BACKEND": "embedded", "BACKSCROLL_SQLITE_PATH": str(path)}
    found = _run([cli, "search", "forcast", "--workspace", "ws-0", "--json"], cwd=fresh.path, env=env)
    assert found.returncode == 0, found.stdout + found.stderr
    (match,) = json.loads(found.stdout)["matches"]
    assert (match["session_id"], match["seq"]) == ("s-1", 0)


# -- the install lines of the documentation ------------------------------------------------------


def documented_installs() -> list[tuple[str, list[str]]]:
    """``(where, requirements)`` of each ``pip install`` line in the READMEs and docs/*.md that installs
    backscroll distributions by name (lines installing a checkout, ``-e`` or a path, are skipped)."""
    found = []
    docs = [ROOT / "README.md", *(ROOT / d / "README.md" for d in ("ingest", "indexer", "query"))]
    for doc in [*docs, *sorted((ROOT / "docs").glob("*.md"))]:
        for number, line in enumerate(doc.read_text(encoding="utf-8").splitlines(), 1):
            for command in re.findall(r"pip install ([^`\n#]+)", line):
                try:
                    words = shlex.split(command)
                except ValueError:
                    continue
                if any(w.startswith(("-", ".", "/")) for w in words):
                    continue
                requirements = [
                    w for w in words if re.match(r"backscroll(-ingest|-indexer|-query)?(\[|$)", w)
                ]
                if requirements and len(requirements) == len(words):
                    found.append((f"{doc.relative_to(ROOT)}:{number}", requirements))
    return found


def test_the_documentation_names_installs() -> None:
    lines = {tuple(reqs) for _, reqs in documented_installs()}
    assert ("backscroll-ingest",) in lines and any(r[0].startswith("backscroll[") for r in lines), lines


def test_every_documented_install_line_resolves(wheels: Wheelhouse, fresh: Env) -> None:
    """One dry run of every line's requirements together (if all of them resolve together, each line
    does alone): pip must resolve every distribution and extra named. An unknown extra is only a
    warning to pip, so that warning fails the test too."""
    lines = documented_installs()
    requirements = sorted({r for _, reqs in lines for r in reqs})
    args = [
        "-m",
        "pip",
        "install",
        "--dry-run",
        "--find-links",
        str(wheels.dist),
        "-c",
        str(wheels.constraints),
    ]
    done = _run([fresh.python, *args, *requirements])
    assert done.returncode == 0, done.stderr
    assert "does not provide the extra" not in done.stderr, done.stderr
    assert "Would install" in done.stdout, done.stdout


# -- Kafka ---------------------------------------------------------------------------------------

KAFKA_APPEND = textwrap.dedent(
    """
    import sys
    from kafka import KafkaConsumer, TopicPartition
    from backscroll.ingest import Appender, AppenderSettings, KafkaSettings, ensure_topics
    from backscroll.ingest.kafka.appender import producer_config

    settings = KafkaSettings(bootstrap_servers=sys.argv[1], topic=sys.argv[2], partitions=1)
    assert producer_config(settings)["compression_type"] != "zstd"
    ensure_topics(settings)
    with Appender(settings, AppenderSettings(spool_dir=sys.argv[3])) as log:
        with log.session("ws-fresh", "s-fresh") as writer:
            writer.header()
            handles = [writer.append(type="user/message", role="user", surface={"op": "append"}, text=f"m{i}")
                       for i in range(3)]
        log.flush(timeout=60)
        positions = [h.result(timeout=30) for h in handles]
    consumer = KafkaConsumer(**settings.client_config(), group_id=None, enable_auto_commit=False)
    tp = TopicPartition(settings.topic, 0)
    consumer.assign([tp])
    consumer.seek_to_beginning(tp)
    end = consumer.end_offsets([tp])[tp]
    seen = []
    while len(seen) < end:
        for batch in consumer.poll(timeout_ms=1000).values():
            seen.extend(batch)
    consumer.close()
    assert [m.key for m in seen] == [b"s-fresh"] * 4, seen
    assert [p.offset for p in positions] == [1, 2, 3]
    print("appended", len(seen))
    """
)


def _delete_topics(*topics: str) -> None:
    from kafka import KafkaAdminClient

    admin = KafkaAdminClient(**KafkaSettings().client_config())
    try:
        doomed = [t for t in topics if t in set(admin.list_topics())]
        if doomed:
            admin.delete_topics(doomed)
    finally:
        admin.close()
