"""The HTTP+SSE transport of protocol 2024-11-05 (deprecated since 2025-03-26).

For servers that still speak only that: chosen explicitly with
``transport="sse"`` (config ``"type": "sse"``), never guessed. The client
opens one ``GET`` event stream; its first ``endpoint`` event names the URL
to which every client message is POSTed; every server message (replies
included) comes back as a ``message`` event on the stream. The handshake era
only: there is no modern HTTP+SSE.

Threads: a reader (``mcp_sync-<server>-sse-reader``) holds the event stream
and feeds each message to the session; a writer (``...-sse-writer``) POSTs
queued frames in order. Callers block on their own futures, as over stdio.
The same bounds apply: ``max_frame_bytes`` per event, ``queue_capacity``
frames waiting, the caller's deadline for each POST. The endpoint must be on
the server's own origin, so a server cannot send the session's messages (and
its token) anywhere else.
"""

from __future__ import annotations

import contextlib
import queue
import socket
import threading
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Protocol, cast
from urllib.parse import urljoin, urlsplit

from ._errors import ConnectionClosed, McpError, ProtocolError, RemoteError, Timeout
from ._http import KEEPALIVE_EXPIRY, SseParser, _content_type, _import_httpx, _wake
from ._limits import Limits, seconds
from ._redact import Redacted

if TYPE_CHECKING:
    import httpx

__all__ = ["SseTransport"]

MAX_ENDPOINT = 2048
"""Characters an ``endpoint`` event may hold."""
THREAD_JOIN = 2.0
_STOP = object()


class _Sink(Protocol):
    @property
    def protocol_version(self) -> str | None: ...
    def receive(self, line: bytes) -> None: ...
    def terminate(self, error: McpError, *, wait: bool = False) -> None: ...
    def claim(self, request_id: int) -> bool: ...
    def fail(self, request_id: int, error: McpError) -> None: ...
    def transport_closed(self, stderr_tail: str) -> None: ...


class SseTransport:
    def __init__(
        self,
        sink: _Sink,
        *,
        limits: Limits,
        server: str,
        url: str,
        token: Redacted[str] | None,
        http_client: httpx.Client | None,
        headers: Redacted[dict[str, str]] | None = None,
    ) -> None:
        self._httpx = hx = _import_httpx()
        self._extra_headers = headers
        self._sink = sink
        self._limits = limits
        self._server = server
        self._url = url
        self._token = token
        self._owns_client = http_client is None
        self._client: httpx.Client = http_client or hx.Client(
            trust_env=True,
            follow_redirects=False,
            limits=hx.Limits(keepalive_expiry=KEEPALIVE_EXPIRY),
        )
        self._queue: queue.Queue[object] = queue.Queue(maxsize=limits.queue_capacity)
        self._endpoint: str | None = None
        self._ready = threading.Event()
        self._failure: list[McpError] = []  # why the stream ended before the endpoint came
        self._stopping = threading.Event()
        self._socket: socket.socket | None = None
        self._lock = threading.Lock()
        self._shutdown_lock = threading.Lock()
        self._shutdown_done = threading.Event()
        self._shut_down = False
        name = f"mcp_sync-{server}-sse"
        self._reader = threading.Thread(target=self._read, name=f"{name}-reader", daemon=True)
        self._writer = threading.Thread(target=self._write, name=f"{name}-writer", daemon=True)
        self._reader.start()
        # The endpoint is part of connecting: wait for it within the handshake budget.
        if not self._ready.wait(seconds(limits.handshake_timeout_ms)):
            self._close_all()
            raise Timeout(
                f"server {server!r} sent no endpoint event within "
                f"handshake_timeout_ms={limits.handshake_timeout_ms}"
            )
        if self._failure:
            self._close_all()
            raise self._failure[0]._copy()
        self._writer.start()

    def __repr__(self) -> str:
        return f"<SseTransport server={self._server!r}>"

    def _headers(self, accept: str | None = None) -> dict[str, str]:
        headers = {"Accept-Encoding": "identity"}
        if self._extra_headers is not None:
            headers.update(self._extra_headers.reveal())
        if accept is not None:
            headers["Accept"] = accept
        if self._token is not None:
            headers["Authorization"] = "Bearer " + self._token.reveal()
        version = self._sink.protocol_version
        if version is not None:
            headers["MCP-Protocol-Version"] = version
        return headers

    # ----------------------------------------------------------- the event stream

    def _read(self) -> None:
        hx = self._httpx
        ended: McpError | None = None
        try:
            request = self._client.build_request(
                "GET",
                self._url,
                headers=self._headers("text/event-stream"),
                timeout=hx.Timeout(
                    connect=seconds(self._limits.handshake_timeout_ms), read=None,
                    write=None, pool=seconds(self._limits.handshake_timeout_ms),
                ),
            )
            response = self._client.send(request, stream=True)
        except Exception as exc:  # httpx errors, and whatever an event hook raises
            self._fail_at_start(
                ConnectionClosed(f"server {self._server!r} could not be reached ({type(exc).__name__})")
            )
            return
        try:
            ended = self._stream(response)
        finally:
            response.close()
            if ended is not None:
                self._fail_at_start(ended)
                self._sink.terminate(ended)

    def _stream(self, response: httpx.Response) -> McpError | None:
        """Read the event stream until it ends; the error that ends it."""
        stream = response.extensions.get("network_stream")
        sock = stream.get_extra_info("socket") if stream is not None else None
        if isinstance(sock, socket.socket):
            with self._lock:
                self._socket = sock
            if self._stopping.is_set():
                _wake(sock)
        status = response.status_code
        where = f"server {self._server!r}"
        if status in (401, 403):
            return ConnectionClosed(f"{where} answered HTTP {status} to the event stream's GET")
        if status != 200 or _content_type(response) != "text/event-stream":
            return ProtocolError(
                f"{where} answered the event stream's GET with HTTP {status} and not an "
                "event stream (is it an HTTP+SSE server?)"
            )
        if response.headers.get("content-encoding", "identity").strip().lower() != "identity":
            return ProtocolError(f"{where} sent a compressed event stream")
        parser = SseParser(self._limits.max_frame_bytes, typed=True)
        try:
            for chunk in response.iter_raw():
                for kind, data in parser.feed_typed(chunk):
                    if kind == b"endpoint":
                        if self._endpoint is None:
                            self._take_endpoint(data)
                    elif kind == b"message" and self._endpoint is not None:
                        self._sink.receive(data)
        except ProtocolError as exc:
            return exc
        except Exception:  # the connection broke, or shutdown woke the socket
            if self._stopping.is_set():
                return None
            return ConnectionClosed(f"{where} broke the event stream")
        if self._stopping.is_set():
            return None
        return ConnectionClosed(f"{where} closed the event stream")

    def _take_endpoint(self, data: bytes) -> None:
        where = f"server {self._server!r}"
        try:
            text = data.decode("utf-8").strip()
        except UnicodeDecodeError:
            text = ""
        if not text or len(text) > MAX_ENDPOINT or any(ord(ch) < 0x21 or ord(ch) == 0x7F for ch in text):
            raise ProtocolError(f"{where} sent an endpoint event that is not a URL")
        endpoint = urljoin(self._url, text)
        mine, theirs = urlsplit(self._url), urlsplit(endpoint)
        try:
            same = (mine.scheme, mine.hostname, mine.port) == (theirs.scheme, theirs.hostname, theirs.port)
        except ValueError:
            same = False
        if not same:
            raise ProtocolError(f"{where} named a message endpoint on another origin")
        self._endpoint = endpoint
        self._ready.set()

    def _fail_at_start(self, error: McpError) -> None:
        if not self._ready.is_set():
            self._failure.append(error)
            self._ready.set()

    # ----------------------------------------------------------- outbound

    def send(
        self,
        frame: bytes,
        request_id: int | None,
        timeout: float,
        headers: Mapping[str, str] | None = None,
    ) -> bool:
        if self._stopping.is_set():
            return True
        deadline = time.monotonic() + timeout
        try:
            self._queue.put((request_id, frame, deadline), timeout=timeout)
        except queue.Full:
            return False
        return True

    def send_nowait(self, frame: bytes) -> bool:
        if self._stopping.is_set():
            return True
        deadline = time.monotonic() + min(seconds(self._limits.request_timeout_ms), 30.0)
        try:
            self._queue.put_nowait((None, frame, deadline))
        except queue.Full:
            return False
        return True

    def lead(self, done: Callable[[], bool], deadline: float) -> None:
        """The stream's reader thread reads: a caller never does."""

    def reply(self, frame: bytes) -> bool:
        # Server requests arrive on the reader thread: the writer POSTs the reply.
        return self.send(frame, None, seconds(self._limits.request_timeout_ms))

    def exchange(
        self,
        frame: bytes,
        request_id: int,
        timeout: float,
        done: Callable[[], bool],
        deadline: float,
        *,
        headers: Mapping[str, str] | None = None,
        hold: float | None = None,
    ) -> bool:
        """Replies come back on the event stream: just send."""
        return self.send(frame, request_id, timeout)

    def _write(self) -> None:
        while True:
            item = self._queue.get()
            if item is _STOP or self._stopping.is_set():
                return
            request_id, frame, deadline = cast("tuple[int | None, bytes, float]", item)
            if time.monotonic() >= deadline:
                continue
            if request_id is not None and not self._sink.claim(request_id):
                continue  # abandoned before it was sent
            self._post(frame, request_id, deadline)

    def _post(self, frame: bytes, request_id: int | None, deadline: float) -> None:
        assert self._endpoint is not None
        headers = self._headers()
        headers["Content-Type"] = "application/json"
        try:
            with self._client.stream(
                "POST",
                self._endpoint,
                content=frame,
                headers=headers,
                timeout=self._httpx.Timeout(max(0.001, min(deadline - time.monotonic(),
                                                           threading.TIMEOUT_MAX))),
            ) as response:
                status = response.status_code  # the body (if any) is never read
        except self._httpx.TimeoutException:
            return  # the caller's deadline passed: it gets its own Timeout
        except Exception as exc:  # httpx errors, and whatever an event hook raises
            if not self._stopping.is_set():
                self._sink.terminate(
                    ConnectionClosed(
                        f"the HTTP connection to server {self._server!r} failed ({type(exc).__name__})"
                    )
                )
            return
        if status in (200, 202, 204):
            return
        if status in (401, 403):
            self._sink.terminate(
                ConnectionClosed(f"server {self._server!r} answered HTTP {status} to a message")
            )
            return
        if request_id is not None:
            code = -32600 if 400 <= status < 500 else -32603
            self._sink.fail(
                request_id,
                RemoteError(
                    f"server {self._server!r} answered a message with HTTP {status}",
                    code,
                    Redacted({"message": f"HTTP {status}", "data": {"http_status": status}}),
                ),
            )

    # ----------------------------------------------------------- teardown

    def shutdown(self, wait: bool) -> None:
        with self._shutdown_lock:
            mine = not self._shut_down
            self._shut_down = True
        if not mine:
            if wait:
                self._shutdown_done.wait()
            return
        try:
            self._close_all()
            self._sink.transport_closed("")
        finally:
            self._shutdown_done.set()

    def _close_all(self) -> None:
        self._stopping.set()
        with self._lock:
            sock = self._socket
        if sock is not None:
            _wake(sock)
        while True:
            try:
                self._queue.get_nowait()
            except queue.Empty:
                break
        with contextlib.suppress(queue.Full):
            self._queue.put_nowait(_STOP)
        current = threading.current_thread()
        deadline = time.monotonic() + THREAD_JOIN
        for thread in (self._reader, self._writer):
            if thread is not current and thread.is_alive():
                thread.join(max(0.0, deadline - time.monotonic()))
        if self._owns_client:
            with contextlib.suppress(Exception):
                self._client.close()
