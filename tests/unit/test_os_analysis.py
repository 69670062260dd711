"""The index's tokenizers split text as ``textfold`` does: their automata's character classes,
read back from the settings sent to OpenSearch and run here with the longest-match rule of Lucene's
``simple_pattern`` tokenizer, give ``WORD_RE`` and ``IDENT_RE``'s tokens on any text. The real
server is checked against the same functions in ``tests/integration/test_os_tokenizers_live.py``."""

from __future__ import annotations

import unicodedata
from bisect import bisect_right

from hypothesis import given, settings
from tests.contracts.token_texts import TOKEN_TEXTS

from backscroll.indexer.opensearch.analysis import analysis_settings
from backscroll.indexer.opensearch.mappings import events_index_body, sessions_index_body
from backscroll.indexer.textfold import CJK_RANGES, ident_tokens, word_tokens

_JOINERS = "_.:-"


class _Class:
    """A character class of the form ``_lucene_class`` writes: ``[a-zé...]``."""

    def __init__(self, text: str) -> None:
        assert text[0] == "[" and text[-1] == "]"
        body, starts, ends, i = text[1:-1], [], [], 0
        while i < len(body):
            if i + 2 < len(body) and body[i + 1] == "-":
                starts.append(ord(body[i]))
                ends.append(ord(body[i + 2]))
                i += 3
            else:
                starts.append(ord(body[i]))
                ends.append(ord(body[i]))
                i += 1
        assert starts == sorted(starts)
        self.starts, self.ends = starts, ends

    def __contains__(self, ch: str) -> bool:
        at = bisect_right(self.starts, ord(ch)) - 1
        return at >= 0 and ord(ch) <= self.ends[at]


def _classes() -> tuple[_Class, _Class, _Class]:
    tokenizers = analysis_settings()["tokenizer"]
    words, idents = tokenizers["sl_words"], tokenizers["sl_idents"]
    assert words["type"] == idents["type"] == "simple_pattern"
    cjk, rest = words["pattern"].split("+|", 1)
    start, word = rest[: rest.index("][") + 1], rest[rest.index("][") + 1 : -1]
    assert idents["pattern"] == f"{word}+([_.:\\-]{word}+)*"
    assert rest.endswith("]*")
    return _Class(cjk), _Class(start), _Class(word)


CJK, START, WORD = _classes()


def _run(text: str, i: int, cls: _Class) -> int:
    while i < len(text) and text[i] in cls:
        i += 1
    return i


def _automaton_words(text: str) -> list[str]:
    """``[cjk]+|[start][word]*``, longest match at each position, else one character on."""
    out, i = [], 0
    while i < len(text):
        if text[i] in CJK:
            end = _run(text, i, CJK)
        elif text[i] in START:
            end = _run(text, i + 1, WORD)
        else:
            i += 1
            continue
        out.append(text[i:end])
        i = end
    return out


def _automaton_idents(text: str) -> list[str]:
    """``[word]+([_.:-][word]+)*`` as above, then the ``sl_joined`` filter (a joiner kept)."""
    out, i = [], 0
    while i < len(text):
        if text[i] not in WORD:
            i += 1
            continue
        end = _run(text, i, WORD)
        while end + 1 < len(text) and text[end] in _JOINERS and text[end + 1] in WORD:
            end = _run(text, end + 1, WORD)
        token, i = text[i:end], end
        if any(j in token for j in _JOINERS):
            out.append(token)
    return out


@settings(max_examples=600, deadline=None)
@given(TOKEN_TEXTS)
def test_the_index_tokenizers_split_like_textfold(text: str) -> None:
    assert _automaton_words(text) == word_tokens(text)
    assert _automaton_idents(text) == ident_tokens(text)


def test_every_assigned_code_point_is_classed_like_textfold() -> None:
    for cp in range(0x110000):
        ch = chr(cp)
        if unicodedata.category(ch) == "Cn":
            continue
        cjk = any(a <= cp <= b for a, b in CJK_RANGES)
        wordlike = ch.isalnum() or unicodedata.category(ch).startswith("M")
        assert (ch in WORD) == (wordlike and (not cjk or unicodedata.category(ch).startswith("M"))), hex(cp)
        assert (ch in CJK) == (wordlike and cjk), hex(cp)
        assert (ch in START) == (ch in WORD and ch not in CJK), hex(cp)


def test_both_indices_carry_the_same_analysis() -> None:
    events = events_index_body()["settings"]["analysis"]
    assert events == sessions_index_body()["settings"]["analysis"] == analysis_settings()
    events["tokenizer"].clear()
    assert analysis_settings()["tokenizer"], "each call is a fresh copy"


def test_identifier_filter_runs_before_the_truncation() -> None:
    filters = analysis_settings()["analyzer"]["sl_ident"]["filter"]
    assert filters.index("sl_joined") < filters.index("sl_truncate")


def test_unassigned_code_points_join_the_ranges_around_them_only() -> None:
    """Unassigned code points between two word ranges are word characters for the automata (fewer
    ranges: cheaper matchers); elsewhere, and across the border of the CJK ranges, they are not."""
    unassigned = [cp for cp in range(0x110000) if unicodedata.category(chr(cp)) == "Cn"]
    joined = [cp for cp in unassigned if chr(cp) in WORD or chr(cp) in CJK]
    assert 0 < len(joined) < len(unassigned) // 10
    for cp in joined:
        below, above = cp - 1, cp + 1
        while unicodedata.category(chr(below)) == "Cn":
            below -= 1
        while unicodedata.category(chr(above)) == "Cn":
            above += 1
        for cls in (WORD, CJK, START):
            if chr(cp) in cls:
                assert chr(below) in cls and chr(above) in cls, hex(cp)
        cjk = any(a <= cp <= b for a, b in CJK_RANGES)
        assert (chr(cp) in CJK) == cjk, hex(cp)
    assert len(START.starts) < 300 and len(CJK.starts) < 20
