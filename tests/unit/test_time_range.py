"""Times at and past the range every reader can show: how outputs write them, and how time bounds
(request fields, CLI flags, read filters) treat them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest
from typer.testing import CliRunner

from backscroll.cli.main import app
from backscroll.indexer.sqlite.docs import event_instant
from backscroll.query import SessionQueryError, SessionQueryRequest
from backscroll.query.contract import parse_time
from backscroll.query.moments import stored_time, utc_text
from backscroll.query.reads.filters import parse_event_filters

PAST_THE_END = datetime.fromisoformat("9999-12-31T23:59:59-01:00")
BEFORE_THE_START = datetime.fromisoformat("0001-01-01T00:00:00+01:00")


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (datetime(2026, 11, 30, 10, 0, tzinfo=UTC), "2026-11-30T10:00:00Z"),
        (datetime.fromisoformat("2026-11-30T12:00:00.5+02:00"), "2026-11-30T10:00:00Z"),
        (datetime(1, 1, 1, tzinfo=UTC), "0001-01-01T00:00:00Z"),
        (datetime.fromisoformat("0001-01-01T00:00:00-18:00"), "0001-01-01T18:00:00Z"),
        (datetime.fromisoformat("9999-12-31T23:59:59.999999Z"), "9999-12-31T23:59:59Z"),
        (PAST_THE_END, "9999-12-31T23:59:59-01:00"),
        (BEFORE_THE_START, "0001-01-01T00:00:00+01:00"),
        (datetime(2026, 11, 30, 10, 0), "2026-11-30T10:00:00"),
    ],
)
def test_utc_text_is_total(value: datetime, text: str) -> None:
    assert utc_text(value) == text
    assert utc_text(value, sep=" ") == text.replace("T", " ")


@pytest.mark.parametrize("value", [None, 1714566600000, 1.5, "", "yesterday", ["2026-01-01"], {"t": 1}])
def test_stored_time_is_none_for_what_is_not_a_time(value: object) -> None:
    assert stored_time(value) is None


def test_stored_time_keeps_an_out_of_range_instant() -> None:
    assert stored_time("9999-12-31T23:59:59-01:00") == PAST_THE_END


def test_event_instant_stops_at_the_edges_of_the_range() -> None:
    assert event_instant(2**63 - 1) == datetime.max.replace(tzinfo=UTC)
    assert event_instant(-(2**63)) == datetime.min.replace(tzinfo=UTC)
    assert event_instant(0) == datetime(1970, 1, 1, tzinfo=UTC)


@pytest.mark.parametrize(
    "bound",
    [
        "9999-12-31T23:59:59-01:00",
        "0001-01-01T00:00:00+01:00",
        "2026-01-01T00:00:00+18:01",
        PAST_THE_END,
        datetime(2026, 1, 1, tzinfo=timezone(timedelta(hours=20))),
    ],
)
def test_a_request_bound_outside_the_range_is_an_invalid_filter(bound: object) -> None:
    for name in ("since", "until"):
        with pytest.raises(SessionQueryError) as caught:
            SessionQueryRequest.model_validate({name: bound})
        assert caught.value.code == "SESSION_QUERY_INVALID_FILTER"
        assert "years 0001 to 9999" in caught.value.message


def test_a_request_bound_at_the_edges_is_kept() -> None:
    request = SessionQueryRequest.model_validate(
        {"since": "0001-01-01T00:00:00Z", "until": "9999-12-31T05:59:59-18:00"}
    )
    assert request.since == datetime(1, 1, 1, tzinfo=UTC)


def test_a_typed_time_outside_the_range_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="years 0001 to 9999"):
        parse_time("9999-12-31T23:59:59-01:00")
    assert parse_time("9999-12-31T22:59:59-01:00") == datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC)


def test_the_cli_refuses_a_since_outside_the_range_as_usage(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BACKSCROLL_BACKEND", "embedded")
    monkeypatch.setenv("BACKSCROLL_SQLITE_PATH", str(tmp_path / "empty.db"))
    result = CliRunner().invoke(app, ["search", "x", "-w", "ws", "--since", "9999-12-31T23:59:59-01:00"])
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output and "--since" in result.output


@pytest.mark.parametrize("bound", [PAST_THE_END, BEFORE_THE_START, "9999-12-31T23:59:59-01:00"])
def test_a_read_filter_bound_outside_the_range_still_filters(bound: object) -> None:
    (found,) = parse_event_filters([{"kind": "time", "from": bound}])
    assert found.low is not None
