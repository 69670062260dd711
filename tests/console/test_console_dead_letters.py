"""Dead letters on /health as a limited token sees them: only its workspaces' letters, and no
reason that names another workspace."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from tests.console.conftest import FULL_TOKEN, LIMITED_TOKEN, corpus_records, grants, live_console
from tests.console.http import call

from backscroll.backends import EmbeddedBackend, ParkedRecord
from backscroll.console.letters import OTHER_WORKSPACE, scoped_letters
from backscroll.console.settings import Access
from backscroll.indexer.sqlite.runner import embedded_runner
from backscroll.ingest.sqlite.log import SQLiteEntryLog


def test_a_limited_token_never_reads_another_workspace_in_a_dead_letter(tmp_path: Path) -> None:
    path = tmp_path / "letters.db"
    with SQLiteEntryLog(path) as log:
        log.append_many(list(corpus_records()))
        # ws-a's writer reuses a session id of ws-b: parked, with a reason that names ws-b.
        log.append_many(
            [
                {
                    "v": 1,
                    "kind": "event",
                    "workspace_id": "ws-a",
                    "session_id": "s-secret",
                    "seq": 1,
                    "type": "user/message",
                    "time": "2026-11-30T12:00:00Z",
                    "text": "a colliding write",
                    "surface": {"op": "append"},
                }
            ]
        )
    with embedded_runner(path) as indexer:
        indexer.run(until_idle=True)
    backend = replace(EmbeddedBackend(path, index_on_search=False), cursor_key=b"k" * 32)
    with live_console(backend, grants()) as url:
        full = call(url + "/health", token=FULL_TOKEN).body
        assert 'id="dead-count">1<' in full and "belongs to workspace ws-b" in full
        limited = call(url + "/health", token=LIMITED_TOKEN).body
        assert 'id="dead-count">1<' in limited  # the letter is ws-a's own
        assert "ws-b" not in limited and f"belongs to {OTHER_WORKSPACE}" in limited


def _letter(workspace: str, reason: str) -> ParkedRecord:
    return ParkedRecord(
        dlq_offset=0,
        partition=0,
        offset=0,
        error_class="SchemaError",
        reason=reason,
        field="workspace_id",
        time=None,
        workspace_id=workspace,
        session_id="s1",
        envelope={"reason": reason},
    )


def test_scoped_letters_redact_other_workspaces_and_leave_out_their_letters() -> None:
    letters = [
        _letter("ws-a", "workspace_id: session already belongs to workspace ws-b."),
        _letter("ws-a", "clashes with ws-b.sub and ws-b, not ws-a"),
        _letter("ws-b", "anything"),
    ]
    limited = Access(identity="x", workspaces=frozenset({"ws-a"}))
    shown, hidden = scoped_letters(letters, limited, ["ws-a", "ws-b", "ws-b.sub"])
    assert hidden == 1
    assert shown[0].reason == "workspace_id: session already belongs to another workspace."
    assert shown[0].envelope["reason"] == shown[0].reason
    assert shown[1].reason == "clashes with another workspace and another workspace, not ws-a"
    everything = Access(identity="y", workspaces=None)
    assert scoped_letters(letters, everything, ["ws-b"]) == (letters, 0)
