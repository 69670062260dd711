"""The benchmark's generators of partial identifiers cut after a separator and of two-edit typos
in dotted names (``benchmarks.variants``)."""

from __future__ import annotations

import random
import re

from rapidfuzz.distance import OSA

from benchmarks.variants import EXTRA_VARIANTS, dotted_typo, sep_cut


def test_both_variants_are_generated() -> None:
    assert {"sep_prefix", "dotted_typo2"} <= set(EXTRA_VARIANTS)


def test_a_cut_is_a_whole_segment_its_separator_and_one_to_three_characters() -> None:
    for name in (
        "self.parse_header",
        "app/conf.yaml",
        "DEFAULT_MAX_BYTES",
        "os_read_chunk",
        "client-first-message",
    ):
        segments = re.split(r"[_./-]", name)
        for seed in range(60):
            cut = sep_cut(name, random.Random(seed))
            assert cut is not None and cut in name
            head, _sep, tail = re.match(r"([A-Za-z0-9]+)([_./-])([A-Za-z0-9]+)$", cut).groups()  # type: ignore[union-attr]
            assert head in segments and 1 <= len(tail) <= 3
            following = segments[segments.index(head) + 1]
            assert following.startswith(tail) and len(following) > len(tail)  # a true cut
            assert name[name.index(cut) - 1 : name.index(cut)] in ("", "_", ".", "/", "-")


def test_a_name_without_a_long_enough_next_segment_has_no_cut() -> None:
    assert sep_cut("a.b", random.Random(1)) is None
    assert sep_cut("x_1", random.Random(1)) is None


def test_a_dotted_typo_is_two_edits_in_the_letters_within_each_segments_budget() -> None:
    made = set()
    for name in ("example.com", "settings.json", "self.assertRaises", "salsa.debian.org", "y2k20.patch"):
        for seed in range(40):
            typed = dotted_typo(name, random.Random(seed))
            if typed is None:
                continue
            made.add(typed)
            assert OSA.distance(name, typed) == 2
            assert typed[0] == name[0]
            parts, originals = typed.split("."), name.split(".")
            assert len(parts) == len(originals) and all(parts)
            for original, part in zip(originals, parts, strict=True):
                letters = sum(c.isalpha() for c in part)
                budget = 0 if letters <= 2 else 1 if letters <= 5 else 2
                assert OSA.distance(original, part) <= budget
                assert re.sub(r"\D+", "a", original) == re.sub(r"\D+", "a", part)
    assert len(made) > 40


def test_a_dotted_name_of_short_segments_gets_no_typo() -> None:
    assert dotted_typo("a.b.c", random.Random(3)) is None
