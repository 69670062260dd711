"""The operators' console: search, session view and health of the fleet's history in a browser.

``backscroll console`` serves :func:`~backscroll.console.app.create_app` with uvicorn. Pages are
rendered on the server (Jinja2, autoescaped); the only script is a small static file (the CSP forbids
inline script). Everything is read and done through the configured
:class:`~backscroll.backends.Backend`: its providers and readers, its catalog and health, and its
operator actions (dead letters, forget).
"""

__all__: list[str] = []
