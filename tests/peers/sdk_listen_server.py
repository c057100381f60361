"""An official-SDK (``mcp==2.3.0``) server whose lists change at run time,
with instructions and a resource that can be touched. A test peer only.

    python sdk_listen_server.py            (stdio)
    python sdk_listen_server.py http PORT  (Streamable HTTP on 127.0.0.1)

Tools: ``grow(name)`` adds a tool ``name`` (answering ``"grown NAME"``) and
publishes the tools list change; ``meta_seen()`` answers the request's
``_meta`` as JSON; ``touch(uri)`` publishes an update of the
resource ``uri``. Both publish on the 2026-07-28 ``subscriptions/listen``
bus and, in the handshake era, send the notification on the session.
"""

from __future__ import annotations

import contextlib
import json

from _serve import serve
from mcp.server.mcpserver import Context, MCPServer

INSTRUCTIONS = "Use grow to add a tool and touch to update a resource. " * 8

server: MCPServer = MCPServer(name="sdk-listen", version="1.0.0", log_level="WARNING", instructions=INSTRUCTIONS)


@server.tool(description="Add a tool named `name` at run time, then announce the change.")
async def grow(name: str, ctx: Context) -> str:
    def grown() -> str:
        return f"grown {name}"

    server.add_tool(grown, name=name, description=f"Added at run time ({name}).")
    await ctx.notify_tools_changed()
    with contextlib.suppress(Exception):  # the handshake era's notification
        await ctx.session.send_tool_list_changed()
    return f"added {name}"


@server.tool(description="Announce an update of the resource `uri`.")
async def touch(uri: str, ctx: Context) -> str:
    await ctx.notify_resource_updated(uri)
    with contextlib.suppress(Exception):
        await ctx.session.send_resource_updated(uri)
    return f"touched {uri}"


@server.tool(description="The _meta this request carried, as JSON.")
async def meta_seen(ctx: Context) -> str:
    meta = ctx.request_context.meta
    if meta is None:
        return "{}"
    data = meta.model_dump(by_alias=True, exclude_none=True) if hasattr(meta, "model_dump") else dict(meta)
    return json.dumps(data, sort_keys=True, default=str)


@server.resource("note://board", mime_type="text/plain")
def board() -> str:
    return "the board"


if __name__ == "__main__":
    serve(server)
