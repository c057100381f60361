"""The one-shot redirect listener for a browser login (RFC 8252 §7.3).

It binds only to a loopback address, answers exactly one request to the
redirect path (anything else gets a 404 and does not count), and closes. The
wait is bounded by a deadline and can be cancelled; the page it shows never
repeats the code or the state.
"""

from __future__ import annotations

import contextlib
import selectors
import socket
import threading
import time
from urllib.parse import urlsplit, urlunsplit

from ..protocol.errors import AuthError, ProtocolError, Timeout
from ._urls import is_loopback

__all__ = ["LoopbackListener", "free_loopback_uri"]

MAX_REQUEST_BYTES = 16 * 1024
MAX_STRAY_REQUESTS = 32
READ_TIMEOUT = 5.0
_PAGE = (
    b"<!doctype html><html><head><meta charset=utf-8><title>mcp-sync</title></head>"
    b"<body><p>%s</p><p>You can close this window.</p></body></html>"
)


def free_loopback_uri(path: str = "/callback") -> str:
    """A redirect URI on 127.0.0.1 with a port that is free right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}{path}"


class LoopbackListener:
    """Listens on the host and port of a loopback ``http`` redirect URI."""

    def __init__(self, redirect_uri: str) -> None:
        parts = urlsplit(redirect_uri)
        if parts.scheme != "http" or not is_loopback(parts.hostname) or parts.port is None:
            raise ProtocolError(
                "option redirect_uri: the built-in listener needs an http URI on a loopback "
                "host with an explicit port (give redirect_handler= to receive other redirects)"
            )
        host = parts.hostname or "127.0.0.1"
        if host == "localhost":
            host = "127.0.0.1"
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self._path = parts.path or "/"
        self._base = urlunsplit((parts.scheme, parts.netloc, "", "", ""))
        self._sock = socket.socket(family, socket.SOCK_STREAM)
        try:
            self._sock.bind((host.strip("[]"), parts.port))
            self._sock.listen(4)
            self._sock.setblocking(False)
        except OSError as exc:
            self._sock.close()
            raise AuthError(
                f"the redirect listener cannot listen on port {parts.port} "
                f"({exc.strerror or type(exc).__name__}); give another redirect_uri"
            ) from None

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._sock.close()

    def __enter__(self) -> LoopbackListener:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def wait(self, deadline: float, cancel: threading.Event | None = None) -> str:
        """Block until the redirect arrives; return its full URL."""
        strays = 0
        with selectors.DefaultSelector() as selector:
            selector.register(self._sock, selectors.EVENT_READ)
            while True:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise Timeout("the login was not completed before its deadline (login_timeout_ms)")
                if cancel is not None and cancel.is_set():
                    raise AuthError("the login was abandoned: the session closed")
                # Short slices only so that a cancel is noticed.
                if not selector.select(min(remaining, 0.5)):
                    continue
                try:
                    conn, peer = self._sock.accept()
                except (BlockingIOError, InterruptedError):
                    continue
                with conn:
                    target = self._serve(conn, peer, deadline)
                if target is not None:
                    return self._base + target
                strays += 1
                if strays > MAX_STRAY_REQUESTS:
                    raise AuthError("the redirect listener received too many unrelated requests")

    def _serve(self, conn: socket.socket, peer: object, deadline: float) -> str | None:
        host = peer[0] if isinstance(peer, tuple) else ""
        if not is_loopback(str(host)):
            return None
        conn.settimeout(max(0.05, min(READ_TIMEOUT, deadline - time.monotonic())))
        data = b""
        try:
            while b"\r\n\r\n" not in data and len(data) < MAX_REQUEST_BYTES:
                chunk = conn.recv(4096)
                if not chunk:
                    break
                data += chunk
        except OSError:
            return None
        line = data.split(b"\r\n", 1)[0].decode("latin-1")
        parts = line.split(" ")
        if len(parts) != 3 or parts[0] != "GET" or not parts[2].startswith("HTTP/"):
            self._reply(conn, 400, b"Bad request.")
            return None
        target = parts[1]
        if urlsplit(target).path != self._path:
            self._reply(conn, 404, b"Not found.")
            return None
        self._reply(conn, 200, b"Authorization received by mcp-sync.")
        return target

    @staticmethod
    def _reply(conn: socket.socket, status: int, message: bytes) -> None:
        body = _PAGE % message
        reason = {200: b"OK", 400: b"Bad Request", 404: b"Not Found"}[status]
        head = (
            b"HTTP/1.1 %d %s\r\nContent-Type: text/html; charset=utf-8\r\n"
            b"Content-Length: %d\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n"
        ) % (status, reason, len(body))
        with contextlib.suppress(OSError):
            conn.sendall(head + body)
