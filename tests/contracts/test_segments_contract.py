"""Identifiers typed in part or with typos, on every backend and both search paths: a segment, its
separator and the start of the next one inside a longer identifier or path (``parse_he`` in
``self.parse_header``, ``query/sc`` in ``query/scoring.py``), and a dotted name with an edit in
each of its parts (``exmaple.cmo`` for ``example.com``)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from backscroll.query import Scope, SessionQueryRequest

from .conftest import _PARAMS, Harness, make_harness
from .test_relevance_contract import _event, _header

SEG = "seg-main"

SEG_TEXTS = [
    "call self.parse_header(raw) first",  # 0
    "reparse_header is not a parse_he fragment at a word start",  # 1 (holds the fragment whole)
    "settings live in app/conf.yaml",  # 2
    "DEFAULT_MAX_BYTES is 4096",  # 3
    "see query/scoring.py for the tiers",  # 4
    "visit example.com today",  # 5
    "the settings.json file",  # 6
    "an example of com ports",  # 7: the parts of exmaple.cmo apart, each one edit away
    "os_read_chunk(fd) returns bytes",  # 8
    "rereparse_headers here",  # 9: the fragment inside a word, never at a segment start
    "the example.org mirror",  # 10: three edits from exmaple.cmo
]


def _records() -> list[dict[str, Any]]:
    return [
        _header(f"{SEG}-ws", SEG),
        *(_event(f"{SEG}-ws", SEG, seq, text) for seq, text in enumerate(SEG_TEXTS)),
    ]


@pytest.fixture(scope="module", params=_PARAMS)
def seg(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Harness]:
    with make_harness(request.param, tmp_path_factory.mktemp(f"seg-{request.param}")) as made:
        made.append_all(_records())
        assert made.index().dead_lettered == 0
        yield made


Path = tuple[Scope, int | None]

PATHS = [
    pytest.param((Scope.session(SEG), None), id="session-scan"),
    pytest.param((Scope.session(SEG), 0), id="session-index"),
    pytest.param((Scope.workspace(f"{SEG}-ws"), 0), id="workspace-index"),
]


def _seqs(harness: Harness, path: Path, query: str) -> list[int]:
    scope, scan = path
    provider = harness.provider(scope) if scan is None else harness.provider(scope, scan_max_rows=scan)
    result = provider.search(SessionQueryRequest(query=query, limit=10))
    assert not result.partial
    return [m.seq for m in result.matches]


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("parse_he", [1, 0]),  # whole in 1 (newer), from a segment on in 0; never inside "rereparse"
        ("conf.y", [2]),
        ("MAX_B", [3]),
        ("read_ch", [8]),
        ("query/sc", [4]),
    ],
)
def test_an_identifier_cut_after_a_separator_is_found_inside_longer_ones(
    seg: Harness, path: Path, query: str, expected: list[int]
) -> None:
    assert _seqs(seg, path, query) == expected


@pytest.mark.parametrize("path", PATHS)
def test_a_dotted_name_with_an_edit_in_each_part_is_a_two_edit_typo(seg: Harness, path: Path) -> None:
    # Its parts in a row, each one edit away (two edits in all), rank above the parts apart.
    assert _seqs(seg, path, "exmaple.cmo") == [5, 7]
    assert _seqs(seg, path, "setings.jsno") == [6]


@pytest.mark.parametrize("path", PATHS)
def test_a_dotted_name_with_one_edit_ranks_above_two(seg: Harness, path: Path) -> None:
    assert _seqs(seg, path, "example.cmo") == [5, 7]
