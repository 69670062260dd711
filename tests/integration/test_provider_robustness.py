"""Hostile and random input against the real OpenSearch provider.

Whatever the query — 10,000 characters, nothing but Lucene syntax, control characters, emoji, NUL,
or 1,000 seeded random unicode strings — the provider raises nothing but a typed
:class:`SessionQueryError` and never returns an entry outside its scope. A 1 MiB tool output still
gets a match-centred excerpt within the byte budget.
"""

from __future__ import annotations

import random
import time
import unicodedata
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from conftest import Pipeline, make_pipeline

from backscroll.indexer.document import DEFAULT_KINDS
from backscroll.query import (
    DEFAULT_LIMIT,
    OpenSearchProvider,
    Scope,
    SessionQueryError,
    SessionQueryRequest,
    SessionQueryResult,
    ToolError,
    session_query_tool,
)

_BASE = datetime(2026, 11, 1, tzinfo=UTC)
_SURFACE = {"user/message", "assistant/message", "tool/result"}
_TYPES = ("user/message", "assistant/message", "tool/call", "tool/result", "compaction/summary")
_ROLES = {
    "user/message": "user",
    "assistant/message": "assistant",
    "tool/call": "tool",
    "tool/result": "tool",
}

#: Three workspaces; every session holds every vocabulary word, so a scope leak would show.
SESSIONS = {"r1a": "rw1", "r1b": "rw1", "r1c": "rw1", "r2a": "rw2", "r2b": "rw2", "r3a": "rw3"}
_VOCAB_TEXT = (
    "revenue forecast invoice ledger deploy rollback Zürich Kraków São Paulo café naïve straße Đơn hàng "
    "Nguyễn tháng Bảy Ærøskøbing Привет мир αλφα βήτα שלום مرحبا नमस्ते हिन्दी ภาษาไทย 東京タワー "
    "서울특별시 acct_9931 x86_64 e=mc² 1,284.50 €42 #incident-7 @oncall user@example.com C:\\temp\\x.log "
    "😀 🚀 👩‍💻 🇻🇳 needle haystack"
)
VOCAB = tuple(_VOCAB_TEXT.split())
BIG_WS = "rwbig"
MIB = 1024 * 1024

_ALLOWED_CODES = {"SESSION_QUERY_INVALID_QUERY", "SESSION_QUERY_SESSION_NOT_FOUND"}
LUCENE = '+-&&||!(){}[]^"~*?:\\/'


def _event(
    session_id: str, workspace_id: str, seq: int, type_: str, text: str, **extra: Any
) -> dict[str, Any]:
    record: dict[str, Any] = {
        "v": 1,
        "kind": "event",
        "workspace_id": workspace_id,
        "session_id": session_id,
        "seq": seq,
        "type": type_,
        "time": (_BASE + timedelta(minutes=seq)).isoformat(),
        "text": text,
        "turn": seq // 3,
    }
    if type_ in _ROLES:
        record["role"] = _ROLES[type_]
    if type_ in _SURFACE:
        record["surface"] = {"op": "append"}
    record.update(extra)
    return record


def _header(session_id: str, workspace_id: str) -> dict[str, Any]:
    return {
        "v": 1,
        "kind": "header",
        "workspace_id": workspace_id,
        "session_id": session_id,
        "created_at": _BASE.isoformat(),
    }


def _big_text(needles: dict[int, str], *, line: str, size: int = MIB) -> str:
    """``size`` UTF-8 bytes of repeated ``line`` with each needle placed near its byte offset."""
    per = len(line.encode())
    lines = [line] * (size // per)
    for offset, needle in needles.items():
        lines[min(offset // per, len(lines) - 1)] = f"{needle} " + line[len(needle) + 1 :]
    text = "".join(lines)
    assert len(text.encode()) <= size
    return text


BIG_ASCII = _big_text(
    {0: "KRAKEN-7731", MIB // 2: "Leviathan", MIB - 200: "Basilisk"},
    line="2026-11-01T10:00:00Z host app-7 GET /api/v1/items status=200 latency=12ms ok\n",
)
BIG_UNICODE = _big_text(
    {MIB // 2: "Nguyễn-Zürich"},
    line="Doanh thu tháng Bảy tăng mạnh ở chi nhánh Hà Nội và Đà Nẵng; báo cáo đã gửi.\n",
)


def _corpus() -> list[dict[str, Any]]:
    rng = random.Random(7)
    records: list[dict[str, Any]] = []
    for session_id, workspace_id in SESSIONS.items():
        records.append(_header(session_id, workspace_id))
        words = list(VOCAB)
        rng.shuffle(words)
        for seq in range(40):
            type_ = _TYPES[seq % len(_TYPES)]
            chunk = words[(seq * 4) % len(words) : (seq * 4) % len(words) + 4] or words[:4]
            filler = " ".join(rng.choice(VOCAB) for _ in range(rng.randint(3, 20)))
            extra = {"tool_name": "shell"} if type_.startswith("tool/") else {}
            text = " ".join(chunk) + " " + filler
            records.append(_event(session_id, workspace_id, seq, type_, text, **extra))
    records.append(_header("big-ascii", BIG_WS))
    records.append(_event("big-ascii", BIG_WS, 0, "tool/result", BIG_ASCII, tool_name="shell"))
    records.append(_header("big-unicode", BIG_WS))
    records.append(_event("big-unicode", BIG_WS, 0, "tool/result", BIG_UNICODE, tool_name="shell"))
    return records


@pytest.fixture(scope="module")
def loaded() -> Iterator[Pipeline]:
    with make_pipeline() as pipe:
        pipe.append_all(_corpus())
        stats = pipe.index()
        assert stats.dead_lettered == 0, dict(stats.reasons)
        yield pipe


@dataclass(frozen=True)
class Scoped:
    provider: OpenSearchProvider
    allowed: frozenset[str]


def _scopes(pipe: Pipeline) -> list[Scoped]:
    def of(scope: Scope) -> Scoped:
        if scope.kind == "sessions":
            allowed = frozenset(scope.ids)
        else:
            allowed = frozenset(s for s, w in SESSIONS.items() if w in scope.ids)
        # A generous timeout: on a loaded two-core box a slow answer is not what this file tests;
        # an INDEX_FAILED caused by the query itself (a 400) still fails the test.
        return Scoped(pipe.provider(scope, request_timeout_s=30), allowed)

    return [
        of(Scope.session("r1a")),
        of(Scope.sessions(["r1b", "r2a"])),
        of(Scope.workspace("rw1")),
        of(Scope.workspace("rw2")),
        of(Scope.workspaces(["rw1", "rw2"], ops=True)),
    ]


def _check(result: SessionQueryResult, request: SessionQueryRequest, allowed: frozenset[str]) -> list[str]:
    """Every way a result can be wrong, as messages (empty when it is right)."""
    problems = []
    kinds = set(request.kinds or DEFAULT_KINDS)
    if len(result.matches) > (request.limit or DEFAULT_LIMIT):
        problems.append(f"{len(result.matches)} matches > limit {request.limit}")
    if result.partial and not result.matches:
        problems.append("partial without matches")
    for match in result.matches:
        if match.session_id not in allowed:
            problems.append(f"LEAK: {match.session_id}:{match.seq} outside {sorted(allowed)}")
        if request.session_id is not None and match.session_id != request.session_id:
            problems.append(f"LEAK: {match.session_id} while narrowed to {request.session_id}")
        if match.entry_id != f"{match.session_id}:{match.seq}":
            problems.append(f"entry id {match.entry_id} for {match.session_id}:{match.seq}")
        if match.kind not in kinds:
            problems.append(f"kind {match.kind} not in {sorted(kinds)}")
        raw = match.excerpt.encode("utf-8")  # a split code point (lone surrogate) raises here
        if len(raw) > request.excerpt_bytes:
            problems.append(f"excerpt {len(raw)} bytes > {request.excerpt_bytes}")
    return problems


def _run(scoped: Scoped, request: SessionQueryRequest) -> tuple[SessionQueryResult | None, list[str]]:
    try:
        result = scoped.provider.search(request)
    except SessionQueryError as err:
        if err.code not in _ALLOWED_CODES:
            return None, [f"{err.code}: {err.message[:200]}"]
        outside = request.session_id is not None and request.session_id not in scoped.allowed
        if err.code == "SESSION_QUERY_SESSION_NOT_FOUND" and not outside:
            return None, [f"in-scope session {request.session_id} reported missing"]
        return None, []
    except Exception as err:  # anything untyped is the bug this file exists to find
        return None, [f"untyped {type(err).__name__}: {err!s:.200}"]
    problems = _check(result, request, scoped.allowed)
    if request.session_id is not None and request.session_id not in scoped.allowed:
        problems.append(f"LEAK: out-of-scope session {request.session_id} answered")
    return result, problems


# -- random unicode ---------------------------------------------------------------------------------

_RANGES = (
    (0x21, 0x7E),
    (0x01, 0x1F),
    (0x7F, 0x9F),
    (0xA0, 0x24F),
    (0x300, 0x36F),
    (0x370, 0x3FF),
    (0x400, 0x4FF),
    (0x590, 0x5FF),
    (0x600, 0x6FF),
    (0x900, 0x97F),
    (0xE00, 0xE7F),
    (0x1E00, 0x1EFF),
    (0x2000, 0x206F),
    (0x20D0, 0x20FF),
    (0x3000, 0x30FF),
    (0x4E00, 0x9FFF),
    (0xAC00, 0xD7A3),
    (0xE000, 0xE0FF),
    (0xFB00, 0xFB4F),
    (0xFE00, 0xFE0F),
    (0xFF00, 0xFFFF),
    (0x1D400, 0x1D7FF),
    (0x1F300, 0x1FAFF),
    (0xE0000, 0xE007F),
    (0x10000, 0x10FFFF),
)
_SPACES = " \t\n\r\x0b\x0c\u00a0\u1680\u2000\u2028\u2029\u202f\u3000"


def _char(rng: random.Random, ranges: tuple[tuple[int, int], ...] = _RANGES) -> str:
    low, high = rng.choice(ranges)
    code = rng.randint(low, high)
    if code == 0 or 0xD800 <= code <= 0xDFFF:
        return "x"
    return chr(code)


def _mutate(rng: random.Random, word: str) -> str:
    if len(word) < 2:
        return word
    i = rng.randrange(len(word) - 1)
    match rng.randrange(6):
        case 0:
            return word[:i] + word[i + 1 :]
        case 1:
            return word[:i] + word[i + 1] + word[i] + word[i + 2 :]
        case 2:
            return word[:i] + _char(rng) + word[i:]
        case 3:
            return word.upper()
        case 4:
            return unicodedata.normalize("NFD", word)
        case _:
            return "".join(c for c in unicodedata.normalize("NFD", word) if not unicodedata.combining(c))


def random_query(rng: random.Random) -> str:
    shape = rng.randrange(8)
    if shape == 0:  # raw code point soup
        return "".join(_char(rng) for _ in range(rng.randint(0, 60)))
    if shape == 1:  # many words from mixed scripts
        words = ("".join(_char(rng) for _ in range(rng.randint(1, 12))) for _ in range(rng.randint(1, 40)))
        return " ".join(words)
    if shape == 2:  # one very long word in one script
        low, high = rng.choice(((0x61, 0x7A), (0x430, 0x44F), (0x4E00, 0x9FFF), (0x1EA0, 0x1EF9)))
        return "".join(chr(rng.randint(low, high)) for _ in range(rng.randint(100, 3_000)))
    if shape == 3:  # real words, typo'd, re-cased, decomposed or stripped
        return " ".join(_mutate(rng, rng.choice(VOCAB)) for _ in range(rng.randint(1, 4)))
    if shape == 4:  # query syntax soup
        parts = [
            rng.choice(VOCAB) if rng.random() < 0.4 else rng.choice(LUCENE) * rng.randint(1, 3)
            for _ in range(rng.randint(1, 12))
        ]
        return rng.choice(("", " ")).join(parts)
    if shape == 5:  # base letters drowning in combining marks
        marks = (chr(rng.randint(0x300, 0x36F)) for _ in range(rng.randint(1, 20)))
        return "".join(rng.choice("aeoçđ") + "".join(marks) for _ in range(rng.randint(1, 8)))
    if shape == 6:  # whitespace and separators of every kind around words
        spaced = "".join(rng.choice(_SPACES) + rng.choice(VOCAB) for _ in range(rng.randint(1, 6)))
        return spaced + rng.choice(_SPACES)
    return rng.choice(VOCAB) + _char(rng) * rng.randint(1, 5) + rng.choice(VOCAB)


def test_1000_random_unicode_queries_stay_typed_and_in_scope(loaded: Pipeline) -> None:
    rng = random.Random(20261101)
    scopes = _scopes(loaded)
    everyone = sorted(SESSIONS)
    jobs: list[tuple[Scoped, SessionQueryRequest]] = []
    for i in range(1_000):
        scoped = scopes[i % len(scopes)]
        session_id: str | None = None
        if i % 4 == 1:
            session_id = rng.choice(sorted(scoped.allowed))
        elif i % 4 == 3:
            session_id = rng.choice([s for s in everyone if s not in scoped.allowed] or ["nobody"])
        kinds = ("compaction/summary", "tool/result") if i % 7 == 0 else ()
        budget = rng.choice((32, 100, 600, 600, 4096))
        jobs.append(
            (
                scoped,
                SessionQueryRequest(
                    session_id=session_id,
                    query=random_query(rng),
                    kinds=kinds,
                    limit=10,
                    excerpt_bytes=budget,
                ),
            )
        )
    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=8) as pool:  # providers are shared across threads, as in an agent
        outcomes = list(pool.map(lambda job: _run(*job), jobs))
    elapsed = time.monotonic() - started
    failures = [
        f"{request.query!r:.120} (session {request.session_id}): {problems}"
        for (_, request), (_, problems) in zip(jobs, outcomes, strict=True)
        if problems
    ]
    assert not failures, f"{len(failures)} of 1000 failed:\n" + "\n".join(failures[:15])
    answered = sum(1 for result, _ in outcomes if result is not None and result.matches)
    assert answered > 300, f"only {answered} queries found anything: the corpus is not being exercised"
    assert elapsed < 180, f"1000 queries took {elapsed:.1f}s"


# -- targeted hostile queries -----------------------------------------------------------------------

LONG_QUERIES = {
    "one word": "a" * 10_000,
    "repeated words": ("revenue forecast " * 600)[:10_000],
    "distinct words": " ".join(f"w{i}" for i in range(2_000))[:10_000],
    "whitespace": " \t\n" * 3_334,
    "cjk": "東京タワー" * 2_000,
    "mixed": ("Zürich 😀 " * 1_200)[:10_000],
}


@pytest.mark.parametrize("shape", sorted(LONG_QUERIES))
def test_a_10000_character_query(loaded: Pipeline, shape: str) -> None:
    query = LONG_QUERIES[shape]
    assert len(query) >= 9_990
    for scoped in _scopes(loaded):
        started = time.monotonic()
        result, problems = _run(scoped, SessionQueryRequest(query=query))
        assert not problems, problems
        assert time.monotonic() - started < 5
        if shape == "repeated words":
            assert result is not None and result.matches and not result.partial, "two distinct words, found"
        if shape == "whitespace":
            assert result is not None and all(m.score == 0 for m in result.matches), "no words: browse"
    if shape == "distinct words":
        with pytest.raises(SessionQueryError) as caught:
            _scopes(loaded)[0].provider.search(SessionQueryRequest(query=query))
        assert caught.value.code == "SESSION_QUERY_INVALID_QUERY"
        made = session_query_tool(_scopes(loaded)[0].provider)
        assert made is not None
        with pytest.raises(ToolError, match="SESSION_QUERY_INVALID_QUERY"):
            made.run({"query": query})


def test_a_query_of_only_lucene_syntax_browses(loaded: Pipeline) -> None:
    for scoped in _scopes(loaded):
        for query in (LUCENE, LUCENE * 50, " ".join(LUCENE), "\\" * 101, '"' * 7, "*:*", "?*"):
            result, problems = _run(scoped, SessionQueryRequest(query=query))
            assert not problems, (query, problems)
            assert result is not None and result.matches, "no words: the most recent entries"
            browse = scoped.provider.search(SessionQueryRequest())
            assert [(m.session_id, m.seq) for m in result.matches] == [
                (m.session_id, m.seq) for m in browse.matches
            ]


@pytest.mark.parametrize(
    "query",
    [
        'title:(revenue OR forecast) AND NOT ledger~2 /rev.*/ "deploy rollback"^3',
        "revenue:[a TO z] {x TO y} _exists_:text",
        '{"query": {"match_all": {}}}',
        "<script>alert(1)</script> revenue",
        "revenue' OR '1'='1",
        "${jndi:ldap://x/a} needle",
        "needle\\",
        "needle && haystack || !deploy",
    ],
)
def test_query_syntax_is_only_data(loaded: Pipeline, query: str) -> None:
    for scoped in _scopes(loaded):
        _, problems = _run(scoped, SessionQueryRequest(query=query))
        assert not problems, problems


@pytest.mark.parametrize(
    "query",
    [
        "\x01\x02\x03",
        "\x1bneedle\x1b",
        "\x1b[31m needle \x1b[0m",
        "needle\x7f",
        "needle\x85haystack",
        "\u2028needle\u2029",
        "\ufeffneedle",
        "ne\u200bedle",
        "\u202eeldeen",
        "needle\ufffd",
        "\uffff",
        "\U0010ffff needle",
        "😀",
        "👩‍💻",
        "🇻🇳",
        "1️⃣",
        "needle 😀",
        "😀needle😀",
        "🚀 " * 500,
        "\U000e0041\U000e007f",
    ],
)
def test_control_characters_and_emoji(loaded: Pipeline, query: str) -> None:
    for scoped in _scopes(loaded):
        result, problems = _run(scoped, SessionQueryRequest(query=query))
        assert not problems, problems
        assert result is not None
        if "needle" in query:
            assert result.matches, "the word next to the noise is still found"


def test_emoji_alone_are_not_words(loaded: Pipeline) -> None:
    """Pinned: emoji are neither letters nor digits (so they are no tokens), so an emoji-only query
    browses rather than searching for the emoji."""
    provider = _scopes(loaded)[0].provider
    result = provider.search(SessionQueryRequest(query="🚀"))
    assert result.matches and all(m.score == 0 for m in result.matches)


@pytest.mark.parametrize("query", ["\x00", "needle\x00", "\x00" * 100, "ne\x00edle", "😀\x00"])
def test_nul_is_a_typed_error(loaded: Pipeline, query: str) -> None:
    for scoped in _scopes(loaded):
        with pytest.raises(SessionQueryError) as caught:
            scoped.provider.search(SessionQueryRequest(query=query))
        assert caught.value.code == "SESSION_QUERY_INVALID_QUERY"
    made = session_query_tool(_scopes(loaded)[2].provider)
    assert made is not None
    with pytest.raises(ToolError, match=r"^invalid arguments"):
        made.run({"query": query})


@pytest.mark.parametrize(
    ("query", "session_id", "expected"),
    [
        ("हिन्दी", "r1a", "हिन्दी"),  # Devanagari: vowel signs and virama are combining marks
        ("नमस्ते", "r1a", "नमस्ते"),
        ("tha\u0301ng ba\u0309y", "r1a", "tháng"),  # decomposed (NFD) input, as macOS and some IMEs send
    ],
)
def test_words_with_combining_marks_are_found_whole(
    loaded: Pipeline, query: str, session_id: str, expected: str
) -> None:
    """An exact word of the corpus must be a full match however its marks are encoded.

    Today the query is split with a Python pattern that stops at combining marks while the index
    keeps them inside words: "हिन्दी" becomes the 1-letter words "ह", "न", "द" and finds nothing,
    and NFD "tháng" becomes "tha" + "ng" and only reaches the closest-matches fallback.
    """
    result = _scopes(loaded)[0].provider.search(SessionQueryRequest(session_id=session_id, query=query))
    assert result.matches and not result.partial
    assert expected in result.matches[0].excerpt


def test_two_character_cjk_word(loaded: Pipeline) -> None:
    """CJK text has no spaces: a 2-character word inside a longer run is found by its bigram."""
    result = _scopes(loaded)[0].provider.search(SessionQueryRequest(query="東京"))
    assert any("東京" in m.excerpt for m in result.matches) and not result.partial


# -- 1 MiB tool outputs -----------------------------------------------------------------------------


def _big(loaded: Pipeline, session_id: str, query: str, budget: int) -> str:
    provider = loaded.provider(Scope.workspace(BIG_WS))
    started = time.monotonic()
    result = provider.search(SessionQueryRequest(session_id=session_id, query=query, excerpt_bytes=budget))
    assert time.monotonic() - started < 10
    assert [(m.session_id, m.seq, m.kind) for m in result.matches] == [(session_id, 0, "tool/result")]
    assert not result.partial
    excerpt: str = result.matches[0].excerpt
    raw = excerpt.encode("utf-8")
    assert len(raw) <= budget and raw.decode("utf-8") == excerpt
    return excerpt


@pytest.mark.parametrize("budget", [600, 200, 64])
@pytest.mark.parametrize(
    ("session_id", "query", "expected", "where"),
    [
        ("big-ascii", "kraken", "KRAKEN-7731", "start"),
        ("big-ascii", "7731", "KRAKEN-7731", "start"),
        ("big-ascii", "leviathan", "Leviathan", "middle"),
        ("big-ascii", "leviathn", "Leviathan", "middle"),  # a typo: centred on its spelling in the text
        ("big-ascii", "viath", "Leviathan", "middle"),  # a substring
        ("big-ascii", "basilisk", "Basilisk", "end"),
        ("big-unicode", "nguyen zurich", "Nguyễn-Zürich", "middle"),
        ("big-unicode", "Nguyễn", "Nguyễn", "middle"),
    ],
)
def test_one_mib_tool_output_gets_a_centred_excerpt(
    loaded: Pipeline, session_id: str, query: str, expected: str, where: str, budget: int
) -> None:
    excerpt = _big(loaded, session_id, query, budget)
    assert expected in excerpt, excerpt
    if where == "start":
        assert excerpt.startswith(expected), "the text's own start: no leading ellipsis"
    if where == "middle":
        assert excerpt.startswith("…") and excerpt.endswith("…")
    if where == "end" and budget == 600:
        assert excerpt.endswith("status=200 latency=12ms ok"), "the text's own end: no trailing ellipsis"


def test_one_mib_tool_output_browse_is_its_head(loaded: Pipeline) -> None:
    provider = loaded.provider(Scope.session("big-ascii"))
    (match,) = provider.search(SessionQueryRequest(excerpt_bytes=300)).matches
    assert len(match.excerpt.encode()) <= 300
    assert match.excerpt.startswith("KRAKEN-7731 ") and match.excerpt.endswith("…")


def test_one_mib_tool_output_that_is_one_unbroken_token() -> None:
    """A hex or base64-without-separators blob is a single word far above Lucene's 32,766-byte term
    limit. Today the whole entry is dead-lettered ("immense term"), so even its plain-text prefix is
    unsearchable."""
    blob = "result sha256 manifest follows: " + "0123456789abcdef" * ((MIB - 64) // 16)
    with make_pipeline() as pipe:
        records = [_header("blob", "w"), _event("blob", "w", 0, "tool/result", blob, tool_name="fetch")]
        pipe.append_all(records)
        stats = pipe.index()
        assert stats.dead_lettered == 0, dict(stats.reasons)
        result = pipe.provider(Scope.session("blob")).search(SessionQueryRequest(query="manifest"))
        assert [m.seq for m in result.matches] == [0]
        assert len(result.matches[0].excerpt.encode()) <= 600
