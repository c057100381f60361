"""One connected server: the session core and everything that runs in it.

``core`` (``_Core``: the request table, dispatch, the one terminal
transition) and ``api`` (``Session``, the public surface in one class);
``connect`` and ``options`` (what ``connect()`` takes and checks);
the contracts the rest is written against: ``feature_contract`` (``Core``,
what a feature may use), ``pending`` (the request table's entries) and
``eras.contract``; the machinery: ``call_plan``, ``submit``, ``progress``,
``inbound``, ``server_requests``, ``handlers``, ``held_tasks`` (tasks a
server asks the client to hold), ``tool_tasks`` (tool calls run as tasks);
and the features, functions of ``Core``: ``resources``, ``listen``,
``refresh``, ``health``, ``server_logs``, ``extensions``, ``skills``.
``eras`` holds the two protocol eras and their negotiation.

Modules here import :mod:`mcp_sync.protocol`, :mod:`mcp_sync.transports`,
:mod:`mcp_sync.auth` (for an HTTP server's OAuth) and the foundation
modules; nothing of :mod:`mcp_sync.config`, the CLI or the public modules
built on sessions.
"""
