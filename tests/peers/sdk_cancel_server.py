"""An official-SDK server (``mcp==2.3.0``) whose handlers record that they were
cancelled: a test peer for ``cancel=`` (tests/test_cancel_peers.py).

Each handler writes ``MARKER.started`` when it begins, then waits for ever; when the
SDK cancels it (a ``notifications/cancelled`` for its request, or over 2026-07-28
Streamable HTTP its reply stream closed) it catches the cancellation, writes
``MARKER.cancelled``, and lets the cancellation go on. ``MARKER`` is a path the test
chose (its ``tmp_path``).

- tool ``hold(marker)``;
- tool ``hold_progress(marker)``: one progress notification first;
- resource template ``hold://{name}`` (the marker is ``DIR/name``, ``DIR`` from the
  ``CANCEL_MARKERS`` environment variable);
- prompt ``hold_prompt(marker)``.

    python sdk_cancel_server.py            (stdio)
    python sdk_cancel_server.py http PORT  (Streamable HTTP on 127.0.0.1)
    python sdk_cancel_server.py sse PORT   (HTTP+SSE, 2024-11-05, at /sse)
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import anyio
from _serve import serve, serve_app
from mcp.server.mcpserver import Context, MCPServer

server: MCPServer = MCPServer(name="sdk-cancel", version="1.0.0", log_level="WARNING")


def _record(path: str, text: str) -> None:
    """Write ``path`` whole or not at all: the test polls for it to exist and then
    reads it, so a file created empty and written a moment later reads as ``''``."""
    Path(f"{path}.part").write_text(text)
    os.replace(f"{path}.part", path)


async def _hold(marker: str) -> str:
    _record(f"{marker}.started", "started")
    try:
        await anyio.sleep_forever()
    except anyio.get_cancelled_exc_class():
        _record(f"{marker}.cancelled", "cancelled")
        raise
    return "never"


@server.tool(description="Wait until cancelled; record the cancellation in MARKER.cancelled.")
async def hold(marker: str) -> str:
    return await _hold(marker)


@server.tool(description="Report progress once, then wait until cancelled.")
async def hold_progress(marker: str, ctx: Context) -> str:
    await ctx.report_progress(1, 2, "holding")
    return await _hold(marker)


@server.resource("hold://{name}", mime_type="text/plain")
async def hold_resource(name: str) -> str:
    return await _hold(str(Path(os.environ.get("CANCEL_MARKERS", ".")) / name))


@server.prompt(description="Wait until cancelled.")
async def hold_prompt(marker: str) -> str:
    return await _hold(marker)


if __name__ == "__main__":
    if sys.argv[1:2] == ["sse"]:
        serve_app(server.sse_app(host="127.0.0.1"), int(sys.argv[2]))
    else:
        serve(server)
