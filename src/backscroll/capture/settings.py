"""Settings of transcript capture (env prefix ``BACKSCROLL_CAPTURE_``)."""

from __future__ import annotations

import re
from pathlib import Path

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

__all__ = ["CaptureSettings", "default_state_dir"]

_ID = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")


def default_state_dir() -> Path:
    """The folder of the embedded file by default (``$XDG_DATA_HOME/backscroll``)."""
    from backscroll.backends.base import default_sqlite_path

    return default_sqlite_path().parent


def _no_mapping() -> dict[str, str]:
    """none (each folder by its name)"""
    return {}


class CaptureSettings(BaseSettings):
    """How transcripts of Claude Code and Codex become sessions (env prefix ``BACKSCROLL_CAPTURE_``)."""

    model_config = SettingsConfigDict(env_prefix="BACKSCROLL_CAPTURE_", env_file=".env", extra="ignore")

    workspaces: dict[str, str] = Field(
        default_factory=_no_mapping,
        description='JSON object mapping project folders to workspace ids, e.g. `{"/home/me/shop": '
        '"shop"}`: a session whose working folder is one of them (or below it; the longest match wins) '
        "goes to that workspace. Unmapped: the folder's name (characters outside `A-Z a-z 0-9 . _ : -` "
        "become `-`).",
    )
    state_dir: Path = Field(
        default_factory=default_state_dir,
        description="Where capture keeps each transcript's progress (`capture.db`) and the hook's error "
        "log (`capture.log`); default: the embedded file's folder.",
    )
    thinking: bool = Field(
        default=False,
        description="Store the model's thinking text (off: a thinking block is kept as an entry "
        "without its text).",
    )
    hook_timeout_s: float = Field(
        default=8.0,
        gt=0,
        le=600,
        description="The most time `backscroll capture claude-code` spends on one hook event; what is "
        "left is captured by the next event.",
    )

    @field_validator("workspaces")
    @classmethod
    def _check_ids(cls, value: dict[str, str]) -> dict[str, str]:
        for folder, workspace in value.items():
            if not _ID.match(workspace):
                raise ValueError(
                    f"workspace id {workspace!r} for {folder!r} is not 1-128 of A-Z a-z 0-9 . _ : -"
                )
        return value
