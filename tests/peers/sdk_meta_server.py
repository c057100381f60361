"""An official-SDK (``mcp==2.3.0``) server that describes itself and its
offerings with everything the protocol lets it: titles, icons (a PNG as a
``data:`` URI, an SVG by URL, light and dark), ``_meta`` (an MCP App's
``ui.resourceUri``, vendor keys) on the server, a tool, a resource, a
resource template and a prompt, and a tool whose result carries ``_meta``.
A test peer only.

    python sdk_meta_server.py            (stdio)
    python sdk_meta_server.py http PORT  (Streamable HTTP on 127.0.0.1)
"""

from __future__ import annotations

from _serve import serve
from mcp.server.mcpserver import MCPServer
from mcp_types import CallToolResult, Icon, TextContent, ToolAnnotations

# A 1x1 PNG.
PNG = (
    "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGNgYGBgAAAABQABpfZFQAAAAABJRU5ErkJggg=="
)
LIGHT = Icon(src=PNG, mime_type="image/png", sizes=["1x1"], theme="light")
DARK = Icon(src="https://example.com/icons/dark.svg", mime_type="image/svg+xml", sizes=["any"], theme="dark")

server: MCPServer = MCPServer(
    name="sdk-meta",
    title="SDK Meta Peer",
    description="A server that shows its icons",
    website_url="https://example.com/sdk-meta",
    icons=[LIGHT, DARK],
    version="1.0.0",
    log_level="WARNING",
)


@server.tool(
    title="Weather",
    description="The weather, with an MCP App to show it.",
    annotations=ToolAnnotations(read_only_hint=True),
    icons=[LIGHT],
    meta={"ui": {"resourceUri": "ui://weather/view.html"}, "example.com/vendor": {"tier": "gold"}},
)
def weather(city: str) -> CallToolResult:
    return CallToolResult(
        content=[TextContent(type="text", text=f"sunny in {city}")],
        _meta={"example.com/cost": {"units": 3}, "ui": {"resourceUri": "ui://weather/view.html"}},
    )


@server.tool(description="A plain tool: no icons, no _meta.")
def plain(text: str) -> str:
    return text


@server.resource(
    "ui://weather/view.html",
    name="weather-view",
    title="Weather view",
    mime_type="text/html;profile=mcp-app",
    icons=[DARK],
    meta={"ui": {"prefersBorder": True}},
)
def weather_view() -> str:
    return "<!doctype html><p>sunny</p>"


@server.resource(
    "notes://{name}",
    name="note",
    title="A note",
    mime_type="text/plain",
    icons=[LIGHT, DARK],
    meta={"example.com/kind": "template"},
)
def note(name: str) -> str:
    return f"note {name}"


@server.prompt(title="Greet", description="Greet someone.", icons=[DARK])
def greet(who: str) -> str:
    return f"Hello, {who}."


if __name__ == "__main__":
    serve(server)
