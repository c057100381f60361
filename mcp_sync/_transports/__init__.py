"""The transports: what moves a session's frames to the server and back.

``_base`` holds the contract (``Transport``, ``Sink``, ``Outbound``); each
transport module implements it: ``stdio`` (a server process on our pipes;
the process itself, from spawn to kill, is ``_process`` and ``_proctree``),
``http`` (Streamable HTTP, both eras) and ``http_sse`` (the deprecated
HTTP+SSE transport). The HTTP pieces each do one job: ``_options`` (checking
the options, building static headers), ``_sse_parser`` (``text/event-stream``),
``_exchange`` (one HTTP exchange: auth retry, deadline watchdog, socket
tracking), ``_status`` (status codes to errors), ``_session_id`` (the
``Mcp-Session-Id`` lifecycle) and ``_listener`` (the standalone GET stream).

Nothing here imports the session core: a transport talks to it only through
``_base.Sink``.
"""
