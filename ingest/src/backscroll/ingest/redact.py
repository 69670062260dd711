"""Secrets out of printed text: the password of ``scheme://user:password@host`` URLs.

Settings such as ``BACKSCROLL_OPENSEARCH_URL`` may carry credentials in the URL. Everything that
prints or logs a URL (error messages, ``Backend.describe()``, settings reprs, log records) passes
the text through :func:`redact_secrets`, which keeps the user name (useful when debugging) and
replaces the password with ``***``. Pure string work, no I/O.
"""

from __future__ import annotations

import re
from typing import Final

__all__ = ["REDACTED", "redact_secrets"]

REDACTED: Final = "***"

# scheme://userinfo@ where userinfo holds a colon: everything after the first colon is the password.
# The userinfo may not contain "/", "@" or whitespace, so a path or a second URL never matches.
_CREDENTIALS = re.compile(
    r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)(?P<user>[^:/@\s]*):(?P<password>[^/@\s]*)@"
)


def redact_secrets(text: str) -> str:
    """``text`` with the password of every ``scheme://user:password@`` URL replaced by ``***``."""
    if "@" not in text:
        return text
    return _CREDENTIALS.sub(lambda m: f"{m['scheme']}{m['user']}:{REDACTED}@", text)
