"""How the official-SDK test peers run: over stdio, or over Streamable HTTP
on loopback with uvicorn's access log quiet (built by hand rather than
``server.run("streamable-http")`` so that the host stays 127.0.0.1)."""

from __future__ import annotations

import sys
from typing import Any

import uvicorn


def serve_app(app: Any, port: int) -> None:
    """Serve an ASGI app on 127.0.0.1:``port`` until the process is stopped.

    Stopped (SIGTERM) while a request still runs (a test that left a long
    sleep tool behind), uvicorn waits for it at most 1 s, not until the test's
    teardown gives up and kills it."""
    config = uvicorn.Config(
        app, host="127.0.0.1", port=port, log_level="warning", access_log=False, timeout_graceful_shutdown=1
    )
    uvicorn.Server(config).run()


def serve(server: Any, argv: list[str] | None = None) -> None:
    """``PEER`` runs over stdio; ``PEER http PORT`` over Streamable HTTP."""
    args = sys.argv[1:] if argv is None else argv
    if args[:1] != ["http"]:
        server.run("stdio")
        return
    serve_app(server.streamable_http_app(host="127.0.0.1"), int(args[1]))
