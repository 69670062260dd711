"""``backscroll serve``: a query service that holds the backend's query principal and serves
tenants by token (scoped search, reads and traces as JSON, and the MCP tools), so no tenant ever
holds OpenSearch credentials.

Modules: :mod:`~backscroll.service.tokens` (the hashed token store), :mod:`~backscroll.service.scopes`
(a token's query scope), :mod:`~backscroll.service.settings`, :mod:`~backscroll.service.guards`
(Host/Origin, rate limit), :mod:`~backscroll.service.audit`, :mod:`~backscroll.service.app` (the
ASGI app) with :mod:`~backscroll.service.mcp_mount` (its ``/mcp``), and
:mod:`~backscroll.service.gate` (the Host and bearer check of ``backscroll mcp --transport http``).
"""
