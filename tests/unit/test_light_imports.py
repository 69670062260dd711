"""The embedded paths load no driver: appending, catching the projection up, searching and reading
an embedded file work in a process where kafka-python, opensearch-py, gRPC and prometheus-client
cannot be imported. Without prometheus-client the indexer's instruments are idle and ``/metrics``
names the extra to install.

(``tests/integration/test_install_alone.py`` checks the same in fresh virtual environments built
from the wheels; this test runs in a second.)
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import textwrap
import urllib.error
import urllib.request
from pathlib import Path

from typer.testing import CliRunner

from backscroll.cli.main import app
from backscroll.cli.version import DISTRIBUTIONS, installed_versions
from backscroll.indexer.metrics import IndexerMetrics, MetricsServer

HEAVY = ("kafka", "opensearchpy", "grpc", "prometheus_client")
REPO = Path(__file__).resolve().parents[2]
STAGES = ("ingest", "indexer", "query")
#: The backend folder whose modules may import a driver when they load; anywhere else in the
#: stages a driver is imported inside the function that needs it (prometheus-client never at load).
DRIVER_FOLDER = {"kafka": "kafka", "opensearchpy": "opensearch", "aiohttp": "opensearch"}

#: Marks the heavy packages as missing (``sys.modules[name] = None``: importing raises
#: ModuleNotFoundError and ``importlib.util.find_spec`` answers None), then runs the embedded paths.
EMBEDDED_WITHOUT_DRIVERS = textwrap.dedent(
    """
    import json, sys
    heavy = {heavy!r}
    sys.modules.update(dict.fromkeys(heavy))

    from backscroll.indexer import embedded_runner
    from backscroll.ingest import SQLiteEntryLog
    from backscroll.query import Scope, SessionQueryRequest, SQLiteProvider, SQLiteSessionReader

    path = sys.argv[1]
    with SQLiteEntryLog(path) as log:
        with log.session("ws-0", "s-1") as writer:
            writer.header()
            writer.append(type="user/message", role="user", surface={{"op": "append"}},
                          text="the weather forecast for tomorrow")
    with embedded_runner(path) as indexer:
        with SQLiteProvider(Scope.workspace("ws-0"), path, catch_up=indexer.catch_up) as provider:
            result = provider.search(SessionQueryRequest(query="forcast"))
        counted = indexer.metrics.registry.get_sample_value("backscroll_indexer_events_indexed_total")
    with SQLiteSessionReader(Scope.workspace("ws-0"), path) as reader:
        window = reader.read_event("s-1", 0)
    loaded = sorted({{name.split(".")[0] for name, m in sys.modules.items() if m is not None}} & set(heavy))
    print(json.dumps({{"matches": len(result.matches), "text": window.target.text, "counted": counted,
                      "loaded": loaded}}))
    """
)


def test_the_embedded_paths_run_without_any_driver(tmp_path: Path) -> None:
    script = EMBEDDED_WITHOUT_DRIVERS.format(heavy=HEAVY)
    done = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path / "light.db")],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {
        "matches": 1,
        "text": "the weather forecast for tomorrow",
        "counted": None,  # idle instruments: prometheus-client is missing
        "loaded": [],
    }


def module_level_imports(path: Path) -> set[str]:
    """The top-level packages a module imports when it loads (not inside functions, nor for type
    checkers only)."""
    found: set[str] = set()
    todo = list(ast.parse(path.read_text(encoding="utf-8")).body)
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module.split(".")[0])
        elif isinstance(node, ast.Try):
            todo += [*node.body, *node.orelse, *node.finalbody]
        elif isinstance(node, ast.If) and "TYPE_CHECKING" not in ast.unparse(node.test):
            todo += [*node.body, *node.orelse]
    return found


def test_drivers_load_only_inside_their_backend_folder() -> None:
    wrong = []
    for stage in STAGES:
        package = REPO / stage / "src" / "backscroll" / stage
        for path in sorted(package.rglob("*.py")):
            folders = path.relative_to(package).parts[:-1]
            for name in module_level_imports(path) & {*DRIVER_FOLDER, "prometheus_client"}:
                if DRIVER_FOLDER.get(name) not in folders:
                    wrong.append(f"{path.relative_to(REPO)} imports {name}")
    assert wrong == []
    assert module_level_imports(REPO / "ingest/src/backscroll/ingest/kafka/topics.py") >= {"kafka"}


def _get(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return int(response.status), bytes(response.read())
    except urllib.error.HTTPError as err:
        return err.code, bytes(err.read())


def test_without_prometheus_the_metrics_endpoint_names_the_extra() -> None:
    metrics = IndexerMetrics(prometheus=False)
    metrics.errors.labels(error_class="x").inc()
    metrics.lag.labels(partition="0").set(3)
    metrics.lag.clear()
    metrics.batch_seconds.observe(0.1)
    assert metrics.registry.get_sample_value("backscroll_indexer_errors_total", {"error_class": "x"}) is None
    assert metrics.render() == b""
    server = MetricsServer(metrics, 0)
    try:
        base = f"http://127.0.0.1:{server.port}"
        status, body = _get(base + "/metrics")
        assert status == 501 and b"backscroll-indexer[metrics]" in body
        assert _get(base + "/healthz")[0] == 200
    finally:
        server.close()


def test_with_prometheus_the_instruments_count() -> None:
    metrics = IndexerMetrics()
    assert metrics.prometheus
    metrics.errors.labels(error_class="x").inc()
    assert metrics.registry.get_sample_value("backscroll_indexer_errors_total", {"error_class": "x"}) == 1
    assert b"backscroll_indexer_errors_total" in metrics.render()


def test_version_lists_every_installed_distribution() -> None:
    result = CliRunner().invoke(app, ["--version"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines == [f"{name} {number}" for name, number in installed_versions()]
    assert [line.split()[0] for line in lines] == list(DISTRIBUTIONS)
    assert len({line.split()[1] for line in lines}) == 1
