"""A typo's reading found inside longer words, on every backend and both search paths: ``pilxed``
is read as ``piled``, and ``compiled`` holds it too (the benchmark's ``typo1_insert`` variant)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from backscroll.query import Scope, SessionQueryRequest

from .conftest import _PARAMS, Harness, make_harness
from .test_relevance_contract import _event, _header

INSIDE = "ins-main"
FULL = "ins-full"  # a page full of one-edit matches
SHORT = "ins-short"  # a typed word too short to be read inside longer words
TYPED = "ins-typed"  # the typed word is in the scope

INSIDE_TEXTS = [
    "the build piled up overnight",  # 0: the reading "piled" as a word (one edit)
    "compiled the module again",  # 1: "piled" inside a longer word
    "a pile of logs",  # 2: two edits ("pile")
    "recompiled with new flags",  # 3: "piled" inside, newer
    "nothing relevant here",  # 4
    "a pilot light",  # 5
    "piledriver rental",  # 6: "piled" at the start of a longer word
]
# Twelve one-edit matches fill the first page; the entries inside longer words come after them.
FULL_TEXTS = [
    "decompiled output",  # 0: "piled" inside
    *(f"piled batch {n}" for n in range(12)),  # 1..12
]
# "bolto" (five letters) is read as "bolt" (four) inside "thunderbolt"; "bolt" typed as "bolx"
# (four letters) is never read inside a longer word.
SHORT_TEXTS = ["a bolt of cloth", "thunderbolt weather"]
TYPED_TEXTS = ["compiled code", "the piled crates", "pilxed as typed"]


def _records() -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    sets = ((INSIDE, INSIDE_TEXTS), (FULL, FULL_TEXTS), (SHORT, SHORT_TEXTS), (TYPED, TYPED_TEXTS))
    for sid, texts in sets:
        out += [_header(f"{sid}-ws", sid), *(_event(f"{sid}-ws", sid, seq, t) for seq, t in enumerate(texts))]
    return out


@pytest.fixture(scope="module", params=_PARAMS)
def ins(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Harness]:
    with make_harness(request.param, tmp_path_factory.mktemp(f"ins-{request.param}")) as made:
        made.append_all(_records())
        assert made.index().dead_lettered == 0
        yield made


Path = tuple[Scope, int | None]


def _provider(harness: Harness, path: Path) -> Any:
    scope, scan = path
    return harness.provider(scope) if scan is None else harness.provider(scope, scan_max_rows=scan)


def _pages(harness: Harness, path: Path, query: str, limit: int) -> list[list[tuple[str, int]]]:
    """Every page of ``query``, following the cursor to the end."""
    provider = _provider(harness, path)
    pages: list[list[tuple[str, int]]] = []
    cursor: str | None = None
    while True:
        result = provider.search(SessionQueryRequest(query=query, limit=limit, cursor=cursor))
        assert not result.partial
        pages.append([(m.session_id, m.seq) for m in result.matches])
        cursor = result.next_cursor
        if cursor is None:
            return pages


def _every_entry_once(harness: Harness, path: Path, query: str, expected: list[int]) -> None:
    """Pages of two: the first two of ``expected`` first, then every other entry once. (A later
    page orders its own entries by reading again, so the order past the first page may differ.)"""
    seqs = [seq for page in _pages(harness, path, query, 2) for _, seq in page]
    assert seqs[:2] == expected[:2]
    assert sorted(seqs) == sorted(expected) and len(seqs) == len(set(seqs))


def _paths(sid: str) -> list[Any]:
    """The session scored entry by entry, and the session and its workspace (one per data set)
    through the index (``scan_max_rows=0``)."""
    return [
        pytest.param((Scope.session(sid), None), id="session-scan"),
        pytest.param((Scope.session(sid), 0), id="session-index"),
        pytest.param((Scope.workspace(f"{sid}-ws"), 0), id="workspace-index"),
    ]


@pytest.mark.parametrize("path", _paths(INSIDE))
def test_a_reading_inside_longer_words_ranks_with_two_edit_typos(ins: Harness, path: Path) -> None:
    # The one-edit reading, then the two-step tier: the reading inside longer words (closest
    # spelling: every letter of "piled" kept) before "pile", newest first.
    expected = [0, 6, 2, 3, 1]
    (page,) = _pages(ins, path, "pilxed", 10)
    assert page == [(INSIDE, seq) for seq in expected]
    _every_entry_once(ins, path, "pilxed", expected)


@pytest.mark.parametrize("path", _paths(INSIDE))
def test_a_reading_inside_longer_words_is_scored_in_its_tier(ins: Harness, path: Path) -> None:
    result = _provider(ins, path).search(SessionQueryRequest(query="pilxed", limit=10))
    scores = {m.seq: m.score for m in result.matches if m.session_id == INSIDE}
    assert scores[1] == pytest.approx(scores[2], abs=0.01)  # inside a word, two edits: one tier
    assert 1.5 <= scores[1] < 2.0 <= scores[0] < 2.5
    excerpt = next(m.excerpt for m in result.matches if m.seq == 1 and m.session_id == INSIDE)
    assert "compiled" in excerpt


@pytest.mark.parametrize("path", _paths(FULL))
def test_entries_inside_longer_words_follow_a_full_page_of_one_edit_matches(ins: Harness, path: Path) -> None:
    pages = _pages(ins, path, "pilxed", 10)
    seqs = [seq for page in pages for sid, seq in page if sid == FULL]
    assert seqs[:12] == list(range(12, 0, -1))  # the one-edit tier first, newest first
    assert 0 in seqs[12:]  # then "decompiled"
    assert len(seqs) == len(set(seqs))


@pytest.mark.parametrize("path", _paths(SHORT))
def test_only_words_of_five_letters_are_read_inside_longer_words(ins: Harness, path: Path) -> None:
    (page,) = _pages(ins, path, "bolto", 10)
    assert [seq for sid, seq in page if sid == SHORT] == [0, 1]
    (page,) = _pages(ins, path, "bolx", 10)
    assert [seq for sid, seq in page if sid == SHORT] == [0]


@pytest.mark.parametrize("path", _paths(INSIDE))
def test_an_entry_matching_the_typed_word_keeps_its_own_tier(ins: Harness, path: Path) -> None:
    # "piled" typed right: exact, prefix, then the one-edit tier (the word inside longer words
    # first, then "pile"); it is not read inside longer words.
    (page,) = _pages(ins, path, "piled", 10)
    assert page == [(INSIDE, seq) for seq in [0, 6, 3, 2, 1]]


@pytest.mark.parametrize("path", _paths(TYPED))
def test_a_word_the_scope_holds_as_typed_is_not_read_inside_longer_words(ins: Harness, path: Path) -> None:
    (page,) = _pages(ins, path, "pilxed", 10)
    assert page == [(TYPED, 2), (TYPED, 1)]  # "compiled" is not looked up


@pytest.mark.parametrize("api", ["async"], indirect=True)
@pytest.mark.parametrize("path", _paths(INSIDE))
def test_the_async_provider_reads_inside_longer_words_too(ins: Harness, api: str, path: Path) -> None:
    _every_entry_once(ins, path, "pilxed", [0, 6, 2, 3, 1])
