"""Settings of ``backscroll serve`` (env prefix ``BACKSCROLL_SERVE_``)."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, ValidationError
from pydantic_settings import BaseSettings, SettingsConfigDict

__all__ = ["ServeSettings", "describe_settings_error"]


class ServeSettings(BaseSettings):
    """Limits, token file and audit log of the query service."""

    model_config = SettingsConfigDict(env_prefix="BACKSCROLL_SERVE_", env_file=".env", extra="ignore")

    tokens_file: Path | None = Field(
        default=None,
        description="The token file; unset: $XDG_DATA_HOME/backscroll/tokens.json.",
    )
    max_body_bytes: int = Field(
        default=1024 * 1024, ge=1024, description="Largest request body; larger is refused with 413."
    )
    rate_per_second: float = Field(
        default=20.0, gt=0, description="Requests per second each token may make on average (429 over it)."
    )
    rate_burst: int = Field(
        default=40, ge=1, description="Requests a token may make at once before the rate applies."
    )
    audit_log: str | None = Field(
        default=None,
        description="Where the audit lines go: a file path, or - for stderr; unset: "
        "$XDG_DATA_HOME/backscroll/service-audit.jsonl.",
    )


def describe_settings_error(err: ValidationError) -> str:
    """One line naming the variable of the first invalid setting (``ServeSettings`` or another
    model's, described by the ingest stage's helper)."""
    if err.title != ServeSettings.__name__:
        from backscroll.ingest.settings import describe_settings_error as describe

        return describe(err)
    first = err.errors(include_url=False)[0]
    field = ".".join(str(p) for p in first["loc"]).upper()
    return f"invalid setting BACKSCROLL_SERVE_{field}: {first['msg']}"
