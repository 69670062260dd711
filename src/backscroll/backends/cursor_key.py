"""The per-user cursor key: one secret in the data directory, so that a search cursor printed by one
``backscroll`` process is accepted by the next without any setting.

``BACKSCROLL_CURSOR_KEY`` overrides it (and is what processes of other users or hosts must share).
The file is created once, readable by its owner only: its secret is written to a private temporary
file that is then hard-linked into place, which fails when another process linked first; the loser
reads the winner's key, so processes racing to create it all end with one key.
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import stat
from pathlib import Path
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from backscroll.query.errors import SessionQueryError

__all__ = ["KEY_FILE_NAME", "load_or_create_key"]

#: The key file's name, beside the embedded backend's default file.
KEY_FILE_NAME: Final = "cursor.key"
#: 32 random bytes as hex: the file's exact size.
_SECRET_CHARS: Final = 64

_log = logging.getLogger(__name__)


def _invalid(path: Path, problem: str) -> SessionQueryError:
    # the query stage loads only when a key file is wrong: the module stays light for the
    # commands that build a backend without searching (the Claude Code hook runs on every event)
    from backscroll.query.errors import SessionQueryError

    return SessionQueryError(
        "SESSION_QUERY_INVALID_CONFIG",
        f"the cursor key file {path} {problem}; delete it to have a new one made, "
        "or set BACKSCROLL_CURSOR_KEY",
    )


def _read(path: Path) -> bytes:
    """The signing key of an existing key file; INVALID_CONFIG unless it is a regular file of the
    expected size that only its owner can read or write."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise _invalid(path, "is not a regular file")
        if info.st_mode & 0o077:
            mode = oct(stat.S_IMODE(info.st_mode))[2:]
            raise _invalid(path, f"has permissions {mode} (it must be readable by its owner only: 600)")
        if hasattr(os, "getuid") and info.st_uid != os.getuid():
            raise _invalid(path, "belongs to another user")
        raw = handle.read(_SECRET_CHARS + 1)
    if len(raw) != _SECRET_CHARS:
        raise _invalid(path, f"holds {len(raw)} bytes instead of {_SECRET_CHARS}")
    from backscroll.query.cursor import derive_key

    try:
        return derive_key(raw.decode("ascii"))
    except UnicodeDecodeError:
        raise _invalid(path, "does not hold a key") from None


def _create(path: Path) -> None:
    """Write a new key to ``path`` unless one is there already (then leave it)."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    temp = path.with_name(f".{path.name}.{secrets.token_hex(8)}.tmp")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(secrets.token_hex(_SECRET_CHARS // 2).encode("ascii"))
            handle.flush()
            os.fsync(handle.fileno())
        with contextlib.suppress(FileExistsError):  # another process made it first: keep theirs
            os.link(temp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            temp.unlink()


def load_or_create_key(path: Path) -> bytes | None:
    """The signing key kept in ``path``, created on first use.

    A file that is there but wrong (permissions, owner, size) is INVALID_CONFIG. When the file
    cannot be made at all (a read-only home), ``None``: each provider then signs with a key of its
    own, so cursors work within one process, and a warning says how to share one."""
    try:
        return _read(path)
    except FileNotFoundError:
        pass
    except OSError as err:
        raise _invalid(path, f"cannot be read ({err.strerror or err})") from None
    from backscroll.query.errors import SessionQueryError

    try:
        _create(path)
        return _read(path)
    except SessionQueryError:
        raise
    except OSError as err:
        _log.warning(
            "cannot create the cursor key file %s (%s): cursors work only within one process; "
            "set BACKSCROLL_CURSOR_KEY to share them",
            path,
            err.strerror or err,
        )
        return None
