"""Settings of the ingest side: where the Kafka topic is and how to reach it securely."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

__all__ = ["KafkaSettings"]


class KafkaSettings(BaseSettings):
    """Kafka connection and topic (env prefix ``SESSIONLOG_KAFKA_``)."""

    model_config = SettingsConfigDict(env_prefix="SESSIONLOG_KAFKA_", env_file=".env", extra="ignore")

    bootstrap_servers: str = Field("127.0.0.1:9092", description="Comma-separated host:port list.")
    topic: str = Field("sessionlog.entries", description="Topic holding the session log.")
    partitions: int = Field(4, ge=1, description="Partitions when sessionlog creates the topic.")
    security_protocol: Literal["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"] = "PLAINTEXT"
    ssl_cafile: Path | None = Field(None, description="CA bundle for TLS.")
    ssl_certfile: Path | None = Field(None, description="Client certificate for mutual TLS.")
    ssl_keyfile: Path | None = Field(None, description="Client key for mutual TLS.")
    sasl_mechanism: Literal["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"] | None = None
    sasl_username: str | None = None
    sasl_password: SecretStr | None = None
    request_timeout_s: float = Field(10.0, gt=0, description="Broker request timeout.")

    @field_validator("bootstrap_servers")
    @classmethod
    def _check_servers(cls, value: str) -> str:
        for server in value.split(","):
            host, sep, port = server.strip().rpartition(":")
            if not sep or not host or not port.isdigit():
                raise ValueError(f"expected host:port[,host:port...], got {server.strip()!r}")
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
        }
        if self.ssl_cafile:
            config["ssl_cafile"] = str(self.ssl_cafile)
        if self.ssl_certfile:
            config["ssl_certfile"] = str(self.ssl_certfile)
        if self.ssl_keyfile:
            config["ssl_keyfile"] = str(self.ssl_keyfile)
        if self.sasl_mechanism:
            config["sasl_mechanism"] = self.sasl_mechanism
            config["sasl_plain_username"] = self.sasl_username
            config["sasl_plain_password"] = (
                self.sasl_password.get_secret_value() if self.sasl_password else None
            )
        return config
