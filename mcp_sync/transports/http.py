"""The Streamable HTTP transport, in both protocol eras.

Legacy era (2025-06-18; 2025-11-25 and 2025-03-26 servers are accepted): a
session id from ``initialize``, ``MCP-Protocol-Version`` after it, resumable
reply streams, ``DELETE`` at the end. Modern era (2026-07-28): no session, no
resumption, no ``DELETE``; each request carries its own MCP headers
(``MCP-Protocol-Version``, ``Mcp-Method``, ``Mcp-Name``, ``Mcp-Param-*``,
built by the session: see :mod:`.._modern`), a JSON-RPC error in the body of a
``4xx`` answer is that request's reply, and abandoning a request closes its
reply stream instead of POSTing ``notifications/cancelled``. A request that
carries its own headers is treated the modern way (so is the era probe).

Every message is POSTed to the server's one endpoint. A POST carrying a request
is answered with a JSON body or a ``text/event-stream`` whose events carry
JSON-RPC messages (server requests such as ``ping`` may come before the reply).
A POST carrying a notification or a reply is answered 202.

Threads: callers never do network I/O for requests. ``send`` hands a request
to the worker pool (``transports.workers.Workers``, bounded by ``queue_capacity``, up to
``MAX_WORKERS`` threads named ``mcp_sync-<server>-http-N``), whose worker POSTs
it and feeds what comes back to the session. The caller blocks on its own
entry with its own deadline, so ``close()`` from another thread fails it at
once. Replies to server requests are POSTed inline by the worker reading the
stream (a worker waiting on a pool it feeds itself could deadlock). Besides:
the deadline watchdog (``...-http-deadline``) and the GET listener
(``...-http-listen``).

This class coordinates; each job is a piece of its own: :mod:`._exchange`
(one exchange), :mod:`._status` (what a status means), :mod:`._session_id`,
:mod:`._listener`, :mod:`._sse_parser`, :mod:`._options`.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from typing import TYPE_CHECKING

from .. import _log
from ..protocol.errors import ConnectionClosed, ProtocolError
from ..protocol.limits import Limits, seconds
from ..protocol.redaction import Redacted
from ..protocol.versions import MODERN
from .contract import NOTIFICATION, REPLY, REQUEST, Leader, Outbound, ShutdownOnce, Sink
from .exchange import Exchanger
from .get_stream import DEFAULT_RETRY, FIRST_ANSWER_WAIT, MAX_EVENT_ID, MIN_RETRY, Listener
from .http_options import StaticHeaders, import_httpx, own_client
from .http_status import AuthHook, Failure, SessionLost, StatusMap, Stopped, content_type, what
from .session_id import SessionId
from .sse_parser import SseParser
from .workers import Workers

if TYPE_CHECKING:
    import httpx

__all__ = ["HttpTransport"]

MAX_WORKERS = 32
"""Worker threads per session: up to this many requests are in flight at once."""
WORKER_IDLE_EXIT = 30.0
"""A worker idle this long exits."""
THREAD_JOIN = 2.0
"""Seconds teardown waits, in total, for the workers to finish."""

_ACCEPT_BOTH = "application/json, text/event-stream"
_ACCEPT_SSE = "text/event-stream"
_PRINTABLE_ASCII = re.compile(r"[\x20-\x7e]*\Z")


class HttpTransport:
    """A :class:`~._base.Transport` over Streamable HTTP."""

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
        auth: AuthHook | None = None,
    ) -> None:
        self._hx = import_httpx()
        self._sink = sink
        self._limits = limits
        self._server = server
        self._url = url
        self._auth = auth
        self.leader: Leader | None = None  # workers read the replies, never a caller
        # Static headers (connect(headers=...)) and the token: private.
        self._static = StaticHeaders(token, headers)
        owns_client = http_client is None
        client = own_client(MAX_WORKERS) if http_client is None else http_client
        self._stopping = threading.Event()
        self._status = StatusMap(server, has_token=token is not None, auth=auth)
        self._io = Exchanger(
            hx=self._hx, client=client, owns_client=owns_client, server=server, url=url,
            limits=limits, status=self._status, auth=auth, stopping=self._stopping, role="http",
        )  # fmt: skip
        self._session = SessionId(server=server, sink=sink, status=self._status, stopping=self._stopping)
        self._workers = Workers(
            f"mcp_sync-{server}-http",
            max_workers=MAX_WORKERS,
            backlog=limits.queue_capacity,
            idle_exit=WORKER_IDLE_EXIT,
        )
        # Guards _listener: made once, by the first listen() before teardown;
        # teardown reads it to join its thread. Nobody waits on it for long.
        self._lock = threading.Lock()
        self._listener: Listener | None = None
        self._once = ShutdownOnce()
        if auth is not None:
            auth.attach(client, self._stopping, self._io.beside)

    def __repr__(self) -> str:
        return f"<HttpTransport server={self._server!r}>"

    # ----------------------------------------------------------- outbound

    def send(self, item: Outbound, timeout: float) -> bool:
        if self._stopping.is_set():
            return True  # the session is over; its waiters already failed
        deadline = time.monotonic() + timeout
        if item.kind != REQUEST:
            if self._sink.era.name == MODERN:
                return True  # the revision has no client notifications or replies over HTTP
            # Notifications from a caller (notifications/initialized) go out
            # before send returns, so they reach the server before whatever the
            # caller sends next. Replies to server requests come from a worker
            # reading a stream, and are sent from there.
            strict = not self._workers.running_here() or self._session.renewing()
            return self._post_message(item, deadline, strict=strict)
        # Room in the pool is waited for until the caller's deadline; the
        # reply until the latest it may still be wanted.
        until = deadline if item.hold is None else max(deadline, item.hold)
        if self._session.renewing():
            # The new handshake of a renewal: the worker renewing holds the
            # session id, so it sends the handshake's requests itself.
            self._handle(item, until)
            return True
        return self._workers.submit(lambda: self._handle(item, until), timeout) or self._stopping.is_set()

    def send_nowait(self, item: Outbound) -> bool:
        if self._stopping.is_set():
            return True
        if self._sink.era.name == MODERN:
            # The only frame the session sends this way is notifications/cancelled;
            # in 2026-07-28 closing the request's reply stream cancels it instead.
            if item.kind == NOTIFICATION and item.request_id is not None:
                self._io.close_stream(item.request_id)
            return True
        deadline = time.monotonic() + min(seconds(self._limits.request_timeout_ms), 30.0)
        return self._workers.submit(lambda: self._post_quietly(item, deadline)) or self._stopping.is_set()

    def reply(self, frame: bytes) -> bool:
        # Server requests arrive on a worker's stream, never on a caller's
        # thread: the worker POSTs the reply itself.
        return self.send(Outbound(frame, REPLY), seconds(self._limits.request_timeout_ms))

    def listen(self) -> None:
        """Open the standalone GET stream (see :mod:`._listener`) and keep it
        open until close."""
        with self._lock:
            if self._stopping.is_set() or self._listener is not None:
                return
            self._listener = Listener(
                server=self._server, sink=self._sink, limits=self._limits, exchanger=self._io,
                headers=lambda: self._headers(_ACCEPT_SSE), stopping=self._stopping,
            )  # fmt: skip
            listener = self._listener
        listener.thread.start()
        # Until the server has answered the GET, what it sends outside a
        # reply (a request during a tool call) may have nowhere to go.
        listener.answered.wait(FIRST_ANSWER_WAIT)

    # ----------------------------------------------------------- one request

    def _handle(self, item: Outbound, deadline: float) -> None:
        """A worker's job: one request, and what its answer means."""
        request_id = item.request_id
        assert request_id is not None
        if time.monotonic() >= deadline:
            return  # its caller has given up (or is about to)
        if not self._sink.claim(request_id):
            return  # abandoned before it was sent
        modern = item.headers is not None
        try:
            if modern:
                self._post_request(item, request_id, deadline)
            else:
                self._exchange(item, request_id, deadline)
        except Failure as failure:
            if modern and not self._sink.waiting(request_id):
                return  # a modern request whose caller left: its stream was closed
            if failure.terminal:
                self._sink.terminate(failure.error)
            else:
                self._sink.fail(request_id, failure.error)
        except Stopped:
            pass
        except Exception as exc:  # httpx errors, and whatever an event hook raises
            if modern and not self._sink.waiting(request_id):
                return
            self._transport_error(exc)

    def _post_quietly(self, item: Outbound, deadline: float) -> None:
        if time.monotonic() < deadline:
            self._post_message(item, deadline, strict=False)

    def _transport_error(self, exc: Exception) -> None:
        """A request could not be completed at the HTTP level."""
        if self._stopping.is_set() or isinstance(exc, self._hx.TimeoutException):
            # Closing, or the caller's deadline passed: it gets its own Timeout.
            return
        self._sink.terminate(self._status.transport_error(exc, self._hx))

    def _exchange(self, item: Outbound, request_id: int, deadline: float) -> None:
        renewed = False
        while True:
            try:
                self._post_request(item, request_id, deadline)
                return
            except SessionLost as lost:
                if renewed:
                    raise Failure(
                        ConnectionClosed(
                            f"server {self._server!r} forgot the new session too (HTTP 404)"
                        ),
                        True,
                    ) from None
                # The server no longer knows the session (expired, restarted).
                # It never saw this request, so after a new session it is safe
                # to send again -- once.
                self._session.renew(lost.stale, deadline)
                renewed = True

    def _post_request(self, item: Outbound, request_id: int, deadline: float) -> None:
        # A request with its own MCP headers is a modern one.
        extra = item.headers
        named = what(item.method)
        headers = self._headers(_ACCEPT_BOTH, session=extra is None)
        if extra is not None:
            headers.update(extra)
        with self._io.open("POST", item.frame, deadline, headers, request_id) as response:
            status = response.status_code
            if extra is None:
                self._status.legacy(status, response, item.method, allow_renew=True)
                self._session.adopt(response)
            elif status != 200:
                self._status.modern(
                    status, response, item.method, request_id,
                    lambda: self._io.read_body(response, deadline),
                )  # fmt: skip
            kind = content_type(response)
            if kind == "application/json":
                self._sink.receive(self._io.read_body(response, deadline))
                if self._sink.waiting(request_id) and self._sink.terminal is None:
                    raise Failure(
                        ProtocolError(
                            f"server {self._server!r} answered {named} with a "
                            "JSON body that is not its reply"
                        ),
                        True,
                    )
                return
            if kind != "text/event-stream":
                raise Failure(
                    ProtocolError(
                        f"server {self._server!r} answered {named} with HTTP "
                        f"{status} and a content type other than application/json or "
                        "text/event-stream"
                    ),
                    True,
                )
            self._io.check_encoding(response)
            parser = SseParser(self._limits.max_frame_bytes)
            if self._read_events(response, parser, request_id, deadline):
                return
        if extra is not None:
            if item.method == "subscriptions/listen":
                # A listen stream that drops fails alone: the session opens
                # another (listening again changes nothing on the server).
                raise Failure(
                    ConnectionClosed(f"server {self._server!r} ended a subscriptions/listen stream"), False
                )
            # 2026-07-28 has no resumption. Sending the request again could run
            # a tool twice, so the request is not re-sent: the session ends.
            raise Failure(
                ConnectionClosed(
                    f"server {self._server!r} ended the reply stream of {named} "
                    "before replying (streams are not resumable in the 2026-07-28 revision)"
                ),
                True,
            )
        # The stream ended before the reply: resume it (2025-06-18
        # "Resumability and Redelivery"). Outside the `with`, so the old
        # connection is released.
        self._resume(parser, request_id, named, deadline)

    # ----------------------------------------------------------- streams

    def _read_events(
        self, response: httpx.Response, parser: SseParser, request_id: int, deadline: float
    ) -> bool:
        """Feed a stream's events to the session until the request no longer
        needs it. True: done (reply in, caller gone, session over); False: the
        stream ended first."""
        sink = self._sink
        hx = self._hx
        try:
            for chunk in response.iter_raw():
                try:
                    messages = parser.feed(chunk)
                except ProtocolError as exc:
                    # This stream serves one request: it alone fails.
                    raise Failure(exc, False) from None
                for data in messages:
                    sink.receive(data)
                if (
                    not sink.waiting(request_id)
                    or self._stopping.is_set()
                    or time.monotonic() >= deadline
                ):
                    return True
        except hx.TimeoutException:
            raise
        except hx.TransportError:
            # The stream broke: like a clean end, it may be resumed -- unless
            # the watchdog ended it at the deadline.
            if self._stopping.is_set():
                raise Stopped from None
            if time.monotonic() >= deadline:
                raise hx.ReadTimeout("the deadline passed") from None
        if time.monotonic() >= deadline:
            # A shut-down socket may also read as a clean end of the stream.
            raise hx.ReadTimeout("the deadline passed")
        return not sink.waiting(request_id)

    def _resume(self, parser: SseParser, request_id: int, named: str, deadline: float) -> None:
        """GET the rest of a reply stream with ``Last-Event-ID``, after the
        server's ``retry`` delay, until the reply comes or the deadline passes."""
        while self._sink.waiting(request_id):
            event_id = parser.last_event_id
            if not event_id or len(event_id) > MAX_EVENT_ID or not _PRINTABLE_ASCII.match(event_id):
                raise Failure(
                    ConnectionClosed(
                        f"server {self._server!r} ended the reply stream of "
                        f"{named} before replying, without an event id to resume it"
                    ),
                    True,
                )
            delay = DEFAULT_RETRY if parser.retry_ms is None else parser.retry_ms / 1000.0
            delay = max(delay, MIN_RETRY)
            if time.monotonic() + delay >= deadline:
                return  # the deadline comes first; the caller times out
            if self._stopping.wait(delay):
                raise Stopped
            headers = self._headers(_ACCEPT_SSE)
            headers["Last-Event-ID"] = event_id
            _log.transport_event(
                logging.INFO, "resume", self._server,
                "server %r ended the reply stream of %s before replying: resuming it (Last-Event-ID)",
                self._server, named, request=named,
            )  # fmt: skip
            with self._io.open("GET", None, deadline, headers) as response:
                status = response.status_code
                if status in (401, 403):
                    raise self._status.refusal(status)
                if status != 200 or content_type(response) != "text/event-stream":
                    raise Failure(
                        ConnectionClosed(
                            f"server {self._server!r} ended the reply stream of "
                            f"{named} before replying and refused to resume it "
                            f"(HTTP {status})"
                        ),
                        True,
                    )
                self._io.check_encoding(response)
                parser = SseParser(
                    self._limits.max_frame_bytes,
                    last_event_id=parser.last_event_id,
                    retry_ms=parser.retry_ms,
                )
                if self._read_events(response, parser, request_id, deadline):
                    return

    # ----------------------------------------------------------- messages

    def _post_message(self, item: Outbound, deadline: float, *, strict: bool) -> bool:
        """POST a notification or a reply; the server answers 202.

        ``strict`` (a caller's notification, or a renewal's): a failure
        raises. Otherwise (a cancellation, a reply to a server request) it is
        best effort, except that a refused token still ends the session.
        """
        try:
            with self._io.open("POST", item.frame, deadline, self._headers(_ACCEPT_BOTH)) as response:
                status = response.status_code
        except Stopped:
            return True
        except Failure as refused:
            if refused.terminal:
                self._sink.terminate(refused.error)
            if strict:
                raise refused.error._copy() from None
            return True
        except Exception as exc:  # httpx errors, and whatever an event hook raises
            if isinstance(exc, self._hx.TimeoutException):
                return not strict
            if strict:
                self._transport_error(exc)
                terminal = self._sink.terminal
                if terminal is not None:
                    raise terminal._copy() from None
            return True
        if status in (200, 202, 204):
            return True
        if status in (401, 403):
            failure = self._status.refusal(status)
            if failure.terminal:
                self._sink.terminate(failure.error)
            if strict:
                raise failure.error._copy()
            return True
        if strict:
            raise self._status.status_error(status, item.method)
        return True

    def _headers(self, accept: str, *, session: bool = True) -> dict[str, str]:
        headers = self._static.build(accept)
        if session:
            self._session.add_to(headers)
        return headers

    # ----------------------------------------------------------- teardown

    @property
    def url(self) -> str:
        """The server's endpoint (tracing names its host and port)."""
        return self._url

    def shutdown(self, wait: bool) -> None:
        self._once.run(self._teardown, wait)

    def _teardown(self) -> None:
        self._stopping.set()
        # Wake every blocked read: the requests they serve have already failed.
        self._io.wake_all()
        self._workers.close(0)  # queued requests belong to calls that already failed
        self._io.stop_watch()
        self._session.delete(self._hx, self._io.client, self._url, self._static, self._auth)
        deadline = time.monotonic() + THREAD_JOIN
        self._workers.close(THREAD_JOIN)
        with self._lock:
            listener = self._listener
        thread = listener.thread if listener is not None else None
        if thread is not None and thread is not threading.current_thread() and thread.ident is not None:
            thread.join(max(0.0, deadline - time.monotonic()))
        self._io.close_client()
        self._sink.transport_closed("")
