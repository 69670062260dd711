"""Structured logging for backscroll processes (the CLI, the indexer in a container, embedding apps).

``configure_logging("json", "INFO")`` sends one JSON object per line to stderr::

    {"time":"2026-11-30T10:00:00.123Z","level":"WARNING","logger":"backscroll.indexer",
     "message":"seq gap before seq 7","session_id":"s-1","workspace_id":"ws-0"}

``time`` (UTC, milliseconds), ``level``, ``logger`` and ``message`` are always there;
``session_id`` and ``workspace_id`` are added when the call passes them as ``extra``
(``log.warning("...", extra={"session_id": sid, "workspace_id": ws})``), and ``exception``
when there is a traceback. ``"text"`` chooses a one-line human format with the same fields.

**No text payloads above DEBUG.** Message text, tool arguments and tool results are user data:
backscroll code logs them (as the ``extra`` fields ``text``, ``tool_args``, ``result`` or ``payload``)
at DEBUG only. Both formatters enforce it: those fields are written only for DEBUG records
(capped at :data:`PAYLOAD_PREVIEW_CHARS`), and a message longer than
:data:`MAX_MESSAGE_CHARS` above DEBUG (say an error that quotes a document) is cut.

The chatty client libraries (kafka-python, opensearch-py, urllib3) get their own level,
``library_level`` (default CRITICAL): their connection errors come back to the caller as one
backscroll error naming the setting, so repeating them line by line only buries it.

**Injection-proof.** Messages and field values are user data too (a rejected record's field name, a
session id from the wire): the text format escapes control characters (a newline in a value is
written as ``\n`` and can never forge a second line) and both formats redact the password of any
``scheme://user:password@`` URL.

Settings come from :class:`LoggingSettings` (``BACKSCROLL_LOG_FORMAT``, ``BACKSCROLL_LOG_LEVEL``,
``BACKSCROLL_LOG_LIBRARY_LEVEL``); the CLI's ``--log-format`` / ``--log-level`` override them.
"""

from __future__ import annotations

import logging
import sys
from datetime import UTC, datetime
from typing import Any, Final, Literal

import orjson
from pydantic import Field, ValidationError, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from backscroll.ingest.redact import redact_secrets
from backscroll.textsafe import safe_text

__all__ = [
    "CONTEXT_FIELDS",
    "LIBRARY_LOGGERS",
    "MAX_MESSAGE_CHARS",
    "PAYLOAD_FIELDS",
    "PAYLOAD_PREVIEW_CHARS",
    "JsonFormatter",
    "LogFormat",
    "LogLevel",
    "LoggingConfigError",
    "LoggingSettings",
    "TextFormatter",
    "configure_from_settings",
    "configure_logging",
]

LogFormat = Literal["text", "json"]
LogLevel = Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"]

#: ``extra`` fields written on every record that carries them.
CONTEXT_FIELDS: Final = ("session_id", "workspace_id")
#: ``extra`` fields holding user content: written for DEBUG records only.
PAYLOAD_FIELDS: Final = ("text", "tool_args", "result", "payload")
#: Loggers of the client libraries, which get ``library_level``.
LIBRARY_LOGGERS: Final = ("kafka", "opensearch", "urllib3", "elastic_transport")
PAYLOAD_PREVIEW_CHARS: Final = 1000
MAX_MESSAGE_CHARS: Final = 2000


class LoggingConfigError(ValueError):
    """A logging setting is invalid; the message names the environment variable or flag."""


class LoggingSettings(BaseSettings):
    """Log format and levels (env prefix ``BACKSCROLL_LOG_``); CLI flags override them."""

    model_config = SettingsConfigDict(env_prefix="BACKSCROLL_LOG_", env_file=".env", extra="ignore")

    format: LogFormat = Field(
        default="text", description="`json`: one JSON object per line on stderr; `text`: plain lines."
    )
    level: LogLevel = Field(
        default="WARNING", description="Level of backscroll's own loggers (INFO for services)."
    )
    library_level: LogLevel = Field(
        default="CRITICAL", description="Level of the kafka-python, opensearch-py and urllib3 loggers."
    )

    @field_validator("format", mode="before")
    @classmethod
    def _lower(cls, value: Any) -> Any:
        return value.strip().lower() if isinstance(value, str) else value

    @field_validator("level", "library_level", mode="before")
    @classmethod
    def _upper(cls, value: Any) -> Any:
        return value.strip().upper() if isinstance(value, str) else value


def _timestamp(created: float) -> str:
    return datetime.fromtimestamp(created, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _capped(value: str, limit: int) -> str:
    if len(value) <= limit:
        return value
    return f"{value[:limit]}… ({len(value) - limit} more chars)"


def _message(record: logging.LogRecord) -> str:
    message = redact_secrets(record.getMessage())
    return message if record.levelno <= logging.DEBUG else _capped(message, MAX_MESSAGE_CHARS)


def _extras(record: logging.LogRecord) -> dict[str, Any]:
    """The context fields of a record, plus its payload fields when it is a DEBUG record."""
    fields: dict[str, Any] = {}
    for name in CONTEXT_FIELDS:
        value = record.__dict__.get(name)
        if value is not None:
            fields[name] = redact_secrets(value) if isinstance(value, str) else value
    if record.levelno <= logging.DEBUG:
        for name in PAYLOAD_FIELDS:
            value = record.__dict__.get(name)
            if value is not None:
                text = value if isinstance(value, str) else repr(value)
                fields[name] = _capped(redact_secrets(text), PAYLOAD_PREVIEW_CHARS)
    return fields


class JsonFormatter(logging.Formatter):
    """One JSON object per record: time, level, logger, message, context ids, exception."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": _timestamp(record.created),
            "level": record.levelname,
            "logger": record.name,
            "message": _message(record),
        }
        entry.update(_extras(record))
        if record.exc_info:
            entry["exception"] = redact_secrets(self.formatException(record.exc_info))
        if record.stack_info:
            entry["stack"] = self.formatStack(record.stack_info)
        return orjson.dumps(entry, default=str).decode()


class TextFormatter(logging.Formatter):
    """``TIME LEVEL logger: message key=value ...``, then the traceback if any.

    The first line is always one line: control characters in the message and values are escaped."""

    def format(self, record: logging.LogRecord) -> str:
        name = safe_text(record.name)
        line = f"{_timestamp(record.created)} {record.levelname} {name}: {safe_text(_message(record))}"
        extras = " ".join(f"{key}={safe_text(value)}" for key, value in _extras(record).items())
        if extras:
            line = f"{line} {extras}"
        if record.exc_info:
            trace = self.formatException(record.exc_info)
            line = f"{line}\n{safe_text(trace, keep_newlines=True)}"
        if record.stack_info:
            line = f"{line}\n{self.formatStack(record.stack_info)}"
        return line


class _StderrHandler(logging.Handler):
    """Writes to whatever ``sys.stderr`` is at the time (test runners swap it)."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            sys.stderr.write(self.format(record) + "\n")
            sys.stderr.flush()
        except Exception:  # logging must never raise into the caller
            self.handleError(record)


def configure_logging(
    fmt: LogFormat | str = "text",
    level: LogLevel | str = "WARNING",
    *,
    library_level: LogLevel | str = "CRITICAL",
) -> logging.Handler:
    """Send log records to stderr as JSON lines (``fmt="json"``) or plain lines (``"text"``).

    Idempotent: a second call replaces the handler the first one installed. Returns the handler.
    """
    fmt_name = fmt.strip().lower()
    if fmt_name not in ("text", "json"):
        raise LoggingConfigError(f"log format must be json or text, got {fmt!r}")
    root_level = _level(level, "log level")
    lib_level = _level(library_level, "library log level")
    handler = _StderrHandler()
    handler.setFormatter(JsonFormatter() if fmt_name == "json" else TextFormatter())
    root = logging.getLogger()
    for old in [h for h in root.handlers if isinstance(h, _StderrHandler)]:
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(root_level)
    logging.getLogger("backscroll").setLevel(root_level)
    for name in LIBRARY_LOGGERS:
        logging.getLogger(name).setLevel(lib_level)
    return handler


def _level(value: str, what: str) -> int:
    name = value.strip().upper()
    if name not in ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"):
        raise LoggingConfigError(f"{what} must be DEBUG, INFO, WARNING, ERROR or CRITICAL, got {value!r}")
    return int(logging.getLevelName(name))


def configure_from_settings(fmt: str | None = None, level: str | None = None) -> LoggingSettings:
    """Configure logging from ``BACKSCROLL_LOG_*`` (and ``.env``), overridden by explicit values.

    Raises :class:`LoggingConfigError` with one line naming the variable when a setting is invalid."""
    updates: dict[str, Any] = {key: value for key, value in (("format", fmt), ("level", level)) if value}
    try:
        settings = LoggingSettings(**updates)
    except ValidationError as err:
        first = err.errors(include_url=False)[0]
        field = str(first["loc"][0]) if first["loc"] else "?"
        where = f"option --log-{field}" if field in updates else f"setting BACKSCROLL_LOG_{field.upper()}"
        raise LoggingConfigError(f"invalid {where}: {first['msg']}") from None
    configure_logging(settings.format, settings.level, library_level=settings.library_level)
    return settings
