"""The console driven in a real headless Chromium (one browser and one server for the module).

Skips only when Chromium and its driver are not installed (``scripts/setup --stack`` installs them).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from tests.console.browser import open_chromium
from tests.console.conftest import (
    FULL_TOKEN,
    HOSTILE,
    LIMITED_TOKEN,
    PAGING_MATCHES,
    embedded,
    grants,
    live_console,
)

pytest.importorskip("selenium")
from selenium.webdriver.common.by import By
from selenium.webdriver.support.expected_conditions import staleness_of
from selenium.webdriver.support.wait import WebDriverWait


def click(driver: Any, element: Any) -> None:
    """Click a link or button and wait until the next page replaced this one."""
    page = driver.find_element(By.TAG_NAME, "html")
    element.click()
    WebDriverWait(driver, 20).until(staleness_of(page))


@pytest.fixture(scope="module")
def base(corpus_path: Path) -> Iterator[str]:
    with live_console(embedded(corpus_path), grants()) as url:
        yield url


@pytest.fixture(scope="module")
def driver() -> Iterator[Any]:
    chromium = open_chromium()
    if chromium is None:
        pytest.skip("chromium and chromium-driver are not installed (scripts/setup --stack installs them)")
    try:
        yield chromium
    finally:
        chromium.quit()


def sign_in(driver: Any, base: str, token: str) -> None:
    driver.delete_all_cookies()
    driver.get(base + "/search")
    assert "/login" in driver.current_url
    driver.find_element(By.ID, "token").send_keys(token)
    click(driver, driver.find_element(By.ID, "sign-in"))
    assert driver.current_url.startswith(base + "/search")


@pytest.fixture
def full(driver: Any, base: str) -> Any:
    if not any(c["name"] == "backscroll_console" for c in driver.get_cookies()):
        sign_in(driver, base, FULL_TOKEN)
    return driver


def texts(driver: Any, css: str) -> list[str]:
    return [element.text for element in driver.find_elements(By.CSS_SELECTOR, css)]


def not_pwned(driver: Any) -> None:
    assert driver.execute_script("return window.__pwned === undefined")
    assert driver.find_elements(By.ID, "injected") == []
    assert driver.find_elements(By.CSS_SELECTOR, "main img") == []


def test_a_typo_and_missing_accent_find_the_entry(full: Any, base: str) -> None:
    full.get(base + "/search")
    box = full.find_element(By.ID, "q")
    box.send_keys("revnue forcast zurich")
    click(full, full.find_element(By.ID, "go"))
    sessions = texts(full, "li.match .session")
    assert any(text.startswith("s-alpha") for text in sessions)
    marks = {m.lower() for m in texts(full, "li.match mark")}
    assert {"revenue", "forecast", "zürich"} <= marks


def test_closest_matches_are_labelled_as_such(full: Any, base: str) -> None:
    full.get(base + "/search?q=" + quote("zeppelin merger"))
    assert full.find_element(By.ID, "closest").text == "Closest matches"
    assert full.find_elements(By.CSS_SELECTOR, "li.match.partial")


def test_paging_past_50_has_no_duplicates_or_gaps(full: Any, base: str) -> None:
    full.get(base + "/search?q=zeppelin")
    seen: list[str] = []
    pages = 0
    while True:
        pages += 1
        seen += [li.get_attribute("data-entry") for li in full.find_elements(By.CSS_SELECTOR, "li.match")]
        links = full.find_elements(By.ID, "next")
        if not links:
            break
        click(full, links[0])
    items = sorted(int(text.rsplit(" ", 1)[1]) for text in texts_of_pages(seen))
    assert pages == 3 and len(seen) == PAGING_MATCHES == len(set(seen))
    assert items == list(range(PAGING_MATCHES))
    assert full.find_element(By.ID, "end")


def texts_of_pages(entry_ids: list[str]) -> list[str]:
    # s-page-K:N holds item 3N+K ("zeppelin inventory item 3N+K").
    out = []
    for entry_id in entry_ids:
        session, seq = entry_id.rsplit(":", 1)
        out.append(f"item {3 * int(seq) + int(session.rsplit('-', 1)[1])}")
    return out


def test_the_session_view_shows_lineage_and_surface_states(full: Any, base: str) -> None:
    full.get(base + "/session/s-alpha")
    assert full.find_element(By.ID, "session-id").text == "s-alpha"
    assert texts(full, "ul.descendants li.descendant a") == ["s-child", "s-grandchild"]
    states = {
        row.get_attribute("data-seq"): row.get_attribute("data-surface")
        for row in full.find_elements(By.CSS_SELECTOR, "tr.event")
    }
    assert states == {
        "0": "shadowed",
        "1": "log-only",
        "2": "shadowed",
        "3": "current",
        "4": "current",
        "5": "current",
    }
    # Replacement links lead to the replacing event, read exactly with its window.
    click(full, full.find_element(By.CSS_SELECTOR, "#seq-0 .replaced-by a"))
    assert full.find_element(By.CSS_SELECTOR, "tr.target").get_attribute("data-seq") == "4"
    assert "around seq 4" in full.find_element(By.CSS_SELECTOR, "#events h2").text

    full.get(base + "/session/s-grandchild")
    assert texts(full, "ol.ancestors li.ancestor a") == ["s-alpha", "s-child"]
    full.get(base + "/session/s-orphan")
    assert "s-missing" in full.find_element(By.ID, "lineage-unresolved").text
    full.get(base + "/session/s-cycle-1")
    assert "s-cycle-1 → s-cycle-2 → s-cycle-1" in full.find_element(By.ID, "lineage-cycle").text


def test_a_search_hit_opens_the_exact_read_window(full: Any, base: str) -> None:
    full.get(base + "/search?q=" + quote("São Paulo numbers"))
    click(full, full.find_element(By.CSS_SELECTOR, "li.match .session"))
    assert full.find_element(By.CSS_SELECTOR, "tr.target").get_attribute("data-seq") == "5"
    assert [r.get_attribute("data-seq") for r in full.find_elements(By.CSS_SELECTOR, "tr.event")] == [
        "0",
        "1",
        "2",
        "3",
        "4",
        "5",
    ]


def test_hostile_texts_ids_and_queries_render_inert(full: Any, base: str) -> None:
    full.get(base + "/search?q=hostile+payload")
    assert (
        "<script>window.__pwned = 1</script>" in full.find_element(By.CSS_SELECTOR, "li.match .excerpt").text
    )
    not_pwned(full)
    full.get(base + "/session/s-hostile")
    assert full.find_element(By.CSS_SELECTOR, "#session-header h1").text == HOSTILE
    assert HOSTILE in full.find_element(By.CSS_SELECTOR, "#seq-0 td.text").text
    not_pwned(full)
    full.get(base + "/search?q=" + quote(HOSTILE) + "&session=" + quote(HOSTILE))
    not_pwned(full)
    full.get(base + "/search?q=" + quote(HOSTILE))
    assert full.find_element(By.ID, "q").get_attribute("value") == HOSTILE
    not_pwned(full)
    for hostile_id in ('"><script>window.__pwned=3</script>', '"><img src=x onerror="window.__pwned=3">'):
        full.get(base + "/session/" + quote(hostile_id, safe=""))
        assert full.find_element(By.ID, "error")
        not_pwned(full)
    full.get(base + "/search?ws=" + quote("<img src=x onerror=window.__pwned=4>"))
    assert "<img src=x" in full.find_element(By.ID, "error").text
    not_pwned(full)


def test_a_limited_token_cannot_see_another_workspace(driver: Any, base: str) -> None:
    sign_in(driver, base, LIMITED_TOKEN)
    try:
        driver.get(base + "/search?q=" + quote("revenue forecast merger"))
        assert "s-alpha" in " ".join(texts(driver, "li.match .session"))
        assert "s-secret" not in driver.page_source and "ws-b" not in driver.page_source
        for path in ("/session/s-secret", "/session/s-secret?seq=0", "/session/s-secret/export.jsonl"):
            driver.get(base + path)
            assert driver.find_element(By.ID, "error") and "merger" not in driver.page_source
        driver.get(base + "/health")
        workspaces = [
            row.get_attribute("data-workspace")
            for row in driver.find_elements(By.CSS_SELECTOR, "tr.workspace")
        ]
        assert workspaces == ["ws-a", "ws-page"]
        assert "ws-b" not in driver.page_source
    finally:
        sign_in(driver, base, FULL_TOKEN)


def test_health_shows_lag_freshness_and_workspace_counts(full: Any, base: str) -> None:
    full.get(base + "/health")
    assert full.find_element(By.ID, "total-lag").text == "0"
    assert full.find_element(By.ID, "freshness").text == "current"
    rows = {
        r.get_attribute("data-workspace"): r.text for r in full.find_elements(By.CSS_SELECTOR, "tr.workspace")
    }
    assert set(rows) == {"ws-a", "ws-b", "ws-page"}
    assert rows["ws-page"].split()[1:] == ["3", str(PAGING_MATCHES)]
