"""An identifier's parts anywhere in an entry (the parts tier), found from its rarest parts.

``acct_80954`` in the parts tier needs entries holding ``acct`` (or a typo of it, or inside a
longer word) and ``80954``. Intersecting the two lookups in SQL reads every ``acct`` entry of the
file first: about 55 ms at 1M entries, for each such word of a query. Here each part is read up to
:data:`SMALL` rowids, and the parts that stayed under it are intersected. A common part is then
asked only about those entries when that is cheap (FTS5 seeks each rowid in each of the part's
terms: :data:`SEEKS_MAX` seeks at most), and read whole otherwise, as the intersection in SQL
would. Only when every part is common does the whole intersection run in SQL.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from typing import Any, Final

from backscroll.query.sqlite.candidates import Arm
from backscroll.query.sqlite.column import read_column

__all__ = ["SEEKS_MAX", "SMALL", "parts_rowids"]

#: A part with more entries than this is a common part (not read first).
SMALL: Final = 2_000
#: Entries × terms up to which a common part is asked about the entries instead of read whole:
#: a seek costs about 15 µs at 1M entries, reading a row about 0.5 µs.
SEEKS_MAX: Final = 400
# SQLite's default limit on host parameters is 32,766; a chunk leaves room for a scope's bounds.
_CHUNK: Final = 500


def _where(extra: str, within: str) -> str:
    return f"{within} AND {extra}" if within else f" WHERE {extra}"


def _read(
    conn: sqlite3.Connection, arms: Sequence[Arm], within: str, bounds: tuple[Any, ...]
) -> set[int] | None:
    """The part's entries, or ``None`` when one of its lookups has more than :data:`SMALL`."""
    found: set[int] = set()
    for arm in arms:
        sql = f"SELECT rowid FROM ({arm.sql}){within} LIMIT ?"
        rows = conn.execute(sql, (*arm.params, *bounds, SMALL + 1)).fetchall()
        if len(rows) > SMALL:
            return None
        found.update(rid for (rid,) in rows)
    return found


def _terms(arms: Sequence[Arm]) -> int:
    """How many doclists a seek of one rowid reads in the part's lookups."""
    return sum(str(arm.params[0]).count(" OR ") + 1 for arm in arms)


def _keep(
    conn: sqlite3.Connection,
    arms: Sequence[Arm],
    rids: set[int],
    within: str,
    bounds: tuple[Any, ...],
) -> set[int]:
    """Those of ``rids`` the part's lookups find."""
    if len(rids) * _terms(arms) > SEEKS_MAX:
        whole: set[int] = set()
        for arm in arms:
            whole.update(read_column(conn, f"SELECT rowid FROM ({arm.sql}){within}", (*arm.params, *bounds)))
        return rids & whole
    ordered = sorted(rids)
    kept: set[int] = set()
    for start in range(0, len(ordered), _CHUNK):
        chunk = ordered[start : start + _CHUNK]
        marks = ",".join("?" * len(chunk))
        for arm in arms:
            sql = f"SELECT rowid FROM ({arm.sql}){_where(f'rowid IN ({marks})', within)}"
            kept.update(read_column(conn, sql, (*arm.params, *bounds, *chunk)))
    return kept


def parts_rowids(
    conn: sqlite3.Connection,
    arm: Arm,
    within: str = "",
    bounds: tuple[Any, ...] = (),
    only: set[int] | None = None,
) -> Iterable[int]:
    """The rowids of the entries ``arm`` (a parts arm: :attr:`Arm.every`) finds, within the scope's
    rowid range when ``within`` (``" WHERE rowid BETWEEN ? AND ?"``) and ``bounds`` give one, and
    among ``only`` when given."""
    if only is not None:
        return _narrow(conn, arm.every, only, within, bounds)
    small: list[set[int]] = []
    common: list[Sequence[Arm]] = []
    for arms in arm.every:
        found = _read(conn, arms, within, bounds)
        if found is None:
            common.append(arms)
        elif not found:
            return set()
        else:
            small.append(found)
    if not small:
        return read_column(conn, f"SELECT rowid FROM ({arm.sql}){within}", (*arm.params, *bounds))
    return _narrow(conn, common, set.intersection(*small), within, bounds)


def _narrow(
    conn: sqlite3.Connection,
    parts: Sequence[Sequence[Arm]],
    rids: set[int],
    within: str,
    bounds: tuple[Any, ...],
) -> set[int]:
    """Those of ``rids`` every part finds (the parts with the fewest terms asked first)."""
    for arms in sorted(parts, key=_terms):
        if not rids:
            break
        rids = _keep(conn, arms, rids, within, bounds)
    return rids
