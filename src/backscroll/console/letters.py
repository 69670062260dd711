"""Dead letters as a scoped viewer may see them. Pure.

A token limited to some workspaces sees only the dead letters of those workspaces, and no reason
text names another workspace: the indexer's reasons may ("session already belongs to workspace
ws-b"), and that would tell a limited viewer another workspace's id and that it holds the session.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import replace
from typing import Final

from backscroll.backends import ParkedRecord
from backscroll.console.settings import Access

__all__ = ["OTHER_WORKSPACE", "scoped_letters"]

#: What a reason shows in place of a workspace the viewer may not see.
OTHER_WORKSPACE: Final = "another workspace"
#: "workspace X": the word and the id after it (a trailing full stop or colon is not part of it).
_NAMED: Final = re.compile(r"\bworkspace\s+(?P<id>[^\s,;()'\"]*[^\s,;()'\".:])", re.IGNORECASE)


def _redact(reason: str, access: Access, known: Iterable[str]) -> str:
    def named(found: re.Match[str]) -> str:
        ws = found.group("id")
        return found.group(0) if access.allows(ws) else OTHER_WORKSPACE

    text = _NAMED.sub(named, reason)
    # Known workspaces named anywhere else in the text (longest first, so no id hides in another).
    for ws in sorted({w for w in known if w and not access.allows(w)}, key=len, reverse=True):
        text = re.sub(rf"(?<![\w.-]){re.escape(ws)}(?![\w.-])", OTHER_WORKSPACE, text)
    return text


def scoped_letters(
    letters: list[ParkedRecord], access: Access, known: Iterable[str] = ()
) -> tuple[list[ParkedRecord], int]:
    """The letters ``access`` may see, their reasons redacted of other workspaces (``known``: every
    workspace id the projection holds), and how many were left out."""
    if access.workspaces is None:
        return letters, 0
    known = tuple(known)
    visible = []
    for letter in letters:
        if access.allows(letter.workspace_id):
            reason = _redact(letter.reason, access, known)
            envelope = (
                {**letter.envelope, "reason": reason} if "reason" in letter.envelope else letter.envelope
            )
            visible.append(replace(letter, reason=reason, envelope=envelope))
    return visible, len(letters) - len(visible)
