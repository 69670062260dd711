"""Settings from the environment are resolved once per environment, and follow every change of it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from backscroll.indexer.settings import OpenSearchSettings
from backscroll.query import OpenSearchProvider, Scope
from backscroll.query.errors import SessionQueryError
from backscroll.query.opensearch.settings import resolved_settings, settings_key


@pytest.fixture(autouse=True)
def _clean(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)  # no stray .env
    for name in list(os.environ):
        if name.upper().startswith("BACKSCROLL_OPENSEARCH_"):
            monkeypatch.delenv(name)


def test_the_key_holds_the_overrides_the_settings_variables_and_the_env_file(tmp_path: Path) -> None:
    env = {"BACKSCROLL_OPENSEARCH_URL": "http://a:9200", "HOME": "/root", "backscroll_opensearch_x": "1"}
    key = settings_key({"index_prefix": "p"}, env, str(tmp_path / ".env"))
    assert key[0] == (("index_prefix", "p"),)
    assert key[1] == (("BACKSCROLL_OPENSEARCH_URL", "http://a:9200"), ("backscroll_opensearch_x", "1"))
    assert key[2] is None
    (tmp_path / ".env").write_text("BACKSCROLL_OPENSEARCH_URL=http://b:9200\n", encoding="utf-8")
    assert settings_key({"index_prefix": "p"}, env, str(tmp_path / ".env"))[2] is not None
    assert settings_key({"index_prefix": "q"}, env, str(tmp_path / ".env")) != key


def test_the_same_environment_builds_once_and_each_caller_gets_its_own_copy() -> None:
    built: list[dict[str, str]] = []

    def build(overrides: dict[str, str]) -> OpenSearchSettings:
        built.append(overrides)
        return OpenSearchSettings(**overrides)  # type: ignore[arg-type]

    one = resolved_settings({"index_prefix": "memo1"}, build)
    two = resolved_settings({"index_prefix": "memo1"}, build)
    assert built == [{"index_prefix": "memo1"}]
    assert one == two and one is not two
    resolved_settings({"index_prefix": "memo2"}, build)
    assert len(built) == 2


def test_a_changed_variable_or_env_file_is_read_again(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    scope = Scope.session("s1")
    assert OpenSearchProvider(scope, index_prefix="memo3").settings.url == "http://127.0.0.1:9200"
    monkeypatch.setenv("BACKSCROLL_OPENSEARCH_URL", "http://env.example:9200")
    assert OpenSearchProvider(scope, index_prefix="memo3").settings.url == "http://env.example:9200"
    monkeypatch.delenv("BACKSCROLL_OPENSEARCH_URL")
    (tmp_path / ".env").write_text("BACKSCROLL_OPENSEARCH_URL=http://file.example:9200\n", encoding="utf-8")
    assert OpenSearchProvider(scope, index_prefix="memo3").settings.url == "http://file.example:9200"
    (tmp_path / ".env").write_text("BACKSCROLL_OPENSEARCH_URL=http://file2.example:9200\n", encoding="utf-8")
    assert OpenSearchProvider(scope, index_prefix="memo3").settings.url == "http://file2.example:9200"


def test_invalid_settings_fail_every_time(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BACKSCROLL_OPENSEARCH_URL", "ftp://nowhere")
    for _ in range(2):
        with pytest.raises(SessionQueryError) as raised:
            OpenSearchProvider(Scope.session("s1"), index_prefix="memo4")
        assert raised.value.code == "SESSION_QUERY_INVALID_CONFIG"


def test_a_ca_file_is_checked_each_time(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    ca = tmp_path / "ca.pem"
    ca.write_text("not a real bundle\n", encoding="utf-8")
    monkeypatch.setenv("BACKSCROLL_OPENSEARCH_CA_CERTS", str(ca))
    assert OpenSearchProvider(Scope.session("s1"), index_prefix="memo5").settings.ca_certs == ca
    ca.unlink()
    with pytest.raises(SessionQueryError):
        OpenSearchProvider(Scope.session("s1"), index_prefix="memo5")


def test_a_client_from_the_settings_keeps_a_connection_for_each_concurrent_thread() -> None:
    from opensearchpy import OpenSearch

    client = OpenSearch(**OpenSearchSettings().client_kwargs())
    try:
        connection = client.transport.connection_pool.connections[0]
        assert connection.pool.pool.maxsize == 8  # urllib3's default of 1 reconnects under concurrency
    finally:
        client.close()
