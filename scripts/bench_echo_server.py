#!/usr/bin/env python3
"""The MCP server that ``scripts/bench`` measures clients against.

    python scripts/bench_echo_server.py          # stdlib only: a plain readline loop
    python scripts/bench_echo_server.py --sdk    # the same tools on the official SDK's server

Tools: ``echo(message)``, ``add(a, b)``, ``sleep(ms)`` and ``blob(bytes)`` (a text
result of that many ``x``). The default mode imports nothing outside the standard
library and does as little as it can per request, so a benchmark measures the
client, not the server. ``sleep`` runs on a thread of its own, so concurrent
sleeps overlap: 16 calls of 50 ms answer after ~50 ms if the client multiplexes.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from typing import Any

TOOLS: list[dict[str, Any]] = [
    {
        "name": "echo",
        "description": "Echo a message back.",
        "inputSchema": {
            "type": "object",
            "properties": {"message": {"type": "string"}},
            "required": ["message"],
        },
    },
    {
        "name": "add",
        "description": "Add two numbers.",
        "inputSchema": {
            "type": "object",
            "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
            "required": ["a", "b"],
        },
    },
    {
        "name": "sleep",
        "description": "Answer after `ms` milliseconds.",
        "inputSchema": {
            "type": "object",
            "properties": {"ms": {"type": "integer"}},
            "required": ["ms"],
        },
    },
    {
        "name": "blob",
        "description": "Return a text of `bytes` bytes.",
        "inputSchema": {
            "type": "object",
            "properties": {"bytes": {"type": "integer"}},
            "required": ["bytes"],
        },
    },
]

SUPPORTED = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")


def serve_stdlib() -> None:
    stdin = sys.stdin.buffer
    out = sys.stdout.buffer
    lock = threading.Lock()
    dumps = json.dumps
    loads = json.loads

    def reply(request_id: object, result: object) -> None:
        data = dumps({"jsonrpc": "2.0", "id": request_id, "result": result}).encode() + b"\n"
        with lock:
            out.write(data)
            out.flush()

    def text(value: str) -> dict[str, Any]:
        return {"content": [{"type": "text", "text": value}]}

    def sleep(request_id: object, ms: int) -> None:
        time.sleep(ms / 1000)
        reply(request_id, text("slept"))

    for line in stdin:
        try:
            message = loads(line)
        except ValueError:
            continue
        if not isinstance(message, dict) or "id" not in message:
            continue  # a notification (initialized, cancelled) or a reply: nothing to do
        request_id = message["id"]
        method = message.get("method")
        params = message.get("params") or {}
        if method == "tools/call":
            name = params.get("name")
            args = params.get("arguments") or {}
            if name == "echo":
                reply(request_id, text(str(args.get("message", ""))))
            elif name == "add":
                total = args.get("a", 0) + args.get("b", 0)
                result = text(str(total))
                result["structuredContent"] = {"sum": total}
                reply(request_id, result)
            elif name == "sleep":
                threading.Thread(
                    target=sleep, args=(request_id, int(args.get("ms", 0))), daemon=True
                ).start()
            elif name == "blob":
                reply(request_id, text("x" * int(args.get("bytes", 0))))
            else:
                result = text(f"unknown tool {name}")
                result["isError"] = True
                reply(request_id, result)
        elif method == "initialize":
            asked = params.get("protocolVersion")
            reply(
                request_id,
                {
                    "protocolVersion": asked if asked in SUPPORTED else "2025-06-18",
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "bench-echo", "version": "1.0"},
                },
            )
        elif method == "tools/list":
            reply(request_id, {"tools": TOOLS})
        elif method == "ping":
            reply(request_id, {})
        else:
            data = dumps(
                {
                    "jsonrpc": "2.0",
                    "id": request_id,
                    "error": {"code": -32601, "message": "Method not found"},
                }
            ).encode()
            with lock:
                out.write(data + b"\n")
                out.flush()


def serve_sdk() -> None:
    """The same four tools on the official SDK's own server (``mcp`` 2.x)."""
    import anyio
    from mcp.server.mcpserver import MCPServer

    server = MCPServer(name="bench-sdk", version="1.0", log_level="WARNING")

    @server.tool(description="Echo a message back.")
    def echo(message: str) -> str:
        return message

    @server.tool(description="Add two numbers.")
    def add(a: float, b: float) -> float:
        return a + b

    @server.tool(description="Answer after `ms` milliseconds.")
    async def sleep(ms: int) -> str:
        await anyio.sleep(ms / 1000)
        return "slept"

    @server.tool(description="Return a text of `bytes` bytes.")
    def blob(bytes: int) -> str:  # the wire name of the argument
        return "x" * bytes

    server.run("stdio")


if __name__ == "__main__":
    if sys.argv[1:] == ["--sdk"]:
        serve_sdk()
    elif sys.argv[1:]:
        sys.exit(f"usage: {sys.argv[0]} [--sdk]")
    else:
        serve_stdlib()
