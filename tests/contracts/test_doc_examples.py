"""Every fenced block of README.md, deploy/README.md and docs/*.md is a tested program.

A block is treated by the HTML comment right before its fence, ``<!-- example: KIND [backend=NAME]
[reason="…"] -->``, or, without one, by its language:

* ``run`` (default for ``python``, ``bash``, ``sh``): the doc's ``run`` blocks run in order in one
  fresh working directory, python blocks in one shared namespace, shell blocks with ``bash -e``
  (``backscroll`` and ``.venv/bin/backscroll`` on hand). Once per backend: embedded (a temporary
  ``XDG_DATA_HOME``, nothing else set, as a first-time user has it) and Kafka + OpenSearch (the
  servers of ``backscroll up``, with a topic, index prefix and consumer group of the test's own);
  ``backend=NAME`` runs the block on that backend only.
* ``syntax``: a command reference, never run. Every ``backscroll`` command line (``a | b`` lists
  several; ``[--flag]`` is optional syntax) must name real subcommands and options; ``python -m``
  lines a module whose ``--help`` lists the options; a repository script must exist and know its
  arguments. A python block compiles and its imports resolve.
* ``env``: ``NAME=value`` lines; every ``BACKSCROLL_*`` name is a documented setting.
* ``output``: what a program prints; not run.
* ``skip reason="…"``: not checked, for the reason given (a reason is required).
* ``json`` (default for ``json``, ``jsonl``): parsed, as one document or one per line;
  ``schema=PATH`` validates each against a JSON Schema of the repository, ``def=A,B`` against one
  of its ``$defs``. ``text``, ``mermaid`` and blocks without a language are figures.

A file may hand its blocks to another test with ``<!-- examples: tested-by PATH -->``. A block of any
other language without a marker fails the test until someone decides how it is checked.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shlex
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

import click
import jsonschema
import pytest
import typer

from backscroll.cli.main import app

from .conftest import make_harness

ROOT = Path(__file__).resolve().parents[2]
DOCS = sorted([ROOT / "README.md", ROOT / "deploy" / "README.md", *(ROOT / "docs").glob("*.md")])
KINDS = frozenset({"run", "syntax", "env", "output", "skip", "json"})
DEFAULTS = {"python": "run", "bash": "run", "sh": "run", "json": "json", "jsonl": "json"}
FIGURES = frozenset({"", "text", "mermaid"})
FENCE = re.compile(r"^```([^\n`]*)\n(.*?)^```[ \t]*$", re.M | re.S)
MARKER = re.compile(r"^\s*<!--\s*example:\s*(\S+)((?:\s+[\w-]+=(?:\"[^\"]*\"|\S+))*)\s*-->\s*$")
OPTION = re.compile(r"([\w-]+)=(?:\"([^\"]*)\"|(\S+))")
TESTED_BY = re.compile(r"^<!--\s*examples:\s*tested-by\s+(\S+)\s*-->\s*$", re.M)
RUN_TIMEOUT_S = 240


@dataclass
class Block:
    path: Path
    line: int
    lang: str
    body: str
    kind: str
    options: dict[str, str] = field(default_factory=dict)
    problem: str | None = None

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def _marker(text: str, start: int) -> tuple[str, dict[str, str]] | None:
    before = text[:start].rstrip("\n").rsplit("\n", 1)[-1]
    found = MARKER.search(before)
    if found is None:
        return None
    options = {m[0]: m[1] or m[2] for m in OPTION.findall(found[2])}
    return found[1], options


def blocks(path: Path) -> list[Block]:
    text = path.read_text(encoding="utf-8")
    made: list[Block] = []
    for fence in FENCE.finditer(text):
        info = fence[1].strip()
        lang = info.split()[0] if info else ""
        line = text.count("\n", 0, fence.start()) + 1
        marked = _marker(text, fence.start())
        block = Block(path, line, lang, fence[2], DEFAULTS.get(lang, "figure" if lang in FIGURES else ""))
        if marked is not None:
            block.kind, block.options = marked
        if block.kind not in KINDS | {"figure"}:
            block.problem = f"a {lang or 'plain'} block needs <!-- example: run|syntax|env|output|skip -->"
        elif block.kind == "skip" and not block.options.get("reason"):
            block.problem = 'a skipped block needs reason="…"'
        elif block.options.get("backend", "embedded") not in ("embedded", "kafka-opensearch"):
            block.problem = f"unknown backend {block.options['backend']!r}"
        made.append(block)
    return made


def handed_to(path: Path) -> Path | None:
    found = TESTED_BY.search(path.read_text(encoding="utf-8"))
    return None if found is None else ROOT / found[1]


def own_blocks() -> Iterator[Block]:
    """Every block this test checks (not those of a file another test runs)."""
    for path in DOCS:
        other = handed_to(path)
        for block in blocks(path):
            if other is None or block.kind not in ("run", "figure"):
                yield block


def test_every_block_is_decided() -> None:
    problems = [f"{b.where}: {b.problem}" for path in DOCS for b in blocks(path) if b.problem]
    for path in DOCS:
        other = handed_to(path)
        if other is not None and not other.is_file():
            problems.append(f"{path.relative_to(ROOT)}: tested-by {other} does not exist")
    assert not problems, "\n".join(problems)


def json_documents(block: Block) -> list[object]:
    try:
        return [json.loads(block.body)]
    except ValueError:
        documents = []
        for number, line in enumerate(block.body.splitlines(), 1):
            if line.strip():
                try:
                    documents.append(json.loads(line))
                except ValueError as err:
                    pytest.fail(f"{block.where}: line {number} is not JSON: {err}")
        return documents


def _validator(block: Block) -> jsonschema.Draft202012Validator | None:
    """``schema=PATH`` validates every document against that schema, ``def=A,B`` against one of its
    definitions."""
    if "schema" not in block.options:
        return None
    schema = json.loads((ROOT / block.options["schema"]).read_text(encoding="utf-8"))
    names = [name for name in block.options.get("def", "").split(",") if name]
    if names:
        refs = [{"$ref": f"#/$defs/{name}"} for name in names]
        schema = {"$defs": schema["$defs"], "oneOf": refs}
    return jsonschema.Draft202012Validator(schema)


def test_json_blocks_parse_and_match_their_schema() -> None:
    problems = []
    for block in own_blocks():
        if block.kind != "json":
            continue
        validator = _validator(block)
        for document in json_documents(block):
            if validator is not None:
                problems += [f"{block.where}: {error.message}" for error in validator.iter_errors(document)]
    assert not problems, "\n".join(problems)


# -- settings and command references -----------------------------------------------------------------


def settings_names() -> set[str]:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    return set(re.findall(r"^\| `(BACKSCROLL_[A-Z0-9_]+)` \|", readme, re.M))


ASSIGNMENT = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=")


def _env_problems(names: list[str]) -> list[str]:
    known = settings_names()
    return [
        f"{name} is not a documented setting"
        for name in names
        if name.startswith("BACKSCROLL_") and name not in known
    ]


def test_env_blocks_name_real_settings() -> None:
    problems = []
    for block in own_blocks():
        if block.kind == "env":
            names = [m[1] for line in block.body.splitlines() if (m := ASSIGNMENT.match(line.strip()))]
            problems += [f"{block.where}: {p}" for p in _env_problems(names)]
            if not names:
                problems.append(f"{block.where}: no NAME=value line")
    assert not problems, "\n".join(problems)


def command_lines(body: str) -> list[list[str]]:
    """The commands of a shell block: continuations joined, comments and ``$(…)`` dropped, ``a | b``
    split, optional-syntax brackets removed."""
    joined = re.sub(r"\\\n", " ", body)
    commands: list[list[str]] = []
    for raw in joined.splitlines():
        line = re.sub(r"(^|\s)#.*$", "", raw)
        line = re.sub(r"\$\([^)]*\)", "X", line).strip()
        if not line:
            continue
        words = [w.strip("[]") for w in shlex.split(line)]
        current: list[str] = []
        for word in words:
            if word == "|":
                commands.append(current)
                current = []
            elif word:
                current.append(word)
        commands.append(current)
    return [c for c in commands if c]


def _cli() -> click.Group:
    group = typer.main.get_command(app)
    assert hasattr(group, "commands")
    return cast(click.Group, group)


def _options(command: click.Command) -> set[str]:
    return {name for param in command.params for name in (*param.opts, *param.secondary_opts)}


def _backscroll_problems(words: list[str]) -> list[str]:
    command: click.Command = _cli()
    allowed = set(_options(command))
    rest = list(words)
    while hasattr(command, "commands"):
        while rest and rest[0].startswith("-"):
            rest.pop(0)
        if not rest or rest[0] not in cast(click.Group, command).commands:
            return [f"`backscroll {' '.join(words)}`: no subcommand {rest[0] if rest else '(none)'}"]
        command = cast(click.Group, command).commands[rest.pop(0)]
        allowed |= _options(command)
    unknown = [w for w in rest if w.startswith("-") and w.split("=")[0] not in allowed]
    return [f"`backscroll {' '.join(words)}`: unknown option {u}" for u in unknown]


_HELP: dict[tuple[str, ...], str] = {}


def _module_problems(words: list[str]) -> list[str]:
    module = words[0]
    if importlib.util.find_spec(module) is None:
        return [f"no module {module}"]
    positional = tuple(w for w in words[1:2] if not w.startswith("-"))  # a subcommand
    key = (module, *positional)
    if key not in _HELP:
        shown = subprocess.run(
            [sys.executable, "-m", *key, "--help"], cwd=ROOT, capture_output=True, text=True, timeout=120
        )
        if shown.returncode:
            return [f"`python -m {' '.join(key)} --help` failed: {shown.stderr.strip()[-300:]}"]
        _HELP[key] = shown.stdout + shown.stderr
    flags = [w.split("=")[0] for w in words[1:] if w.startswith("--")]
    return [f"`python -m {' '.join(key)} --help` lists no {flag}" for flag in flags if flag not in _HELP[key]]


def _pip_problems(words: list[str]) -> list[str]:
    optional = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    extras = [e for w in words for group in re.findall(r"\[([\w,-]+)\]", w) for e in group.split(",")]
    return [f"no extra {extra!r} in pyproject.toml" for extra in extras if extra not in optional]


def _script_problems(words: list[str]) -> list[str]:
    script = ROOT / words[0]
    if not script.is_file():
        return [f"no script {words[0]}"]
    text = script.read_text(encoding="utf-8")
    return [f"{words[0]} does not know {w}" for w in words[1:] if w not in text]


def syntax_problems(body: str) -> list[str]:
    problems: list[str] = []
    for words in command_lines(body):
        names = []
        while words and ASSIGNMENT.match(words[0]):
            names.append(words.pop(0).split("=")[0])
        problems += _env_problems(names)
        head = words[0] if words else ""
        if head in ("backscroll", ".venv/bin/backscroll"):
            problems += _backscroll_problems(words[1:])
        elif head in ("python", ".venv/bin/python") and words[1:2] == ["-m"]:
            problems += _module_problems(words[2:])
        elif head == "pip" and words[1:2] == ["install"]:
            problems += _pip_problems(words[2:])
        elif head == "bash" and len(words) > 1:
            problems += _script_problems(words[1:])
        elif (ROOT / head).is_file():
            problems += _script_problems(words)
        elif head in _cli().commands:  # the continuation of a `backscroll a | b` list
            problems += _backscroll_problems(words)
        else:
            problems.append(f"`{' '.join(words)}`: not a command this test can check (mark the block skip)")
    return problems


def _python_syntax_problems(block: Block) -> list[str]:
    import ast

    tree = ast.parse(block.body, block.where)
    imports = [node for node in tree.body if isinstance(node, ast.Import | ast.ImportFrom)]
    code = compile(ast.Module(body=list(imports), type_ignores=[]), block.where, "exec")
    try:
        exec(code, {})
    except ImportError as err:
        return [str(err)]
    return []


def test_command_references_name_real_commands() -> None:
    problems = []
    for block in own_blocks():
        if block.kind != "syntax":
            continue
        found = _python_syntax_problems(block) if block.lang == "python" else syntax_problems(block.body)
        problems += [f"{block.where}: {p}" for p in found]
    assert not problems, "\n".join(problems)


# -- running --------------------------------------------------------------------------------------

DRIVER = """
import json, subprocess, sys, traceback
namespace = {"__name__": "__main__"}
for block in json.load(open(sys.argv[1], encoding="utf-8")):
    print(f"--- {block['where']}", file=sys.stderr, flush=True)
    if block["lang"] == "python":
        try:
            exec(compile(block["body"], block["where"], "exec"), namespace)
        except BaseException:
            traceback.print_exc()
            sys.exit(f"FAILED: {block['where']}")
    else:
        done = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", block["body"]], timeout=BLOCK_TIMEOUT)
        if done.returncode:
            sys.exit(f"FAILED: {block['where']} (exit {done.returncode})")
""".replace("BLOCK_TIMEOUT", str(RUN_TIMEOUT_S // 2))


def runnable(path: Path, backend: str) -> list[Block]:
    if handed_to(path) is not None:
        return []
    return [
        b
        for b in blocks(path)
        if b.kind == "run" and b.options.get("backend", backend) == backend and not b.problem
    ]


RUNS = [
    pytest.param(path, backend, id=f"{path.relative_to(ROOT)}-{backend}", marks=marks)
    for path in DOCS
    for backend, marks in (("embedded", ()), ("kafka-opensearch", pytest.mark.integration))
    if runnable(path, backend)
]


def _clean_env(directory: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("BACKSCROLL_")}
    venv_bin = str(Path(sys.executable).parent)
    env |= {
        "PATH": f"{venv_bin}{os.pathsep}{env.get('PATH', '')}",
        "XDG_DATA_HOME": str(directory / "data"),
        "XDG_STATE_HOME": str(directory / "state"),
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    return env


@pytest.mark.parametrize(("path", "backend"), RUNS)
def test_doc_examples_run(path: Path, backend: str, tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / ".venv").symlink_to(Path(sys.executable).parent.parent)
    script = [{"where": b.where, "lang": b.lang, "body": b.body} for b in runnable(path, backend)]
    (tmp_path / "blocks.json").write_text(json.dumps(script), encoding="utf-8")
    (tmp_path / "driver.py").write_text(DRIVER, encoding="utf-8")
    env = _clean_env(tmp_path)
    with make_harness(backend, tmp_path / "harness") as harness:
        if backend != "embedded":
            env |= harness.settings_env()
        done = subprocess.run(
            [sys.executable, str(tmp_path / "driver.py"), str(tmp_path / "blocks.json")],
            cwd=work,
            env=env,
            capture_output=True,
            text=True,
            timeout=RUN_TIMEOUT_S,
        )
    assert done.returncode == 0, f"{done.stderr[-4000:]}\n{done.stdout[-2000:]}"
