"""A fastmcp server (pinned in the dev extra) whose tool, resource and
prompt carry titles, icons and ``_meta``, and whose results carry ``_meta``
too (fastmcp's ``ToolResult``, ``ResourceResult`` and ``PromptResult``). A
test peer only.

    python fastmcp_meta_server.py            (stdio)
    python fastmcp_meta_server.py http PORT  (Streamable HTTP on 127.0.0.1)
"""

from __future__ import annotations

import sys

from fastmcp import FastMCP
from fastmcp.prompts import Message, PromptResult
from fastmcp.resources import ResourceResult
from fastmcp.tools import ToolResult
from mcp_types import Icon, TextContent

ICON = Icon(src="https://example.com/fastmcp.png", mime_type="image/png", sizes=["48x48"], theme="light")

server = FastMCP("fastmcp-meta", icons=[ICON], website_url="https://example.com/fastmcp-meta")


@server.tool(
    title="Chart",
    icons=[ICON],
    meta={"ui": {"resourceUri": "ui://chart/app.html"}, "example.com/owner": "charts"},
)
def chart(series: str) -> ToolResult:
    """Draw a chart (an MCP App shows it)."""
    return ToolResult(
        content=[TextContent(type="text", text=f"chart of {series}")],
        meta={"example.com/cost": {"units": 2}},
    )


@server.resource("ui://chart/app.html", title="Chart app", icons=[ICON], meta={"ui": {"prefersBorder": False}})
def chart_app() -> ResourceResult:
    return ResourceResult("<!doctype html><p>chart</p>", meta={"example.com/rendered": True})


@server.prompt(title="Explain", icons=[ICON], meta={"example.com/prompt": 1})
def explain(topic: str) -> PromptResult:
    """Explain a topic."""
    return PromptResult([Message(f"Explain {topic}.")], meta={"example.com/tokens": 4})


if __name__ == "__main__":
    if sys.argv[1:2] == ["http"]:
        server.run("http", host="127.0.0.1", port=int(sys.argv[2]), show_banner=False, log_level="WARNING")
    else:
        server.run(show_banner=False)
