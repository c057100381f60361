"""A stdio MCP server that turns hostile at a chosen point, for the surface test.

    python hostile_stdio.py MODE PHASE PIDFILE

MODE is what it does once hostile:

- ``silent``: reads every request and answers none;
- ``dies``: exits (code 3) on the first request it should answer;
- ``floods``: answers nothing and writes log notifications as fast as the pipe
  takes them (for at most ``FLOOD_SECONDS``, so it stops by itself).

PHASE says when: ``handshake`` (from the first request on: a connect meets it)
or ``after`` (it answers the era probe with "method not found", then
``initialize`` and ``tools/list`` politely, declaring every capability a
client method may need, and turns hostile at the first request after those).
It writes its pid to PIDFILE at start, so a test can wait for it to be gone,
and it ends when stdin does.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time

FLOOD_SECONDS = 60.0

CAPABILITIES = {
    "tools": {"listChanged": True},
    "resources": {"subscribe": True, "listChanged": True},
    "prompts": {"listChanged": True},
    "completions": {},
    "logging": {},
    "extensions": {"io.modelcontextprotocol/skills": {}},
}
TOOLS = [{"name": "t", "description": "A tool.", "inputSchema": {"type": "object"}}]
POLITE = ("initialize", "tools/list")


def _write(message: dict[str, object]) -> None:
    os.write(1, json.dumps(message).encode() + b"\n")


def _flood(stop: threading.Event) -> None:
    record = {
        "jsonrpc": "2.0",
        "method": "notifications/message",
        "params": {"level": "info", "logger": "flood", "data": "x" * 200},
    }
    line = json.dumps(record).encode() + b"\n"
    chunk = line * 64
    end = time.monotonic() + FLOOD_SECONDS
    try:
        while not stop.is_set() and time.monotonic() < end:
            os.write(1, chunk)
    except OSError:
        pass  # the client closed stdout: nobody is reading


def main() -> None:
    mode, phase, pidfile = sys.argv[1:4]
    with open(pidfile, "w", encoding="ascii") as handle:
        handle.write(str(os.getpid()))
    hostile = phase == "handshake"
    stop = threading.Event()
    flooding = False
    for raw in sys.stdin.buffer:
        try:
            message = json.loads(raw)
        except ValueError:
            continue
        if not isinstance(message, dict) or "id" not in message or "method" not in message:
            continue  # a notification or a reply: nothing to answer
        method = message["method"]
        rid = message["id"]
        if not hostile and method == "server/discover":
            _write({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "no"}})
            continue
        if not hostile and method == "initialize":
            version = message.get("params", {}).get("protocolVersion", "2025-06-18")
            result = {
                "protocolVersion": version,
                "capabilities": CAPABILITIES,
                "serverInfo": {"name": "hostile", "version": "1"},
            }
            _write({"jsonrpc": "2.0", "id": rid, "result": result})
            continue
        if not hostile and method == "tools/list":
            _write({"jsonrpc": "2.0", "id": rid, "result": {"tools": TOOLS}})
            hostile = True  # the handshake is done: every later request meets MODE
            continue
        if not hostile and method not in POLITE:
            hostile = True
        if mode == "dies":
            os._exit(3)
        if mode == "floods" and not flooding:
            flooding = True
            threading.Thread(target=_flood, args=(stop,), daemon=True).start()
        # silent (and floods): the request is never answered
    stop.set()


if __name__ == "__main__":
    main()
