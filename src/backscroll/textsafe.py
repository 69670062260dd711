"""Make untrusted text safe to print on a terminal or write to a log line.

User data (record fields, ids, file names, rejection reasons quoting them, URLs) may hold control
characters: a newline forges a second log line, an ESC sequence repaints the terminal. Every place
backscroll prints or logs such text uses :func:`safe_text`: control characters become visible
escapes (``\\n``, ``\\x1b``, ``\\u2028``) and URL passwords are redacted. Rich markup is a separate
concern: the CLI's consoles never interpret markup in strings (see ``backscroll.cli.output``).
"""

from __future__ import annotations

import re
from typing import Final

from backscroll.ingest.redact import redact_secrets

__all__ = ["escape_control", "safe_text"]

# C0 and C1 controls, DEL, and the Unicode line/paragraph separators and bidi overrides, which
# terminals and log viewers also act on.
_CONTROL: Final = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
_CONTROL_KEEP_LINES: Final = re.compile(
    r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]"
)
_NAMED: Final = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    named = _NAMED.get(char)
    if named is not None:
        return named
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def escape_control(text: str, *, keep_newlines: bool = False) -> str:
    """``text`` with control characters written as escapes; ``keep_newlines`` leaves ``\\n`` and
    ``\\t`` alone (multi-line text shown as such, e.g. an event's body)."""
    pattern = _CONTROL_KEEP_LINES if keep_newlines else _CONTROL
    return pattern.sub(_escape, text)


def safe_text(text: object, *, keep_newlines: bool = False) -> str:
    """``str(text)`` with URL passwords redacted and control characters escaped."""
    return escape_control(redact_secrets(str(text)), keep_newlines=keep_newlines)
