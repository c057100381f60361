"""An official-SDK (``mcp==2.3.0``) server for pages, cache hints and output
schemas. A test peer only.

    python sdk_cache_server.py [MODE]            (stdio)
    python sdk_cache_server.py http PORT [MODE]  (Streamable HTTP on 127.0.0.1)

Cache hints are the SDK's own (``MCPServer(cache_hints=...)``): the lists
fresh for 60 s and ``public``, ``resources/read`` fresh for 60 s and
``private``. Resources ``note://1`` ... ``note://25`` come 10 to a page and
prompts ``p1`` ... ``p12`` 5 to a page (``nextCursor`` is the next index).

Tools: ``reads()`` answers how many ``resources/read`` requests the server
served; ``edit(uri, text)`` changes a note's text and announces the update
(``notifications/resources/updated`` in the handshake era, the listen bus
in 2026-07-28); ``add_note(name)`` adds ``note://NAME`` and announces the
list change; ``good()`` answers structured content that fits its
``outputSchema``; ``bad()`` answers some that does not (``/n`` is a string
where the schema says integer); ``evil()`` publishes the pattern
``^(a+)+$`` and answers 40 ``a`` and a ``!`` against it.

MODE ``loop``: every ``resources/list`` page says ``nextCursor: "again"``.
MODE ``huge``: ``resources/read`` says ``ttlMs: 2**62``.
"""

from __future__ import annotations

import contextlib
import sys
from typing import Any

from _serve import serve_app
from mcp.server.caching import CacheHint
from mcp.server.mcpserver import Context, MCPServer
from mcp_types import CallToolResult, ListPromptsResult, ListResourcesResult, TextContent

ARGS = [arg for arg in sys.argv[1:] if arg != "http"]
MODE = next((arg for arg in ARGS if not arg.isdigit()), "")
LISTS = CacheHint(ttl_ms=60_000, scope="public")
READS = CacheHint(ttl_ms=2**62 if MODE == "huge" else 60_000, scope="private")
OUTPUT = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
EVIL = {"type": "object", "properties": {"s": {"type": "string", "pattern": "^(a+)+$"}}}
SCHEMAS = {"good": OUTPUT, "bad": OUTPUT, "evil": EVIL}


class CacheServer(MCPServer):
    """Pages its resources and prompts, and publishes hand-written output schemas."""

    async def list_tools(self) -> list[Any]:
        tools = await super().list_tools()
        for tool in tools:
            if tool.name in SCHEMAS:
                tool.output_schema = SCHEMAS[tool.name]
        return tools

    async def _handle_list_resources(self, ctx: Any, params: Any) -> ListResourcesResult:
        items = await self.list_resources()
        if MODE == "loop":
            return ListResourcesResult(resources=items[:2], next_cursor="again")
        start = int(params.cursor) if params is not None and params.cursor else 0
        following = str(start + 10) if start + 10 < len(items) else None
        return ListResourcesResult(resources=items[start : start + 10], next_cursor=following)

    async def _handle_list_prompts(self, ctx: Any, params: Any) -> ListPromptsResult:
        items = await self.list_prompts()
        start = int(params.cursor) if params is not None and params.cursor else 0
        following = str(start + 5) if start + 5 < len(items) else None
        return ListPromptsResult(prompts=items[start : start + 5], next_cursor=following)


server = CacheServer(
    name="sdk-cache",
    version="1.0.0",
    log_level="WARNING",
    cache_hints={
        "tools/list": LISTS,
        "prompts/list": LISTS,
        "resources/list": LISTS,
        "resources/templates/list": LISTS,
        "resources/read": READS,
    },
)
TEXTS: dict[str, str] = {}
SERVED = {"reads": 0}


def _note(number: str) -> None:
    uri = f"note://{number}"
    TEXTS[uri] = f"note {number}"

    def read() -> str:
        SERVED["reads"] += 1
        return TEXTS[uri]

    server.resource(uri, name=f"note-{number}", mime_type="text/plain")(read)


for _number in range(1, 26):
    _note(str(_number))

for _index in range(1, 13):
    server.prompt(name=f"p{_index}", description=f"Prompt {_index}.")(lambda: "hello")


@server.tool(description="How many resources/read requests the server served.")
def reads() -> int:
    return SERVED["reads"]


@server.tool(description="Change the text of note `uri` and announce its update.")
async def edit(uri: str, text: str, ctx: Context) -> str:
    TEXTS[uri] = text
    await ctx.notify_resource_updated(uri)
    with contextlib.suppress(Exception):  # the handshake era's notification
        await ctx.session.send_resource_updated(uri)
    return f"edited {uri}"


@server.tool(description="Add note://NAME and announce the resource list change.")
async def add_note(name: str, ctx: Context) -> str:
    _note(name)
    await ctx.notify_resources_changed()
    with contextlib.suppress(Exception):
        await ctx.session.send_resource_list_changed()
    return f"added note://{name}"


@server.tool(description="Structured content that fits the outputSchema.")
def good() -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text="7")], structured_content={"n": 7})


@server.tool(description="Structured content that breaks the outputSchema.")
def bad() -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text="seven")], structured_content={"n": "seven"})


@server.tool(description="A string against a pattern that backtracks exponentially.")
def evil() -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text="evil")], structured_content={"s": "a" * 40 + "!"})


if __name__ == "__main__":
    if sys.argv[1:2] == ["http"]:
        serve_app(server.streamable_http_app(host="127.0.0.1"), int(sys.argv[2]))
    else:
        server.run("stdio")
