"""The configuration reference, generated from the settings models.

``python -m backscroll.config_docs`` prints a Markdown table of every setting: its environment
variable, type, default (secrets as "(secret)") and description. ``--write`` puts it between the
``<!-- settings:begin -->`` / ``<!-- settings:end -->`` markers of README.md and
docs/configuration.md and regenerates deploy/env.example; ``--check`` exits 1 when any of them is
out of date (tests/unit/test_config_docs.py does the same check).

The table is built from the models alone (field definitions, never the current environment), so it
is the same on every machine.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import re
import sys
import types
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal, Union, get_args, get_origin

import annotated_types
from pydantic import AliasChoices, AliasPath, SecretBytes, SecretStr
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined
from pydantic_settings import BaseSettings

__all__ = [
    "BEGIN",
    "END",
    "Setting",
    "env_variables",
    "main",
    "render_env_example",
    "render_section",
    "render_table",
    "replace_section",
    "settings",
    "settings_models",
]

BEGIN: Final = "<!-- settings:begin -->"
END: Final = "<!-- settings:end -->"
#: Files whose marked section holds the table, relative to the repository root.
TARGETS: Final = ("README.md", "docs/configuration.md")
#: The example environment file, generated whole.
ENV_EXAMPLE: Final = "deploy/env.example"
#: Optional module of the embedded backend; its settings models are listed when it exists.
BACKEND_MODULE: Final = "backscroll.backends"

#: Used only for fields whose model gives no ``description`` (a description in the model wins).
_FALLBACK_DESCRIPTIONS: Final[dict[str, str]] = {
    "BACKSCROLL_KAFKA_SECURITY_PROTOCOL": "Broker transport: TLS (`SSL`), SASL, or both (`SASL_SSL`).",
    "BACKSCROLL_KAFKA_SASL_MECHANISM": "SASL mechanism; needs a `SASL_*` security protocol.",
    "BACKSCROLL_KAFKA_SASL_USERNAME": "SASL user.",
    "BACKSCROLL_KAFKA_SASL_PASSWORD": "SASL password (never printed or logged).",
    "BACKSCROLL_OPENSEARCH_INDEX_PREFIX": "Prefix of every index and alias backscroll creates.",
}


def settings_models() -> list[type[BaseSettings]]:
    """Every settings model, in the order the table lists them."""
    from backscroll.capture.settings import CaptureSettings
    from backscroll.console.settings import ConsoleSettings
    from backscroll.indexer.settings import IndexerSettings, OpenSearchSettings
    from backscroll.ingest.settings import AppenderSettings, KafkaSettings
    from backscroll.logging_setup import LoggingSettings
    from backscroll.query.service_client import ServiceClientSettings
    from backscroll.service.settings import ServeSettings

    models: list[type[BaseSettings]] = [
        KafkaSettings,
        AppenderSettings,
        OpenSearchSettings,
        IndexerSettings,
        LoggingSettings,
        ConsoleSettings,
        CaptureSettings,
        ServeSettings,
        ServiceClientSettings,
    ]
    if importlib.util.find_spec(BACKEND_MODULE) is not None:
        backend = importlib.import_module(BACKEND_MODULE)
        for value in vars(backend).values():
            if (
                isinstance(value, type)
                and issubclass(value, BaseSettings)
                and value.__module__.startswith(BACKEND_MODULE)
                and value not in models
            ):
                models.append(value)
    return models


@dataclass(frozen=True)
class Setting:
    """One row of the table."""

    variable: str
    type: str
    default: str
    description: str
    model: str
    field: str
    secret: bool
    example: str = ""  # the default as an env-file value; empty when unset, secret or computed


def _env_name(model: type[BaseSettings], name: str, info: FieldInfo) -> str:
    alias = info.validation_alias
    if isinstance(alias, str):
        return alias.upper()
    if isinstance(alias, AliasChoices):
        first = next((choice for choice in alias.choices if isinstance(choice, str)), None)
        if first is not None:
            return first.upper()
    if isinstance(alias, AliasPath):
        return str(alias.path[0]).upper()
    prefix = str(model.model_config.get("env_prefix") or "")
    return f"{prefix}{name}".upper()


def _is_secret(annotation: Any) -> bool:
    if annotation in (SecretStr, SecretBytes):
        return True
    return any(_is_secret(arg) for arg in get_args(annotation))


def _unwrap_optional(annotation: Any) -> tuple[Any, bool]:
    origin = get_origin(annotation)
    if origin in (Union, types.UnionType):
        args = [arg for arg in get_args(annotation) if arg is not type(None)]
        optional = len(args) < len(get_args(annotation))
        if len(args) == 1:
            return args[0], optional
        return Union[tuple(args)], optional  # noqa: UP007 - a runtime union built from a tuple
    return annotation, False


_BASIC_NAMES: Final[dict[Any, str]] = {
    str: "string",
    int: "integer",
    float: "number",
    bool: "boolean",
    Path: "path",
    SecretStr: "secret",
    SecretBytes: "secret",
}


def _type_name(annotation: Any) -> str:
    inner, optional = _unwrap_optional(annotation)
    if get_origin(inner) is Literal:
        name = "one of " + ", ".join(f"`{value}`" for value in get_args(inner))
    elif get_origin(inner) in (Union, types.UnionType):
        name = " or ".join(_type_name(arg) for arg in get_args(inner))
    elif get_origin(inner) in (list, tuple, set, frozenset):
        item_args = get_args(inner)
        name = f"list of {_type_name(item_args[0])}" if item_args else "list"
    else:
        name = _BASIC_NAMES.get(inner, getattr(inner, "__name__", str(inner)))
    return f"{name}, optional" if optional else name


def _constraints(info: FieldInfo) -> list[str]:
    out: list[str] = []
    for item in info.metadata:
        if isinstance(item, annotated_types.Ge):
            out.append(f"≥ {item.ge}")
        elif isinstance(item, annotated_types.Gt):
            out.append(f"> {item.gt}")
        elif isinstance(item, annotated_types.Le):
            out.append(f"≤ {item.le}")
        elif isinstance(item, annotated_types.Lt):
            out.append(f"< {item.lt}")
        elif isinstance(item, annotated_types.MinLen):
            out.append(f"length ≥ {item.min_length}")
        elif isinstance(item, annotated_types.MaxLen):
            out.append(f"length ≤ {item.max_length}")
        else:
            pattern = getattr(item, "pattern", None)
            if pattern:
                out.append(f"matching `{pattern}`")
    return out


_UNITS: Final = (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024))


def _default(name: str, info: FieldInfo, secret: bool) -> str:
    if secret:
        return "(secret)"
    if info.default_factory is not None:
        doc = (getattr(info.default_factory, "__doc__", None) or "").strip()
        return _rst_to_markdown(doc.splitlines()[0].rstrip(".")) if doc else "(computed)"
    value = info.default
    if value is PydanticUndefined:
        return "(required)"
    if value is None:
        return "unset"
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if isinstance(value, int) and name.endswith("_bytes"):
        for unit, size in _UNITS:
            if value >= size and value % size == 0:
                return f"`{value}` ({value // size} {unit})"
    if isinstance(value, str) and value == "":
        return '`""`'
    return f"`{value}`"


def _example(info: FieldInfo, secret: bool) -> str:
    value = info.default
    if secret or info.default_factory is not None or value is PydanticUndefined or value is None:
        return ""
    if isinstance(value, bool):
        return str(value).lower()
    return str(value)


def _rst_to_markdown(text: str) -> str:
    return re.sub(r"``(.+?)``", r"`\1`", text)


def settings() -> list[Setting]:
    """One :class:`Setting` per environment variable of the settings models.

    A variable that two models read (the backend selection looks at the Kafka and OpenSearch
    addresses too) is listed once, with the model that comes first in :func:`settings_models`."""
    rows: list[Setting] = []
    seen: set[str] = set()
    for model in settings_models():
        for name, info in model.model_fields.items():
            variable = _env_name(model, name, info)
            if variable in seen:
                continue
            seen.add(variable)
            secret = _is_secret(info.annotation)
            kind = _type_name(info.annotation)
            limits = _constraints(info)
            if limits:
                kind = f"{kind} ({', '.join(limits)})"
            description = info.description or _FALLBACK_DESCRIPTIONS.get(variable, "")
            rows.append(
                Setting(
                    variable=variable,
                    type=kind,
                    default=_default(name, info, secret),
                    description=_rst_to_markdown(description),
                    model=model.__name__,
                    field=name,
                    secret=secret,
                    example=_example(info, secret),
                )
            )
    return rows


def env_variables() -> dict[str, Setting]:
    """Every environment variable the settings models read, by name."""
    return {row.variable: row for row in settings()}


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def render_table() -> str:
    """The Markdown table (no trailing newline)."""
    lines = ["| Variable | Type | Default | Description |", "| --- | --- | --- | --- |"]
    for row in settings():
        cells = (f"`{row.variable}`", row.type, row.default, row.description)
        lines.append("| " + " | ".join(_cell(cell) for cell in cells) + " |")
    return "\n".join(lines)


def render_section() -> str:
    """The table between the markers, as it appears in README.md and docs/configuration.md."""
    note = "<!-- generated from the settings models by `python -m backscroll.config_docs --write` -->"
    return f"{BEGIN}\n{note}\n\n{render_table()}\n\n{END}"


def render_env_example() -> str:
    """An env file listing every variable, commented out, with its default and description."""
    lines = [
        "# Every backscroll setting with its default, generated from the settings models by",
        "# `python -m backscroll.config_docs --write` (do not edit by hand). Copy it to `.env` in the",
        "# working directory (or give the values as environment variables) and uncomment what you change.",
        "# Never commit real passwords: put BACKSCROLL_*_PASSWORD in a secret store.",
    ]
    model = ""
    for row in settings():
        if row.model != model:
            model = row.model
            lines += ["", f"# --- {model} ---"]
        note = row.description.replace("`", "")
        kind = row.type.replace("`", "")
        if not row.example and not row.secret and row.default not in ("unset", "(required)"):
            kind = f"{kind}; default {row.default.replace('`', '')}"
        lines.append(f"# {note} [{kind}]" if note else f"# [{kind}]")
        lines.append(f"# {row.variable}={row.example}")
    return "\n".join(lines) + "\n"


def replace_section(text: str, section: str | None = None) -> str:
    """``text`` with its marked section replaced; ValueError when the markers are missing."""
    start, end = text.find(BEGIN), text.find(END)
    if start < 0 or end < start:
        raise ValueError(f"no {BEGIN} ... {END} section")
    return text[:start] + (section if section is not None else render_section()) + text[end + len(END) :]


def _repo_root() -> Path:
    for candidate in (Path.cwd(), *Path.cwd().parents):
        if (candidate / "pyproject.toml").is_file() and (candidate / "README.md").is_file():
            return candidate
    return Path.cwd()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m backscroll.config_docs", description="Print the configuration table of backscroll."
    )
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--write", action="store_true", help="update the marked section of README.md and docs/")
    mode.add_argument("--check", action="store_true", help="exit 1 when a marked section is out of date")
    parser.add_argument("--root", type=Path, default=None, help="repository root (default: found from cwd)")
    args = parser.parse_args(argv)
    if not (args.write or args.check):
        sys.stdout.write(render_table() + "\n")
        return 0
    root = args.root or _repo_root()
    section = render_section()
    stale: list[str] = []
    for target in TARGETS:
        path = root / target
        try:
            text = path.read_text(encoding="utf-8")
            updated = replace_section(text, section)
        except (OSError, ValueError) as err:
            sys.stderr.write(f"{path}: {err}\n")
            return 1
        if updated != text:
            stale.append(target)
            if args.write:
                path.write_text(updated, encoding="utf-8")
    example = root / ENV_EXAMPLE
    wanted = render_env_example()
    if not example.is_file() or example.read_text(encoding="utf-8") != wanted:
        stale.append(ENV_EXAMPLE)
        if args.write:
            example.write_text(wanted, encoding="utf-8")
    if args.check and stale:
        sys.stderr.write(f"out of date: {', '.join(stale)}; run `python -m backscroll.config_docs --write`\n")
        return 1
    if args.write:
        sys.stdout.write(f"updated {', '.join(stale)}\n" if stale else "already up to date\n")
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
