"""merge_live: live matches join an indexed page without reordering it."""

from __future__ import annotations

from datetime import UTC, datetime

from backscroll.query.contract import SessionMatch
from backscroll.query.live import merge_live


def match(seq: int, score: float, *, session: str = "s1") -> SessionMatch:
    return SessionMatch(
        session_id=session,
        entry_id=f"{session}:{seq}",
        seq=seq,
        kind="assistant/message",
        turn=None,
        role="assistant",
        excerpt=f"entry {seq}",
        created_at=datetime(2026, 1, 1, tzinfo=UTC),
        score=score,
    )


def seqs(matches: list[SessionMatch]) -> list[int]:
    return [m.seq for m in matches]


def test_the_indexed_order_is_kept_when_it_is_not_by_score() -> None:
    # The readings of a typo interleaved within their tier: 3 (reading A), 9 (B), 2 (A), 8 (B).
    indexed = [match(3, 2.02), match(9, 2.0), match(2, 2.02), match(8, 2.0)]
    merged = merge_live(indexed, [match(20, 1.0)], 10, browse=False, single=True)
    assert seqs(merged) == [3, 9, 2, 8, 20]


def test_a_live_match_goes_before_the_first_indexed_match_it_outranks() -> None:
    indexed = [match(3, 8.0), match(9, 4.0), match(2, 4.0), match(8, 2.0)]
    merged = merge_live(indexed, [match(20, 4.0), match(21, 9.0)], 10, browse=False, single=True)
    assert seqs(merged) == [21, 3, 20, 9, 2, 8]


def test_live_wins_over_its_indexed_copy_and_the_page_is_cut_at_the_limit() -> None:
    indexed = [match(3, 8.0), match(9, 4.0), match(2, 2.0)]
    merged = merge_live(indexed, [match(9, 9.0)], 2, browse=False, single=True)
    assert seqs(merged) == [9, 3]
    assert merged[0].score == 9.0


def test_a_browse_page_is_by_recency() -> None:
    indexed = [match(3, 0.0), match(9, 0.0)]
    merged = merge_live(indexed, [match(5, 0.0)], 10, browse=True, single=True)
    assert seqs(merged) == [9, 5, 3]
