"""The fake server over Streamable HTTP (``python -m mcp_sync.testing --http``).

The same server, tools and misbehaviours as over stdio, on ``127.0.0.1``
(``--port``, default any free one); the URL (``http://127.0.0.1:PORT/mcp``)
is the first line printed. Stateless in both eras: no session ids, ``GET``
and ``DELETE`` get 405. Each POST is answered with JSON, or with an event
stream when notifications or requests of the server's come before the reply
(sent as they are written, so a client sees progress while it waits).

In the modern era each POST must carry the revision's headers, checked
against its body as a server must (2026-07-28, "Server Validation"):
``MCP-Protocol-Version`` equal to ``_meta``'s version, ``Mcp-Method`` equal
to the method, ``Mcp-Name`` (decoded) equal to the tool's name, and an
``Mcp-Param-*`` header for each argument the tool declares with
``x-mcp-header``; a mismatch is ``400`` with ``-32020``. Modern errors come
with the status the revision gives them (``-32022``, ``-32602``, ``-32020``:
400; ``-32601``: 404). ``--header-mismatch`` refuses every ``tools/call``
as mismatched; ``--header-log FILE`` records each POST's MCP headers.
"""

from __future__ import annotations

import argparse
import base64
import json
import re
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from ._eras import META_VERSION, has_modern_meta
from ._server import FakeServer

__all__ = ["serve"]

_SENTINEL = re.compile(r"=\?base64\?(.*)\?=\Z", re.DOTALL)
_BAD_REQUEST = {-32022, -32602, -32020, -32600, -32700}


class _Exchange:
    """What the fake writes while it serves one POST. Frames are held until
    the reply comes (then the handler answers with JSON, or an event stream
    with what came before it); a notification or a request of the server's
    that comes first starts the event stream at once, and every later frame
    is sent as it is written, as a real server's would be."""

    def __init__(self, handler: _Handler, request_id: object) -> None:
        self.handler = handler
        self.request_id = request_id
        self.frames: list[bytes] = []
        self.streaming = False

    def add(self, frame: bytes) -> None:
        if self.streaming:
            self.handler.chunk(_event(frame))
            return
        self.frames.append(frame)
        try:
            message = json.loads(frame)
        except ValueError:
            return  # a raw --answer line: sent as it is, with the rest
        if isinstance(message, dict) and "method" in message and self.request_id is not None:
            self.streaming = True
            self.handler.start_stream()
            for held in self.frames:
                self.handler.chunk(_event(held))
            self.frames = []


def _event(frame: bytes) -> bytes:
    return b"event: message\ndata: " + frame + b"\n\n"


class _PerThreadOut:
    """The fake's output, routed to the exchange its request thread serves."""

    def __init__(self) -> None:
        self.local = threading.local()

    def begin(self, exchange: _Exchange) -> None:
        self.local.exchange = exchange

    def end(self) -> None:
        self.local.exchange = None

    def write(self, data: bytes) -> int:
        exchange = getattr(self.local, "exchange", None)
        if exchange is not None:
            for line in data.split(b"\n"):
                if line.strip():
                    exchange.add(line)
        return len(data)

    def flush(self) -> None:
        pass


def _decoded(value: str) -> str:
    match = _SENTINEL.match(value)
    if match is None:
        return value
    try:
        return base64.b64decode(match.group(1), validate=True).decode("utf-8")
    except ValueError:
        return "\0invalid"


def _same(header: str, value: object) -> bool:
    """A header against its argument; numbers compare as numbers (42 and 42.0)."""
    if isinstance(value, bool):
        return header == ("true" if value else "false")
    if isinstance(value, (int, float)):
        try:
            return float(header) == float(value)
        except ValueError:
            return False
    return header == value


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def do_GET(self) -> None:
        self._send(405, b"")

    do_DELETE = do_GET

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length)
        message = self._read_message(body)
        if message is None:
            return
        self._log_headers(message)
        method = message.get("method")
        params = message.get("params") or {}
        modern = (
            isinstance(method, str)
            and self.server.fake.eras.era_of(method, params) == "modern"
            and has_modern_meta(params)
        )
        if modern and "id" in message:
            mismatch = self._mismatch(message)
            if mismatch is not None:
                self._json(400, {"jsonrpc": "2.0", "id": message.get("id"),
                                 "error": {"code": -32020, "message": f"Header mismatch: {mismatch}"}})
                return
        out = self.server.out
        exchange = _Exchange(self, message.get("id"))
        out.begin(exchange)
        try:
            self.server.fake.handle_line(body)
        finally:
            out.end()
        if exchange.streaming:
            self.chunk(b"")  # the last chunk: the stream ends after the reply
            return
        if "id" not in message or "method" not in message:
            self._send(202, b"")  # a notification, or the client's reply to a request of ours
            return
        self._answer(message, exchange.frames, modern)

    def _read_message(self, body: bytes) -> dict[str, Any] | None:
        """The posted JSON object, or None once a 400 has answered it."""
        try:
            message = json.loads(body)
        except ValueError:
            self._json(400, {"jsonrpc": "2.0", "id": None,
                             "error": {"code": -32700, "message": "Parse error"}})
            return None
        if not isinstance(message, dict):
            self._json(400, {"jsonrpc": "2.0", "id": None,
                             "error": {"code": -32600, "message": "Invalid Request"}})
            return None
        return message

    def _answer(self, message: dict[str, Any], frames: list[bytes], modern: bool) -> None:
        """Send what the fake server wrote for a request: its reply as JSON,
        or with what came before it as an event stream."""
        replies = [json.loads(frame) for frame in frames]
        final = next((r for r in replies if "method" not in r and r.get("id") == message["id"]), None)
        if final is None:
            if not frames:
                self.server.stopping.wait()  # --hang-on, or a tool that never answers
            self._send(200, b"".join(frames))  # a raw --answer, as it is
            return
        status = 200
        error = final.get("error")
        if modern and isinstance(error, dict):
            status = 404 if error.get("code") == -32601 else 400 if error.get("code") in _BAD_REQUEST else 200
        if len(replies) == 1:
            self._send(status, frames[0])
            return
        events = b"".join(b"event: message\ndata: " + frame + b"\n\n" for frame in frames)
        self._send(status, events, "text/event-stream")

    def _mismatch(self, message: dict[str, Any]) -> str | None:
        headers = self.headers
        params = message.get("params") or {}
        meta = params.get("_meta") or {}
        if headers.get("MCP-Protocol-Version") != meta.get(META_VERSION):
            return "MCP-Protocol-Version does not match _meta"
        if headers.get("Mcp-Method") != message.get("method"):
            return "Mcp-Method does not match the method"
        if message.get("method") in ("tasks/get", "tasks/update", "tasks/cancel"):
            # The tasks extension routes by task.
            name = headers.get("Mcp-Name")
            if name is None or _decoded(name) != params.get("taskId"):
                return "Mcp-Name does not match params.taskId"
            return None
        if message.get("method") != "tools/call":
            return None
        if self.server.fake.opt.header_mismatch:
            return "refused on purpose (--header-mismatch)"
        name = headers.get("Mcp-Name")
        if name is None or _decoded(name) != params.get("name"):
            return "Mcp-Name does not match params.name"
        return self._param_mismatch(params)

    def _param_mismatch(self, params: dict[str, Any]) -> str | None:
        """Check the Mcp-Param-* headers against the arguments the tool's schema marks with x-mcp-header."""
        tool = next((t for t in self.server.fake.tools if t.get("name") == params.get("name")), None)
        arguments = params.get("arguments") or {}
        properties = ((tool or {}).get("inputSchema") or {}).get("properties") or {}
        for prop, schema in properties.items():
            declared = schema.get("x-mcp-header") if isinstance(schema, dict) else None
            if not isinstance(declared, str):
                continue
            sent = self.headers.get(f"Mcp-Param-{declared}")
            value = arguments.get(prop)
            if value is None and sent is not None:
                return f"Mcp-Param-{declared} sent for an absent argument"
            if value is not None and (sent is None or not _same(_decoded(sent), value)):
                return f"Mcp-Param-{declared} does not match the argument"
        return None

    def _log_headers(self, message: dict[str, Any]) -> None:
        path = self.server.fake.opt.header_log
        if not path:
            return
        wanted = {k: v for k, v in self.headers.items()
                  if k.lower().startswith("mcp-") or k.lower() in ("authorization", "accept")}
        record = {"method": message.get("method"), "headers": wanted}
        with self.server.log_lock, open(path, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(record) + "\n")

    def start_stream(self) -> None:
        """Answer 200 with an event stream whose events are sent as they come."""
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

    def chunk(self, data: bytes) -> None:
        """One chunk of the stream (an empty one ends it)."""
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def _json(self, status: int, message: dict[str, Any]) -> None:
        self._send(status, json.dumps(message).encode())

    def _send(self, status: int, body: bytes, ctype: str = "application/json") -> None:
        self.send_response(status)
        if body:
            self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    # socketserver's default backlog of 5 overflows when a client opens
    # dozens of connections at once (submitted calls), as no real server's does.
    request_queue_size = 128
    fake: FakeServer
    out: _PerThreadOut
    log_lock: threading.Lock
    stopping: threading.Event


def serve(options: argparse.Namespace) -> None:
    """Serve until killed (or stdin closes)."""
    out = _PerThreadOut()
    fake = FakeServer(options, out)  # type: ignore[arg-type]
    fake.inline = True
    fake.eras.per_request = True
    httpd = _Server(("127.0.0.1", options.port), _Handler)
    httpd.fake = fake
    httpd.out = out
    httpd.log_lock = threading.Lock()
    httpd.stopping = threading.Event()
    print(f"http://127.0.0.1:{httpd.server_address[1]}/mcp", flush=True)
    # Stop when stdin closes, like the stdio server, so a test's teardown is simple.
    def stop_at_eof() -> None:
        sys.stdin.buffer.read()
        httpd.stopping.set()
        httpd.shutdown()

    threading.Thread(target=stop_at_eof, daemon=True).start()
    try:
        httpd.serve_forever()
    finally:
        httpd.stopping.set()
        httpd.server_close()
