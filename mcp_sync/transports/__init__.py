"""The transports: what moves a session's frames to the server and back.

``contract`` holds the contract (``Transport``, ``Sink``, ``Outbound``); each
transport module implements it: ``stdio`` (a server process on our pipes;
the process itself, from spawn to kill, is ``process`` and ``process_tree``;
the GIL-keeping pipe I/O is ``fdio``), ``http`` (Streamable HTTP, both eras)
and ``http_sse`` (the deprecated HTTP+SSE transport). The HTTP pieces each
do one job: ``http_options`` (checking the options, building static headers),
``header_rules`` (what an HTTP entry may send), ``mcp_headers`` (the headers
a 2026-07-28 request mirrors), ``sse_parser`` (``text/event-stream``),
``exchange`` (one HTTP exchange: auth retry, deadline watchdog, socket
tracking), ``watchdog``, ``http_status`` (status codes to errors),
``session_id`` (the ``Mcp-Session-Id`` lifecycle) and ``get_stream`` (the
standalone GET stream). ``workers`` is the one bounded thread pool.

Modules here import :mod:`mcp_sync.protocol` and the foundation modules
(``mcp_sync._log``) only: a transport talks to the session only through
``contract.Sink``.
"""
