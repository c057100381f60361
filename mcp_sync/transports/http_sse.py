"""The HTTP+SSE transport of protocol 2024-11-05 (deprecated since 2025-03-26).

For servers that still speak only that: chosen explicitly with
``transport="sse"`` (config ``"type": "sse"``), never guessed. The client
opens one ``GET`` event stream; its first ``endpoint`` event names the URL
to which every client message is POSTed; every server message (replies
included) comes back as a ``message`` event on the stream. The handshake era
only: there is no modern HTTP+SSE.

Threads: a reader (``mcp_sync-<server>-sse-reader``) holds the event stream
and feeds each message to the session; a one-thread pool
(``...-sse-writer-1``, a ``transports.workers.Workers``) POSTs queued frames in order;
the deadline watchdog (``...-sse-deadline``) ends a POST at its deadline.
Callers block on their own entries, as over stdio. The same bounds apply:
``max_frame_bytes`` per event, ``queue_capacity`` frames waiting, the
caller's deadline for each POST. The endpoint must be on the server's own
origin, so a server cannot send the session's messages (and its token)
anywhere else. Every exchange goes through the same :mod:`._exchange` as
Streamable HTTP, so ``close()`` wakes the stream and every POST in flight.
"""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING
from urllib.parse import urljoin, urlsplit

from ..protocol.errors import ConnectionClosed, McpError, ProtocolError, Timeout
from ..protocol.limits import Limits, seconds
from ..protocol.redaction import Redacted
from .contract import REPLY, REQUEST, Leader, Outbound, ShutdownOnce, Sink
from .exchange import Exchanger
from .http_options import StaticHeaders, import_httpx, own_client
from .http_status import StatusMap, Stopped, content_type
from .sse_parser import SseParser
from .workers import Workers

if TYPE_CHECKING:
    import httpx

__all__ = ["SseTransport"]

MAX_ENDPOINT = 2048
"""Characters an ``endpoint`` event may hold."""
THREAD_JOIN = 2.0


class SseTransport:
    """A :class:`~._base.Transport` over the 2024-11-05 HTTP+SSE transport."""

    def __init__(
        self,
        sink: Sink,
        *,
        limits: Limits,
        server: str,
        url: str,
        token: Redacted[str] | None,
        http_client: httpx.Client | None,
        headers: Redacted[dict[str, str]] | None = None,
    ) -> None:
        self._hx = import_httpx()
        self._sink = sink
        self._limits = limits
        self._server = server
        self._url = url
        self.leader: Leader | None = None  # the reader thread reads, never a caller
        self._static = StaticHeaders(token, headers)
        self._stopping = threading.Event()
        self._status = StatusMap(server, has_token=token is not None, auth=None)
        self._io = Exchanger(
            hx=self._hx, client=own_client(None) if http_client is None else http_client,
            owns_client=http_client is None, server=server, url=url, limits=limits,
            status=self._status, auth=None, stopping=self._stopping, role="sse",
        )  # fmt: skip
        self._writer = Workers(f"mcp_sync-{server}-sse-writer", max_workers=1, backlog=limits.queue_capacity)
        self._endpoint: str | None = None
        self._ready = threading.Event()
        self._failure: list[McpError] = []  # why the stream ended before the endpoint came
        self._once = ShutdownOnce()
        self._reader = threading.Thread(target=self._read, name=f"mcp_sync-{server}-sse-reader", daemon=True)
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

    def __repr__(self) -> str:
        return f"<SseTransport server={self._server!r}>"

    def _headers(self, accept: str | None = None) -> dict[str, str]:
        headers = self._static.build(accept)
        version = self._sink.protocol_version
        if version is not None:
            headers["MCP-Protocol-Version"] = version
        return headers

    # ----------------------------------------------------------- the event stream

    def _read(self) -> None:
        ended: McpError | None = None
        try:
            connect = seconds(self._limits.handshake_timeout_ms)
            with self._io.stream(self._headers("text/event-stream"), connect) as response:
                ended = self._follow(response)
        except Stopped:
            return
        except Exception as exc:  # httpx errors, and whatever an event hook raises
            ended = ConnectionClosed(f"server {self._server!r} could not be reached ({type(exc).__name__})")
        if ended is not None:
            self._fail_at_start(ended)
            self._sink.terminate(ended)

    def _follow(self, response: httpx.Response) -> McpError | None:
        """Read the event stream until it ends; the error that ends it."""
        status = response.status_code
        where = f"server {self._server!r}"
        if status in (401, 403):
            return ConnectionClosed(f"{where} answered HTTP {status} to the event stream's GET")
        if status != 200 or content_type(response) != "text/event-stream":
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

    def send(self, item: Outbound, timeout: float) -> bool:
        if self._stopping.is_set():
            return True
        deadline = time.monotonic() + timeout
        claim = item.kind == REQUEST
        job = lambda: self._post(item, deadline, claim=claim)  # noqa: E731
        return self._writer.submit(job, timeout) or self._stopping.is_set()

    def send_nowait(self, item: Outbound) -> bool:
        if self._stopping.is_set():
            return True
        deadline = time.monotonic() + min(seconds(self._limits.request_timeout_ms), 30.0)
        return self._writer.submit(lambda: self._post(item, deadline, claim=False)) or self._stopping.is_set()

    def reply(self, frame: bytes) -> bool:
        # Server requests arrive on the reader thread: the writer POSTs the reply.
        return self.send(Outbound(frame, REPLY), seconds(self._limits.request_timeout_ms))

    def listen(self) -> None:
        """Every server message comes on the one event stream: nothing to open."""

    def _post(self, item: Outbound, deadline: float, *, claim: bool) -> None:
        """The writer's job: POST one frame to the endpoint. ``claim``: a
        request whose caller may have given up (then it is skipped)."""
        if time.monotonic() >= deadline:
            return
        request_id = item.request_id if claim else None
        if request_id is not None and not self._sink.claim(request_id):
            return  # abandoned before it was sent
        assert self._endpoint is not None
        try:
            with self._io.open("POST", item.frame, deadline, self._headers(), url=self._endpoint) as response:
                status = response.status_code  # the body (if any) is never read
        except (Stopped, self._hx.TimeoutException):
            return  # closing, or the caller's deadline passed: it gets its own Timeout
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
            self._sink.fail(request_id, self._status.status_error(status, None, noun="a message"))

    # ----------------------------------------------------------- teardown

    @property
    def url(self) -> str:
        """The server's endpoint (tracing names its host and port)."""
        return self._url

    def shutdown(self, wait: bool) -> None:
        self._once.run(self._teardown, wait)

    def _teardown(self) -> None:
        self._close_all()
        self._sink.transport_closed("")

    def _close_all(self) -> None:
        self._stopping.set()
        # Wake the stream and every POST in flight: the calls they serve have
        # already failed.
        self._io.wake_all()
        deadline = time.monotonic() + THREAD_JOIN
        self._writer.close(THREAD_JOIN)
        self._io.stop_watch()
        current = threading.current_thread()
        if self._reader is not current and self._reader.is_alive():
            self._reader.join(max(0.0, deadline - time.monotonic()))
        self._io.close_client()
