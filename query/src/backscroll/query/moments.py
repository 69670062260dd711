"""Times as every output writes them: total over any ``datetime`` a view can hold. Pure.

Records are validated so that their UTC instant lies within years 0001 to 9999, but a view may hold
older data (written before that rule, or by hand): ``9999-12-31T23:30:00-01:00`` has no UTC form a
``datetime`` can hold, and ``astimezone`` raises ``OverflowError`` on it. Such a time is written as
stored, with its own offset, rather than failing the page that shows it.
"""

from __future__ import annotations

from datetime import UTC, datetime

__all__ = ["stored_time", "utc_text"]


def stored_time(value: object) -> datetime | None:
    """The time a view document holds (RFC 3339 text), or ``None`` when it holds none or something
    else (a number, a malformed text): a match is still shown, without its time."""
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        return None


def utc_text(value: datetime, *, sep: str = "T") -> str:
    """``2026-11-30T10:00:00Z`` (seconds, in UTC, always four-digit years); a time whose UTC
    instant is out of range keeps its offset (``9999-12-31T23:30:00-01:00``), a time without an
    offset is written as it is."""
    if value.utcoffset() is None:
        return value.isoformat(sep, "seconds")
    try:
        moment = value.astimezone(UTC)
    except OverflowError:
        return value.isoformat(sep, "seconds")
    return moment.replace(tzinfo=None).isoformat(sep, "seconds") + "Z"
