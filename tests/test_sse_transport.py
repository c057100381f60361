"""The deprecated HTTP+SSE transport (2024-11-05), chosen with ``transport="sse"``.

Against the official SDK's own HTTP+SSE server (a real peer), and against a small
hostile one below that misbehaves on request: an endpoint on another origin, no
endpoint at all, an event stream that ends, oversize events, error statuses.
"""

from __future__ import annotations

import json
import os
import queue
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from support import library_threads, timed

import mcp_sync

TOOLS = [{"name": "echo", "inputSchema": {"type": "object"}}]


@dataclass
class SseServer:
    endpoint: str | None = "/messages?session=1"
    get_status: int = 200
    post_status: int = 202
    close_after_endpoint: bool = False
    big_event: int = 0
    hang_calls: bool = False  # a tools/call POST is read but never answered
    url: str = ""
    call_posted: threading.Event = field(default_factory=threading.Event)
    release: threading.Event = field(default_factory=threading.Event)
    events: queue.Queue[bytes | None] = field(default_factory=queue.Queue)
    posts: list[dict[str, Any]] = field(default_factory=list)
    post_headers: list[dict[str, str]] = field(default_factory=list)
    get_headers: list[dict[str, str]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def answer(self, message: dict[str, Any]) -> None:
        method, rid = message.get("method"), message.get("id")
        if rid is None or method is None:
            return
        if method == "initialize":
            result: Any = {"protocolVersion": "2024-11-05", "capabilities": {"tools": {}},
                           "serverInfo": {"name": "old", "version": "1"}}
        elif method == "tools/list":
            result = {"tools": TOOLS}
        elif method == "tools/call":
            args = message["params"].get("arguments") or {}
            result = {"content": [{"type": "text", "text": str(args.get("message"))}]}
        else:
            self.events.put(json.dumps({"jsonrpc": "2.0", "id": rid,
                                        "error": {"code": -32601, "message": "no"}}).encode())
            return
        self.events.put(json.dumps({"jsonrpc": "2.0", "id": rid, "result": result}).encode())


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: Any

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        cfg: SseServer = self.server.cfg
        with cfg.lock:
            cfg.get_headers.append({k.lower(): v for k, v in self.headers.items()})
        if cfg.get_status != 200:
            self.send_response(cfg.get_status)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        if cfg.big_event:
            self.wfile.write(b"event: endpoint\ndata: /messages\n\n")
            self.wfile.write(b"event: message\ndata: " + b"x" * cfg.big_event + b"\n\n")
            self.wfile.flush()
        if cfg.endpoint is not None:
            self.wfile.write(f": hello\n\nevent: endpoint\ndata: {cfg.endpoint}\n\n".encode())
            self.wfile.flush()
        if cfg.close_after_endpoint:
            return
        while True:
            data = cfg.events.get()
            if data is None:
                return
            try:
                self.wfile.write(b"event: message\ndata: " + data + b"\n\n")
                self.wfile.flush()
            except OSError:
                return

    def do_POST(self) -> None:
        cfg: SseServer = self.server.cfg
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        message = json.loads(body)
        with cfg.lock:
            cfg.posts.append(message)
            cfg.post_headers.append({k.lower(): v for k, v in self.headers.items()})
        if cfg.hang_calls and message.get("method") == "tools/call":
            cfg.call_posted.set()
            cfg.release.wait(30)
            return
        self.send_response(cfg.post_status)
        self.send_header("Content-Length", "0")
        self.end_headers()
        if cfg.post_status == 202:
            cfg.answer(message)


@contextmanager
def sse_server(**settings: Any) -> Iterator[SseServer]:
    cfg = SseServer(**settings)
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    httpd.daemon_threads = True
    httpd.cfg = cfg  # type: ignore[attr-defined]
    cfg.url = f"http://127.0.0.1:{httpd.server_address[1]}/sse"
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield cfg
    finally:
        cfg.release.set()
        cfg.events.put(None)
        httpd.shutdown()
        httpd.server_close()


def connect(cfg: SseServer, **kwargs: Any) -> mcp_sync.Session:
    kwargs.setdefault("handshake_timeout_ms", 3_000)
    return mcp_sync.connect(server="old", url=cfg.url, transport="sse", **kwargs)


# ------------------------------------------------------------------ a working session


def test_a_session_over_http_and_sse() -> None:
    with sse_server() as cfg:
        with connect(cfg) as session:
            assert (session.era, session.protocol_version) == ("legacy", "2024-11-05")
            assert [t.name for t in session.tools] == ["echo"]
            assert session.call_tool("echo", {"message": "hi"}).content[0]["text"] == "hi"
        methods = [p.get("method") for p in cfg.posts]
        assert methods == ["initialize", "notifications/initialized", "tools/list", "tools/call"]
        assert cfg.posts[0]["params"]["protocolVersion"] == "2025-11-25"
        assert cfg.get_headers[0]["accept"] == "text/event-stream"
        assert cfg.post_headers[-1]["mcp-protocol-version"] == "2024-11-05"


def test_threads_share_a_session_and_nothing_is_left_running() -> None:
    with sse_server() as cfg, connect(cfg) as session:
        results: list[str] = []

        def call(n: int) -> None:
            results.append(session.call_tool("echo", {"message": str(n)}).content[0]["text"])

        threads = [threading.Thread(target=call, args=(n,)) for n in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(10)
        assert sorted(results) == sorted(str(n) for n in range(8))


@pytest.mark.parametrize("endpoint", ["http://127.0.0.1:1/messages", "https://{host}/messages",
                                      "//evil.example/messages"])
def test_an_endpoint_on_another_origin_is_refused(endpoint: str) -> None:
    with sse_server() as cfg:
        cfg.endpoint = endpoint.replace("{host}", cfg.url.split("/")[2])
        with pytest.raises(mcp_sync.ProtocolError, match="endpoint on another origin"):
            connect(cfg)
        assert cfg.posts == []  # nothing, the token least of all, went elsewhere


def test_no_endpoint_event_is_a_timeout() -> None:
    with sse_server(endpoint=None) as cfg, timed(3.0), \
            pytest.raises(mcp_sync.Timeout, match="no endpoint event within handshake_timeout_ms=500"):
        connect(cfg, handshake_timeout_ms=500)


def test_a_stream_that_ends_ends_the_session() -> None:
    with sse_server(close_after_endpoint=True) as cfg, \
            pytest.raises(mcp_sync.ConnectionClosed, match="closed the event stream"):
        connect(cfg)


def test_an_oversize_event_is_refused() -> None:
    with sse_server(endpoint=None, big_event=200_000) as cfg, \
            pytest.raises(mcp_sync.ProtocolError, match="max_frame_bytes=100000"):
        connect(cfg, max_frame_bytes=100_000)


@pytest.mark.parametrize(("status", "kind"), [(404, mcp_sync.ProtocolError),
                                               (401, mcp_sync.ConnectionClosed)])
def test_a_get_that_is_refused_fails_connect(status: int, kind: type[Exception]) -> None:
    with sse_server(get_status=status) as cfg, pytest.raises(kind):
        connect(cfg)


def test_an_error_status_on_a_post_fails_that_request() -> None:
    with (
        sse_server(post_status=500) as cfg,
        pytest.raises(mcp_sync.RemoteError, match="answered a message with HTTP 500"),
    ):
        connect(cfg)


def test_sse_is_legacy_only() -> None:
    with pytest.raises(mcp_sync.ProtocolError, match="has no modern era"):
        mcp_sync.connect(server="x", url="http://127.0.0.1:9/sse", transport="sse", protocol="modern")
    with pytest.raises(mcp_sync.ProtocolError, match="does not match the option command"):
        mcp_sync.connect(server="x", command="x", transport="sse")


def _client_sockets(port: int) -> set[int]:
    """Inodes of this process's open TCP sockets connected to ``port`` (Linux)."""
    ours = set()
    for name in os.listdir("/proc/self/fd"):
        with_target = os.path.join("/proc/self/fd", name)
        try:
            target = os.readlink(with_target)
        except OSError:
            continue
        if target.startswith("socket:["):
            ours.add(int(target[8:-1]))
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table, encoding="ascii") as handle:
                rows = handle.readlines()[1:]
        except OSError:
            continue
        for row in rows:
            fields = row.split()
            remote_port = int(fields[2].rsplit(":", 1)[1], 16)
            inode = int(fields[9])
            if remote_port == port and inode in ours:
                found.add(inode)
    return found


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="counts sockets in /proc")
def test_close_wakes_a_post_the_server_never_answers() -> None:
    # The server reads the call's POST and never answers it. close() from
    # another thread returns at once, fails the caller, and leaves no thread
    # and no socket behind (as over Streamable HTTP).
    with sse_server(hang_calls=True) as cfg:
        port = int(cfg.url.split(":")[2].split("/")[0])
        session = connect(cfg, request_timeout_ms=60_000)
        errors: list[BaseException] = []

        def call() -> None:
            try:
                session.call_tool("echo", {"message": "never"})
            except BaseException as exc:
                errors.append(exc)

        caller = threading.Thread(target=call)
        caller.start()
        assert cfg.call_posted.wait(5)
        with timed(1.0):
            session.close()
        caller.join(1.0)
        assert not caller.is_alive()
        assert len(errors) == 1 and isinstance(errors[0], mcp_sync.ConnectionClosed)
        deadline = time.monotonic() + 1.0
        while (library_threads() or _client_sockets(port)) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert library_threads() == []
        assert _client_sockets(port) == set()


# ------------------------------------------------------------------ the real thing


def test_the_official_sdk_sse_server(sdk_sse_server: str) -> None:
    with mcp_sync.connect(server="sdk", url=sdk_sse_server, transport="sse") as session:
        assert session.era == "legacy"
        result = session.call_tool("echo", {"message": "over sse"})
        assert result.structured_content == {"result": "over sse"}
