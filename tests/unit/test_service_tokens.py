"""The service's token store and guards: hashing, expiry parsing, mode 600, concurrent creates,
revocation seen without a restart, Host/Origin names and the token bucket."""

from __future__ import annotations

import hashlib
import json
import stat
import subprocess
import sys
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from backscroll.service.guards import HostCheck, RateLimiter, host_name
from backscroll.service.tokens import TOKEN_PREFIX, TokenError, TokenStore, parse_expires

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def test_only_the_hash_is_stored_and_the_file_is_private(tmp_path: Path) -> None:
    store = TokenStore(tmp_path / "d" / "tokens.json")
    token, secret = store.create(["ws-a"], name="agent")
    assert secret.startswith(f"{TOKEN_PREFIX}{token.id}_")
    raw = store.path.read_text()
    plain = secret.split("_", 2)[2]
    assert plain not in raw
    assert json.loads(raw)["tokens"][0]["sha256"] == hashlib.sha256(plain.encode()).hexdigest()
    assert stat.S_IMODE(store.path.stat().st_mode) == 0o600
    assert store.authenticate(secret) == token
    assert store.authenticate(secret[:-1]) is None
    assert store.authenticate("") is None and store.authenticate(f"{TOKEN_PREFIX}{token.id}_") is None
    assert "sha256" not in token.to_json()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("30d", NOW + timedelta(days=30)),
        ("12h", NOW + timedelta(hours=12)),
        ("45m", NOW + timedelta(minutes=45)),
        ("2w", NOW + timedelta(weeks=2)),
        ("2027-01-01", datetime(2027, 1, 1, tzinfo=UTC)),
        ("2027-01-01T08:00+02:00", datetime(2027, 1, 1, 6, tzinfo=UTC)),
        (None, None),
        ("never", None),
    ],
)
def test_expiry_parsing(text: str | None, expected: datetime | None) -> None:
    assert parse_expires(text, now=NOW) == expected


@pytest.mark.parametrize("text", ["0d", "30x", "soon", "2020-01-01", "-3d"])
def test_bad_expiry_is_a_clear_error(text: str) -> None:
    with pytest.raises(TokenError, match="--expires"):
        parse_expires(text, now=NOW)


def test_scope_rules(tmp_path: Path) -> None:
    store = TokenStore(tmp_path / "tokens.json")
    with pytest.raises(TokenError):
        store.create([])
    with pytest.raises(TokenError):
        store.create(["a", "b"], sessions=["s"])
    token, _ = store.create(["a", "b"])
    assert token.ops and token.describe_scope() == "workspaces a,b"
    with pytest.raises(TokenError):
        store.revoke("../../etc")
    with pytest.raises(TokenError):
        store.revoke("0" * 12)


def test_expired_and_revoked_tokens_fail_and_revoke_is_seen_by_a_running_store(tmp_path: Path) -> None:
    serving = TokenStore(tmp_path / "tokens.json")
    _, old = serving.create(["a"], expires=datetime.now(UTC) - timedelta(seconds=1))
    assert serving.authenticate(old) is None
    token, secret = serving.create(["a"])
    assert serving.authenticate(secret) is not None
    TokenStore(serving.path).revoke(token.id)  # another process's store
    assert serving.authenticate(secret) is None
    assert serving.any_active() is False


def test_concurrent_creates_lose_nothing(tmp_path: Path) -> None:
    path = tmp_path / "tokens.json"
    made: list[str] = []

    def create() -> None:
        for _ in range(5):
            made.append(TokenStore(path).create(["a"])[0].id)

    threads = [threading.Thread(target=create) for _ in range(4)]
    for thread in threads:
        thread.start()
    code = (
        "import sys, pathlib; from backscroll.service.tokens import TokenStore\n"
        "for _ in range(5): TokenStore(pathlib.Path(sys.argv[1])).create(['b'])"
    )
    others = [subprocess.Popen([sys.executable, "-c", code, str(path)]) for _ in range(2)]
    for thread in threads:
        thread.join()
    assert all(process.wait(timeout=60) == 0 for process in others)
    ids = {token.id for token in TokenStore(path).tokens()}
    assert len(ids) == 30 and set(made) <= ids
    assert not list(tmp_path.glob(".tokens-*"))


def test_host_names_and_origins() -> None:
    assert host_name("[::1]:8767") == "::1" and host_name("Example.ORG:80") == "example.org"
    check = HostCheck.for_bind("0.0.0.0", ["svc.internal"])
    assert check.host_ok("svc.internal:8767") and check.host_ok("localhost")
    assert not check.host_ok("evil.example") and not check.host_ok(None)
    assert check.origin_ok(None) and check.origin_ok("http://svc.internal:8767")
    assert not check.origin_ok("http://evil.example") and not check.origin_ok("null")


def test_token_bucket() -> None:
    limiter = RateLimiter(rate=2.0, burst=3)
    assert [limiter.take("t", now=0.0) for _ in range(3)] == [0.0, 0.0, 0.0]
    wait = limiter.take("t", now=0.0)
    assert wait == pytest.approx(0.5) and RateLimiter.retry_after(wait) == "1"
    assert limiter.take("other", now=0.0) == 0.0
    assert limiter.take("t", now=0.6) == 0.0
