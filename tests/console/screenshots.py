"""Take the README's screenshots of the console's three pages in headless Chromium (on demand).

``python -m tests.console.screenshots [--out docs]`` builds the demo workload (embedded SQLite, in a
temporary directory), serves the console on a free loopback port and writes
``console-search.png``, ``console-session.png`` and ``console-health.png``.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path
from urllib.parse import quote

from tests.console.browser import open_chromium
from tests.console.conftest import embedded, live_console

from backscroll.cli.workload import demo_records
from backscroll.console.settings import Grants
from backscroll.ingest.sqlite.log import SQLiteEntryLog

PAGES = {
    "console-search.png": "/search?q=" + quote("revnue forcast zurich"),
    "console-session.png": "/session/sess-009?seq=16&before=8&after=6",
    "console-health.png": "/health",
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, default=Path("docs"))
    args = parser.parse_args()
    driver = open_chromium(1280, 900)
    if driver is None:
        raise SystemExit("chromium and chromium-driver are needed (scripts/setup --stack installs them)")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "demo.db"
        with SQLiteEntryLog(path) as log:
            for record in demo_records(workspaces=3, sessions=12, events_per_session=30):
                log.append(record)
            # One record the indexer must park, so the health page shows a dead letter.
            log.append_raw(
                b"sess-099", b'{"v": 1, "kind": "event", "workspace_id": "ws-0", "session_id": "sess-099"}'
            )
        try:
            with live_console(embedded(path), Grants({})) as base:
                for name, page in PAGES.items():
                    driver.set_window_size(1280, 900)
                    driver.get(base + page)
                    height = driver.execute_script("return document.documentElement.scrollHeight")
                    driver.set_window_size(1280, min(max(900, int(height) + 40), 1500))
                    driver.execute_script("window.scrollTo(0, 0)")
                    driver.save_screenshot(str(args.out / name))
                    print(f"wrote {args.out / name}")
        finally:
            driver.quit()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
