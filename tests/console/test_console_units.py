"""Pure parts of the console: highlighting, lineage with cycles, time filters, tokens, guards."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from markupsafe import Markup
from pydantic import ValidationError
from starlette.datastructures import Headers
from tests.console.conftest import embedded

from backscroll.console.security import Guard, safe_next, same_origin
from backscroll.console.settings import Access, ConsoleSettings, Grants, is_loopback
from backscroll.console.source import ConsoleSource
from backscroll.console.views import highlight, lineage_from_listing
from backscroll.query import SessionHeader, SessionRecord
from backscroll.query.contract import parse_time


def test_highlight_marks_typos_accents_and_inner_words_and_escapes_the_rest() -> None:
    out = highlight("Revenue forecast for Zürich <b>&co</b>", "revnue forcast zurich")
    assert isinstance(out, Markup)
    assert (
        out == "<mark>Revenue</mark> <mark>forecast</mark> for <mark>Zürich</mark> &lt;b&gt;&amp;co&lt;/b&gt;"
    )
    assert highlight("acct_9931 paid", "9931") == "acct_<mark>9931</mark> paid"
    assert (
        highlight("<script>x</script>", "script")
        == "&lt;<mark>script</mark>&gt;x&lt;/<mark>script</mark>&gt;"
    )
    assert highlight("<i>", "") == "&lt;i&gt;"
    # No typo budget for words with digits or of two letters.
    assert highlight("v2.14.4 ok", "v2.14.3 ox") == "<mark>v2</mark>.<mark>14</mark>.4 ok"


def _record(sid: str, parent: str | None, minute: int = 0) -> SessionRecord:
    header = SessionHeader(
        session_id=sid,
        workspace_id="ws",
        parent_session_id=parent,
        created_at=datetime(2026, 1, 1, 0, minute, tzinfo=UTC),
    )
    return SessionRecord(header=header, live=False, persisted=True)


def test_lineage_from_listing_names_cycles_and_unresolved_parents() -> None:
    listing = [
        _record("a", "b"),
        _record("b", "c"),
        _record("c", "a"),
        _record("d", "a", 1),
        _record("e", "d", 2),
        _record("f", "gone"),
    ]
    view = lineage_from_listing("a", listing)
    assert view is not None
    assert view.cycle == ["a", "b", "c", "a"]
    assert [r.header.session_id for r in view.ancestors] == ["b", "c"]
    assert [(d, r.header.session_id) for d, r in view.descendants] == [(1, "d"), (2, "e")]
    assert view.root is None
    orphan = lineage_from_listing("f", listing)
    assert orphan is not None and orphan.unresolved_parent_id == "gone" and orphan.root is None
    assert lineage_from_listing("missing", listing) is None
    leaf = lineage_from_listing("e", [_record("d", None), _record("e", "d")])
    assert leaf is not None and leaf.root is not None and leaf.root.header.session_id == "d"


def test_time_filters() -> None:
    assert parse_time("") is None
    assert parse_time("2026-11-30") == datetime(2026, 11, 30, tzinfo=UTC)
    assert parse_time("2026-11-30", end=True) == datetime(2026, 11, 30, 23, 59, 59, 999999, tzinfo=UTC)
    assert parse_time("2026-11-30T10:00+01:00") == datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
    with pytest.raises(ValueError):
        parse_time("yesterday")


def test_token_settings_and_grants(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BACKSCROLL_CONSOLE_TOKEN", "a" * 20)
    monkeypatch.setenv(
        "BACKSCROLL_CONSOLE_TOKENS",
        '{"limited-token-0123456": ["ws-1", "ws-2"], "star-token-0123456": ["*"]}',
    )
    settings = ConsoleSettings(_env_file=None)
    grants = Grants(settings.grants())
    assert grants.required
    full = grants.for_token("a" * 20)
    assert full is not None and full.workspaces is None
    limited = grants.for_token("limited-token-0123456")
    assert limited is not None and limited.workspaces == frozenset({"ws-1", "ws-2"})
    assert limited.allows("ws-1") and not limited.allows("ws-3") and not limited.allows(None)
    assert limited.visible(["ws-3", "ws-2"]) == ["ws-2"]
    star = grants.for_token("star-token-0123456")
    assert star is not None and star.workspaces is None
    assert grants.for_token("a" * 19) is None
    assert "a" * 20 not in repr(settings)
    monkeypatch.setenv("BACKSCROLL_CONSOLE_TOKENS", '{"short": ["ws-1"]}')
    with pytest.raises(ValidationError):
        ConsoleSettings(_env_file=None)
    assert not Grants({}).required


def test_loopback_detection() -> None:
    assert (
        is_loopback("127.0.0.1")
        and is_loopback("::1")
        and is_loopback("localhost")
        and is_loopback("127.0.0.9")
    )
    assert not is_loopback("0.0.0.0") and not is_loopback("192.168.1.2") and not is_loopback("example.org")


def test_guard_cookies_and_csrf_are_signed_and_bound_to_the_token() -> None:
    grants = Grants({"t" * 20: None, "u" * 20: frozenset({"ws"})})
    guard = Guard(grants, b"s" * 32)
    access = grants.for_token("u" * 20)
    assert access is not None
    cookie = guard.cookie_for(access)
    assert "u" * 20 not in cookie
    assert guard.authenticate(None, cookie) == access
    assert guard.authenticate(None, cookie[:-1] + ("0" if cookie[-1] != "0" else "1")) is None
    assert guard.authenticate(None, None) is None
    assert guard.authenticate("Bearer " + "t" * 20, None) == Access(grants.for_token("t" * 20).identity, None)  # type: ignore[union-attr]
    assert guard.authenticate("Basic " + "t" * 20, cookie) is None
    assert Guard(grants, b"x" * 32).authenticate(None, cookie) is None  # another process's secret
    assert guard.check_csrf(access, guard.csrf_for(access))
    assert not guard.check_csrf(access, None) and not guard.check_csrf(access, "0" * 40)
    open_guard = Guard(Grants({}), b"s" * 32)
    assert open_guard.authenticate(None, None) == Access("local", None)


def test_safe_next_and_same_origin() -> None:
    assert safe_next("/session/a?seq=1") == "/session/a?seq=1"
    for bad in (None, "", "//evil.example", "https://evil.example", "/\\evil", "javascript:alert(1)"):
        assert safe_next(bad) == "/search"
    host = {"host": "127.0.0.1:8765"}
    assert same_origin(Headers({**host, "origin": "http://127.0.0.1:8765"}), "http")
    assert same_origin(Headers({**host, "sec-fetch-site": "same-origin", "origin": "null"}), "http")
    assert not same_origin(Headers({**host, "origin": "http://evil.example"}), "http")
    assert not same_origin(
        Headers({**host, "sec-fetch-site": "cross-site", "origin": "http://127.0.0.1:8765"}), "http"
    )
    assert not same_origin(Headers(host), "http")
    assert same_origin(Headers({**host, "referer": "http://127.0.0.1:8765/session/x"}), "http")


def test_the_lower_packages_never_import_the_console() -> None:
    from tests.unit.test_layering import violations

    for package in ("backscroll.ingest", "backscroll.indexer", "backscroll.query"):
        assert violations(package, ("backscroll.console",)) == []


def test_an_expired_catalog_is_served_while_one_background_load_replaces_it(
    corpus_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = ConsoleSource(embedded(corpus_path), catalog_ttl_s=1.0)
    loads: list[str] = []
    release = threading.Event()
    real = source._read_catalog

    def slow() -> Any:
        loads.append(threading.current_thread().name)
        release.wait(10)
        return real()

    monkeypatch.setattr(source, "_read_catalog", slow)
    try:
        release.set()
        first = source.workspaces()
        assert loads == ["MainThread"]
        release.clear()
        now = time.monotonic()
        monkeypatch.setattr(time, "monotonic", lambda: now + 5.0)
        assert source.workspaces() is first and source.workspaces() is first  # no page waits
        release.set()
        for _ in range(100):
            if source._catalog is not None and source._catalog[1] is not first:
                break
            threading.Event().wait(0.05)
        assert loads[1:] == ["backscroll-console-refresh"]  # one reload, in the background
        monkeypatch.setattr(time, "monotonic", lambda: now + 500.0)
        source.workspaces()
        assert loads[-1] == "MainThread"  # far too old: loaded before the page answers
    finally:
        release.set()
        source.close()
