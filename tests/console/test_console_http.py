"""The console over HTTP on the embedded backend: authentication, workspace limits, hardening,
writes and CSRF, export, paging with cursors that survive a restart."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import orjson
import pytest
from tests.console.conftest import FULL_TOKEN, LIMITED_TOKEN, PAGING_MATCHES, embedded, grants, live_console
from tests.console.http import call

from backscroll.console.security import CSP
from backscroll.console.settings import Grants


@pytest.fixture(scope="module")
def base(corpus_path: Path) -> Iterator[str]:
    with live_console(embedded(corpus_path), grants()) as url:
        yield url


def entry_ids(body: str) -> list[str]:
    return re.findall(r'data-entry="([^"]+)"', body)


def test_every_page_requires_a_token_when_tokens_are_configured(base: str) -> None:
    for path in ("/search", "/session/s-alpha", "/session/s-alpha/export.jsonl", "/health"):
        reply = call(base + path)
        assert reply.status == 303 and reply.headers["location"].startswith("/login?next=")
        assert call(base + path, token="wrong-token-0123456789").status == 401
        assert call(base + path, token=FULL_TOKEN).status == 200


def test_security_headers_on_pages_errors_and_static_files(base: str) -> None:
    for path, token in (
        ("/search", FULL_TOKEN),
        ("/session/nope", FULL_TOKEN),
        ("/static/console.css", None),
    ):
        reply = call(base + path, token=token)
        assert reply.headers["content-security-policy"] == CSP
        assert "'unsafe-inline'" not in CSP and "script-src 'self'" in CSP
        assert reply.headers["x-content-type-options"] == "nosniff"
        assert reply.headers["x-frame-options"] == "DENY"
        assert reply.headers["referrer-policy"] == "same-origin"


def test_a_foreign_host_header_is_refused_on_loopback(base: str) -> None:
    """DNS rebinding: a page on evil.example resolving to 127.0.0.1 must not read the console."""
    reply = call(base + "/search", token=FULL_TOKEN, headers={"Host": "evil.example:8765"})
    assert reply.status == 400


def test_a_limited_token_sees_only_its_workspaces(base: str) -> None:
    full = call(base + "/search?q=revenue+forecast", token=FULL_TOKEN).body
    assert "s-secret" in full
    limited = call(base + "/search?q=revenue+forecast", token=LIMITED_TOKEN)
    assert limited.status == 200 and "s-alpha" in limited.body and "s-secret" not in limited.body
    assert "ws-b" not in limited.body
    assert call(base + "/search?q=revenue&ws=ws-b", token=LIMITED_TOKEN).status == 404
    assert call(base + "/search?q=revenue&session=s-secret", token=LIMITED_TOKEN).status == 404
    for path in ("/session/s-secret", "/session/s-secret?seq=0", "/session/s-secret/export.jsonl"):
        reply = call(base + path, token=LIMITED_TOKEN)
        assert reply.status == 404 and "merger" not in reply.body
    health = call(base + "/health", token=LIMITED_TOKEN).body
    assert "ws-b" not in health and "s-secret" not in health and "ws-a" in health
    assert "ws-b" in call(base + "/health", token=FULL_TOKEN).body


def test_paging_walks_every_match_once(base: str) -> None:
    seen: list[str] = []
    url: str | None = base + "/search?q=zeppelin"
    while url is not None:
        reply = call(url, token=FULL_TOKEN)
        assert reply.status == 200
        seen += entry_ids(reply.body)
        found = re.search(r'<a href="([^"]+)" id="next"', reply.body)
        url = base + found.group(1).replace("&amp;", "&") if found else None
    assert len(seen) == PAGING_MATCHES == len(set(seen))


def test_a_cursor_survives_a_console_restart(corpus_path: Path) -> None:
    """The cursor key is configured (BACKSCROLL_CURSOR_KEY), not drawn per process."""
    with live_console(embedded(corpus_path), Grants({})) as first:
        body = call(first + "/search?q=zeppelin").body
        next_link = re.search(r'<a href="([^"]+)" id="next"', body)
        assert next_link is not None
        page_one = entry_ids(body)
    with live_console(embedded(corpus_path), Grants({})) as second:
        reply = call(second + next_link.group(1).replace("&amp;", "&"))
        assert reply.status == 200
        page_two = entry_ids(reply.body)
    assert len(page_two) == 50 and not set(page_one) & set(page_two)


def test_a_tampered_cursor_is_an_error_page(base: str) -> None:
    reply = call(base + "/search?q=zeppelin&cursor=AAAA" + quote("<script>"), token=FULL_TOKEN)
    assert reply.status == 400 and "INVALID_CURSOR" in reply.body and "<script>" not in reply.body


def test_export_is_jsonl_with_the_header_and_every_event(base: str) -> None:
    reply = call(base + "/session/s-alpha/export.jsonl", token=FULL_TOKEN)
    assert reply.status == 200 and reply.headers["content-type"].startswith("application/x-ndjson")
    assert 'filename="s-alpha.jsonl"' in reply.headers["content-disposition"]
    lines = [orjson.loads(line) for line in reply.body.splitlines()]
    assert lines[0]["header"]["session_id"] == "s-alpha"
    events = lines[1:]
    assert [e["seq"] for e in events] == list(range(6))
    assert {e["seq"]: e["surface"] for e in events} == {
        0: "shadowed",
        1: "log-only",
        2: "shadowed",
        3: "current",
        4: "current",
        5: "current",
    }
    assert events[0]["replaced_by"] == 4


def test_writes_are_refused_without_the_write_flag(base: str) -> None:
    reply = call(base + "/session/s-alpha/forget", token=FULL_TOKEN, data=b"csrf=x")
    assert reply.status == 403 and "read-only" in reply.body


def test_writes_need_the_csrf_token_and_the_same_origin(tmp_path: Path) -> None:
    from tests.console.conftest import build_corpus

    path = build_corpus(tmp_path / "w.db")
    with live_console(embedded(path), grants(), writes=True) as url:
        login = call(
            url + "/login",
            data=f"token={FULL_TOKEN}&next=/session/s-child".encode(),
            headers={"Origin": url, "Content-Type": "application/x-www-form-urlencoded"},
        )
        assert login.status == 303 and login.headers["location"] == "/session/s-child"
        cookie = login.headers["set-cookie"].split(";")[0]
        assert "HttpOnly" in login.headers["set-cookie"] and "SameSite=strict" in login.headers["set-cookie"]
        assert FULL_TOKEN not in cookie
        page = call(url + "/session/s-child", headers={"Cookie": cookie})
        csrf = re.search(r'name="csrf" value="([0-9a-f]+)"', page.body)
        assert page.status == 200 and csrf is not None
        form = {"Cookie": cookie, "Content-Type": "application/x-www-form-urlencoded"}
        forged = call(url + "/session/s-child/forget", data=b"csrf=0000", headers={**form, "Origin": url})
        assert forged.status == 403
        cross = call(
            url + "/session/s-child/forget",
            data=f"csrf={csrf.group(1)}".encode(),
            headers={**form, "Origin": "http://evil.example"},
        )
        assert cross.status == 403
        # A limited token cannot forget a session of another workspace.
        hidden = call(url + "/session/s-secret/forget", data=b"", token=LIMITED_TOKEN)
        assert hidden.status == 404
        done = call(
            url + "/session/s-child/forget",
            data=f"csrf={csrf.group(1)}".encode(),
            headers={**form, "Origin": url},
        )
        assert done.status == 200 and "Deleted 1 events of s-child" in done.body
        assert call(url + "/session/s-child", headers={"Cookie": cookie}).status == 404


def test_login_rejects_a_wrong_token_and_an_open_redirect(base: str) -> None:
    form = {"Origin": base, "Content-Type": "application/x-www-form-urlencoded"}
    wrong = call(base + "/login", data=b"token=nope-nope-nope-nope&next=/health", headers=form)
    assert wrong.status == 401
    login = call(base + "/login", data=f"token={FULL_TOKEN}&next=//evil.example/x".encode(), headers=form)
    assert login.status == 303 and login.headers["location"] == "/search"


def test_health_on_embedded_shows_pending_entries_and_dead_letters(tmp_path: Path) -> None:
    from dataclasses import replace

    from tests.console.conftest import corpus_records

    from backscroll.backends import EmbeddedBackend
    from backscroll.indexer.sqlite.runner import embedded_runner
    from backscroll.ingest.sqlite.log import SQLiteEntryLog

    path = tmp_path / "h.db"
    records = list(corpus_records())
    with SQLiteEntryLog(path) as log:
        log.append_many(records[:-2])
        bad = {"v": 1, "kind": "event", "workspace_id": "ws-b", "session_id": "s-bad"}
        log.append_raw(b"s-bad", orjson.dumps(bad))
    with embedded_runner(path) as indexer:
        indexer.run(until_idle=True)
    with SQLiteEntryLog(path) as log:
        log.append_many(records[-2:])  # appended, not yet projected
    backend = replace(EmbeddedBackend(path, index_on_search=False), cursor_key=b"k" * 32)
    with live_console(backend, grants()) as url:
        full = call(url + "/health", token=FULL_TOKEN).body
        assert 'id="total-lag">2<' in full and 'id="freshness">current<' not in full
        assert 'id="dead-count">1<' in full and "s-bad" in full and "Field required" in full
        limited = call(url + "/health", token=LIMITED_TOKEN).body
        assert 'id="dead-count">0<' in limited and "s-bad" not in limited


def test_search_filters_workspaces_kinds_session_and_time(base: str) -> None:
    def found(query: str) -> list[str]:
        return entry_ids(call(base + "/search?" + query, token=FULL_TOKEN).body)

    both = found("q=revenue+forecast&ws=ws-a&ws=ws-b")
    assert "s-secret:0" in both and "s-alpha:0" in both
    assert "s-secret:0" not in found("q=revenue+forecast&ws=ws-a")
    assert found("q=forecast&kind=tool/call") == ["s-alpha:1"]
    assert set(found("q=forecast&session=s-alpha")) <= {f"s-alpha:{seq}" for seq in range(6)}
    assert found("q=forecast&session=s-alpha&from=2026-11-30T09:03&to=2026-11-30T09:03:30") == ["s-alpha:3"]
    assert found("q=forecast&from=2026-12-01") == []
    assert call(base + "/search?q=x&from=yesterday", token=FULL_TOKEN).status == 400
    assert call(base + "/search?q=x&kind=NOT+A+KIND", token=FULL_TOKEN).status == 400


def test_long_sessions_page_by_101_events_and_export_whole(tmp_path: Path) -> None:
    from tests.console.conftest import _event, _header

    from backscroll.ingest.sqlite.log import SQLiteEntryLog

    path = tmp_path / "long.db"
    with SQLiteEntryLog(path) as log:
        log.append(_header("ws-l", "s-long", 0))
        log.append_many([_event("ws-l", "s-long", seq, "user/message", f"line {seq}") for seq in range(250)])
    with live_console(embedded(path), Grants({})) as url:
        bodies = [call(f"{url}/session/s-long?page={n}").body for n in range(3)]
        pages = [re.findall(r'data-seq="(\d+)"', body) for body in bodies]
        assert [len(p) for p in pages] == [101, 101, 48]
        assert [int(s) for p in pages for s in p] == list(range(250))
        assert 'id="later"' not in call(f"{url}/session/s-long?page=2").body
        lines = call(f"{url}/session/s-long/export.jsonl").body.splitlines()
        assert [orjson.loads(line)["seq"] for line in lines[1:]] == list(range(250))
