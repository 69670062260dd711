"""What the model reads: header, one line per match, the two empty texts, closest matches."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest

from backscroll.query.contract import SessionMatch, SessionQueryResult
from backscroll.query.render import render_result


def match(seq: int, **fields: Any) -> SessionMatch:
    base: dict[str, Any] = {
        "session_id": "s1",
        "entry_id": f"s1:{seq}",
        "seq": seq,
        "kind": "user/message",
        "excerpt": f"excerpt {seq}",
    }
    return SessionMatch(**{**base, **fields})


def test_full_rendering() -> None:
    result = SessionQueryResult(
        matches=(
            match(
                12,
                turn=3,
                role="assistant",
                score=8.25,
                excerpt="…revenue was flat…",
                created_at=datetime(2024, 5, 1, 14, 30, 5, tzinfo=timezone(timedelta(hours=2))),
            ),
            match(4, kind="tool/result", score=2.0, excerpt="acct_9931 ok"),
        ),
        searched=40,
    )
    assert render_result(result, "revenue") == (
        "2 matches (searched 40 entries):\n"
        "\n"
        "[seq 12, turn 3, assistant] score 8.2 · 2024-05-01T12:30:05Z\n"
        "…revenue was flat…\n"
        "\n"
        "[seq 4, tool/result] score 2.0\n"
        "acct_9931 ok"
    )


def test_one_match_is_singular() -> None:
    result = SessionQueryResult(matches=(match(0, role="user"),), searched=1)
    assert render_result(result, "x").splitlines()[0] == "1 match (searched 1 entries):"


def test_time_is_shown_in_utc_rfc3339() -> None:
    when = datetime(2024, 12, 31, 23, 59, 59, 999_999, tzinfo=timezone(timedelta(hours=-5)))
    result = SessionQueryResult(matches=(match(7, role="user", created_at=when),), searched=9)
    assert render_result(result, "x").splitlines()[2] == "[seq 7, user] score 0.0 · 2025-01-01T04:59:59Z"
    assert when.astimezone(UTC).year == 2025


def test_role_wins_over_kind_and_turn_is_optional() -> None:
    lines = render_result(
        SessionQueryResult(matches=(match(1, role="tool", kind="tool/result", turn=0),), searched=2), "x"
    ).splitlines()
    assert lines[2] == "[seq 1, turn 0, tool] score 0.0"


@pytest.mark.parametrize("query", ["x", "", 'say "hi"'])
def test_nothing_searchable_yet(query: str) -> None:
    text = render_result(SessionQueryResult(searched=0), query)
    assert text == "No searchable history yet in this session."


def test_no_entry_matched() -> None:
    text = render_result(SessionQueryResult(searched=3), "zzz")
    assert text == 'No entries matched "zzz" (searched 3 entries).'


def test_closest_matches_are_said_to_be_partial() -> None:
    two = (match(2, role="user"), match(1, role="user"))
    result = SessionQueryResult(matches=two, searched=5, partial=True)
    header = render_result(result, "revenue churn").splitlines()[0]
    assert header == "No entry matched every word; 2 closest matches (searched 5 entries):"
    one = SessionQueryResult(matches=(match(2, role="user"),), searched=5, partial=True)
    assert "1 closest match (searched 5 entries):" in render_result(one, "a b")


def test_more_matches_note_and_no_trailing_newline() -> None:
    result = SessionQueryResult(matches=(match(2, role="user"),), searched=5, next_cursor="abc")
    text = render_result(result, "x")
    assert text.endswith("\n\n(more matches exist; narrow the query to see others)")
    empty_excerpt = SessionQueryResult(matches=(match(2, excerpt=""),), searched=1)
    assert not render_result(empty_excerpt, "x").endswith("\n")


def test_scores_have_one_decimal() -> None:
    result = SessionQueryResult(matches=(match(2, role="user", score=12.96),), searched=5)
    assert "] score 13.0" in render_result(result, "x")
