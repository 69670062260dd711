"""The pipeline through a secured stack (SASL_SSL + ACLs, OpenSearch security plugin)
with one principal per component; every refused cell of the principal x operation table; wrong
credentials, untrusted/expired/wrong-host certificates and missing permissions as one typed line.

Starts its own secured stack (ports 29092/29093/29200/29300, state in /var/tmp/sl-secure) and
stops it afterwards. Runs in CI (``BACKSCROLL_REQUIRE_STACK=1``; ``BACKSCROLL_SECURE_STACK=0``
opts out) or with ``BACKSCROLL_SECURE_STACK=1``; ``BACKSCROLL_SECURE_STACK_REUSE=1`` keeps a running one (no
``--fresh``, not stopped) while developing.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import subprocess
import sys
import uuid
import warnings
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from opensearchpy.exceptions import AuthorizationException
from pydantic import SecretStr
from secure_ops import (
    KAFKA_ALLOWED,
    OPENSEARCH_ALLOWED,
    kafka_probes,
    opensearch_client,
    opensearch_probes,
)
from secure_stack import DLS_WORKSPACE, REPO, Secured, load, sign_cert, stack, tls_server

from backscroll.backends import KafkaOpenSearchBackend
from backscroll.indexer import IndexerSettings, kafka_runner
from backscroll.indexer.errors import SourceAccessDenied, ViewAccessDenied
from backscroll.indexer.opensearch.operations import forget_session
from backscroll.ingest import Appender, AppenderSettings, KafkaSettings
from backscroll.ingest.errors import LogAccessDenied
from backscroll.ingest.kafka.topics import ensure_topics
from backscroll.query import OpenSearchProvider, Scope, SessionQueryError, SessionQueryRequest
from backscroll.query.opensearch.async_reader import AsyncOpenSearchReader
from backscroll.query.opensearch.reader import OpenSearchSessionReader

pytestmark = pytest.mark.integration

WS_B = "workspace-b"
_BASE = datetime(2026, 11, 1, tzinfo=UTC)


@pytest.fixture(scope="module")
def secured() -> Iterator[Secured]:
    wanted = os.environ.get(
        "BACKSCROLL_SECURE_STACK", "1" if os.environ.get("BACKSCROLL_REQUIRE_STACK") == "1" else "0"
    )
    if wanted != "1":
        pytest.skip(
            "starts its own secured stack: set BACKSCROLL_SECURE_STACK=1 (CI sets BACKSCROLL_REQUIRE_STACK)"
        )
    reuse = os.environ.get("BACKSCROLL_SECURE_STACK_REUSE") == "1"
    started = stack("up", "--secure") if reuse else stack("up", "--fresh", "--secure")
    if started.returncode != 0:
        pytest.fail(f"stack.sh up --secure failed:\n{started.stdout[-3000:]}\n{started.stderr[-3000:]}")
    secured = load(f"backscroll-sec-{uuid.uuid4().hex[:8]}")
    admin = secured.admin()  # nothing of backscroll's: the first `index` must work on its own
    if not admin.indices.exists(index="other-tenant-data"):
        admin.index(index="other-tenant-data", body={"secret": "not for backscroll"}, refresh=True)
    admin.close()
    try:
        yield secured
    finally:
        with warnings.catch_warnings():  # sockets of clients refused on purpose: finalised here
            warnings.simplefilter("ignore", ResourceWarning)
            gc.collect()
        if not reuse:
            stopped = stack("down")
            assert stopped.returncode == 0, stopped.stderr


def _records(ws: str, sid: str, words: str) -> list[dict[str, Any]]:
    header = {
        "v": 1,
        "kind": "header",
        "workspace_id": ws,
        "session_id": sid,
        "created_at": _BASE.isoformat(),
    }
    events = [
        {
            "v": 1,
            "kind": "event",
            "workspace_id": ws,
            "session_id": sid,
            "seq": seq,
            "type": "user/message",
            "role": "user",
            "surface": {"op": "append"},
            "time": (_BASE + timedelta(seconds=seq)).isoformat(),
            "text": f"{words} number {seq}",
        }
        for seq in range(3)
    ]
    return [header, *events]


@pytest.fixture(scope="module")
def indexed(secured: Secured, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Append (agent principal) -> index (indexer principal): one session in each workspace."""
    sessions = {DLS_WORKSPACE: f"sa-{uuid.uuid4().hex[:6]}", WS_B: f"sb-{uuid.uuid4().hex[:6]}"}
    agent = KafkaOpenSearchBackend(secured.kafka("agent"), secured.opensearch("agent"))
    ensure_topics(secured.kafka("agent"))  # what Backend.open_log does first: must pass for an agent
    spool = AppenderSettings(spool_dir=tmp_path_factory.mktemp("spool"))
    assert agent.kafka is not None
    with Appender(agent.kafka, spool) as appender:
        handles = [
            appender.append(record)
            for ws, sid in sessions.items()
            for record in _records(ws, sid, "quarterly reconciliation ledger")
        ]
        appender.flush(timeout=60)
        for handle in handles:
            handle.result(timeout=30)
    group = secured.components["indexer"]["BACKSCROLL_INDEXER_GROUP_ID"]
    with kafka_runner(
        secured.kafka("indexer"), secured.opensearch("indexer"), IndexerSettings(group_id=group)
    ) as worker:
        stats = worker.run(until_idle=True)
    assert stats.dead_lettered == 0
    return sessions


def test_append_index_search_read_forget_with_per_component_principals(
    secured: Secured, indexed: dict[str, str]
) -> None:
    sid = indexed[WS_B]
    query = secured.opensearch("query")
    with pytest.raises(ViewAccessDenied) as denied:  # erasing is the operator's
        forget_session(query, sid)
    assert "user 'sl-query' lacks permission indices:data/write/" in str(denied.value)
    with pytest.raises(ViewAccessDenied) as denied:  # projection never deletes
        forget_session(secured.opensearch("indexer"), sid)
    assert "user 'sl-indexer' lacks permission indices:data/write/" in str(denied.value)
    with OpenSearchProvider(Scope.workspace(WS_B), query) as provider:
        found = provider.search(SessionQueryRequest(query="reconcilation", limit=10))
        assert {m.session_id for m in found.matches} == {sid}
    with OpenSearchSessionReader(Scope.workspace(WS_B), query) as reader:
        read = reader.read_event(sid, 1, before=1, after=1)
        assert [e.seq for e in read.events] == [0, 1, 2]

    async def aread() -> list[int]:  # the same over TLS and basic auth on AsyncOpenSearch (aiohttp)
        async with AsyncOpenSearchReader(Scope.workspace(WS_B), query) as areader:
            return [e.seq for e in (await areader.aread_event(sid, 1, before=1, after=1)).events]

    assert asyncio.run(aread()) == [0, 1, 2]
    assert forget_session(secured.opensearch("operator"), sid) == 3
    with OpenSearchProvider(Scope.workspace(WS_B), query) as provider:
        assert provider.search(SessionQueryRequest(query="reconcilation", limit=10)).matches == ()


def test_document_level_security_hides_other_workspaces(secured: Secured, indexed: dict[str, str]) -> None:
    scoped = secured.opensearch("query-scoped")
    # the provider's own scope is workspace B, but the server only shows the principal workspace A
    with OpenSearchProvider(Scope.workspace(WS_B), scoped) as provider:
        assert provider.search(SessionQueryRequest(query="ledger", limit=50)).matches == ()
        assert provider.search(SessionQueryRequest(query="", limit=50)).matches == ()
    with OpenSearchProvider(Scope.workspaces([DLS_WORKSPACE, WS_B], ops=True), scoped) as provider:
        seen = {m.session_id for m in provider.search(SessionQueryRequest(query="ledger", limit=50)).matches}
        assert seen == {indexed[DLS_WORKSPACE]}
    # the unrestricted query principal does see workspace A (the filter above is the server's)
    with OpenSearchProvider(Scope.workspace(DLS_WORKSPACE), secured.opensearch("query")) as provider:
        assert provider.search(SessionQueryRequest(query="ledger", limit=50)).matches


def test_every_forbidden_cell_is_refused_by_the_server(
    secured: Secured, indexed: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    group = secured.components["indexer"]["BACKSCROLL_INDEXER_GROUP_ID"]
    admin = secured.admin()
    if not admin.indices.exists(index=f"{secured.prefix}-probe"):
        admin.indices.create(index=f"{secured.prefix}-probe")
    admin.close()
    refused = allowed = 0
    wrong: list[str] = []
    for component, ok in KAFKA_ALLOWED.items():
        kafka = secured.kafka(component)
        for operation, probe in kafka_probes(group).items():
            result = probe(kafka)
            refused += not result
            allowed += result
            if result != (operation in ok):
                wrong.append(f"Kafka {kafka.sasl_username} {operation}: {'allowed' if result else 'refused'}")
    for component, ok in OPENSEARCH_ALLOWED.items():
        settings = secured.opensearch(component)
        client = opensearch_client(settings)
        for operation, os_probe in opensearch_probes().items():
            result = os_probe(client, secured.prefix)
            refused += not result
            allowed += result
            if result != (operation in ok):
                wrong.append(
                    f"OpenSearch {settings.username} {operation}: {'allowed' if result else 'refused'}"
                )
        client.close()
    assert not wrong, "\n".join(wrong)
    cells = sum(len(kafka_probes(group)) for _ in KAFKA_ALLOWED) + sum(
        len(opensearch_probes()) for _ in OPENSEARCH_ALLOWED
    )
    assert refused + allowed == cells
    with capsys.disabled():
        print(f"\n[secure] principal x operation: {cells} cells, {refused} refused by the servers")
    assert refused == 48


def test_no_principal_changes_its_own_password(secured: Secured) -> None:
    """The account API refuses every component principal: a stolen password cannot lock out
    the other processes that share it."""
    for component in OPENSEARCH_ALLOWED:
        settings = secured.opensearch(component)
        assert settings.password is not None
        password = settings.password.get_secret_value()
        client = opensearch_client(settings)
        with pytest.raises(AuthorizationException) as refused:
            client.transport.perform_request(
                "PUT",
                "/_plugins/_security/api/account",
                body={"current_password": password, "password": password + "-changed"},
            )
        client.close()
        assert "reserved" in str(refused.value) or "read-only" in str(refused.value)


def test_missing_acl_names_the_principal_and_the_permission(
    secured: Secured, indexed: dict[str, str]
) -> None:
    group = secured.components["indexer"]["BACKSCROLL_INDEXER_GROUP_ID"]
    # an agent credential used by the indexer
    worker = kafka_runner(
        secured.kafka("agent"), secured.opensearch("indexer"), IndexerSettings(group_id=group)
    )
    with pytest.raises(SourceAccessDenied) as err:
        worker.run(until_idle=True)
    worker.close()
    line = str(err.value)
    assert "\n" not in line and "'sl-agent'" in line and "127.0.0.1:29092" in line
    assert "GroupAuthorizationFailed" in line or "TopicAuthorizationFailed" in line
    # a query credential used to index (a prefix with no index yet: the first step creates one)
    fresh = secured.opensearch("query", index_prefix=f"{secured.prefix}-fresh")
    with pytest.raises(Exception) as os_err:
        kafka_runner(secured.kafka("indexer"), fresh, IndexerSettings(group_id=group)).view.ensure_schema()
    assert type(os_err.value).__name__ == "ViewAccessDenied"
    assert "'sl-query' lacks permission" in str(os_err.value)


def _one_line(text: str, secured: Secured) -> str:
    assert "\n" not in text.strip() and "Traceback" not in text
    for secret in secured.passwords():
        assert secret not in text
    return text


_SELF_SIGNED = ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2"]


def test_wrong_password_and_untrusted_ca_fail_with_one_line(secured: Secured, tmp_path: Path) -> None:
    rogue = tmp_path / "rogue-ca.pem"
    subprocess.run(
        [*_SELF_SIGNED, "-keyout", str(tmp_path / "rogue.key"), "-out", str(rogue), "-subj", "/CN=rogue CA"],
        check=True,
        capture_output=True,
    )
    cases: list[tuple[KafkaSettings, str]] = [
        (
            secured.kafka("agent", sasl_password=SecretStr("wrong-password")),
            "login as 'sl-agent' was rejected",
        ),
        (secured.kafka("agent", ssl_cafile=rogue), "unknown CA"),
    ]
    for kafka, expected in cases:
        with pytest.raises(LogAccessDenied) as err:
            ensure_topics(kafka)
        line = _one_line(str(err.value), secured)
        assert expected in line and "127.0.0.1:29092" in line and not err.value.retriable
    os_cases = [
        (
            secured.opensearch("query", password=SecretStr("wrong-password")),
            "login as 'sl-query' was rejected",
        ),
        (secured.opensearch("query", ca_certs=rogue), "unknown CA"),
    ]
    for settings, expected in os_cases:
        with (
            pytest.raises(SessionQueryError) as qerr,
            OpenSearchProvider(Scope.workspace(WS_B), settings) as p,
        ):
            p.search(SessionQueryRequest(query="ledger"))
        line = _one_line(str(qerr.value), secured)
        assert qerr.value.code == "SESSION_QUERY_INVALID_CONFIG" and expected in line
        assert "https://127.0.0.1:29200" in line


@pytest.mark.parametrize(
    ("san", "days", "expected"),
    [("IP:127.0.0.1", -1, "has expired"), ("DNS:elsewhere.example", 30, "not valid for this host name")],
)
def test_expired_and_wrong_host_certificates_fail_with_one_line(
    secured: Secured, tmp_path: Path, san: str, days: int, expected: str
) -> None:
    cert, key = sign_cert(secured, tmp_path, san=san, days=days)
    with tls_server(cert, key) as port:
        with pytest.raises(LogAccessDenied) as err:
            ensure_topics(secured.kafka("agent", bootstrap_servers=f"127.0.0.1:{port}"))
        assert expected in _one_line(str(err.value), secured)
        settings = secured.opensearch("query", url=f"https://127.0.0.1:{port}")
        with (
            pytest.raises(SessionQueryError) as qerr,
            OpenSearchProvider(Scope.workspace(WS_B), settings) as p,
        ):
            p.search(SessionQueryRequest(query="ledger"))
        assert expected in _one_line(str(qerr.value), secured)


def test_cli_prints_one_line_and_no_secret(secured: Secured) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("BACKSCROLL_")}
    env.update(secured.components["agent"])
    env["BACKSCROLL_KAFKA_SASL_PASSWORD"] = "wrong-password"
    env["BACKSCROLL_KAFKA_BOOTSTRAP_TIMEOUT_S"] = "3"
    cli = Path(sys.executable).parent / "backscroll"
    done = subprocess.run(
        [str(cli), "index", "--until-idle"], env=env, capture_output=True, text=True, timeout=120, cwd=REPO
    )
    assert done.returncode != 0
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, done.stderr
    assert "sl-agent" in lines[0] and "127.0.0.1:29092" in _one_line(lines[0], secured)


@pytest.mark.parametrize("protocol", ["PLAINTEXT", "SASL_PLAINTEXT"])
def test_a_plain_protocol_against_the_tls_listener_says_so(secured: Secured, protocol: str) -> None:
    """Not "wrong password" and not "unavailable": the listener speaks TLS."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("BACKSCROLL_")}
    env.update(secured.components["indexer"])
    env["BACKSCROLL_KAFKA_SECURITY_PROTOCOL"] = protocol
    env["BACKSCROLL_KAFKA_BOOTSTRAP_TIMEOUT_S"] = "3"
    cli = Path(sys.executable).parent / "backscroll"
    done = subprocess.run(
        [str(cli), "dlq", "list"], env=env, capture_output=True, text=True, timeout=120, cwd=REPO
    )
    assert done.returncode == 1, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, done.stderr
    line = _one_line(lines[0], secured)
    assert "speaks TLS" in line and protocol in line and "password" not in line


def test_dead_letters_with_an_agent_credential_are_one_refusal(secured: Secured) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("BACKSCROLL_")}
    env.update(secured.components["agent"])
    cli = Path(sys.executable).parent / "backscroll"
    done = subprocess.run(
        [str(cli), "dlq", "list"], env=env, capture_output=True, text=True, timeout=120, cwd=REPO
    )
    assert done.returncode == 1, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, done.stderr
    line = _one_line(lines[0], secured)
    assert "SOURCE_ACCESS_DENIED" in line and "'sl-agent'" in line and "dead-letter topic" in line


def test_secrets_stay_out_of_repr_and_logs(secured: Secured, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    kafka, opensearch = secured.kafka("operator"), secured.opensearch("operator")
    ensure_topics(kafka)
    with OpenSearchProvider(Scope.workspace(WS_B), opensearch) as provider:
        provider.search(SessionQueryRequest(query="ledger"))
    text = "\n".join([repr(kafka), repr(opensearch), str(kafka), str(opensearch), caplog.text])
    # process titles: the servers' and this process's command lines
    for pidfile in (secured.dir / "run").glob("*.pid"):
        text += Path(f"/proc/{pidfile.read_text().strip()}/cmdline").read_bytes().decode(errors="replace")
    text += Path("/proc/self/cmdline").read_bytes().decode(errors="replace")
    # the servers' own logs (Kafka prints its configuration with passwords as [hidden])
    for log in [
        *(secured.dir / "kafka" / "logs").glob("*.log"),
        *(secured.dir / "opensearch" / "logs").glob("*.log"),
    ]:
        text += log.read_text(errors="replace")
    for secret in secured.passwords():
        assert secret not in text
