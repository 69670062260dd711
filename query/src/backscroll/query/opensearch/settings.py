"""The OpenSearch settings of a provider or reader, resolved once per environment.

Building :class:`~backscroll.indexer.settings.OpenSearchSettings` reads the environment and the
``.env`` file through pydantic-settings, twice per provider (the defaults, then the merged values
validated again): about 1 ms, more than a session search's own Python. A provider is meant to be
cheap to make per request, so when no settings object is given, the result is remembered, keyed by
everything it is made of: the overrides, the ``BACKSCROLL_OPENSEARCH_*`` environment variables, and
the current directory and its ``.env`` file (path, size, modification time). Any change to these
is another key, resolved as before; a failure is never remembered, nor settings naming a CA file
(whose validation checks that the file exists).
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Final

from backscroll.indexer.settings import OpenSearchSettings

__all__ = ["resolved_settings", "settings_key"]

_PREFIX: Final = "BACKSCROLL_OPENSEARCH_"
_ENV_FILE: Final = ".env"
_SIZE: Final = 64

Key = tuple[object, ...]

_lock = threading.Lock()
_resolved: OrderedDict[Key, OpenSearchSettings] = OrderedDict()


def settings_key(overrides: dict[str, str], environ: dict[str, str], env_file: str) -> Key:
    """What settings built from the environment depend on: ``overrides``, the variables of
    ``environ`` named like the settings' (case-insensitive, as pydantic-settings reads them), the
    state of ``env_file`` (``None`` when there is none) and the current directory."""
    variables = tuple(sorted((k, v) for k, v in environ.items() if k.upper().startswith(_PREFIX)))
    try:
        found = os.stat(env_file)
        file_state: tuple[object, ...] | None = (
            os.path.abspath(env_file),
            found.st_ino,
            found.st_size,
            found.st_mtime_ns,
        )
    except OSError:
        file_state = None
    return (tuple(sorted(overrides.items())), variables, file_state, os.getcwd())


def resolved_settings(
    overrides: dict[str, str], build: Callable[[dict[str, str]], OpenSearchSettings]
) -> OpenSearchSettings:
    """``build(overrides)`` (settings from the environment with ``overrides``), or a copy of the
    result for the same key (:func:`settings_key`) made earlier in this process."""
    key = settings_key(overrides, dict(os.environ), _ENV_FILE)
    with _lock:
        known = _resolved.get(key)
        if known is not None:
            _resolved.move_to_end(key)
            return known.model_copy()
    made = build(overrides)  # raises on invalid settings: nothing is remembered
    if made.ca_certs is not None:  # valid while the file exists: checked again each time
        return made
    with _lock:
        _resolved[key] = made
        while len(_resolved) > _SIZE:
            _resolved.popitem(last=False)
    return made.model_copy()
