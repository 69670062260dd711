"""One column of many rows, read from SQLite as one value."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any

import orjson

__all__ = ["read_column"]


def read_column(conn: sqlite3.Connection, sql: str, params: Sequence[Any] = ()) -> list[Any]:
    """The values of the one column ``sql`` selects, in the order of its rows.

    SQLite builds them into one JSON array: for thousands of rows (a common word's hits, a
    workspace's entries or terms of a near length) about a third of the time of fetching them one
    by one, which builds a tuple per row (1M entries: 200,000 hits in 29 against 80 ms)."""
    (array,) = conn.execute(f"WITH q(v) AS ({sql}) SELECT json_group_array(v) FROM q", params).fetchone()
    values: list[Any] = orjson.loads(array)
    return values
