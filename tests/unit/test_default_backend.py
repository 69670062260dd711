"""With no setting at all, ``current_backend()`` is the embedded file and everything built from it
(log, indexer, provider, reader) works without reaching for Kafka or OpenSearch: their clients
cannot even be imported in the process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

DEFAULT_WITHOUT_SERVERS = textwrap.dedent(
    """
    import json, sys
    sys.modules.update(dict.fromkeys(("kafka", "opensearchpy")))  # any import of them fails

    from backscroll.backends import current_backend
    from backscroll.query import Scope, SessionQueryRequest

    backend = current_backend()
    record = {"v": 1, "kind": "event", "workspace_id": "ws-0", "session_id": "s-1", "seq": 0,
              "type": "user/message", "role": "user", "surface": {"op": "append"},
              "time": "2026-11-30T10:00:00Z", "text": "revenue forecast for Zürich"}
    with backend.open_provider(Scope.session("s-1")) as provider:
        before = provider.search(SessionQueryRequest(query="zurich revnue")).searched
    with backend.open_log() as log:
        log.append(record).result(timeout=10)
    with backend.open_indexer() as indexer:
        indexer.run(until_idle=True)
    with backend.open_provider(Scope.session("s-1")) as provider:
        found = provider.search(SessionQueryRequest(query="zurich revnue"))
    with backend.open_reader(Scope.session("s-1")) as reader:
        text = reader.read_event("s-1", 0).target.text
    print(json.dumps({"backend": backend.name, "before": before, "matches": len(found.matches),
                      "text": text}))
    """
)


def test_the_default_backend_is_embedded_and_needs_no_server(tmp_path: Path) -> None:
    env = {key: value for key, value in os.environ.items() if not key.startswith("BACKSCROLL_")}
    env |= {"XDG_DATA_HOME": str(tmp_path / "data"), "XDG_STATE_HOME": str(tmp_path / "state")}
    done = subprocess.run(
        [sys.executable, "-c", DEFAULT_WITHOUT_SERVERS],
        cwd=tmp_path,  # no .env here
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {
        "backend": "embedded",
        "before": 0,  # nothing appended yet: an empty history, not an error
        "matches": 1,
        "text": "revenue forecast for Zürich",
    }
    assert (tmp_path / "data" / "backscroll" / "backscroll.db").is_file()
