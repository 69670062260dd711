"""Terminal output of the ``backscroll`` commands: safe consoles, one error path, exit codes.

Everything a command prints may hold user data (record fields, ids, file names, rejection reasons
that quote a pattern like ``[a-z0-9_.-]``). So the consoles here never interpret Rich markup or
emoji codes in strings (styling is applied with :class:`rich.text.Text` spans instead), and every
piece of user text goes through :func:`backscroll.textsafe.safe_text` (control characters escaped,
URL passwords redacted) before it is printed.

Errors take one path, :func:`errors` / :func:`fail`: ``error: CODE: message`` on stderr, or with
``--json`` ``{"error": {"code", "message", "retriable"}}`` on stdout, then the exit status of
:data:`EXIT_USAGE` (the command line or the settings are wrong) or :data:`EXIT_FAILED` (the
operation failed). The table is in ``docs/errors.md``.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Final, NoReturn

import orjson
import typer
from rich.console import Console
from rich.text import Text

from backscroll.textsafe import safe_text

__all__ = [
    "EXIT_FAILED",
    "EXIT_USAGE",
    "USAGE_QUERY_CODES",
    "console",
    "err_console",
    "errors",
    "fail",
    "print_json",
    "say",
    "state",
]

EXIT_FAILED: Final = 1
EXIT_USAGE: Final = 2
#: Query/read codes that mean the command line itself was wrong (exit 2, like a usage error).
USAGE_QUERY_CODES: Final = frozenset(
    {
        "SESSION_QUERY_INVALID_CONFIG",
        "SESSION_QUERY_INVALID_SCOPE",
        "SESSION_QUERY_INVALID_QUERY",
        "SESSION_QUERY_INVALID_LIMIT",
        "SESSION_QUERY_INVALID_FILTER",
        "SESSION_QUERY_INVALID_WINDOW",
    }
)


def _console(*, stderr: bool) -> Console:
    return Console(stderr=stderr, soft_wrap=True, markup=False, emoji=False, highlight=False)


console = _console(stderr=False)
err_console = _console(stderr=True)
#: ``--debug`` (set by the app callback): let errors propagate with their traceback.
state: dict[str, bool] = {"debug": False}


def say(text: str, *, keep_newlines: bool = False, style: str | None = None) -> None:
    """Print user-facing text on stdout, escaped (no markup, no control characters)."""
    console.print(Text(safe_text(text, keep_newlines=keep_newlines), style=style or ""))


def print_json(payload: Any) -> None:
    """One JSON document on stdout (orjson escapes control characters itself)."""
    sys.stdout.write(orjson.dumps(payload, default=str).decode() + "\n")
    sys.stdout.flush()


def fail(
    message: str,
    exit_code: int = EXIT_FAILED,
    *,
    as_json: bool = False,
    code: str = "BACKSCROLL_USAGE",
    retriable: bool = False,
) -> NoReturn:
    """Report an error (stderr text, or JSON on stdout with ``--json``) and exit with ``exit_code``."""
    shown = safe_text(message)
    if as_json:
        print_json({"error": {"code": code, "message": shown, "retriable": retriable}})
    else:
        text = shown if code == "BACKSCROLL_USAGE" else f"{code}: {shown}"
        err_console.print(Text.assemble(("error:", "red"), " ", text))
    raise typer.Exit(exit_code)


_CAMEL = re.compile(r"(?<!^)(?=[A-Z])")


def _class_code(err: BaseException) -> str:
    """``LogUnavailable`` → ``BACKSCROLL_LOG_UNAVAILABLE``."""
    return "BACKSCROLL_" + _CAMEL.sub("_", type(err).__name__).upper()


@contextmanager
def errors(as_json: bool = False) -> Iterator[None]:
    """Turn every typed error into one line (or one JSON object) and its exit status; a traceback
    only with ``--debug``. Anything else is a bug and keeps its traceback."""
    try:
        yield
    except typer.Exit:
        raise
    except Exception as err:
        if state["debug"]:
            raise
        # Imported here: the error types of every package, without importing them on success.
        from pydantic import ValidationError

        from backscroll.indexer.errors import IndexerError
        from backscroll.ingest.errors import IngestError
        from backscroll.ingest.settings import describe_settings_error
        from backscroll.logging_setup import LoggingConfigError
        from backscroll.query.errors import SessionQueryError

        if isinstance(err, SessionQueryError):
            exit_code = EXIT_USAGE if err.code in USAGE_QUERY_CODES else EXIT_FAILED
            fail(err.message, exit_code, as_json=as_json, code=err.code, retriable=err.retriable)
        if isinstance(err, IngestError | IndexerError):
            fail(str(err), EXIT_FAILED, as_json=as_json, code=_class_code(err), retriable=err.retriable)
        if isinstance(err, ValidationError):
            message = describe_settings_error(err)
            fail(message, EXIT_USAGE, as_json=as_json, code="BACKSCROLL_INVALID_SETTING")
        if isinstance(err, LoggingConfigError):
            fail(str(err), EXIT_USAGE, as_json=as_json, code="BACKSCROLL_INVALID_SETTING")
        if isinstance(err, OSError):
            where = f"{err.strerror or err}: {err.filename}" if err.filename else str(err)
            fail(where, EXIT_FAILED, as_json=as_json, code="BACKSCROLL_IO")
        raise
