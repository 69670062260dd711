"""Settings of the ingest side: where the Kafka topic is and how to reach it securely."""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

__all__ = ["AppenderSettings", "FsyncPolicy", "KafkaSettings", "default_spool_dir", "describe_settings_error"]

FsyncPolicy = Literal["always", "interval", "never"]


def default_spool_dir() -> Path:
    """``$XDG_STATE_HOME/backscroll/spool`` (``~/.local/state/backscroll/spool`` when unset)."""
    state = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(state) / "backscroll" / "spool"


_MASK = "**********"
#: kafka-python loggers that print a client's whole configuration (password included) at DEBUG.
_CONFIG_LOGGERS = ("kafka.admin.client", "kafka.producer.kafka", "kafka.consumer.group")


def _masked(value: object) -> object:
    if isinstance(value, Mapping):
        return {
            k: (_MASK if v is not None and ("password" in str(k) or "token" in str(k)) else v)
            for k, v in value.items()
        }
    return value


class _RedactClientConfig(logging.Filter):
    """Masks password/token entries of a configuration dict logged by kafka-python."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, Mapping):
            record.args = _masked(record.args)  # type: ignore[assignment]
        elif isinstance(record.args, tuple):
            record.args = tuple(_masked(arg) for arg in record.args)
        return True


_REDACTOR = _RedactClientConfig()


def _install_redactor() -> None:
    for name in _CONFIG_LOGGERS:
        logger = logging.getLogger(name)
        if _REDACTOR not in logger.filters:
            logger.addFilter(_REDACTOR)


class KafkaSettings(BaseSettings):
    """Kafka connection and topic (env prefix ``BACKSCROLL_KAFKA_``)."""

    model_config = SettingsConfigDict(env_prefix="BACKSCROLL_KAFKA_", env_file=".env", extra="ignore")

    bootstrap_servers: str = Field(default="127.0.0.1:9092", description="Comma-separated host:port list.")
    topic: str = Field(default="backscroll.entries", description="Topic holding the session log.")
    partitions: int = Field(default=4, ge=1, description="Partitions when backscroll creates the topic.")
    retention_ms: int = Field(
        default=-1,
        ge=-1,
        description="retention.ms of a topic backscroll creates; -1 keeps every record (the topic is the "
        "source of truth that `backscroll rebuild` replays).",
    )
    security_protocol: Literal["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"] = "PLAINTEXT"
    ssl_cafile: Path | None = Field(default=None, description="CA bundle for TLS.")
    ssl_certfile: Path | None = Field(default=None, description="Client certificate for mutual TLS.")
    ssl_keyfile: Path | None = Field(default=None, description="Client key for mutual TLS.")
    sasl_mechanism: Literal["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"] | None = None
    sasl_username: str | None = None
    sasl_password: SecretStr | None = None
    request_timeout_s: float = Field(default=10.0, gt=0, description="Broker request timeout.")
    bootstrap_timeout_s: float = Field(
        default=5.0, gt=0, description="How long to try the bootstrap servers before failing."
    )

    @field_validator("bootstrap_servers")
    @classmethod
    def _check_servers(cls, value: str) -> str:
        for server in value.split(","):
            host, sep, port = server.strip().rpartition(":")
            if not sep or not host or not port.isdigit():
                raise ValueError(f"expected host:port[,host:port...], got {server.strip()!r}")
        return value

    @field_validator("ssl_cafile", "ssl_certfile", "ssl_keyfile", mode="before")
    @classmethod
    def _refuse_empty(cls, value: object) -> object:
        # an empty variable would become Path("."), reported as "file not found: ."
        if isinstance(value, str) and not value.strip():
            raise ValueError("is empty: name a file, or leave the variable unset")
        return value

    @field_validator("ssl_cafile", "ssl_certfile", "ssl_keyfile")
    @classmethod
    def _check_file(cls, value: Path | None) -> Path | None:
        if value is not None and not value.is_file():
            raise ValueError(f"file not found: {value}")
        return value

    def client_config(self) -> dict[str, Any]:
        """Keyword arguments shared by kafka-python producers, consumers and admin clients."""
        config: dict[str, Any] = {
            "bootstrap_servers": [s.strip() for s in self.bootstrap_servers.split(",")],
            "security_protocol": self.security_protocol,
            "request_timeout_ms": int(self.request_timeout_s * 1000),
            "bootstrap_timeout_ms": int(self.bootstrap_timeout_s * 1000),
        }
        if self.ssl_cafile:
            config["ssl_cafile"] = str(self.ssl_cafile)
        if self.ssl_certfile:
            config["ssl_certfile"] = str(self.ssl_certfile)
        if self.ssl_keyfile:
            config["ssl_keyfile"] = str(self.ssl_keyfile)
        if self.sasl_mechanism:
            _install_redactor()  # the dict below holds the password: keep it out of DEBUG logs
            config["sasl_mechanism"] = self.sasl_mechanism
            config["sasl_plain_username"] = self.sasl_username
            config["sasl_plain_password"] = (
                self.sasl_password.get_secret_value() if self.sasl_password else None
            )
        return config


class AppenderSettings(BaseSettings):
    """Behaviour of the in-process appender (env prefix ``BACKSCROLL_APPENDER_``); see docs/ingest.md."""

    model_config = SettingsConfigDict(env_prefix="BACKSCROLL_APPENDER_", env_file=".env", extra="ignore")

    durable: bool = Field(
        default=True, description="append() returns only once the entry is in the local spool."
    )
    spool: bool = Field(
        default=True, description="Use a local spool at all (False: memory only, BufferFull when full)."
    )
    spool_dir: Path = Field(
        default_factory=default_spool_dir, description="Root of the spool; one slot per process."
    )
    spool_max_bytes: int = Field(
        default=1024**3, ge=1024 * 1024, description="Size cap of one spool slot (SpoolFull)."
    )
    segment_bytes: int = Field(
        default=8 * 1024**2,
        ge=64 * 1024,
        description=(
            "Spool segment size before rolling over; the active segment takes this much disk "
            "from its first record on (preallocated)."
        ),
    )
    spool_slots: int = Field(
        default=256, ge=1, le=100_000, description="Slots (live processes) under one spool root."
    )
    fsync: FsyncPolicy = Field(default="interval", description="always: fdatasync before append() returns.")
    fsync_interval_s: float = Field(
        default=0.2, gt=0, description="Max age of unsynced spool data with fsync=interval."
    )
    queue_max_records: int = Field(
        default=10_000, ge=1, description="Entries waiting in memory for the sender thread."
    )
    queue_max_bytes: int = Field(default=32 * 1024**2, ge=1024 * 1024, description="Bytes waiting in memory.")
    enqueue_timeout_s: float = Field(
        default=0.25, ge=0, description="How long append() waits for room before spooling."
    )
    inflight_max_bytes: int = Field(
        default=16 * 1024**2, ge=16 * 1024, description="Bytes handed to the producer, unacked."
    )
    linger_ms: int = Field(
        default=5, ge=0, le=1000, description="Producer linger (see benchmarks/bench_append.py)."
    )
    batch_size: int = Field(default=256 * 1024, ge=1024, description="Producer batch size in bytes.")
    connect_timeout_s: float = Field(
        default=5.0, gt=0, description="Bootstrap / metadata wait of one sender attempt."
    )
    close_timeout_s: float = Field(
        default=10.0, ge=0, description="Longest close() (and the atexit hook) takes in all."
    )
    live_max_per_session: int = Field(
        default=2_000, ge=0, description="Live entries kept per session (oldest dropped)."
    )
    live_max_total: int = Field(
        default=50_000, ge=0, description="Live entries kept in all (oldest sessions dropped)."
    )

    @model_validator(mode="after")
    def _durable_needs_spool(self) -> AppenderSettings:
        if self.durable and not self.spool:
            raise ValueError("durable: needs spool=True (durable appends are written to the spool)")
        return self


def describe_settings_error(err: Exception) -> str:
    """One line naming the environment variable of the first invalid setting."""
    from pydantic import ValidationError

    from backscroll.ingest.redact import redact_secrets

    if not isinstance(err, ValidationError):
        return redact_secrets(str(err))
    first = err.errors(include_url=False)[0]
    field = ".".join(str(p) for p in first["loc"]) or "?"
    prefixes = {
        "KafkaSettings": "BACKSCROLL_KAFKA_",
        "AppenderSettings": "BACKSCROLL_APPENDER_",
        "OpenSearchSettings": "BACKSCROLL_OPENSEARCH_",
        "IndexerSettings": "BACKSCROLL_INDEXER_",
    }
    prefix = prefixes.get(err.title, "BACKSCROLL_")
    message = str(first["msg"]).removeprefix("Value error, ")
    return redact_secrets(f"invalid setting {prefix}{field.upper()}: {message}")
