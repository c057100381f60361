"""A small MCP server built on the official Python SDK (``mcp==2.3.0``), used as a test peer.

The SDK is a *test* dependency only: this script is run as a subprocess by the test
suite (over stdio) or as a local Streamable HTTP server (uvicorn on 127.0.0.1), never
imported by ``mcp_sync`` itself.

Usage::

    python sdk_server.py stdio
    python sdk_server.py http --port N [--json-response] [--stateless]
    python sdk_server.py sse --port N      (the deprecated HTTP+SSE transport, at /sse)

Tools:

- ``echo(message)``  -> the message unchanged (a ``str`` result: the SDK also publishes an
  ``outputSchema`` and returns ``structuredContent`` ``{"result": message}``)
- ``add(a, b)``      -> ``a + b``
- ``fail()``         -> raises, so the result comes back with ``isError: true``
- ``structured()``   -> a fixed object as ``structuredContent`` (not wrapped in ``result``)
- ``sleep(ms)``      -> waits ``ms`` milliseconds without blocking the server, then ``"slept"``
- ``forecast(city)`` -> a nested ``structuredContent`` (a list of objects, optional fields)
- ``connect_account()`` -> JSON-RPC error -32042 (``UrlElicitationRequiredError``) the first
  time, then ``"connected"``
"""

from __future__ import annotations

import argparse
from typing import TypedDict

import anyio

# In mcp 2.x the high-level server is ``MCPServer`` (``FastMCP`` was renamed and
# ``mcp.server.fastmcp`` no longer imports).
from _serve import serve_app
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.exceptions import UrlElicitationRequiredError
from mcp_types import ElicitRequestURLParams
from pydantic import BaseModel

# WARNING keeps the SDK from logging every request on stderr; the tests do not need it.
server: MCPServer = MCPServer(name="sdk-peer", version="1.0.0", log_level="WARNING")


class Structured(TypedDict):
    """A TypedDict return type is published as-is as the tool's ``outputSchema``."""

    answer: int
    label: str
    tags: list[str]


@server.tool(description="Return the message unchanged.")
def echo(message: str) -> str:
    return message


@server.tool(description="Add two integers.")
def add(a: int, b: int) -> int:
    return a + b


@server.tool(description="Always fails; the result has isError true.")
def fail() -> str:
    # ToolError is the SDK's "anticipated failure": isError true with this text as content.
    raise ToolError("deliberate failure")


@server.tool(description="Return a fixed structured object.")
def structured() -> Structured:
    return {"answer": 42, "label": "forty-two", "tags": ["a", "b"]}


@server.tool(description="Sleep for ms milliseconds, then answer.")
async def sleep(ms: int) -> str:
    # async so a long sleep never blocks other requests on the same server.
    await anyio.sleep(ms / 1000)
    return "slept"


class Day(BaseModel):
    day: str
    high: float
    rain: bool = False


class Forecast(BaseModel):
    """Published with ``$defs``/``$ref`` for ``Day``, as pydantic writes it."""

    city: str
    days: list[Day]
    note: str | None = None


@server.tool(description="A nested structured forecast.")
def forecast(city: str) -> Forecast:
    return Forecast(city=city, days=[Day(day="mon", high=21.5), Day(day="tue", high=18.0, rain=True)])


_connected: set[str] = set()


@server.tool(description="Needs a URL elicitation (error -32042) the first time.")
def connect_account() -> str:
    if "account" not in _connected:
        _connected.add("account")
        raise UrlElicitationRequiredError([
            ElicitRequestURLParams(
                mode="url", message="Connect your account", url="https://auth.example.com/connect?id=e1",
                elicitation_id="e1",
            )
        ])
    return "connected"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="transport", required=True)
    sub.add_parser("stdio")
    http = sub.add_parser("http")
    http.add_argument("--port", type=int, required=True)
    http.add_argument("--json-response", action="store_true", help="reply with JSON, not SSE")
    http.add_argument("--stateless", action="store_true", help="no Mcp-Session-Id sessions")
    sse = sub.add_parser("sse")
    sse.add_argument("--port", type=int, required=True)
    args = parser.parse_args()

    if args.transport == "stdio":
        server.run("stdio")
        return
    if args.transport == "sse":
        serve_app(server.sse_app(host="127.0.0.1"), args.port)
        return
    app = server.streamable_http_app(
        json_response=args.json_response,
        stateless_http=args.stateless,
        host="127.0.0.1",
    )
    serve_app(app, args.port)


if __name__ == "__main__":
    main()
