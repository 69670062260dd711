"""Accent and case folding, and query words split like the index tokenizer."""

from __future__ import annotations

import re
import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from backscroll.indexer.textfold import (
    CJK_RANGES,
    IDENT_RE,
    WORD_RE,
    fold,
    fold_with_offsets,
    ident_tokens,
    word_tokens,
    words,
)


@pytest.mark.parametrize(
    ("text", "folded"),
    [
        ("đ", "d"),
        ("Đ", "d"),
        ("ø", "o"),
        ("Ø", "o"),
        ("æ", "ae"),
        ("Æ", "ae"),
        ("ß", "ss"),
        ("ẞ", "ss"),
        ("ł", "l"),
        ("Ł", "l"),
        ("œ", "oe"),
        ("þ", "th"),
        ("ð", "d"),
        ("ı", "i"),
        ("İ", "i"),
        ("é", "e"),
        ("e\u0301", "e"),  # decomposed é
        ("Ắ", "a"),
        ("ñ", "n"),
        ("ﬁ", "fi"),
    ],
)
def test_letters_fold_like_asciifolding(text: str, folded: str) -> None:
    assert fold(text) == folded


@pytest.mark.parametrize(
    ("text", "folded"),
    [
        ("Đơn HÀNG", "don hang"),
        ("Doanh thu tháng Bảy tăng 12%.", "doanh thu thang bay tang 12%."),
        ("Straße in Łódź", "strasse in lodz"),
        ("Ærøskøbing", "aeroskobing"),
        ("CAFÉ Crème", "cafe creme"),
        ("MiXeD CaSe ascii 123 _-!", "mixed case ascii 123 _-!"),
        ("", ""),
    ],
)
def test_fold_phrases(text: str, folded: str) -> None:
    assert fold(text) == folded


def test_fold_keeps_scripts_without_a_latin_form() -> None:
    assert fold("漢字 かな") == "漢字 かな"
    assert fold("ПРИВЕТ") == "привет"


def test_fold_with_offsets_maps_each_folded_character_to_its_source() -> None:
    assert fold_with_offsets("æb") == ("aeb", [0, 0, 1])
    assert fold_with_offsets("Straße") == ("strasse", [0, 1, 2, 3, 4, 4, 5])
    assert fold_with_offsets("e\u0301x") == ("ex", [0, 2])
    assert fold_with_offsets("") == ("", [])


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_fold_with_offsets_agrees_with_fold(text: str) -> None:
    folded, offsets = fold_with_offsets(text)
    assert folded == fold(text)
    assert len(offsets) == len(folded)
    assert offsets == sorted(offsets)
    assert all(0 <= i < len(text) for i in offsets)
    for i, source in enumerate(offsets):
        assert folded[i] in fold(text[source])


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(codec="ascii")))
def test_ascii_folding_is_lowercasing(text: str) -> None:
    assert fold(text) == text.lower()
    assert fold_with_offsets(text) == (text.lower(), list(range(len(text))))


@settings(max_examples=400, deadline=None)
@given(
    st.text(alphabet=st.characters(codec="ascii"))
    | st.text(alphabet="ab_.:-9 Zé東\u0301")
    | st.text(alphabet="ab_.-9 –’“😀·²\u00a0")  # non-ASCII word characters, and others
)
def test_the_ascii_fast_paths_split_like_the_unicode_patterns(text: str) -> None:
    folded = fold(text)
    assert word_tokens(folded) == WORD_RE.findall(folded)
    assert ident_tokens(folded) == IDENT_RE.findall(folded)


# -- words ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("acct_9931", ["acct", "9931"]),
        ("Doanh-thu, doanh THU!", ["doanh", "thu"]),  # punctuation and case
        ("Đơn hàng", ["don", "hang"]),  # Vietnamese accents and đ
        ("tháng Bảy THANG bay", ["thang", "bay"]),
        ("b a B A b", ["b", "a"]),  # first-occurrence order
        ("revenue churn", ["revenue", "churn"]),
        ("v2.0-rc1", ["v2", "0", "rc1"]),
        ("😀😀 alpha😀beta 😀", ["alpha", "beta"]),
        ("e\u0301cole", ["ecole"]),  # normalised to NFC first: one word, not "e" and "cole"
        ("?!", []),
        ("   ", []),
        ("", []),
        ("___", []),
    ],
)
def test_words(query: str, expected: list[str]) -> None:
    assert words(query) == expected


def test_lucene_syntax_is_not_special_to_words() -> None:
    query = 'say "needle" OR +absent -x && y || !(z) {a} [b] ^c ~d *e? f:g \\h /i'
    assert words(query) == [
        "say",
        "needle",
        "or",
        "absent",
        "x",
        "y",
        "z",
        "a",
        "b",
        "c",
        "d",
        "e",
        "f",
        "g",
        "h",
        "i",
    ]


def _cjk(ch: str) -> bool:
    return any(a <= ord(ch) <= b for a, b in CJK_RANGES)


def _index_tokens(text: str) -> list[str]:
    """What the index's ``sl_words`` pattern tokenizer keeps: runs of \\p{L}, \\p{N} and \\p{M},
    split where CJK (Han, Kana, Hangul) meets another script."""
    tokens: list[str] = []
    current: list[str] = []
    for ch in text:
        if unicodedata.category(ch)[0] in "LNM":
            if current and _cjk(current[-1]) != _cjk(ch):
                tokens.append("".join(current))
                current = []
            current.append(ch)
        elif current:
            tokens.append("".join(current))
            current = []
    if current:
        tokens.append("".join(current))
    return tokens


# Letters, digits, punctuation, symbols and separators of many scripts; no combining marks (see below).
_NO_MARKS = st.characters(exclude_categories=["Mn", "Mc", "Me", "Cs"])


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=_NO_MARKS))
def test_words_split_like_the_index_tokenizer(text: str) -> None:
    text = unicodedata.normalize("NFC", text)
    expected = list(dict.fromkeys(f for f in (fold(t) for t in _index_tokens(text)) if f))
    assert words(text) == expected


def test_word_re_is_letters_and_digits() -> None:
    assert WORD_RE.findall("a_b c-d 1.2 ĐƠN") == ["a", "b", "c", "d", "1", "2", "ĐƠN"]
    assert WORD_RE.findall("用Python写的 東京タワー") == ["用", "Python", "写的", "東京タワー"]
    assert WORD_RE.flags & re.UNICODE


def test_words_keep_combining_marks_like_the_index() -> None:
    assert words("हिन्दी") == _index_tokens("हिन्दी") == ["हिन्दी"]
