"""The query variants of the relevance issues (partial identifiers, prefixes, digits, CJK).

``digit_typo``       one edit in the letters of a distinctive word that also has digits
                     (``quixotic25`` → ``quiotic25``, ``python3`` → ``pyhton3``); digits untouched
``id_prefix``        the start of an identifier of the entry (words joined by ``_ . - :``), cut inside
                     a later segment, often after one or two characters (``get_t``, ``types.M``)
``version_prefix``   the dotted-number head of a version of the entry that goes on (``2.2.1`` of
                     ``2.2.1-3``, ``9.0.1`` of ``9.0.1~rc2``)
``word_prefix``      a distinctive word of 7+ letters typed only in part (55–85 %, at least 4 letters)
                     as the query's last word, after 0–2 clean words, in the *largest* workspace
                     (``backst`` for ``backstage``)
``cjk``              2–4 consecutive characters from inside a run of Chinese, Japanese or Korean text
``sep_prefix``       a whole segment of a joined name of the entry (``_ . / -``), its separator and the
                     first 1–3 characters of the next segment, from any segment on (``parse_he`` of
                     ``self.parse_header``, ``conf.y`` of ``app/conf.yaml``, ``query/sc`` of
                     ``query/scoring.py``); ground truth: the fragment at the start of a word
``dotted_typo2``     two edits (insert, delete, substitute, adjacent swap) in the letters of a dotted
                     name of the entry (host, file name with extension, attribute path: ``exmaple.cmo``
                     for ``example.com``), never on its first character, a digit or a dot; each segment
                     as typed keeps to its own typo budget (of its letters: none up to 2, 1 edit for
                     3–5, 2 from 6) and its digits in place;
                     ground truth: the entries holding the name as written

Ground truth: the searchable entries in scope whose folded text contains the clean words and the
fragment as a substring (a version head not followed by another digit: ``2.2.1`` is not in
``2.2.10``); kept while it holds at most 10 entries (known-item queries).
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from typing import TYPE_CHECKING

from rapidfuzz.distance import OSA

from benchmarks.folding import contains_all, fold

if TYPE_CHECKING:
    from benchmarks.queries import Doc, Query, QueryGenerator

__all__ = ["EXTRA_VARIANTS", "build_extra", "dotted_typo", "has_cjk", "sep_cut"]

EXTRA_VARIANTS = (
    "digit_typo",
    "id_prefix",
    "version_prefix",
    "word_prefix",
    "cjk",
    "sep_prefix",
    "dotted_typo2",
)

_MIXED = re.compile(r"[^\W_]+")
_IDENT = re.compile(r"(?<![^\W_])[^\W_]+(?:[_.:-][^\W_]+)+")
_VERSION = re.compile(r"(?<![\w.])(\d+(?:\.\d+)+)([-~+:][0-9A-Za-z][\w.+~-]*)")
_JOINED = re.compile(r"(?<![A-Za-z0-9])[A-Za-z0-9]+(?:[_./-][A-Za-z0-9]+)+")
_DOTTED = re.compile(r"(?<![\w./-])[A-Za-z][A-Za-z0-9]*(?:\.[A-Za-z0-9]+)+(?![\w-]|\.\w)")
_CJK_CLASS = "[\u1100-\u11ff\u3040-\u30ff\u3130-\u318f\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]"
_CJK_RUN = re.compile(_CJK_CLASS + "{3,}")
_CJK_ANY = re.compile(_CJK_CLASS)


def has_cjk(word: str) -> bool:
    """Whether ``word`` holds Chinese, Japanese or Korean characters: the keyboard typo and accent
    models are for alphabetic scripts, so those variants leave such words to the ``cjk`` variant."""
    return _CJK_ANY.search(word) is not None


_WORD = re.compile(r"[^\W\d_]{7,}")
_LETTERS = "abcdefghijklmnopqrstuvwxyz"


def _largest_workspace(gen: QueryGenerator) -> str:
    cached = getattr(gen, "_largest_ws", None)
    if cached is None:
        sizes = {key[1]: len(ids) for key, ids in gen.by_scope.items() if key[0] == "workspace"}
        cached = max(sorted(sizes), key=lambda ws: sizes[ws])
        gen._largest_ws = cached  # type: ignore[attr-defined]
    return str(cached)


def _where(gen: QueryGenerator, scope_kind: str, scope_id: str, test: Callable[[str], bool]) -> list[str]:
    return [gen.docs[i].doc_id for i in gen.by_scope[scope_kind, scope_id] if test(gen.docs[i].folded)]


def _letters_edit(word: str, rng: random.Random) -> str | None:
    """One edit at a letter (never the first character, never a digit)."""
    spots = [i for i in range(1, len(word)) if word[i].isalpha()]
    if not spots:
        return None
    i = rng.choice(spots)
    op = rng.choice(("insert", "delete", "substitute", "swap"))
    if op == "insert":
        return word[:i] + rng.choice(_LETTERS) + word[i:]
    if op == "delete":
        return word[:i] + word[i + 1 :]
    if op == "substitute":
        return word[:i] + rng.choice([c for c in _LETTERS if c != word[i]]) + word[i + 1 :]
    if i + 1 < len(word) and word[i + 1].isalpha() and word[i + 1] != word[i]:
        return word[:i] + word[i + 1] + word[i] + word[i + 2 :]
    return None


def _skeleton(word: str) -> str:
    return re.sub(r"\D+", "a", word)


def _digit_typo(gen: QueryGenerator, doc: Doc, rng: random.Random) -> tuple[str, str, list[str]] | None:
    words = [
        w
        for w in dict.fromkeys(_MIXED.findall(doc.folded))
        if any(c.isdigit() for c in w)
        and sum(c.isalpha() for c in w) >= 4
        and max(len(r) for r in re.findall(r"[^\W\d_]+", w) or [""]) >= 3
        and 0 < gen.df.get(w, 0) <= gen.max_df
        and not has_cjk(w)
    ]
    if not words:
        return None
    word = rng.choice(sorted(words))
    for _ in range(8):
        typed = _letters_edit(word, rng)
        letters = re.sub(r"\d+", "", word)
        if (
            typed
            and _skeleton(typed) == _skeleton(word)
            and OSA.distance(letters, re.sub(r"\d+", "", typed)) == 1
            and typed not in gen.df
        ):
            return typed, word, [word]
    return None


def _cut(ident: str, rng: random.Random) -> str | None:
    seps = [m.start() for m in re.finditer(r"[_.:-]", ident)]
    sep = rng.choice(seps)
    rest = len(ident) - sep - 1
    take = rng.choice((1, 1, 2, 2, 3, max(1, rest // 2)))
    if take >= rest:
        return None
    return ident[: sep + 1 + take]


def sep_cut(name: str, rng: random.Random) -> str | None:
    """A whole segment of ``name``, its separator and 1–3 characters of the next segment (a true
    cut: the next segment goes on), from a segment with a letter; ``None`` when there is none."""
    seps = [m.start() for m in re.finditer(r"[_./-]", name)]
    starts = [0, *(i + 1 for i in seps)]
    spots = []
    for k, sep in enumerate(seps):
        segment = name[starts[k] : sep]
        following = re.match(r"[A-Za-z0-9]+", name[sep + 1 :])
        if following and len(following.group()) >= 2 and any(c.isalpha() for c in segment):
            spots.append((starts[k], sep, len(following.group())))
    if not spots:
        return None
    start, sep, rest = rng.choice(spots)
    take = rng.randint(1, min(3, rest - 1))
    return name[start : sep + 1 + take]


def _word_start(fragment: str) -> re.Pattern[str]:
    return re.compile(rf"(?<![^\W_]){re.escape(fragment)}")


def _budget(letters: int) -> int:
    return 0 if letters <= 2 else 1 if letters <= 5 else 2


def dotted_typo(name: str, rng: random.Random) -> str | None:
    """``name`` (segments joined by ``.``) with two edits in its letters, spread so that each segment
    as typed stays within its own typo budget (of its letters: its digits stay where they are);
    ``None`` when twelve tries find none."""
    segments = name.split(".")
    for _ in range(12):
        typed: str | None = name
        for _ in range(2):
            typed = _letters_edit(typed, rng) if typed else None
        if not typed or OSA.distance(name.lower(), typed.lower()) != 2:
            continue
        parts = typed.split(".")
        if len(parts) != len(segments) or not all(parts):
            continue
        pairs = list(zip(segments, parts, strict=True))
        edits = [OSA.distance(a.lower(), b.lower()) for a, b in pairs]
        # The budget of the segment as typed, its letters' when it has digits (which stay put).
        budgets = [_budget(sum(c.isalpha() for c in b)) for _, b in pairs]
        if (
            sum(edits) == 2
            and all(e <= b for e, b in zip(edits, budgets, strict=True))
            and all(_skeleton(a) == _skeleton(b) for a, b in pairs)
        ):
            return typed
    return None


def build_extra(
    gen: QueryGenerator, variant: str, doc: Doc, scope_kind: str, rng: random.Random
) -> Query | None:
    """One query of an extra variant for target ``doc``, or ``None`` when the entry has no material."""
    from benchmarks.queries import Query

    scope_id = doc.session_id if scope_kind == "session" else doc.workspace_id
    clean: list[str] = []
    note = ""
    if variant == "digit_typo":
        found = _digit_typo(gen, doc, rng)
        if found is None:
            return None
        typed, note, clean = found
        relevant = gen.relevant(scope_kind, scope_id, clean)
    elif variant == "id_prefix":
        idents = [i for i in dict.fromkeys(_IDENT.findall(doc.folded)) if len(i) >= 6]
        if not idents:
            return None
        ident = rng.choice(idents)
        cut = _cut(ident, rng)
        if cut is None:
            return None
        typed, note = cut, ident
        relevant = _where(gen, scope_kind, scope_id, lambda text: cut in text)
    elif variant == "version_prefix":
        versions = list(dict.fromkeys(m.group(1) for m in _VERSION.finditer(doc.folded)))
        if not versions:
            return None
        head = rng.choice(versions)
        pattern = re.compile(rf"(?<![\w.]){re.escape(head)}(?!\d)")
        typed, note = head, head
        relevant = _where(gen, scope_kind, scope_id, lambda text: pattern.search(text) is not None)
    elif variant == "word_prefix":
        if doc.workspace_id != _largest_workspace(gen):
            return None
        pool = [
            w
            for w in gen._distinctive(gen._words(doc), rng, alpha=True)
            if _WORD.fullmatch(w.folded) and not has_cjk(w.folded)
        ]
        if not pool:
            return None
        head = pool[0]
        extra = gen._extra(rng, gen._distinctive(gen._words(doc), rng), {head.folded}, rng.choice((0, 1, 2)))
        keep = max(4, round(len(head.folded) * rng.uniform(0.55, 0.85)))
        if keep >= len(head.folded):
            return None
        fragment = head.folded[:keep]
        clean = [w.folded for w in extra]
        typed = " ".join([*(w.original for w in extra), fragment])
        note = f"{head.original}→{fragment}"
        words = [*clean, fragment]
        relevant = _where(gen, scope_kind, scope_id, lambda text: contains_all(text, words))
        clean = words
    elif variant == "cjk":
        runs = _CJK_RUN.findall(doc.text)
        if not runs:
            return None
        run = rng.choice(runs)
        length = rng.randint(2, min(4, len(run)))
        start = rng.randint(0, len(run) - length)
        typed = note = run[start : start + length]
        folded = fold(typed)
        relevant = _where(gen, scope_kind, scope_id, lambda text: folded in text)
    elif variant == "sep_prefix":
        names = [n for n in dict.fromkeys(_JOINED.findall(doc.text)) if len(n) >= 5]
        if not names:
            return None
        name = rng.choice(names)
        piece = sep_cut(name, rng)
        if piece is None:
            return None
        typed, note = piece, name
        starts = _word_start(fold(piece))
        relevant = _where(gen, scope_kind, scope_id, lambda text: starts.search(text) is not None)
    elif variant == "dotted_typo2":
        names = [
            n
            for n in dict.fromkeys(_DOTTED.findall(doc.text))
            if sum(c.isalpha() for c in n) >= 6 and any(len(s) >= 3 for s in n.split("."))
        ]
        if not names:
            return None
        name = rng.choice(names)
        misspelt = dotted_typo(name, rng)
        if misspelt is None:
            return None
        typed, note = misspelt, name
        whole = fold(name)
        relevant = _where(gen, scope_kind, scope_id, lambda text: whole in text)
        clean = [name]
    else:
        raise ValueError(f"unknown variant {variant!r}")
    if doc.doc_id not in relevant or len(relevant) > 10:
        return None
    return Query("", variant, scope_kind, scope_id, typed, clean or [typed], doc.doc_id, relevant, note)
