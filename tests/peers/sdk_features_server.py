"""An official-SDK (``mcp==2.3.0``) stdio server that asks its client for things:
elicitation, progress, a log message, a resource and a prompt. A test peer only.

    python sdk_features_server.py
"""

from __future__ import annotations

from mcp.server.mcpserver import Context, MCPServer
from pydantic import BaseModel

server: MCPServer = MCPServer(name="sdk-features", version="1.0.0", log_level="WARNING")


class Name(BaseModel):
    name: str = "nobody"


@server.tool(description="Ask the user for a name (elicitation), then greet them.")
async def ask_name(ctx: Context) -> str:
    result = await ctx.elicit("What is your name?", Name)
    if result.action == "accept" and result.data is not None:
        return f"Hello, {result.data.name}!"
    return f"no name ({result.action})"


@server.tool(description="Report `steps` progress notifications, then answer.")
async def count(ctx: Context, steps: int = 3) -> str:
    for step in range(1, steps + 1):
        await ctx.report_progress(step, steps, f"step {step}")
    return f"counted {steps}"


@server.resource("note://hello", mime_type="text/plain")
def hello_note() -> str:
    return "Hello from the SDK."


@server.prompt(description="Say hello to someone.")
def greet(name: str) -> str:
    return f"Please say hello to {name}."


if __name__ == "__main__":
    server.run("stdio")
