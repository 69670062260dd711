"""The configuration reference is generated from the settings models and kept in sync with them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Literal

import pytest
from pydantic import AliasChoices, Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

from backscroll import config_docs
from backscroll.config_docs import (
    BEGIN,
    END,
    env_variables,
    render_env_example,
    render_section,
    render_table,
    replace_section,
    settings,
    settings_models,
)

ROOT = Path(__file__).resolve().parents[2]
FIX = "run `python -m backscroll.config_docs --write` and commit the result"


def _section(path: Path) -> str:
    text = path.read_text(encoding="utf-8")
    assert text.count(BEGIN) == 1 and text.count(END) == 1, f"{path.name} needs one {BEGIN} ... {END} section"
    return text[text.index(BEGIN) : text.index(END) + len(END)]


@pytest.mark.parametrize("target", ["README.md", "docs/configuration.md"])
def test_the_marked_section_is_the_generated_table(target: str) -> None:
    assert _section(ROOT / target) == render_section(), f"{target}: the settings table is out of date; {FIX}"


def test_env_example_is_generated() -> None:
    text = (ROOT / "deploy" / "env.example").read_text(encoding="utf-8")
    assert text == render_env_example(), f"deploy/env.example is out of date; {FIX}"


def test_every_field_of_every_model_has_a_row() -> None:
    rows = {(row.model, row.field) for row in settings()}
    variables = env_variables()
    for model in settings_models():
        prefix = str(model.model_config.get("env_prefix") or "")
        for name in model.model_fields:
            variable = f"{prefix}{name}".upper()
            assert variable in variables, variable
            assert (model.__name__, name) in rows or variables[variable].model != model.__name__
    table = render_table()
    for variable, row in variables.items():
        assert f"| `{variable}` |" in table
        assert row.description, f"{variable} has no description (add one to the model's Field)"


def test_the_known_models_and_variables_are_listed() -> None:
    names = [model.__name__ for model in settings_models()]
    assert names[:5] == [
        "KafkaSettings",
        "AppenderSettings",
        "OpenSearchSettings",
        "IndexerSettings",
        "LoggingSettings",
    ]
    variables = env_variables()
    for variable in (
        "BACKSCROLL_KAFKA_BOOTSTRAP_SERVERS",
        "BACKSCROLL_KAFKA_TOPIC",
        "BACKSCROLL_OPENSEARCH_URL",
        "BACKSCROLL_OPENSEARCH_INDEX_PREFIX",
        "BACKSCROLL_INDEXER_GROUP_ID",
        "BACKSCROLL_INDEXER_METRICS_PORT",
        "BACKSCROLL_LOG_FORMAT",
        "BACKSCROLL_LOG_LEVEL",
    ):
        assert variable in variables
    assert variables["BACKSCROLL_KAFKA_BOOTSTRAP_SERVERS"].model == "KafkaSettings"  # first model owns it


def test_secrets_show_no_value_even_when_set(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BACKSCROLL_OPENSEARCH_PASSWORD", "hunter2-very-secret")
    monkeypatch.setenv("BACKSCROLL_KAFKA_SASL_PASSWORD", "hunter3-very-secret")
    table, example = render_table(), render_env_example()
    assert "hunter" not in table and "hunter" not in example
    variables = env_variables()
    for variable in ("BACKSCROLL_OPENSEARCH_PASSWORD", "BACKSCROLL_KAFKA_SASL_PASSWORD"):
        assert variables[variable].secret and variables[variable].default == "(secret)"
        assert f"# {variable}=\n" in example


def test_the_table_does_not_depend_on_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    before = render_table()
    monkeypatch.setenv("BACKSCROLL_KAFKA_TOPIC", "somewhere.else")
    monkeypatch.setenv("XDG_STATE_HOME", "/elsewhere")
    monkeypatch.setenv("HOME", "/nonexistent-home")
    assert render_table() == before


class _Toy(BaseSettings):
    """A model with one field of each shape the renderer handles."""

    model_config = SettingsConfigDict(env_prefix="TOY_")

    mode: Literal["a", "b"] = Field(default="a", description="Pick | one.")
    limit: int = Field(default=8 * 1024**2, ge=1, le=10**9, description="Byte cap.")
    limit_bytes: int = Field(default=8 * 1024**2, description="Byte cap with a unit.")
    token: SecretStr = Field(default=SecretStr("s3cr3t"), description="A token.")
    where: str | None = Field(default=None, validation_alias=AliasChoices("TOY_WHERE", "OTHER"))
    name: str = Field(default="x", pattern=r"^[a-z]+$", description="Lower-case.\nTwo lines.")
    on: bool = True


def test_rendering_of_types_defaults_and_escaping(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(config_docs, "settings_models", lambda: [_Toy])
    rows = {row.variable: row for row in settings()}
    assert rows["TOY_MODE"].type == "one of `a`, `b`" and rows["TOY_MODE"].default == "`a`"
    assert rows["TOY_LIMIT"].type == "integer (≥ 1, ≤ 1000000000)"
    assert rows["TOY_LIMIT"].default == "`8388608`"
    assert rows["TOY_LIMIT_BYTES"].default == "`8388608` (8 MiB)"
    assert rows["TOY_TOKEN"].secret and rows["TOY_TOKEN"].default == "(secret)"
    assert rows["TOY_TOKEN"].example == ""
    assert rows["TOY_WHERE"].type == "string, optional" and rows["TOY_WHERE"].default == "unset"
    assert rows["TOY_NAME"].type == "string (matching `^[a-z]+$`)"
    assert rows["TOY_ON"].default == "`true`" and rows["TOY_ON"].example == "true"
    table = render_table()
    assert "s3cr3t" not in table
    assert "Pick \\| one." in table  # a pipe would end the cell
    assert "Lower-case. Two lines." in table  # a newline would end the row
    assert all(line.count(" | ") == 3 for line in table.splitlines()[2:])


def test_replace_section_keeps_the_rest_and_needs_the_markers() -> None:
    text = f"intro\n\n{BEGIN}\nold\n{END}\n\noutro\n"
    assert replace_section(text, "NEW") == "intro\n\nNEW\n\noutro\n"
    with pytest.raises(ValueError, match="settings:begin"):
        replace_section("no markers here")


def test_the_module_prints_the_table() -> None:
    run = [sys.executable, "-m", "backscroll.config_docs"]
    printed = subprocess.run(run, capture_output=True, text=True, check=True, cwd=ROOT, timeout=120)
    assert printed.stdout == render_table() + "\n"


def test_check_and_write(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert config_docs.main(["--check", "--root", str(ROOT)]) == 0
    (tmp_path / "docs").mkdir()
    (tmp_path / "deploy").mkdir()
    for name in ("README.md", "docs/configuration.md"):
        (tmp_path / name).write_text(f"# x\n\n{BEGIN}\nstale\n{END}\n")
    assert config_docs.main(["--check", "--root", str(tmp_path)]) == 1
    assert "run `python -m backscroll.config_docs --write`" in capsys.readouterr().err
    assert config_docs.main(["--write", "--root", str(tmp_path)]) == 0
    assert _section(tmp_path / "README.md") == render_section()
    assert (tmp_path / "deploy" / "env.example").read_text() == render_env_example()
    assert config_docs.main(["--check", "--root", str(tmp_path)]) == 0
    (tmp_path / "README.md").write_text("# no markers\n")
    assert config_docs.main(["--check", "--root", str(tmp_path)]) == 1
    assert "settings:begin" in capsys.readouterr().err
