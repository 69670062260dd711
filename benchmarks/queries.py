"""Seeded known-item queries with typo, accent, case and substring variants, and their ground truth.

Each query starts from a *target* entry (a searchable event) and 1–3 *distinctive* words of it: tokens
of 4+ characters, not all digits, whose folded form occurs in at most ``max_df`` searchable entries of
the whole corpus (default ``3 × passes``, see :mod:`benchmarks.corpus`). The typed query is then
made in one of these variants (one word is changed, the others stay clean):

``clean``               the words as they appear in the entry
``typo1_<op>``          one edit in one word of 4+ letters, never on the first letter, ``op`` one of
                        insert / delete / substitute / swap (adjacent transposition) / keyboard
                        (substitute a QWERTY neighbour). The typo is exactly one edit (optimal string
                        alignment distance 1), is not itself a word of the corpus, and leaves the word
                        3+ characters long, so it stays within OpenSearch's ``AUTO`` budget
``typo2``               two edits in one word of 8+ letters (distance exactly 2, result 6+ long)
``accents_stripped``    an accented word of the entry typed without accents ("Łódź" → "Lodz")
``accents_added``       an ASCII word of the entry that has a natural accented spelling typed with it
                        ("cafe" → "café", "Nguyen" → "Nguyễn"); the corpus writes a share of its accented
                        names stripped so these exist
``case``                the clean words with mangled case ("gardening" → "GARDENING" / "gArDeNiNg")
``id_substring``        an inner substring (3+ characters) of an identifier token of the entry, taken
                        inside one snake_case segment and never a prefix of the whole identifier
                        ("9931" of "acct_9931", "bproc" of "base_subprocess_transport", "12u2" of
                        "deb12u2")

For the accent variants the accented/ASCII word alone is often common (the injected name lists are
short), so at least one distinctive word of the entry is added when it is not distinctive itself.

Scope: for every variant, half the queries are scoped to the target's session and half to its
workspace.

Ground truth: the searchable entries in scope that contain every *clean* word under the containment
rule of :mod:`benchmarks.folding` (case- and accent-folded; words of 3+ characters match inside
tokens, shorter ones match whole tokens). For ``id_substring`` the clean word is the
substring itself ("9931" finds "acct_9931", so every entry holding it is relevant); its
candidates are kept only while the ground truth stays at 10 entries or fewer, so it stays a known-item
query. The target is always in the ground truth.
"""

from __future__ import annotations

import random
import string
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

from rapidfuzz.distance import OSA

from benchmarks.corpus import is_searchable
from benchmarks.folding import TOKEN_RE, contains_all, fold, strip_accents, tokens
from benchmarks.realtext import ACCENT_FORMS
from benchmarks.variants import EXTRA_VARIANTS, build_extra, has_cjk

__all__ = ["EDIT_OPS", "SCOPES", "VARIANTS", "Doc", "Query", "QueryGenerator", "edit_word"]

EDIT_OPS = ("insert", "delete", "substitute", "swap", "keyboard")
VARIANTS = (
    "clean",
    *(f"typo1_{op}" for op in EDIT_OPS),
    "typo2",
    "accents_stripped",
    "accents_added",
    "case",
    "id_substring",
    *EXTRA_VARIANTS,
)
SCOPES = ("session", "workspace")

_ROWS = ("qwertyuiop", "asdfghjkl", "zxcvbnm")
_STAGGER = (0.0, 0.25, 0.75)


def _keyboard() -> dict[str, str]:
    where = {ch: (r, c + _STAGGER[r]) for r, row in enumerate(_ROWS) for c, ch in enumerate(row)}
    near: dict[str, str] = {}
    for ch, (r, x) in where.items():
        near[ch] = "".join(
            other
            for other, (r2, x2) in where.items()
            if other != ch and abs(r2 - r) <= 1 and abs(x2 - x) <= (1.0 if r2 == r else 0.8)
        )
    return near


KEYBOARD_NEIGHBOURS = _keyboard()


def _like_case(template: str, ch: str) -> str:
    return ch.upper() if template.isupper() else ch


def edit_word(word: str, op: str, rng: random.Random) -> str | None:
    """Apply one edit of kind ``op`` to ``word`` at a position ≥ 1 (the first letter never changes)."""
    n = len(word)
    letters = string.ascii_lowercase
    if op == "insert":
        i = rng.randint(1, n)
        neighbour_of = word[i - 1].lower()
        pick = KEYBOARD_NEIGHBOURS.get(neighbour_of) or letters
        return word[:i] + _like_case(word[i - 1], rng.choice(pick + letters)) + word[i:]
    if op == "delete":
        if n < 2:
            return None
        i = rng.randint(1, n - 1)
        return word[:i] + word[i + 1 :]
    if op == "substitute":
        if n < 2:
            return None
        i = rng.randint(1, n - 1)
        choices = [c for c in letters if c != word[i].lower()]
        return word[:i] + _like_case(word[i], rng.choice(choices)) + word[i + 1 :]
    if op == "swap":
        spots = [i for i in range(1, n - 1) if word[i].lower() != word[i + 1].lower()]
        if not spots:
            return None
        i = rng.choice(spots)
        return word[:i] + word[i + 1] + word[i] + word[i + 2 :]
    if op == "keyboard":
        spots = [i for i in range(1, n) if word[i].lower() in KEYBOARD_NEIGHBOURS]
        if not spots:
            return None
        i = rng.choice(spots)
        return (
            word[:i] + _like_case(word[i], rng.choice(KEYBOARD_NEIGHBOURS[word[i].lower()])) + word[i + 1 :]
        )
    raise ValueError(f"unknown edit op {op!r}")


def _mangle_case(word: str, rng: random.Random) -> str:
    styles: list[Callable[[str], str]] = [
        str.upper,
        lambda w: w[:1].lower() + w[1:].upper(),
        lambda w: "".join(c.upper() if i % 2 else c.lower() for i, c in enumerate(w)),
        lambda w: "".join(c.upper() if rng.random() < 0.5 else c.lower() for c in w),
        str.swapcase,
    ]
    order = list(range(len(styles)))
    rng.shuffle(order)
    for index in order:
        mangled = styles[index](word)
        if mangled != word:
            return mangled
    return word.upper()


@dataclass(frozen=True)
class Doc:
    doc_id: str
    workspace_id: str
    session_id: str
    seq: int
    text: str
    folded: str


@dataclass
class Query:
    qid: str
    variant: str
    scope_kind: str
    scope_id: str
    text: str
    clean_words: list[str]
    target: str
    relevant: list[str] = field(default_factory=list)
    note: str = ""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class _Word:
    original: str
    folded: str
    df: int


class QueryGenerator:
    """Build queries over the searchable entries of a corpus (a list of wire dicts)."""

    def __init__(self, records: Iterable[dict[str, Any]], *, seed: int, max_df: int = 3) -> None:
        self.seed = seed
        self.max_df = max_df
        self.docs: list[Doc] = []
        self.by_scope: dict[tuple[str, str], list[int]] = defaultdict(list)
        df: Counter[str] = Counter()
        for record in records:
            if not is_searchable(record):
                continue
            folded = fold(record["text"])
            index = len(self.docs)
            self.docs.append(
                Doc(
                    f"{record['session_id']}:{record['seq']}",
                    record["workspace_id"],
                    record["session_id"],
                    record["seq"],
                    record["text"],
                    folded,
                )
            )
            self.by_scope["session", record["session_id"]].append(index)
            self.by_scope["workspace", record["workspace_id"]].append(index)
            df.update(set(tokens(folded)))
        self.df = df

    # -- helpers --------------------------------------------------------------------------------

    def _words(self, doc: Doc) -> list[_Word]:
        seen: set[str] = set()
        words = []
        for original in TOKEN_RE.findall(doc.text):
            folded = fold(original)
            if folded in seen:
                continue
            seen.add(folded)
            words.append(_Word(original, folded, self.df.get(folded, 0)))
        return words

    def _distinctive(self, words: list[_Word], rng: random.Random, *, alpha: bool = False) -> list[_Word]:
        chosen = [
            w
            for w in words
            if len(w.folded) >= 4
            and 0 < w.df <= self.max_df
            and not w.folded.isdigit()
            and any(c.isalpha() for c in w.folded)
            and (not alpha or (w.original.isalpha() and not has_cjk(w.original)))
        ]
        rng.shuffle(chosen)
        chosen.sort(key=lambda w: w.df)
        return chosen

    def relevant(self, scope_kind: str, scope_id: str, clean_words: list[str]) -> list[str]:
        folded = [fold(w) for w in clean_words]
        return [
            self.docs[i].doc_id
            for i in self.by_scope[scope_kind, scope_id]
            if contains_all(self.docs[i].folded, folded)
        ]

    def _extra(self, rng: random.Random, pool: list[_Word], taken: set[str], want: int) -> list[_Word]:
        out: list[_Word] = []
        for w in pool:
            if len(out) >= want:
                break
            if w.folded not in taken and not any(w.folded in t or t in w.folded for t in taken):
                out.append(w)
                taken.add(w.folded)
        return out

    # -- one variant on one target --------------------------------------------------------------

    def _build(self, variant: str, doc: Doc, scope_kind: str, rng: random.Random) -> Query | None:
        words = self._words(doc)
        scope_id = doc.session_id if scope_kind == "session" else doc.workspace_id
        total = rng.choice((1, 2, 3))
        note = ""

        if variant in ("clean", "case") or variant.startswith("typo"):
            alpha = variant.startswith("typo")
            pool = self._distinctive(words, rng, alpha=alpha)
            if variant == "typo2":
                pool = [w for w in pool if len(w.original) >= 8]
            if not pool:
                return None
            head = pool[0]
            clean = [head, *self._extra(rng, self._distinctive(words, rng), {head.folded}, total - 1)]
            typed = [w.original for w in clean]
            if variant == "case":
                typed = [_mangle_case(w, rng) for w in typed]
            elif variant.startswith("typo"):
                mutated = self._typo(head.original, variant, rng)
                if mutated is None:
                    return None
                note = f"{head.original}→{mutated}"
                typed[0] = mutated
        elif variant in ("accents_stripped", "accents_added"):
            if variant == "accents_stripped":
                cands = [
                    w
                    for w in words
                    if len(w.folded) >= 3
                    and strip_accents(w.original) != w.original
                    and not has_cjk(w.original)
                ]
            else:
                cands = [
                    w
                    for w in words
                    if len(w.folded) >= 4
                    and w.original.isascii()
                    and w.original.isalpha()
                    and w.folded in ACCENT_FORMS
                ]
            if not cands:
                return None
            rng.shuffle(cands)
            cands.sort(key=lambda w: w.df)
            head = cands[0]
            extra_wanted = total - 1
            if head.df > self.max_df:
                extra_wanted = max(1, extra_wanted)
            extra = self._extra(rng, self._distinctive(words, rng), {head.folded}, extra_wanted)
            if head.df > self.max_df and not extra:
                return None
            clean = [head, *extra]
            typed = [w.original for w in clean]
            if variant == "accents_stripped":
                typed[0] = strip_accents(head.original)
            else:
                accented = ACCENT_FORMS[head.folded]
                typed[0] = accented[:1].upper() + accented[1:] if head.original[:1].isupper() else accented
            note = f"{head.original}→{typed[0]}"
        elif variant == "id_substring":
            return self._substring(doc, words, scope_kind, scope_id, rng)
        elif variant in EXTRA_VARIANTS:
            return build_extra(self, variant, doc, scope_kind, rng)
        else:
            raise ValueError(f"unknown variant {variant!r}")

        clean_words = [w.original for w in clean]
        relevant = self.relevant(scope_kind, scope_id, clean_words)
        if doc.doc_id not in relevant:  # cannot happen with tokens of the target; kept as a guard
            return None
        return Query(
            "", variant, scope_kind, scope_id, " ".join(typed), clean_words, doc.doc_id, relevant, note
        )

    def _typo(self, word: str, variant: str, rng: random.Random) -> str | None:
        edits = 2 if variant == "typo2" else 1
        min_len = 6 if edits == 2 else 3
        folded = fold(word)
        for _ in range(12):
            mutated: str | None = word
            for _ in range(edits):
                op = variant.removeprefix("typo1_") if edits == 1 else rng.choice(EDIT_OPS)
                mutated = edit_word(mutated, op, rng) if mutated else None
            if not mutated:
                continue
            folded_mutated = fold(mutated)
            if (
                len(folded_mutated) >= min_len
                and OSA.distance(folded, folded_mutated) == edits
                and folded_mutated not in self.df
            ):
                return mutated
        return None

    def _substring(
        self, doc: Doc, words: list[_Word], scope_kind: str, scope_id: str, rng: random.Random
    ) -> Query | None:
        idents = [
            w
            for w in words
            if len(w.folded) >= 6
            and w.original.isascii()
            and (
                "_" in w.original
                or (any(c.isdigit() for c in w.original) and any(c.isalpha() for c in w.original))
            )
        ]
        if not idents:
            return None
        for _ in range(12):
            ident = rng.choice(idents).folded
            # A piece of one snake_case segment, as a person remembers it ("9931", "subproc"), never a
            # prefix of the whole identifier (prefix matching is the easy case) and never across "_".
            offset = 0
            spans = []
            for segment in ident.split("_"):
                if len(segment) >= 3:
                    spans.append((offset, segment))
                offset += len(segment) + 1
            if not spans:
                continue
            offset, segment = rng.choice(spans)
            length = rng.randint(3, min(10, len(segment)))
            start = rng.randint(0, len(segment) - length)
            if offset + start == 0:
                continue
            sub = segment[start : start + length]
            relevant = self.relevant(scope_kind, scope_id, [sub])
            if doc.doc_id in relevant and len(relevant) <= 10:
                return Query(
                    "", "id_substring", scope_kind, scope_id, sub, [sub], doc.doc_id, relevant, ident
                )
        return None

    # -- the whole set --------------------------------------------------------------------------

    def generate(
        self,
        per_variant_scope: int,
        *,
        variants: Iterable[str] = VARIANTS,
        on_query: Callable[[], None] | None = None,
    ) -> list[Query]:
        """``per_variant_scope`` queries for every (variant, scope), in a seeded shuffled order."""
        queries: list[Query] = []
        for variant in variants:
            for scope_kind in SCOPES:
                rng = random.Random(f"{self.seed}/q/{variant}/{scope_kind}")
                used: set[int] = set()
                made = 0
                tries = 0
                while (
                    made < per_variant_scope
                    and tries < 400 * per_variant_scope
                    and len(used) < len(self.docs)
                ):
                    tries += 1
                    index = rng.randrange(len(self.docs))
                    if index in used:
                        continue
                    used.add(index)
                    query = self._build(variant, self.docs[index], scope_kind, rng)
                    if query is None:
                        continue
                    query.qid = f"{variant}/{scope_kind}/{made}"
                    queries.append(query)
                    made += 1
                    if on_query:
                        on_query()
        random.Random(f"{self.seed}/q/order").shuffle(queries)
        return queries
