"""Code, tests and docs say what they mean in words a newcomer can read.

A reference into a document the reader does not have (a specification's section or decision
label, a numbered scenario, an issue number, the name of a past work session) tells them nothing:
the text must state the behaviour itself. The product's previous name must not come back either.
The files read are the repository's tracked and new (not ignored) text files.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from functools import cache
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

#: The product's previous name, built from pieces so that this file does not hold it.
PREVIOUS_NAME = "session" + "log"

_ORDINAL = (
    r"(?:(?:twenty|thirty|forty|fifty)-[a-z]+|fifth|sixth|seventh|eighth|ninth|tenth|eleventh"
    r"|twelfth|[a-z]+teenth|[a-z]+tieth)"
)

#: What each kind of private reference looks like, with the reason it is refused.
PRIVATE_REFERENCES: dict[str, re.Pattern[str]] = {
    "a section sign (a specification's section)": re.compile("\u00a7"),
    "a specification's section, decision or file": re.compile(
        r"\bspec(?:ification)?\s+(?:\d|D\d)|\bthe spec\b|\w-spec\.md\b", re.IGNORECASE
    ),
    "a decision label such as D and a number": re.compile(r"\bD(?:[1-9]|1[0-9])\b"),
    "a scenario number": re.compile(r"\bscenarios?\s+\d", re.IGNORECASE),
    "an issue number": re.compile(r"\bissues?\s+(?:#\s*)?\d", re.IGNORECASE),
    "a scenario or issue number in a name": re.compile(r"(?:scenario|issue)s?_\d", re.IGNORECASE),
    "a test named by a scenario's number": re.compile(r"\bdef test_\d{2}_"),
    "a decision label in a name": re.compile(r"\b(?:\w+_)?d(?:[1-9]|1[0-9])_\w+"),
    "a work session's name": re.compile(rf"\b{_ORDINAL}\s+sessions?\b", re.IGNORECASE),
    "the product's previous name": re.compile(re.escape(PREVIOUS_NAME), re.IGNORECASE),
}


@cache
def repository_files() -> tuple[Path, ...]:
    """Tracked and new (not ignored) files of the checkout that still exist on disk."""
    git = shutil.which("git")
    if git is None or not (REPO / ".git").exists():
        return ()
    listed = subprocess.run(
        [git, "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        check=True,
        capture_output=True,
    ).stdout.decode()
    paths = {REPO / name for name in listed.split("\0") if name}
    return tuple(sorted(path for path in paths if path.is_file()))


def text_of(path: Path) -> str | None:
    """The file's text, or ``None`` for a binary file (images, archives)."""
    data = path.read_bytes()
    if b"\0" in data:
        return None
    try:
        return data.decode()
    except UnicodeDecodeError:
        return None


def private_references(text: str) -> list[tuple[int, str, str]]:
    """``(line number, kind, matched text)`` of every private reference in ``text``."""
    found: list[tuple[int, str, str]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        for kind, pattern in PRIVATE_REFERENCES.items():
            found.extend((number, kind, match.group(0)) for match in pattern.finditer(line))
    return found


@pytest.mark.parametrize(
    "text",
    [
        "see " + "spec " + "3.5",
        "(" + "D" + "8)",
        "D" + "2's order",
        "scenario" + "s 31–49",
        "issue" + " 15's table",
        "the twenty-sev" + "enth session",
        "Welcome to " + PREVIOUS_NAME.title(),
        "\u00a7" + "2",
        "def test_scen" + "ario_52_live_only():",
        "def test_" + "05_limit_is_clamped():",
        "def test_d" + "1_match_blocks():",
    ],
)
def test_each_kind_of_private_reference_is_found(text: str) -> None:
    assert private_references(text)


@pytest.mark.parametrize(
    "text",
    [
        "a session of another workspace is not found",
        "No searchable history yet in this session.",
        "spec:\n  replicas: 2",
        "the first session of a workspace",
        "a session log is the source of truth",
        "D2D2D2 is a colour",
        "def test_1000_random_queries():",
    ],
)
def test_ordinary_text_is_not_a_private_reference(text: str) -> None:
    assert not private_references(text)


def test_no_file_refers_to_private_documents_or_the_previous_name() -> None:
    files = repository_files()
    if not files:
        pytest.skip("not a git checkout: no list of the repository's files")
    offending: list[str] = []
    for path in files:
        text = text_of(path)
        if text is None:
            continue
        for number, kind, matched in private_references(text):
            offending.append(f"{path.relative_to(REPO)}:{number}: {kind}: {matched!r}")
    assert not offending, "say it in words instead:\n" + "\n".join(offending)
