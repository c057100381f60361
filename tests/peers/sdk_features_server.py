"""An official-SDK (``mcp==2.3.0``) server that asks its client for things:
elicitation, progress, a log message, a resource and a prompt; in the modern
era (2026-07-28) also a prompt and a resource template that answer
``input_required`` first. A test peer only.

    python sdk_features_server.py            (stdio)
    python sdk_features_server.py http PORT  (Streamable HTTP on 127.0.0.1)
"""

from __future__ import annotations

import os

import anyio
from _serve import serve
from mcp.server.mcpserver import Context, MCPServer
from mcp_types import ElicitRequest, ElicitRequestFormParams, InputRequiredResult
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


@server.tool(description="Report progress; after step 1 wait until the file `gate` exists.")
async def gated(ctx: Context, gate: str, steps: int = 3) -> str:
    for step in range(1, steps + 1):
        if step == 2:
            # Going on needs the client to have seen step 1 while waiting.
            with anyio.fail_after(30):
                while not os.path.exists(gate):
                    await anyio.sleep(0.01)
        await ctx.report_progress(step, steps, f"step {step}")
    return f"counted {steps}"


def _ask_who(state: str) -> InputRequiredResult:
    question = ElicitRequest(
        params=ElicitRequestFormParams(
            message="Who is asking?",
            requested_schema={"type": "object", "properties": {"name": {"type": "string"}}},
        )
    )
    return InputRequiredResult(input_requests={"who": question}, request_state=state)


def _answered_name(ctx: Context, state: str) -> str | None:
    answer = (ctx.input_responses or {}).get("who")
    if ctx.request_state != state or answer is None:
        return None
    content = getattr(answer, "content", None) or {}
    return str(content.get("name", "nobody"))


@server.prompt(description="Ask who is asking (2026-07-28: input_required), then greet them.")
def ask_prompt(ctx: Context) -> str | InputRequiredResult:
    name = _answered_name(ctx, "prompt-state")
    return _ask_who("prompt-state") if name is None else f"Hello, {name}."


@server.resource("ask://{topic}", mime_type="text/plain")
def ask_resource(topic: str, ctx: Context) -> str | InputRequiredResult:
    name = _answered_name(ctx, f"resource-{topic}")
    return _ask_who(f"resource-{topic}") if name is None else f"{topic} for {name}"


@server.resource("note://hello", mime_type="text/plain")
def hello_note() -> str:
    return "Hello from the SDK."


@server.prompt(description="Say hello to someone.")
def greet(name: str) -> str:
    return f"Please say hello to {name}."


if __name__ == "__main__":
    serve(server)
