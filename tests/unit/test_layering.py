"""Import direction between the packages, and pure modules free of I/O, read from the source (AST).

ingest → (nothing of ours above it); indexer → ingest; query → ingest and the indexer's pure schema
modules only; cli → anything. Imports inside functions and under ``TYPE_CHECKING`` count too: a
type-only import from a higher layer is still a dependency in the wrong direction.

Inside a stage, the core imports no backend folder and no backend folder imports another; no module
imports the face of its own package; and no modules import each other in a circle.
"""

from __future__ import annotations

import ast
import tomllib
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest
from packaging.requirements import Requirement

REPO = Path(__file__).resolve().parents[2]
#: Each distribution's source root; together they make up the ``backscroll`` namespace package.
DISTRIBUTIONS = {
    "backscroll-ingest": REPO / "ingest",
    "backscroll-indexer": REPO / "indexer",
    "backscroll-query": REPO / "query",
    "backscroll": REPO,
}
SOURCE_ROOTS = tuple(path / "src" for path in DISTRIBUTIONS.values())
ROOT = "backscroll"

#: The indexer modules the query side may read: the schema of the read model and the pure folds.
QUERY_MAY_IMPORT_FROM_INDEXER = frozenset(
    {
        "backscroll.indexer.document",
        # the OpenSearch index names (aliases) the OpenSearch engine and reader search
        "backscroll.indexer.opensearch.mappings",
        # the embedded event row layout (which fields are columns, not repeated in ``doc``)
        "backscroll.indexer.sqlite.docs",
        # the embedded time column's encoding (``time_us``), so filters compare what the view wrote
        "backscroll.indexer.sqlite.rows",
        "backscroll.indexer.textfold",
        "backscroll.indexer.fold",
        "backscroll.indexer.settings",
        # the OpenSearch security failures as one line (401/403/TLS), shared by both adapters
        "backscroll.indexer.opensearch.security",
    }
)

PURE_MODULES = (
    "backscroll.ingest.wire",
    "backscroll.indexer.document",
    "backscroll.indexer.opensearch.mappings",
    "backscroll.indexer.sqlite.docs",
    "backscroll.indexer.sqlite.rows",
    "backscroll.indexer.textfold",
    "backscroll.indexer.fold",
    "backscroll.indexer.fold_types",
    "backscroll.indexer.projector",
    "backscroll.indexer.deadletter",
    "backscroll.query.opensearch.body",
    "backscroll.query.plan",
    "backscroll.query.scan",
    "backscroll.query.bounded",
    "backscroll.query.scoring",
    "backscroll.query.live",
    "backscroll.query.excerpt",
    "backscroll.query.render",
    "backscroll.query.cursor",
    "backscroll.query.scope",
    "backscroll.query.contract",
    "backscroll.query.errors",
)
#: Top-level modules that do I/O; a pure module imports none of them (nor a submodule of one).
IO_MODULES = frozenset({"kafka", "opensearchpy", "socket", "requests", "urllib3", "sqlite3"})


@dataclass(frozen=True)
class Import:
    module: str  # the importing module
    target: str  # the imported module (``from a.b import c`` gives ``a.b`` and, if a module, ``a.b.c``)
    line: int

    def __str__(self) -> str:
        return f"{self.module}:{self.line} imports {self.target}"


def module_name(path: Path, source_root: Path) -> str:
    parts = list(path.relative_to(source_root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


@cache
def modules() -> dict[str, Path]:
    return {module_name(p, root): p for root in SOURCE_ROOTS for p in sorted((root / ROOT).rglob("*.py"))}


def _resolve_relative(module: str, is_package: bool, level: int, name: str | None) -> str:
    base = module.split(".") if is_package else module.split(".")[:-1]
    if level > 1:
        base = base[: len(base) - (level - 1)]
    return ".".join([*base, name] if name else base)


@cache
def parsed(module: str) -> ast.Module:
    return ast.parse(modules()[module].read_text(encoding="utf-8"), filename=str(modules()[module]))


@cache
def imports_of(module: str) -> tuple[Import, ...]:
    is_package = modules()[module].name == "__init__.py"
    found: list[Import] = []
    for node in ast.walk(parsed(module)):
        if isinstance(node, ast.Import):
            found.extend(Import(module, alias.name, node.lineno) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = _resolve_relative(module, is_package, node.level, node.module)
            found.append(Import(module, base, node.lineno))
            for alias in node.names:
                candidate = f"{base}.{alias.name}"
                if candidate in modules():
                    found.append(Import(module, candidate, node.lineno))
    return tuple(found)


_ENV = frozenset({"environ", "environb", "getenv", "getenvb", "putenv", "unsetenv"})


def env_hits(tree: ast.AST, module: str) -> list[str]:
    """``os.environ`` / ``os.getenv`` / ``os.putenv`` uses and ``from os import environ``-style imports."""
    hits = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "os":
            hits += [f"{module}:{node.lineno} uses os.{node.attr}"] if node.attr in _ENV else []
        if isinstance(node, ast.ImportFrom) and node.module == "os":
            hits += [f"{module}:{node.lineno} imports os.{a.name}" for a in node.names if a.name in _ENV]
    return hits


def env_access(module: str) -> list[str]:
    return env_hits(parsed(module), module)


def in_package(target: str, package: str) -> bool:
    return target == package or target.startswith(package + ".")


def violations(package: str, forbidden: tuple[str, ...]) -> list[str]:
    return [
        str(imp)
        for module in modules()
        if in_package(module, package)
        for imp in imports_of(module)
        if any(in_package(imp.target, other) for other in forbidden)
    ]


# -- the walker sees what it should -----------------------------------------------------------------


def test_the_walker_finds_imports() -> None:
    assert {"backscroll.ingest", "backscroll.indexer", "backscroll.query", "backscroll.ingest.wire"} <= set(
        modules()
    )
    plan = {imp.target for imp in imports_of("backscroll.query.plan")}
    assert "backscroll.indexer.document" in plan
    assert any(in_package(imp.target, "kafka") for imp in imports_of("backscroll.ingest.kafka.topics"))
    assert _resolve_relative("a.b.c", False, 1, "d") == "a.b.d"
    assert _resolve_relative("a.b", True, 2, None) == "a"


# -- direction ---------------------------------------------------------------------------------------


def test_ingest_imports_nothing_above_it() -> None:
    assert violations("backscroll.ingest", ("backscroll.indexer", "backscroll.query", "backscroll.cli")) == []


def test_indexer_imports_neither_query_nor_cli() -> None:
    assert violations("backscroll.indexer", ("backscroll.query", "backscroll.cli")) == []


def test_query_imports_no_cli() -> None:
    assert violations("backscroll.query", ("backscroll.cli",)) == []


def test_query_reads_only_the_indexer_schema_modules() -> None:
    wrong = [
        str(imp)
        for module in modules()
        if in_package(module, "backscroll.query")
        for imp in imports_of(module)
        if in_package(imp.target, "backscroll.indexer") and imp.target not in QUERY_MAY_IMPORT_FROM_INDEXER
    ]
    assert wrong == [], "query may import only " + ", ".join(sorted(QUERY_MAY_IMPORT_FROM_INDEXER))
    assert set(modules()) >= QUERY_MAY_IMPORT_FROM_INDEXER


# -- no import circles -------------------------------------------------------------------------------


def import_graph() -> dict[str, set[str]]:
    """Every module of ours and the modules of ours it imports, counting imports inside functions and
    under ``TYPE_CHECKING``; a package face that a submodule imports from counts as a module."""
    return {m: {imp.target for imp in imports_of(m) if imp.target in modules()} - {m} for m in modules()}


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (iterative Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work: list[tuple[str, list[str]]] = [(start, sorted(graph[start]))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, pending = work[-1]
            if pending:
                nxt = pending.pop()
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, sorted(graph[nxt])))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_no_import_circles() -> None:
    found = circles(import_graph())
    detail = [
        f"{' / '.join(c)}: " + "; ".join(f"{m} -> {sorted(import_graph()[m] & set(c))}" for m in c)
        for c in found
    ]
    assert found == [], "\n".join(detail)


def test_the_circle_finder_finds_circles() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert circles(graph) == [["a", "b", "c"]]
    assert circles({"a": {"b"}, "b": set()}) == []


def imports_own_face(module: str, target: str) -> bool:
    """Whether ``target`` is a package holding ``module`` (the namespace package ``backscroll``
    has no face)."""
    return target != ROOT and module.startswith(target + ".")


def test_no_module_imports_the_face_of_its_own_package() -> None:
    """A package's face imports its submodules, never the other way round."""
    found = [
        imp
        for module in modules()
        for imp in imports_of(module)
        if imp.target in modules() and imports_own_face(module, imp.target)
    ]
    assert [str(imp) for imp in found] == []
    assert imports_own_face("backscroll.query.tools.base", "backscroll.query.tools")
    assert imports_own_face("backscroll.query.tools.base", "backscroll.query")
    assert not imports_own_face("backscroll.query.tools", "backscroll.query.tools.base")
    assert not imports_own_face("backscroll.query.toolset", "backscroll.query.tools")
    assert not imports_own_face("backscroll.query.plan", ROOT)


# -- a folder per backend inside each stage ---------------------------------------------------------

#: Each stage's backend folders; the rest of the stage is its core, which every backend uses.
BACKEND_FOLDERS = {
    "backscroll.ingest": ("kafka", "sqlite"),
    "backscroll.indexer": ("kafka", "opensearch", "sqlite"),
    "backscroll.query": ("opensearch", "sqlite"),
}
#: The crossings that are the point of their module (importing module, imported module): the
#: Kafka + OpenSearch worker and its rebuild join a Kafka source to an OpenSearch view. Any other
#: crossing fails the test.
KNOWN_CROSSINGS = frozenset(
    {
        ("backscroll.indexer.kafka.worker", "backscroll.indexer.opensearch.view"),
        ("backscroll.indexer.kafka.worker", "backscroll.indexer.opensearch.load"),
    }
)


def backend_of(module: str, stage: str) -> str | None:
    """The backend folder of ``stage`` that ``module`` is in; ``None`` for the stage's core."""
    return next((name for name in BACKEND_FOLDERS[stage] if in_package(module, f"{stage}.{name}")), None)


def crosses(module: str, target: str, stage: str) -> bool:
    """Whether ``module`` of ``stage`` importing ``target`` reaches into a backend folder from the
    core or from another backend folder."""
    if not in_package(target, stage):
        return False
    return backend_of(target, stage) not in (None, backend_of(module, stage))


def backend_crossings(stage: str) -> list[Import]:
    """The imports inside ``stage`` that cross into a backend folder. The stage's face is not
    counted: it names backend modules in its lazy name map (strings), and imports them for type
    checkers only, to give the map's names their types."""
    return [
        imp
        for module in modules()
        if in_package(module, stage) and module != stage
        for imp in imports_of(module)
        if crosses(module, imp.target, stage)
    ]


@pytest.mark.parametrize("stage", sorted(BACKEND_FOLDERS))
def test_backend_folders_are_imported_by_neither_the_core_nor_another_backend(stage: str) -> None:
    found = backend_crossings(stage)
    assert [str(imp) for imp in found if (imp.module, imp.target) not in KNOWN_CROSSINGS] == []


def test_the_backend_folders_exist_and_the_crossing_check_is_not_vacuous() -> None:
    for stage, folders in BACKEND_FOLDERS.items():
        assert all(f"{stage}.{name}" in modules() for name in folders), stage
    query = "backscroll.query"
    assert backend_of("backscroll.query.sqlite.scan", query) == "sqlite"
    assert backend_of("backscroll.query.scan", query) is None
    assert backend_of("backscroll.ingest.kafka.spool.disk", "backscroll.ingest") == "kafka"
    assert crosses("backscroll.query.opensearch.scan", "backscroll.query.sqlite.scan", query)
    assert crosses("backscroll.query.plan", "backscroll.query.opensearch.body", query)
    assert not crosses("backscroll.query.sqlite.scan", "backscroll.query.sqlite.rows", query)
    assert not crosses("backscroll.query.sqlite.scan", "backscroll.query.scan", query)
    assert not crosses("backscroll.query.sqlite.rows", "backscroll.indexer.sqlite.rows", query)
    assert {module for module, _ in KNOWN_CROSSINGS} <= set(modules())


# -- purity ------------------------------------------------------------------------------------------


def test_every_pure_module_exists() -> None:
    assert set(PURE_MODULES) <= set(modules())


def _ours(module: str) -> set[str]:
    """The backscroll modules ``module`` imports (package ``__init__`` files are not followed)."""
    return {imp.target for imp in imports_of(module) if imp.target in modules() and imp.target != ROOT} - {
        m for m in modules() if modules()[m].name == "__init__.py"
    }


def closure(module: str) -> set[str]:
    seen, todo = {module}, [module]
    while todo:
        for target in _ours(todo.pop()):
            if target not in seen:
                seen.add(target)
                todo.append(target)
    return seen


@pytest.mark.parametrize("pure", PURE_MODULES)
def test_pure_modules_do_no_io(pure: str) -> None:
    """Neither the module nor any module of ours it imports touches a network client, a database or
    the process environment."""
    problems = []
    for module in sorted(closure(pure)):
        problems += [str(imp) for imp in imports_of(module) if imp.target.split(".")[0] in IO_MODULES]
        problems += env_access(module)
    assert problems == []


def test_the_purity_check_is_not_vacuous() -> None:
    assert closure("backscroll.indexer.projector") >= {
        "backscroll.indexer.document",
        "backscroll.indexer.fold",
        "backscroll.ingest.wire",
        "backscroll.ingest.errors",
    }
    assert any(
        imp.target.split(".")[0] in IO_MODULES for imp in imports_of("backscroll.query.opensearch.clients")
    )
    sample = ast.parse("import os\nfrom os import getenv\nx = os.environ['A']\ny = os.path.join('a')\n")
    assert env_hits(sample, "m") == ["m:2 imports os.getenv", "m:3 uses os.environ"]


# -- the declared dependencies enforce the same direction -----------------------------------------


def _project(distribution: str) -> dict[str, object]:
    data = tomllib.loads((DISTRIBUTIONS[distribution] / "pyproject.toml").read_text(encoding="utf-8"))
    project = data["project"]
    assert isinstance(project, dict)
    return project


def _requirements(distribution: str) -> list[Requirement]:
    deps = _project(distribution)["dependencies"]
    assert isinstance(deps, list)
    return [Requirement(d) for d in deps]


def _extras(distribution: str) -> dict[str, list[Requirement]]:
    extras = _project(distribution).get("optional-dependencies", {})
    assert isinstance(extras, dict)
    return {name: [Requirement(d) for d in deps] for name, deps in extras.items()}


def _every_requirement(distribution: str) -> list[Requirement]:
    return _requirements(distribution) + [r for reqs in _extras(distribution).values() for r in reqs]


def _ours_required(distribution: str) -> set[str]:
    return {r.name for r in _every_requirement(distribution) if r.name in DISTRIBUTIONS}


def test_declared_dependencies_flow_one_way() -> None:
    """Required or through an extra, a distribution names only the stages below it."""
    assert _ours_required("backscroll-ingest") == set()
    assert _ours_required("backscroll-indexer") == {"backscroll-ingest"}
    assert _ours_required("backscroll-query") == {"backscroll-indexer"}
    assert _ours_required("backscroll") == {"backscroll-ingest", "backscroll-indexer", "backscroll-query"}


def test_light_installs_bring_no_driver() -> None:
    """Kafka, OpenSearch and Prometheus clients come only with extras; the backscroll distribution
    asks for the extras a fleet needs."""
    assert {r.name for r in _requirements("backscroll-ingest")} == {"pydantic", "pydantic-settings", "orjson"}
    drivers = {"kafka-python", "opensearch-py", "prometheus-client", "aiohttp"}
    for distribution in ("backscroll-ingest", "backscroll-indexer", "backscroll-query"):
        required = _requirements(distribution)
        assert {r.name for r in required} & drivers == set(), distribution
        assert all(not r.extras for r in required if r.name in DISTRIBUTIONS), distribution
    assert {r.name for r in _extras("backscroll-ingest")["kafka"]} == {"kafka-python"}
    assert [(r.name, r.extras) for r in _extras("backscroll-indexer")["kafka"]] == [
        ("backscroll-ingest", {"kafka"})
    ]
    assert {r.name for r in _extras("backscroll-indexer")["opensearch"]} == {"opensearch-py"}
    assert {r.name for r in _extras("backscroll-indexer")["metrics"]} == {"prometheus-client"}
    assert {r.name for r in _extras("backscroll-query")["opensearch"]} == {"opensearch-py"}
    fleet = {r.name: r.extras for r in _requirements("backscroll") if r.name in DISTRIBUTIONS}
    assert fleet == {
        "backscroll-ingest": {"kafka", "crc32c"},
        "backscroll-indexer": {"kafka", "opensearch", "metrics"},
        "backscroll-query": {"opensearch"},
    }


def _dynamic_version_file(distribution: str) -> Path:
    data = tomllib.loads((DISTRIBUTIONS[distribution] / "pyproject.toml").read_text(encoding="utf-8"))
    assert "version" not in data["project"] and "version" in data["project"]["dynamic"], distribution
    declared = data["tool"]["setuptools"]["dynamic"]["version"]["file"]
    return DISTRIBUTIONS[distribution] / str(declared)


def test_one_version_for_all_and_no_exact_pins_of_other_projects() -> None:
    """Every distribution reads the repository's VERSION file (the other folders link to it, so each
    sdist carries it); siblings are asked for as the same minor release, everything else as a range
    with a lower bound."""
    version = (REPO / "VERSION").read_text(encoding="utf-8").strip()
    for distribution in DISTRIBUTIONS:
        assert _dynamic_version_file(distribution).resolve() == (REPO / "VERSION").resolve(), distribution
    major, minor, _ = (int(part) for part in version.split("."))
    sibling_range = f"<{major}.{minor + 1},>={major}.{minor}"
    for distribution in DISTRIBUTIONS:
        for req in _every_requirement(distribution):
            pinned = any(spec.operator in ("==", "===") for spec in req.specifier)
            lower = any(spec.operator in (">=", "~=", ">") for spec in req.specifier)
            if req.name in DISTRIBUTIONS:
                assert str(req.specifier) == sibling_range, f"{distribution}: {req}"
            else:
                assert not pinned and lower, f"{distribution}: {req} needs a range with a lower bound"


def test_each_distribution_ships_only_its_package() -> None:
    for distribution, path in DISTRIBUTIONS.items():
        assert not (path / "src" / ROOT / "__init__.py").exists(), "backscroll is a namespace package"
        if distribution != "backscroll":
            packages = {
                p.name for p in (path / "src" / ROOT).iterdir() if p.is_dir() and p.name != "__pycache__"
            }
            assert packages == {distribution.removeprefix("backscroll-")}
