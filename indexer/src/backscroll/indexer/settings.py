"""Settings of the indexer and of the OpenSearch projection it writes (the query side reads them)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from backscroll.ingest.redact import redact_secrets

__all__ = ["IndexerSettings", "OpenSearchSettings"]


class OpenSearchSettings(BaseSettings):
    """OpenSearch connection and index naming (env prefix ``BACKSCROLL_OPENSEARCH_``)."""

    model_config = SettingsConfigDict(env_prefix="BACKSCROLL_OPENSEARCH_", env_file=".env", extra="ignore")

    url: str = Field("http://127.0.0.1:9200", description="Comma-separated OpenSearch URLs.")
    username: str | None = Field(None, description="Basic-auth user.")
    password: SecretStr | None = Field(None, description="Basic-auth password (never printed).")
    verify_certs: bool = Field(True, description="Verify TLS certificates.")
    ca_certs: Path | None = Field(None, description="CA bundle for TLS.")
    index_prefix: str = Field("backscroll", pattern=r"^[a-z0-9][a-z0-9_.-]{0,60}$")
    shards: int = Field(1, ge=1, description="Primary shards of a new events index.")
    replicas: int = Field(0, ge=0, description="Replicas of new indices (0 on a single node).")
    timeout_s: float = Field(10.0, gt=0, description="Per-request timeout.")
    http_compress: bool = Field(
        False,
        description="Gzip request bodies and accept gzip responses: worth it over a slow or metered "
        "link, pure CPU cost on both ends next to the cluster (bulk bodies are large).",
    )

    @field_validator("url")
    @classmethod
    def _check_url(cls, value: str) -> str:
        for url in value.split(","):
            url = url.strip()
            if not (url.startswith("http://") or url.startswith("https://")) or len(url) < 10:
                raise ValueError(f"expected http(s)://host:port, got {redact_secrets(url)!r}")
        return value

    def __repr_args__(self) -> Any:
        # Settings reprs end up in logs and tracebacks: never with the URL's password.
        for name, value in super().__repr_args__():
            yield name, redact_secrets(value) if isinstance(value, str) else value

    @field_validator("ca_certs", mode="before")
    @classmethod
    def _refuse_empty(cls, value: object) -> object:
        # an empty variable would become Path("."), reported as "file not found: ."
        if isinstance(value, str) and not value.strip():
            raise ValueError("is empty: name a file, or leave the variable unset")
        return value

    @field_validator("ca_certs")
    @classmethod
    def _check_file(cls, value: Path | None) -> Path | None:
        if value is not None and not value.is_file():
            raise ValueError(f"file not found: {value}")
        return value

    def client_kwargs(self) -> dict[str, Any]:
        kwargs: dict[str, Any] = {
            "hosts": [u.strip() for u in self.url.split(",")],
            "timeout": self.timeout_s,
            "max_retries": 0,
            "retry_on_timeout": False,
            "http_compress": self.http_compress,
            "verify_certs": self.verify_certs,
            # One client serves several threads (the indexer's write lanes and watermarks, an
            # application's concurrent searches); urllib3's default pool keeps one connection and
            # opens, then discards, a new one for every request made while it is busy.
            "pool_maxsize": 8,
        }
        if self.ca_certs:
            kwargs["ca_certs"] = str(self.ca_certs)
        if self.username:
            secret = self.password.get_secret_value() if self.password else ""
            kwargs["http_auth"] = (self.username, secret)
        return kwargs


class IndexerSettings(BaseSettings):
    """Worker behaviour (env prefix ``BACKSCROLL_INDEXER_``)."""

    model_config = SettingsConfigDict(env_prefix="BACKSCROLL_INDEXER_", env_file=".env", extra="ignore")

    group_id: str = Field("backscroll-indexer", description="Kafka consumer group of the workers.")
    batch_max: int = Field(2000, ge=1, le=100_000, description="Records per poll/bulk batch.")
    poll_timeout_ms: int = Field(500, ge=10, description="How long one poll waits for records.")
    retry_budget: int = Field(8, ge=0, description="Retries of a failing bulk item before pausing.")
    session_timeout_s: float = Field(
        10.0, ge=6, le=300, description="A worker that stops heartbeating leaves the group after this."
    )
    idle_timeout_s: float = Field(
        300.0,
        gt=0,
        description="--until-idle: fail after this long without progress towards the topic's end.",
    )
    metrics_port: int | None = Field(None, ge=0, le=65535, description="Port for /metrics and health.")
    metrics_host: str = Field(
        "127.0.0.1", description="Address the metrics/health server binds (0.0.0.0 in a container)."
    )
