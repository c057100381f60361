"""A scriptable, hostile Streamable HTTP MCP server for the transport tests.

Standard library only (``http.server`` on 127.0.0.1, port 0), one thread per
connection. It speaks enough MCP for a session (``initialize``, ``tools/list``,
``tools/call``) and misbehaves on request: each tool name below is a behaviour.
Every request is recorded (method, path, headers, body) for assertions.

Tools (``tools/call`` with ``name``):

- ``echo``      -> ``message`` back, as JSON or SSE (``server.mode``)
- ``slow``      -> sleeps ``ms`` then answers (concurrency tests)
- ``hang``      -> never answers (SSE headers first, or with ``json: true`` no headers)
- ``status``    -> HTTP ``code`` with a body holding ``SECRET_BODY``
- ``big``       -> a ``bytes``-byte JSON body (``length: true`` declares it up front)
- ``bigevent``  -> one SSE event whose data line is ``bytes`` bytes long
- ``deep``      -> a reply nesting ``depth`` arrays
- ``wide``      -> a JSON reply holding ``count`` empty arrays
- ``ping``      -> SSE: a ``ping`` server request first, answered once the reply arrives
- ``unknown``   -> SSE: a ``sampling/createMessage`` request first, likewise
- ``notify``    -> SSE: notifications (``list_changed``, ``message``) before the reply
- ``drop``      -> SSE: priming event (id + ``retry``), then closes; the reply waits
  for ``GET`` with ``Last-Event-ID``
- ``dropnoid``  -> SSE: closes without an event id or a reply
- ``accepted``  -> HTTP 202 for a request
- ``html``      -> 200 with ``text/html``
- ``gzip``      -> a gzip-compressed JSON reply
- ``trickle``   -> SSE: a comment every 50 ms, never a reply
- ``dribble``   -> a JSON body sent one byte every ``ms`` (default 400) ms
- ``quotes``    -> a ``bytes``-byte JSON body: 129 brackets, then an unterminated
  string of escaped quotes (quadratic for a naive depth scan)
"""

from __future__ import annotations

import contextlib
import gzip
import json
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

SECRET_BODY = "BODY-TEXT-MUST-NOT-LEAK"

DEFAULT_TOOLS: list[dict[str, Any]] = [
    {"name": name, "description": f"the {name} behaviour", "inputSchema": {"type": "object"}}
    for name in (
        "echo", "slow", "hang", "status", "big", "bigevent", "deep", "wide", "ping", "unknown",
        "notify", "drop", "dropnoid", "accepted", "html", "gzip", "trickle", "dribble", "quotes",
    )
]  # fmt: skip


@dataclass
class Recorded:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    at: float

    @property
    def message(self) -> Any:
        return json.loads(self.body) if self.body else None


@dataclass
class Hostile:
    """Configuration and record of one server; tests change fields freely."""

    mode: str = "sse"  # "sse" or "json": how ordinary replies are sent
    stateless: bool = False
    tools: list[dict[str, Any]] = field(default_factory=lambda: list(DEFAULT_TOOLS))
    force_status: int | None = None  # answer every POST with this status
    delete_status: int = 200
    retry_ms: int = 300
    protocol_version: str | None = None  # None: echo the client's
    session_id_override: str | None = None  # an invalid session id to hand out
    expire: int = 0  # the next N requests with a session id get 404 (session forgotten)
    modern: bool = False  # answer server/discover: the 2026-07-28 era (it hands out session ids all the same)
    modern_status: int | None = None  # modern era: answer every tools/call with this status and a JSON-RPC error
    discover_status: int | None = None  # answer server/discover with this status and a text body
    requests: list[Recorded] = field(default_factory=list)
    sessions: int = 0
    stream_closed_at: float = 0.0
    release: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)
    replies: dict[Any, Any] = field(default_factory=dict)
    replies_changed: threading.Condition = field(default_factory=threading.Condition)
    resume: dict[str, bytes] = field(default_factory=dict)
    # Frames sent on the standalone GET stream (a GET without Last-Event-ID);
    # None answers that GET with 405.
    standalone: list[bytes] | None = None
    get_delay: float = 0.0  # seconds before a GET is recorded and answered (a slow server)
    url: str = ""

    @property
    def session_id(self) -> str | None:
        if self.stateless:
            return None
        if self.session_id_override is not None:
            return self.session_id_override
        return f"sess-{self.sessions}"

    def posts(self, method: str | None = None) -> list[Recorded]:
        with self.lock:
            found = [r for r in self.requests if r.method == "POST"]
        if method is None:
            return found
        return [
            r for r in found if isinstance(r.message, dict) and r.message.get("method") == method
        ]

    def of(self, verb: str) -> list[Recorded]:
        with self.lock:
            return [r for r in self.requests if r.method == verb]

    def wait_for(self, method: str, timeout: float = 15.0) -> Recorded:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = self.posts(method)
            if found:
                return found[-1]
            time.sleep(0.005)
        raise AssertionError(f"no {method} reached the server")

    def wait_reply(self, request_id: Any, timeout: float = 5.0) -> Any:
        with self.replies_changed:
            self.replies_changed.wait_for(lambda: request_id in self.replies, timeout)
            return self.replies.get(request_id)


def _result(text: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}]}


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    @property
    def cfg(self) -> Hostile:
        return self.server.cfg

    def _record(self, body: bytes) -> None:
        headers = {k.lower(): v for k, v in self.headers.items()}
        with self.cfg.lock:
            self.cfg.requests.append(
                Recorded(self.command, self.path, headers, body, time.monotonic())
            )

    # ------------------------------------------------------------ responses

    def _send(
        self, status: int, body: bytes = b"", ctype: str = "application/json", **extra: str
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        sid = self.cfg.session_id
        if sid is not None:
            self.send_header("Mcp-Session-Id", sid)
        for key, value in extra.items():
            self.send_header(key.replace("_", "-"), value)
        self.end_headers()
        if body:
            self.wfile.write(body)

    def _reply(self, rid: Any, result: Any, *, sse: bool | None = None) -> None:
        frame = json.dumps({"jsonrpc": "2.0", "id": rid, "result": result}).encode()
        if sse is None:
            sse = self.cfg.mode == "sse"
        if sse:
            self._start_sse()
            self._event(frame)
            self._end_sse()
        else:
            self._send(200, frame)

    def _start_sse(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        sid = self.cfg.session_id
        if sid is not None:
            self.send_header("Mcp-Session-Id", sid)
        self.end_headers()
        self.close_connection = True

    def _event(self, data: bytes, *, event_id: str | None = None, retry: int | None = None) -> None:
        out = b""
        if event_id is not None:
            out += f"id: {event_id}\n".encode()
        if retry is not None:
            out += f"retry: {retry}\n".encode()
        out += b"event: message\ndata: " + data + b"\n\n"
        self.wfile.write(out)
        self.wfile.flush()

    def _end_sse(self) -> None:
        with contextlib.suppress(OSError):
            self.wfile.flush()

    def _server_request(self, rid: Any, method: str, request: dict[str, Any]) -> None:
        """Send a server request on the stream, wait for the client's reply, answer."""
        self._start_sse()
        self._event(
            json.dumps(
                {
                    "jsonrpc": "2.0",
                    "id": request["id"],
                    "method": request["method"],
                    "params": request.get("params", {}),
                }
            ).encode()
        )
        reply = self.cfg.wait_reply(request["id"])
        self._event(
            json.dumps({"jsonrpc": "2.0", "id": rid, "result": _result(json.dumps(reply))}).encode()
        )

    # ------------------------------------------------------------ verbs

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(length)
        self._record(body)
        cfg = self.cfg
        if cfg.force_status is not None:
            self._send(cfg.force_status, SECRET_BODY.encode(), "text/plain")
            return
        message = json.loads(body)
        method = message.get("method")
        sid = self.headers.get("Mcp-Session-Id")
        if method == "initialize" and sid is None:
            with cfg.lock:
                cfg.sessions += 1
        elif sid is not None:
            with cfg.lock:
                forget = cfg.expire > 0
                if forget:
                    cfg.expire -= 1
                    cfg.sessions += 1  # the old id is gone for good
            if forget or sid != cfg.session_id:
                self._send(404, SECRET_BODY.encode(), "text/plain")
                return
        if method is None:  # a reply to one of our requests
            with cfg.replies_changed:
                cfg.replies[message.get("id")] = message
                cfg.replies_changed.notify_all()
            self._send(202)
            return
        if "id" not in message:  # a notification
            self._send(202)
            return
        rid = message["id"]
        if method == "server/discover" and cfg.discover_status is not None:
            self._send(cfg.discover_status, SECRET_BODY.encode(), "text/plain")
        elif method == "server/discover" and cfg.modern:
            self._reply(
                rid,
                {
                    "resultType": "complete",
                    "supportedVersions": ["2026-07-28"],
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "hostile", "version": "1"},
                },
            )
        elif method == "tools/call" and cfg.modern and cfg.modern_status is not None:
            error = {"code": -32601 if cfg.modern_status == 404 else -32020, "message": SECRET_BODY}
            self._send(
                cfg.modern_status,
                json.dumps({"jsonrpc": "2.0", "id": rid, "error": error}).encode(),
            )
        elif method == "initialize":
            version = cfg.protocol_version or message["params"]["protocolVersion"]
            self._reply(
                rid,
                {
                    "protocolVersion": version,
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "hostile", "version": "1"},
                },
            )
        elif method == "tools/list":
            self._reply(rid, {"tools": cfg.tools})
        elif method == "tools/call":
            self._call(rid, message["params"]["name"], message["params"].get("arguments") or {})
        else:
            self._send(
                200,
                json.dumps(
                    {"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "nope"}}
                ).encode(),
            )

    def _call(self, rid: Any, name: str, args: dict[str, Any]) -> None:
        cfg = self.cfg
        if name == "echo":
            self._reply(rid, _result(str(args.get("message", ""))))
        elif name == "slow":
            time.sleep(args.get("ms", 100) / 1000)
            self._reply(rid, _result("slept"))
        elif name == "hang":
            if not args.get("json"):
                self._start_sse()
                self.wfile.write(b": waiting\n\n")
                self.wfile.flush()
            cfg.release.wait(60)
        elif name == "status":
            self._send(int(args["code"]), SECRET_BODY.encode(), "text/plain")
        elif name == "big":
            self._big(int(args["bytes"]), declare=bool(args.get("length")))
        elif name == "bigevent":
            self._start_sse()
            self.wfile.write(b"data: ")
            self._stream_filler(int(args["bytes"]))
        elif name == "deep":
            depth = int(args.get("depth", 200))
            self._send(
                200, b'{"jsonrpc":"2.0","id":%d,"result":%s%s}' % (rid, b"[" * depth, b"]" * depth)
            )
        elif name == "wide":
            count = int(args.get("count", 1))
            self._send(
                200, b'{"jsonrpc":"2.0","id":%d,"result":{"content":[],"x":[%s[]]}}' % (rid, b"[]," * count)
            )
        elif name == "ping":
            self._server_request(rid, "ping", {"id": "srv-ping-7", "method": "ping"})
        elif name == "unknown":
            self._server_request(
                rid,
                "sampling",
                {"id": 99, "method": "sampling/createMessage", "params": {"messages": []}},
            )
        elif name == "notify":
            self._start_sse()
            for note in ("notifications/tools/list_changed", "notifications/message"):
                self._event(json.dumps({"jsonrpc": "2.0", "method": note, "params": {}}).encode())
            self._event(
                json.dumps({"jsonrpc": "2.0", "id": rid, "result": _result("after notes")}).encode()
            )
        elif name == "drop":
            event_id = f"ev-{rid}"
            cfg.resume[event_id] = json.dumps(
                {"jsonrpc": "2.0", "id": rid, "result": _result("resumed")}
            ).encode()
            self._start_sse()
            self.wfile.write(f"id: {event_id}\nretry: {cfg.retry_ms}\ndata: \n\n".encode())
            self.wfile.flush()
            cfg.stream_closed_at = time.monotonic()
        elif name == "dropnoid":
            self._start_sse()
            self.wfile.write(b": bye\n\n")
        elif name == "accepted":
            self._send(202)
        elif name == "html":
            self._send(200, b"<html></html>", "text/html")
        elif name == "trickle":
            self._start_sse()
            with contextlib.suppress(OSError):
                while not cfg.release.wait(0.05):
                    self.wfile.write(b": still working\n\n")
                    self.wfile.flush()
        elif name == "dribble":
            body = json.dumps({"jsonrpc": "2.0", "id": rid, "result": _result("late")}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            with contextlib.suppress(OSError):
                for index in range(len(body)):
                    if cfg.release.wait(int(args.get("ms", 400)) / 1000):
                        break
                    self.wfile.write(body[index : index + 1])
                    self.wfile.flush()
        elif name == "quotes":
            head = b'{"a":' + b"[" * 129 + b'"'
            self._send(200, head + b'\\"' * ((int(args["bytes"]) - len(head)) // 2))
        elif name == "gzip":
            frame = json.dumps({"jsonrpc": "2.0", "id": rid, "result": _result("zipped")}).encode()
            self._send(200, gzip.compress(frame), Content_Encoding="gzip")

    def _big(self, size: int, *, declare: bool) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        if declare:
            self.send_header("Content-Length", str(size))
        else:
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        self.wfile.write(b'{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"')
        self._stream_filler(size)

    def _stream_filler(self, size: int) -> None:
        chunk = b"x" * 65536
        sent = 0
        with contextlib.suppress(OSError):
            while sent < size and not self.cfg.release.is_set():
                self.wfile.write(chunk)
                sent += len(chunk)
        self.close_connection = True

    def do_GET(self) -> None:
        if self.cfg.get_delay:
            time.sleep(self.cfg.get_delay)  # a server slow to answer (this fake's own pace)
        self._record(b"")
        last = self.headers.get("Last-Event-ID")
        if last is None and self.cfg.standalone is not None:
            self._start_sse()
            with contextlib.suppress(OSError):
                for data in self.cfg.standalone:
                    self._event(data)
                self.cfg.release.wait(30)
            return
        frame = self.cfg.resume.pop(last, None) if last else None
        if frame is None:
            self._send(405, b"", "text/plain")
            return
        self._start_sse()
        self.wfile.write(f"id: {last}-r\ndata: \n\n".encode())
        self._event(frame, event_id=f"{last}-1")
        # Stays open, like the conformance suite's server: the client must stop
        # reading once its reply is in.
        self.cfg.release.wait(30)

    def do_DELETE(self) -> None:
        self._record(b"")
        self._send(
            self.cfg.delete_status,
            SECRET_BODY.encode() if self.cfg.delete_status >= 400 else b"",
            "text/plain",
        )


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    # The default backlog of 5 resets connections when many callers connect at once.
    request_queue_size = 128
    cfg: Hostile

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that drops a connection (a transport discarded after a
        # refused probe) is not a server fault worth a traceback on stderr.
        if isinstance(sys.exc_info()[1], (ConnectionResetError, BrokenPipeError)):
            return
        super().handle_error(request, client_address)


@contextlib.contextmanager
def hostile_server(**config: Any) -> Iterator[Hostile]:
    """Run a :class:`Hostile` server on 127.0.0.1; yields its config (``.url`` set)."""
    cfg = Hostile(**config)
    server = _Server(("127.0.0.1", 0), _Handler)
    server.cfg = cfg
    cfg.url = f"http://127.0.0.1:{server.server_address[1]}/mcp"
    thread = threading.Thread(
        target=server.serve_forever,
        kwargs={"poll_interval": 0.05},
        name="hostile-http",
        daemon=True,
    )
    thread.start()
    try:
        yield cfg
    finally:
        cfg.release.set()
        server.shutdown()
        server.server_close()
        thread.join(5)
