"""The Streamable HTTP transport, in both protocol eras.

Legacy era (2025-06-18; 2025-11-25 and 2025-03-26 servers are accepted): a
session id from ``initialize``, ``MCP-Protocol-Version`` after it, resumable
reply streams, ``DELETE`` at the end. Modern era (2026-07-28): no session, no
resumption, no ``DELETE``; each request carries its own MCP headers
(``MCP-Protocol-Version``, ``Mcp-Method``, ``Mcp-Name``, ``Mcp-Param-*``,
built by the session: see :mod:`._modern`), a JSON-RPC error in the body of a
``4xx`` answer is that request's reply, and abandoning a request closes its
reply stream instead of POSTing ``notifications/cancelled``. A request that
carries its own headers is treated the modern way (so is the era probe).

Every message is POSTed to the server's one endpoint. A POST carrying a request
is answered with a JSON body or a ``text/event-stream`` whose events carry
JSON-RPC messages (server requests such as ``ping`` may come before the reply).
A POST carrying a notification or a reply is answered 202.

Threads: callers never do network I/O for requests. ``send`` queues a request
frame (bounded by ``queue_capacity``); a small pool of worker threads, grown on
demand up to ``MAX_WORKERS`` and named ``mcp_sync-<server>-http-N``, POSTs it
and feeds what comes back to the session. The caller blocks on its own future
with its own deadline, so ``close()`` from another thread fails it at once.
Replies to server requests are POSTed inline by the worker reading the stream
(a worker waiting on a queue it feeds itself could deadlock).

Failures follow the stdio rules as closely as HTTP allows: what breaks the
transport ends the session (a connection failure, 401/403, a session the server
forgot and would not renew, a reply stream that could not be resumed:
``connection_closed``; an over-limit body or event, a wrong content type:
``protocol_error``); an error status the server gives one request (5xx, 429,
other 4xx) fails only that call (``remote_error``). No message carries the
token, the URL or response body text.

``httpx`` is imported lazily: ``import mcp_sync`` does not need it.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import re
import socket
import threading
import time
import weakref
from collections.abc import Callable, Iterator, Mapping
from types import ModuleType
from typing import TYPE_CHECKING, Any, Protocol, cast
from urllib.parse import urlsplit

from ._errors import ConnectionClosed, LoginRequired, McpError, ProtocolError, RemoteError, Timeout
from ._headers import check_headers, plain_http_refused
from ._jsonrpc import decode_line, encode
from ._limits import Limits, seconds
from ._redact import Redacted
from ._session import initialize_params
from ._versions import MODERN
from ._watchdog import DeadlineWatch

if TYPE_CHECKING:
    import httpx

    from ._era import Era

__all__ = ["HttpTransport", "SseParser", "check_http_options"]

MAX_WORKERS = 32
"""Worker threads per session: up to this many requests are in flight at once."""
WORKER_IDLE_EXIT = 30.0
"""A worker idle this long exits (one always stays)."""
DEFAULT_RETRY = 1.0
"""Seconds to wait before resuming a stream whose server sent no ``retry`` field."""
MIN_RETRY = 0.05
"""A floor under the server's ``retry`` so a hostile ``retry: 0`` cannot spin us."""
DELETE_TIMEOUT = 2.0
"""Seconds the closing ``DELETE`` may take; its outcome is ignored."""
THREAD_JOIN = 2.0
"""Seconds teardown waits, in total, for the workers to finish."""
KEEPALIVE_EXPIRY = 2.0
"""Our own client drops idle connections sooner than servers usually do (5 s),
so a request rarely races the server closing the connection under it."""
LISTEN_READ_TIMEOUT = 300.0
"""The standalone stream is reopened after this many seconds without a byte."""
MAX_SESSION_ID = 1024
MAX_EVENT_ID = 1024
MAX_AUTH_RETRIES = 2
"""Times one request is sent again after its auth hook got new credentials."""

_ACCEPT_BOTH = "application/json, text/event-stream"
_ACCEPT_SSE = "text/event-stream"
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_VISIBLE_ASCII = re.compile(r"[\x21-\x7e]+\Z")
_PRINTABLE_ASCII = re.compile(r"[\x20-\x7e]*\Z")
_EOL = re.compile(rb"\r\n?|\n")
_BOM = b"\xef\xbb\xbf"
_STOP = object()  # the workers' sentinel


def _import_httpx() -> ModuleType:
    try:
        import httpx
    except ImportError:
        raise ProtocolError(
            "the HTTP transport needs httpx: install mcp-sync-client[http]"
        ) from None
    return httpx


# ------------------------------------------------------------------ options


def check_http_options(
    server: str,
    url: object,
    bearer_token_env: object,
    http_client: object,
    *,
    headers: object = None,
    allow_insecure_http: object = None,
) -> dict[str, Any]:
    """Validate the HTTP options before any traffic; the keyword arguments of
    :class:`HttpTransport` (besides the session and limits)."""
    httpx = _import_httpx()
    # The URL is never echoed: its query string may carry a secret.
    if not isinstance(url, str) or not _valid_url(url):
        raise ProtocolError(
            "option url must be an absolute http: or https: URL with a host and "
            "without a user name or password"
        )
    try:
        httpx.URL(url)
    except (httpx.InvalidURL, ValueError, TypeError):
        raise ProtocolError("option url is not a URL httpx can use") from None
    token: Redacted[str] | None = None
    if bearer_token_env is not None:
        if not isinstance(bearer_token_env, str) or not _ENV_NAME.match(bearer_token_env):
            raise ProtocolError(
                "option bearer_token_env must be an environment variable name "
                "(letters, digits and underscores, not starting with a digit)"
            )
        value = os.environ.get(bearer_token_env, "")
        if not value:
            raise ProtocolError(
                f"server {server!r}: the environment variable {bearer_token_env} "
                "named by bearer_token_env is unset or empty"
            )
        if not _VISIBLE_ASCII.match(value):
            raise ProtocolError(
                f"server {server!r}: the environment variable {bearer_token_env} "
                "named by bearer_token_env holds characters a bearer token cannot contain"
            )
        token = Redacted(value)
    extra: Redacted[dict[str, str]] | None = None
    if headers is not None:
        try:
            extra = Redacted(check_headers(headers, has_token=token is not None))
        except ValueError as exc:
            raise ProtocolError(f"server {server!r}: option headers {exc}") from None
    if allow_insecure_http is not None and not isinstance(allow_insecure_http, bool):
        raise ProtocolError("option allow_insecure_http must be a bool")
    if plain_http_refused(
        url, sends_credentials=token is not None or bool(extra and extra.reveal()),
        allowed=allow_insecure_http is True,
    ):
        raise ProtocolError(
            f"server {server!r}: refusing to send a bearer token or headers over plain http:// "
            "to a host that is not loopback; use https:, or pass allow_insecure_http=True "
            "to send them unencrypted"
        )
    if http_client is not None and not isinstance(http_client, httpx.Client):
        raise ProtocolError("option http_client must be an httpx.Client (not an AsyncClient)")
    return {
        "server": server, "url": url, "token": token, "http_client": http_client,
        "headers": extra,
    }


def _valid_url(url: str) -> bool:
    if not url or any(ch.isspace() or ord(ch) < 0x20 or ord(ch) == 0x7F for ch in url):
        return False
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError for a bad port
    except ValueError:
        return False
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        return False
    return "@" not in parts.netloc


# ------------------------------------------------------------------ SSE


class SseParser:
    """An incremental ``text/event-stream`` parser (WHATWG HTML, "Parsing an
    event stream"), over bytes and bounded.

    :meth:`feed` returns the data of each complete ``message`` event with
    non-empty data; a parser made with ``typed=True`` returns every event with
    non-empty data as ``(event type, data)`` instead. ``last_event_id`` and ``retry_ms`` persist across events
    (and, seeded into a new parser, across reconnections). A line, or one
    event's data, longer than ``max_event_bytes`` raises :class:`ProtocolError`,
    so memory stays bounded whatever the server sends.
    """

    __slots__ = (
        "_after_cr",
        "_data",
        "_data_len",
        "_event_type",
        "_line",
        "_line_len",
        "_max",
        "_started",
        "_typed",
        "events",
        "last_event_id",
        "retry_ms",
    )

    def __init__(
        self,
        max_event_bytes: int,
        *,
        last_event_id: str | None = None,
        retry_ms: int | None = None,
        typed: bool = False,
    ) -> None:
        self._max = max_event_bytes
        self._typed = typed
        self.last_event_id = last_event_id
        self.retry_ms = retry_ms
        self.events = 0
        """Events dispatched so far, those with empty data included."""
        self._line: list[bytes] = []
        self._line_len = 0
        self._data: list[bytes] = []
        self._data_len = -1  # -1: no data line yet; else bytes joined with "\n"
        self._event_type = b""
        self._after_cr = False
        self._started = False

    def feed_typed(self, chunk: bytes) -> list[tuple[bytes, bytes]]:
        """:meth:`feed` of a ``typed`` parser."""
        return cast("list[tuple[bytes, bytes]]", self.feed(chunk))

    def feed(self, chunk: bytes) -> list[bytes]:
        if self._after_cr and chunk:
            # A CRLF split across two chunks is one line break.
            self._after_cr = False
            if chunk[0] == 0x0A:
                chunk = chunk[1:]
        out: list[Any] = []
        start = 0
        for match in _EOL.finditer(chunk):
            end = match.start()
            if self._line:
                self._grow(end - start)
                self._line.append(chunk[start:end])
                line = b"".join(self._line)
                self._line.clear()
                self._line_len = 0
            else:
                if end - start > self._max + 64:
                    self._too_long()
                line = chunk[start:end]
            self._process(line, out)
            start = match.end()
        if start < len(chunk):
            self._grow(len(chunk) - start)
            self._line.append(chunk[start:])
        elif chunk and chunk[-1] == 0x0D:
            self._after_cr = True
        return out

    def _grow(self, size: int) -> None:
        self._line_len += size
        # Room for the field name ("data: ") on top of the payload bound.
        if self._line_len > self._max + 64:
            self._too_long()

    def _too_long(self) -> None:
        raise ProtocolError(f"an SSE event is larger than max_frame_bytes={self._max}")

    def _process(self, line: bytes, out: list[Any]) -> None:
        if not self._started:
            # A BOM is skipped only at the very start of the stream.
            self._started = True
            if line.startswith(_BOM):
                line = line[len(_BOM) :]
        if not line:
            self._dispatch(out)
            return
        if line[0] == 0x3A:  # ":" starts a comment
            return
        colon = line.find(b":")
        if colon < 0:
            field, value = line, b""
        else:
            field, value = line[:colon], line[colon + 1 :]
            if value[:1] == b" ":
                value = value[1:]
        if field == b"data":
            size = len(value) + (1 if self._data_len >= 0 else 0)
            if max(self._data_len, 0) + size > self._max:
                self._too_long()
            self._data.append(value)
            self._data_len = max(self._data_len, 0) + size
        elif field == b"event":
            self._event_type = value
        elif field == b"id":
            if b"\0" not in value:
                self.last_event_id = value.decode("utf-8", "replace")
        elif field == b"retry" and value.isdigit():
            # A huge number is just "a long time": no int() of a megabyte of digits.
            self.retry_ms = int(value) if len(value) <= 9 else 10**9

    def _dispatch(self, out: list[Any]) -> None:
        has_data = self._data_len >= 0
        data = b"\n".join(self._data)
        event_type = self._event_type
        self._data.clear()
        self._data_len = -1
        self._event_type = b""
        if not has_data:
            return
        self.events += 1
        if not data:
            return
        if self._typed:
            out.append((event_type or b"message", data))
        elif event_type in (b"", b"message"):
            out.append(data)


# ------------------------------------------------------------------ transport


class _Sink(Protocol):
    """What the transport needs from the session core (``_session._Core``)."""

    @property
    def protocol_version(self) -> str | None: ...
    @property
    def era(self) -> Era: ...
    @property
    def terminal(self) -> McpError | None: ...
    @property
    def client_capabilities(self) -> Mapping[str, Any]: ...
    def receive(self, line: bytes) -> None: ...
    def terminate(self, error: McpError, *, wait: bool = False) -> None: ...
    def claim(self, request_id: int) -> bool: ...
    def waiting(self, request_id: int) -> bool: ...
    def fail(self, request_id: int, error: McpError) -> None: ...
    def transport_closed(self, stderr_tail: str) -> None: ...


class _AuthHook(Protocol):
    """What the transport needs from an auth object's binding
    (``mcp_sync.auth._grant.Binding``): credentials for each request, and a
    decision when the server refuses them."""

    def attach(self, client: httpx.Client, stopping: threading.Event) -> None: ...
    def headers(self, method: str, url: str, body: bytes | None, deadline: float) -> dict[str, str]: ...
    def current(self, method: str, url: str) -> dict[str, str]: ...
    def observe(self, status: int, headers: httpx.Headers) -> None: ...
    def refused(
        self, status: int, headers: httpx.Headers, sent: dict[str, str], deadline: float
    ) -> bool: ...
    def failure(self, status: int) -> tuple[McpError, bool]: ...


class _Failure(Exception):
    """Raised inside a worker: ``error`` ends the session (``terminal``) or
    fails only the request being sent."""

    def __init__(self, error: McpError, terminal: bool) -> None:
        super().__init__(error.message)
        self.error = error
        self.terminal = terminal


class _SessionLost(Exception):
    """The server answered 404 to a request that carried session id ``stale``."""

    def __init__(self, stale: str) -> None:
        super().__init__("session lost")
        self.stale = stale


class _Stopped(Exception):
    """The transport is shutting down: abandon the exchange quietly."""


class HttpTransport:
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
        auth: _AuthHook | None = None,
    ) -> None:
        self._httpx = hx = _import_httpx()
        self._sink = sink
        self._limits = limits
        self._server = server
        self._url = url
        self._token = token
        # Static headers (connect(headers=...)): private like the token.
        self._extra_headers = headers
        self._owns_client = http_client is None
        if http_client is None:
            # trust_env: HTTP(S)_PROXY, NO_PROXY, SSL_CERT_FILE... apply as usual.
            http_client = hx.Client(
                trust_env=True,
                follow_redirects=False,
                limits=hx.Limits(
                    max_connections=None,
                    max_keepalive_connections=MAX_WORKERS,
                    keepalive_expiry=KEEPALIVE_EXPIRY,
                ),
            )
        self._client: httpx.Client = http_client
        self._auth = auth
        self._queue: queue.Queue[object] = queue.Queue(maxsize=limits.queue_capacity)
        self._lock = threading.Lock()
        self._workers: set[threading.Thread] = set()
        self._idle = 0
        self._next_worker = 0
        self._local = threading.local()
        # Serialises starting a new session after a 404 with every POST that
        # reads the session id, so none is sent without one mid-renewal.
        self._session_lock = threading.RLock()
        self._session_id: str | None = None
        self._renewals = 0
        # Sockets to shut down on close so blocked reads wake at once: those of
        # requests in flight, and (for our own client) every one it opened.
        self._inflight: dict[int, list[socket.socket]] = {}
        self._inflight_keys = 0
        self._by_request: dict[int, int] = {}  # request id -> its key in _inflight
        self._own_sockets: weakref.WeakSet[socket.socket] = weakref.WeakSet()
        self._stopping = threading.Event()
        self._listener: threading.Thread | None = None
        # Ends any exchange still reading when its deadline passes.
        self._watch = DeadlineWatch(f"mcp_sync-{server}-http-deadline", _wake)
        self._skip_delete = False
        self._shutdown_lock = threading.Lock()
        self._shutdown_done = threading.Event()
        self._shut_down = False
        if auth is not None:
            auth.attach(http_client, self._stopping)

    def __repr__(self) -> str:
        return f"<HttpTransport server={self._server!r}>"

    # ----------------------------------------------------------- outbound

    def send(
        self,
        frame: bytes,
        request_id: int | None,
        timeout: float,
        headers: Mapping[str, str] | None = None,
        hold: float | None = None,
    ) -> bool:
        if self._stopping.is_set():
            return True  # the session is over; its waiters already failed
        deadline = time.monotonic() + timeout
        if request_id is None:
            if self._sink.era.name == MODERN:
                return True  # the revision has no client replies over HTTP
            # Notifications from a caller (notifications/initialized) go out
            # before send returns, so they reach the server before whatever the
            # caller sends next. Replies to server requests come from a worker
            # reading a stream, and are sent from there.
            return self._post_message(frame, deadline, strict=not self._in_worker())
        # The queue's room is waited for until the caller's deadline; the
        # reply until the latest it may still be wanted.
        until = deadline if hold is None else max(deadline, hold)
        try:
            self._queue.put((request_id, frame, until, headers), timeout=timeout)
        except queue.Full:
            return False
        self._ensure_worker()
        return True

    def send_nowait(self, frame: bytes) -> bool:
        if self._stopping.is_set():
            return True
        if self._sink.era.name == MODERN:
            # The only frame the session sends this way is notifications/cancelled;
            # in 2026-07-28 closing the request's reply stream cancels it instead.
            self._close_stream(frame)
            return True
        deadline = time.monotonic() + min(seconds(self._limits.request_timeout_ms), 30.0)
        try:
            self._queue.put_nowait((None, frame, deadline, None))
        except queue.Full:
            return False
        self._ensure_worker()
        return True

    def _close_stream(self, frame: bytes) -> None:
        try:
            request_id = json.loads(frame)["params"]["requestId"]
        except (ValueError, KeyError, TypeError):
            return
        with self._lock:
            key = self._by_request.get(request_id)
            sockets = list(self._inflight.get(key, ())) if key is not None else []
        for sock in sockets:
            _wake(sock)

    def reply(self, frame: bytes) -> bool:
        # Server requests arrive on a worker's stream, never on a caller's
        # thread: the worker POSTs the reply itself.
        return self.send(frame, None, seconds(self._limits.request_timeout_ms))

    def _in_worker(self) -> bool:
        return getattr(self._local, "worker", False) is True

    def _ensure_worker(self) -> None:
        # Start a worker when queued frames outnumber the idle workers. Workers
        # make the same check after taking a frame, so whichever side changes
        # the counts last sees the true picture.
        with self._lock:
            if self._queue.qsize() > self._idle and len(self._workers) < MAX_WORKERS:
                self._start_worker()

    def _start_worker(self) -> None:
        # Called with self._lock held.
        if self._stopping.is_set():
            return
        self._next_worker += 1
        thread = threading.Thread(
            target=self._work,
            name=f"mcp_sync-{self._server}-http-{self._next_worker}",
            daemon=True,
        )
        self._workers.add(thread)
        self._idle += 1
        thread.start()

    def _work(self) -> None:
        self._local.worker = True
        me = threading.current_thread()
        try:
            while True:
                try:
                    item = self._queue.get(timeout=WORKER_IDLE_EXIT)
                except queue.Empty:
                    with self._lock:
                        if self._queue.qsize() == 0 and len(self._workers) > 1:
                            self._idle -= 1
                            self._workers.discard(me)
                            return
                    continue
                if item is _STOP or self._stopping.is_set():
                    with contextlib.suppress(queue.Full):
                        self._queue.put_nowait(_STOP)  # wake the next idle worker
                    return
                with self._lock:
                    self._idle -= 1
                    if self._queue.qsize() > self._idle and len(self._workers) < MAX_WORKERS:
                        self._start_worker()
                try:
                    self._handle(item)
                finally:
                    with self._lock:
                        self._idle += 1
        finally:
            with self._lock:
                self._workers.discard(me)

    def _handle(self, item: object) -> None:
        request_id, frame, deadline, headers = cast(
            "tuple[int | None, bytes, float, Mapping[str, str] | None]", item
        )
        if time.monotonic() >= deadline:
            return  # its caller has given up (or is about to)
        if request_id is None:
            self._post_message(frame, deadline, strict=False)
            return
        if not self._sink.claim(request_id):
            return  # abandoned before it was sent
        try:
            if headers is None:
                self._exchange(frame, request_id, deadline)
            else:
                self._post_request(frame, request_id, deadline, headers)
        except _Failure as failure:
            if headers is not None and not self._sink.waiting(request_id):
                return  # a modern request whose caller left: its stream was closed
            if failure.terminal:
                self._sink.terminate(failure.error)
            else:
                self._sink.fail(request_id, failure.error)
        except _Stopped:
            pass
        except Exception as exc:  # httpx errors, and whatever an event hook raises
            if headers is not None and not self._sink.waiting(request_id):
                return
            self._transport_error(exc)

    def _transport_error(self, exc: Exception) -> None:
        """A request could not be completed at the HTTP level."""
        if self._stopping.is_set() or isinstance(exc, self._httpx.TimeoutException):
            # Closing, or the caller's deadline passed: it gets its own Timeout.
            return
        name = type(exc).__name__
        if isinstance(exc, (self._httpx.ConnectError, self._httpx.ProxyError)):
            message = f"server {self._server!r} could not be reached ({name})"
            self._skip_delete = True  # nobody there to tell
        else:
            message = f"the HTTP connection to server {self._server!r} failed ({name})"
        self._sink.terminate(ConnectionClosed(message))

    # ----------------------------------------------------------- one request

    def _exchange(self, frame: bytes, request_id: int, deadline: float) -> None:
        renewed = False
        while True:
            try:
                self._post_request(frame, request_id, deadline)
                return
            except _SessionLost as lost:
                if renewed:
                    raise _Failure(
                        ConnectionClosed(
                            f"server {self._server!r} forgot the new session too (HTTP 404)"
                        ),
                        True,
                    ) from None
                # The server no longer knows the session (expired, restarted).
                # It never saw this request, so after a new session it is safe
                # to send again -- once.
                self._renew(lost.stale, deadline)
                renewed = True

    def _post_request(
        self,
        frame: bytes,
        request_id: int,
        deadline: float,
        extra: Mapping[str, str] | None = None,
    ) -> None:
        # extra: the request's own MCP headers, which make it a modern one.
        headers = self._headers(_ACCEPT_BOTH, session=extra is None)
        if extra is not None:
            headers.update(extra)
        with self._open("POST", frame, deadline, headers, request_id) as response:
            status = response.status_code
            if extra is None:
                self._check_status(status, response, frame, allow_renew=True)
                self._adopt_session_id(response)
            elif status != 200:
                self._modern_status(status, response, frame, request_id, deadline)
            kind = _content_type(response)
            if kind == "application/json":
                self._sink.receive(self._read_body(response, deadline))
                if self._sink.waiting(request_id) and self._sink.terminal is None:
                    raise _Failure(
                        ProtocolError(
                            f"server {self._server!r} answered {_method(frame)} with a "
                            "JSON body that is not its reply"
                        ),
                        True,
                    )
                return
            if kind != "text/event-stream":
                raise _Failure(
                    ProtocolError(
                        f"server {self._server!r} answered {_method(frame)} with HTTP "
                        f"{status} and a content type other than application/json or "
                        "text/event-stream"
                    ),
                    True,
                )
            self._check_encoding(response)
            parser = SseParser(self._limits.max_frame_bytes)
            if self._read_events(response, parser, request_id, deadline):
                return
        if extra is not None:
            # 2026-07-28 has no resumption. Sending the request again could run
            # a tool twice, so the request is not re-sent: the session ends.
            raise _Failure(
                ConnectionClosed(
                    f"server {self._server!r} ended the reply stream of {_method(frame)} "
                    "before replying (streams are not resumable in the 2026-07-28 revision)"
                ),
                True,
            )
        # The stream ended before the reply: resume it (SEP-1699 / 2025-06-18
        # "Resumability"). Outside the `with`, so the old connection is released.
        self._resume(parser, request_id, frame, deadline)

    def _check_status(
        self, status: int, response: httpx.Response, frame: bytes, *, allow_renew: bool
    ) -> None:
        if status == 200:
            return
        if status in (401, 403):
            raise self._refusal(status)
        stale = response.request.headers.get("Mcp-Session-Id")
        if status == 404 and allow_renew and stale is not None:
            raise _SessionLost(stale)
        if status in (202, 204):
            raise _Failure(
                ProtocolError(
                    f"server {self._server!r} answered {_method(frame)} with HTTP {status} "
                    "and no reply"
                ),
                True,
            )
        # Any other status fails this request only; the body is never read.
        raise _Failure(self._status_error(status, frame), False)

    def _modern_status(
        self,
        status: int,
        response: httpx.Response,
        frame: bytes,
        request_id: int,
        deadline: float,
    ) -> None:
        """A modern request answered with an error status. A JSON-RPC error in
        the body (the revision puts ``-32022``, ``-32601``, header mismatches
        there) is the request's reply; otherwise as in the legacy era."""
        if status in (401, 403) or status < 400:
            self._check_status(status, response, frame, allow_renew=False)
            return
        if _content_type(response) == "application/json":
            error = _error_reply(decode_body(self._read_body(response, deadline)), request_id)
            if error is not None:
                raise _Failure(
                    RemoteError(
                        f"server {self._server!r} answered {_method(frame)} with HTTP "
                        f"{status} and JSON-RPC error {error['code']}",
                        error["code"],
                        Redacted({"message": error["message"], "data": error.get("data")}),
                    ),
                    False,
                )
        raise _Failure(self._status_error(status, frame), False)

    def _refusal(self, status: int) -> _Failure:
        """The failure for a 401/403 that new credentials did not fix."""
        if self._auth is not None:
            error, terminal = self._auth.failure(status)
            if terminal:
                self._skip_delete = True
            return _Failure(error, terminal)
        return _Failure(self._auth_refused(status), True)

    def _auth_refused(self, status: int) -> ConnectionClosed:
        self._skip_delete = True
        hint = (
            " (check the token in bearer_token_env)"
            if self._token is not None
            else " (no bearer_token_env was given)"
        )
        reason = "401 Unauthorized" if status == 401 else "403 Forbidden"
        return ConnectionClosed(f"server {self._server!r} answered HTTP {reason}{hint}")

    def _status_error(self, status: int, frame: bytes) -> RemoteError:
        # JSON-RPC's closest codes: invalid request for 4xx, internal error otherwise.
        code = -32600 if 400 <= status < 500 else -32603
        return RemoteError(
            f"server {self._server!r} answered {_method(frame)} with HTTP {status}",
            code,
            Redacted({"message": f"HTTP {status}", "data": {"http_status": status}}),
        )

    # ----------------------------------------------------------- streams

    def _read_events(
        self, response: httpx.Response, parser: SseParser, request_id: int, deadline: float
    ) -> bool:
        """Feed a stream's events to the session until the request no longer
        needs it. True: done (reply in, caller gone, session over); False: the
        stream ended first."""
        sink = self._sink
        try:
            for chunk in response.iter_raw():
                try:
                    messages = parser.feed(chunk)
                except ProtocolError as exc:
                    raise _Failure(exc, True) from None
                for data in messages:
                    sink.receive(data)
                if (
                    not sink.waiting(request_id)
                    or self._stopping.is_set()
                    or time.monotonic() >= deadline
                ):
                    return True
        except self._httpx.TimeoutException:
            raise
        except self._httpx.TransportError:
            # The stream broke: like a clean end, it may be resumed -- unless
            # the watchdog ended it at the deadline.
            if self._stopping.is_set():
                raise _Stopped from None
            if time.monotonic() >= deadline:
                raise self._httpx.ReadTimeout("the deadline passed") from None
        if time.monotonic() >= deadline:
            # A shut-down socket may also read as a clean end of the stream.
            raise self._httpx.ReadTimeout("the deadline passed")
        return not sink.waiting(request_id)

    def _resume(self, parser: SseParser, request_id: int, frame: bytes, deadline: float) -> None:
        """GET the rest of a reply stream with ``Last-Event-ID``, after the
        server's ``retry`` delay, until the reply comes or the deadline passes."""
        while self._sink.waiting(request_id):
            event_id = parser.last_event_id
            if not event_id or len(event_id) > MAX_EVENT_ID or not _PRINTABLE_ASCII.match(event_id):
                raise _Failure(
                    ConnectionClosed(
                        f"server {self._server!r} ended the reply stream of "
                        f"{_method(frame)} before replying, without an event id to resume it"
                    ),
                    True,
                )
            delay = DEFAULT_RETRY if parser.retry_ms is None else parser.retry_ms / 1000.0
            delay = max(delay, MIN_RETRY)
            if time.monotonic() + delay >= deadline:
                return  # the deadline comes first; the caller times out
            if self._stopping.wait(delay):
                raise _Stopped
            headers = self._headers(_ACCEPT_SSE)
            headers["Last-Event-ID"] = event_id
            with self._open("GET", None, deadline, headers) as response:
                status = response.status_code
                if status in (401, 403):
                    raise self._refusal(status)
                if status != 200 or _content_type(response) != "text/event-stream":
                    raise _Failure(
                        ConnectionClosed(
                            f"server {self._server!r} ended the reply stream of "
                            f"{_method(frame)} before replying and refused to resume it "
                            f"(HTTP {status})"
                        ),
                        True,
                    )
                self._check_encoding(response)
                parser = SseParser(
                    self._limits.max_frame_bytes,
                    last_event_id=parser.last_event_id,
                    retry_ms=parser.retry_ms,
                )
                if self._read_events(response, parser, request_id, deadline):
                    return

    def _read_body(self, response: httpx.Response, deadline: float) -> bytes:
        """The whole body, refused at ``max_frame_bytes`` without holding more,
        read by ``deadline`` (the watchdog ends a read that would go past it)."""
        limit = self._limits.max_frame_bytes
        self._check_encoding(response)
        length = response.headers.get("content-length")
        if length is not None and (
            not length.strip().isdigit() or len(length) > 18 or int(length) > limit
        ):
            raise self._body_too_long(limit)
        parts: list[bytes] = []
        held = 0
        try:
            for chunk in response.iter_raw():
                held += len(chunk)
                if held > limit:
                    raise self._body_too_long(limit)
                parts.append(chunk)
        except self._httpx.TimeoutException:
            raise
        except self._httpx.TransportError as exc:
            if self._stopping.is_set():
                raise _Stopped from None
            if time.monotonic() >= deadline:
                raise self._httpx.ReadTimeout("the deadline passed") from None
            raise _Failure(
                ConnectionClosed(
                    f"the HTTP connection to server {self._server!r} broke during a "
                    f"reply ({type(exc).__name__})"
                ),
                True,
            ) from None
        if time.monotonic() >= deadline:
            # A shut-down socket may also read as a clean (short) end.
            raise self._httpx.ReadTimeout("the deadline passed")
        return b"".join(parts)

    def _body_too_long(self, limit: int) -> _Failure:
        return _Failure(
            ProtocolError(
                f"server {self._server!r} sent a JSON body larger than max_frame_bytes={limit}"
            ),
            True,
        )

    def _check_encoding(self, response: httpx.Response) -> None:
        # We ask for identity: a compressed body could expand past every bound
        # before a single byte of it was counted.
        encoding = response.headers.get("content-encoding", "").strip().lower()
        if encoding not in ("", "identity"):
            raise _Failure(
                ProtocolError(
                    f"server {self._server!r} sent a compressed body "
                    "(Accept-Encoding asked for identity)"
                ),
                True,
            )

    # ----------------------------------------------------------- messages

    def _post_message(self, frame: bytes, deadline: float, *, strict: bool) -> bool:
        """POST a notification or a reply; the server answers 202.

        ``strict`` (a caller's notification during the handshake): a failure
        raises. Otherwise (a cancellation, a reply to a server request) it is
        best effort, except that a refused token still ends the session.
        """
        try:
            with self._open("POST", frame, deadline, self._headers(_ACCEPT_BOTH)) as response:
                status = response.status_code
        except _Stopped:
            return True
        except _Failure as refused:
            if refused.terminal:
                self._sink.terminate(refused.error)
            if strict:
                raise refused.error._copy() from None
            return True
        except Exception as exc:  # httpx errors, and whatever an event hook raises
            if isinstance(exc, self._httpx.TimeoutException):
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
            failure = self._refusal(status)
            if failure.terminal:
                self._sink.terminate(failure.error)
            if strict:
                raise failure.error._copy()
            return True
        if strict:
            raise self._status_error(status, frame)
        return True

    # ----------------------------------------------------------- sessions

    def _headers(self, accept: str, *, session: bool = True) -> dict[str, str]:
        headers = {"Accept": accept, "Accept-Encoding": "identity"}
        if self._extra_headers is not None:
            headers.update(self._extra_headers.reveal())
        if self._token is not None:
            headers["Authorization"] = "Bearer " + self._token.reveal()
        if session:
            with self._session_lock:
                session_id = self._session_id
            if session_id is not None:
                headers["Mcp-Session-Id"] = session_id
            version = self._sink.protocol_version
            if version is not None:
                headers["MCP-Protocol-Version"] = version
        return headers

    def _adopt_session_id(self, response: httpx.Response) -> None:
        value = response.headers.get("mcp-session-id")
        if value is None:
            return
        with self._session_lock:
            if self._session_id is not None:
                return  # only the reply to initialize assigns it
            if len(value) > MAX_SESSION_ID or not _VISIBLE_ASCII.match(value):
                raise _Failure(
                    ProtocolError(
                        f"server {self._server!r} sent an Mcp-Session-Id that is not "
                        f"1 to {MAX_SESSION_ID} visible ASCII characters"
                    ),
                    True,
                )
            self._session_id = value

    def _renew(self, stale: str, deadline: float) -> None:
        """Start a new session: initialize without the old id, then initialized."""
        with self._session_lock:
            if self._session_id != stale:
                return  # another worker already renewed it
            version = self._sink.protocol_version
            if version is None:
                raise _Failure(ConnectionClosed(f"server {self._server!r} answered HTTP 404"), True)
            self._session_id = None
            self._renewals += 1
            renew_id = f"mcp_sync-renew-{self._renewals}"
            frame = encode(
                {
                    "jsonrpc": "2.0",
                    "id": renew_id,
                    "method": "initialize",
                    "params": initialize_params(version, self._sink.client_capabilities),
                },
                self._limits.max_outbound_frame_bytes,
            )
            lost = ConnectionClosed(
                f"server {self._server!r} no longer knows the session (HTTP 404) "
                "and a new one could not be started"
            )
            try:
                result = self._renew_initialize(frame, renew_id, deadline, lost)
                if (
                    not isinstance(result, dict)
                    or result.get("protocolVersion") != version
                    or not isinstance(result.get("capabilities"), dict)
                    or not isinstance(result["capabilities"].get("tools"), dict)
                ):
                    raise _Failure(lost, True)
                notify = encode(
                    {"jsonrpc": "2.0", "method": "notifications/initialized"},
                    self._limits.max_outbound_frame_bytes,
                )
                headers = self._headers(_ACCEPT_BOTH)
                with self._open("POST", notify, deadline, headers) as response:
                    if response.status_code not in (200, 202, 204):
                        raise _Failure(lost, True)
            except (_Failure, _Stopped):
                raise
            except Exception:  # a timeout or a broken connection mid-renewal
                # Half a renewal leaves no usable session id: end the session.
                if self._stopping.is_set():
                    raise _Stopped from None
                raise _Failure(lost, True) from None

    def _renew_initialize(
        self, frame: bytes, renew_id: str, deadline: float, lost: ConnectionClosed
    ) -> Any:
        headers = self._headers(_ACCEPT_BOTH, session=False)
        with self._open("POST", frame, deadline, headers) as response:
            if response.status_code in (401, 403):
                raise self._refusal(response.status_code)
            if response.status_code != 200:
                raise _Failure(lost, True)
            self._adopt_session_id(response)
            kind = _content_type(response)
            if kind == "application/json":
                frames: Iterator[bytes] = iter([self._read_body(response, deadline)])
            elif kind == "text/event-stream":
                self._check_encoding(response)
                frames = self._iter_events(response)
            else:
                raise _Failure(lost, True)
            for data in frames:
                try:
                    message = decode_line(data)
                except ProtocolError as exc:
                    raise _Failure(exc, True) from None
                if (
                    message is not None
                    and message.get("id") == renew_id
                    and "method" not in message
                ):
                    if "result" not in message:
                        raise _Failure(lost, True)
                    return message["result"]
                self._sink.receive(data)  # a server request or notification meanwhile
        raise _Failure(lost, True)

    def _iter_events(self, response: httpx.Response) -> Iterator[bytes]:
        parser = SseParser(self._limits.max_frame_bytes)
        for chunk in response.iter_raw():
            try:
                yield from parser.feed(chunk)
            except ProtocolError as exc:
                raise _Failure(exc, True) from None

    # ----------------------------------------------------------- HTTP plumbing

    @contextlib.contextmanager
    def _open(
        self,
        method: str,
        content: bytes | None,
        deadline: float,
        headers: dict[str, str],
        request_id: int | None = None,
    ) -> Iterator[httpx.Response]:
        """One streamed HTTP exchange, bounded by ``deadline`` and interruptible
        by :meth:`shutdown`."""
        hx = self._httpx
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise hx.TimeoutException("deadline passed before sending")
        if content is not None:
            headers["Content-Type"] = "application/json"
        sockets: list[socket.socket] = []
        with self._lock:
            if self._stopping.is_set():
                raise _Stopped
            self._inflight_keys += 1
            key = self._inflight_keys
            self._inflight[key] = sockets
            if request_id is not None:
                self._by_request[request_id] = key
        watched = self._watch.add(deadline, sockets)

        def trace(event: str, info: dict[str, Any]) -> None:
            # httpcore reports each new connection's stream ("...connect_tcp.complete",
            # "...start_tls.complete"): keep its socket so close() can wake a read.
            if event.endswith(".complete"):
                self._track(info.get("return_value"), sockets)

        try:
            attempts = 0
            while True:
                sent = headers
                if self._auth is not None:
                    sent = {**headers, **self._credentials(method, content, deadline)}
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise hx.TimeoutException("deadline passed before sending")
                with self._client.stream(
                    method,
                    self._url,
                    content=content,
                    headers=sent,
                    timeout=hx.Timeout(min(remaining, threading.TIMEOUT_MAX)),
                    extensions={"trace": trace},
                ) as response:
                    # A reused connection reports no connect event, only this.
                    self._track(response.extensions.get("network_stream"), sockets)
                    if self._auth is not None:
                        self._auth.observe(response.status_code, response.headers)
                        if response.status_code in (401, 403) and attempts < MAX_AUTH_RETRIES:
                            attempts += 1
                            response.close()
                            if self._reauthorize(response, sent, deadline):
                                continue
                    yield response
                    return
        except hx.TransportError as exc:
            # The watchdog shut the socket down at the deadline: a timeout,
            # not a broken connection.
            if isinstance(exc, hx.TimeoutException) or time.monotonic() < deadline:
                raise
            raise hx.ReadTimeout("the deadline passed") from None
        finally:
            self._watch.remove(watched)
            with self._lock:
                self._inflight.pop(key, None)
                if request_id is not None:
                    self._by_request.pop(request_id, None)

    def _credentials(self, method: str, content: bytes | None, deadline: float) -> dict[str, str]:
        assert self._auth is not None
        try:
            return self._auth.headers(method, self._url, content, deadline)
        except Timeout:
            raise self._httpx.TimeoutException("authorization missed the deadline") from None
        except McpError as exc:
            raise _Failure(exc, True) from None

    def _reauthorize(self, response: httpx.Response, sent: dict[str, str], deadline: float) -> bool:
        """Ask the auth hook for new credentials after a 401/403; True: retry."""
        assert self._auth is not None
        status = response.status_code
        try:
            return self._auth.refused(status, response.headers, sent, deadline)
        except Timeout:
            raise self._httpx.TimeoutException("authorization missed the deadline") from None
        except McpError as exc:
            if status == 401 or isinstance(exc, LoginRequired):
                self._skip_delete = True
                raise _Failure(exc, True) from None
            raise _Failure(exc, False) from None

    def _track(self, stream: object, sockets: list[socket.socket]) -> None:
        get_extra_info = getattr(stream, "get_extra_info", None)
        if get_extra_info is None:
            return
        try:
            sock = get_extra_info("socket")
        except Exception:  # a foreign stream type
            return
        if not isinstance(sock, socket.socket):
            return
        sockets.append(sock)
        if self._owns_client:
            self._own_sockets.add(sock)
        if self._stopping.is_set():
            _wake(sock)  # shutdown already swept the in-flight sockets

    # ----------------------------------------------------------- teardown

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
        """Replies come back on each request's own response: just send. With
        ``hold`` the worker keeps reading the response until then (a deadline
        progress may extend) rather than until ``timeout``."""
        return self.send(frame, request_id, timeout, headers, hold)

    def lead(self, done: Callable[[], bool], deadline: float) -> None:
        """Workers read the responses: a caller never does."""

    # ----------------------------------------------------------- standalone stream

    def listen(self) -> None:
        """Open the standalone GET stream, on which a server sends what is not
        part of a request's reply (requests such as ``elicitation/create``,
        ``list_changed`` notifications, logs), and keep it open until close.
        A server that offers none (405 or another refusal) is left alone."""
        with self._lock:
            if self._stopping.is_set() or self._listener is not None:
                return
            self._listener = threading.Thread(
                target=self._listen, name=f"mcp_sync-{self._server}-http-listen", daemon=True
            )
        self._listener.start()

    def _listen(self) -> None:
        parser = SseParser(self._limits.max_frame_bytes)
        quiet = 0  # connections in a row that brought nothing
        while not self._stopping.is_set():
            headers = self._headers(_ACCEPT_SSE)
            if parser.last_event_id and len(parser.last_event_id) <= MAX_EVENT_ID:
                headers["Last-Event-ID"] = parser.last_event_id
            seen = parser.events
            try:
                with self._open("GET", None, time.monotonic() + LISTEN_READ_TIMEOUT, headers) as response:
                    if response.status_code != 200 or _content_type(response) != "text/event-stream":
                        return  # no standalone stream here (405 is the usual answer)
                    self._check_encoding(response)
                    parser = SseParser(
                        self._limits.max_frame_bytes,
                        last_event_id=parser.last_event_id,
                        retry_ms=parser.retry_ms,
                    )
                    for chunk in response.iter_raw():
                        for data in parser.feed(chunk):
                            self._sink.receive(data)
                        if self._stopping.is_set():
                            return
            except (_Stopped, _Failure):
                return
            except ProtocolError as exc:  # an event over max_frame_bytes
                self._sink.terminate(exc)
                return
            except Exception:  # a timeout or a broken connection: reconnect
                if self._stopping.is_set():
                    return
            quiet = 0 if parser.events > seen else quiet + 1
            delay = DEFAULT_RETRY if parser.retry_ms is None else parser.retry_ms / 1000.0
            # A stream that keeps ending at once backs off, up to 30 s.
            delay = max(delay, MIN_RETRY, min(30.0, MIN_RETRY * 2**quiet))
            if self._stopping.wait(delay):
                return

    def shutdown(self, wait: bool) -> None:
        with self._shutdown_lock:
            mine = not self._shut_down
            self._shut_down = True
        if not mine:
            if wait:
                self._shutdown_done.wait()
            return
        try:
            self._teardown()
        finally:
            self._shutdown_done.set()

    def _teardown(self) -> None:
        self._stopping.set()
        # Wake every blocked read: the requests they serve have already failed.
        with self._lock:
            sockets = [s for group in self._inflight.values() for s in group]
        sockets.extend(self._own_sockets)
        for sock in sockets:
            _wake(sock)
        self._stop_workers()
        self._watch.close()
        self._delete_session()
        deadline = time.monotonic() + THREAD_JOIN
        current = threading.current_thread()
        with self._lock:
            workers = list(self._workers)
            if self._listener is not None:
                workers.append(self._listener)
        for thread in workers:
            if thread is not current:
                thread.join(max(0.0, deadline - time.monotonic()))
        if self._owns_client:
            with contextlib.suppress(Exception):
                self._client.close()
        self._sink.transport_closed("")

    def _stop_workers(self) -> None:
        # Queued frames belong to requests that already failed. Each worker
        # that takes the sentinel puts it back for the next one.
        while True:
            try:
                self._queue.get_nowait()
            except queue.Empty:
                break
        with contextlib.suppress(queue.Full):
            self._queue.put_nowait(_STOP)

    def _delete_session(self) -> None:
        """Tell the server the session is over; any answer (405 included) is fine."""
        # A renewal stuck connecting holds the lock until its deadline: do not
        # let it hold up close() as well.
        if not self._session_lock.acquire(timeout=DELETE_TIMEOUT):
            return
        try:
            session_id = self._session_id
        finally:
            self._session_lock.release()
        if session_id is None or self._skip_delete or self._sink.era.name == MODERN:
            return  # (a modern session has no protocol session to end)
        headers = {"Accept-Encoding": "identity", "Mcp-Session-Id": session_id}
        if self._extra_headers is not None:
            headers.update(self._extra_headers.reveal())
        if self._token is not None:
            headers["Authorization"] = "Bearer " + self._token.reveal()
        if self._auth is not None:
            with contextlib.suppress(Exception):
                headers.update(self._auth.current("DELETE", self._url))
        version = self._sink.protocol_version
        if version is not None:
            headers["MCP-Protocol-Version"] = version
        with contextlib.suppress(Exception):
            self._client.request(
                "DELETE", self._url, headers=headers, timeout=self._httpx.Timeout(DELETE_TIMEOUT)
            ).close()


def _wake(sock: socket.socket) -> None:
    """Make a read blocked on ``sock`` in another thread return now.

    ``shutdown`` wakes it; ``close`` would not. The base-class method is used
    so an SSL socket is not unwrapped under the reading thread's feet.
    """
    with contextlib.suppress(OSError, ValueError):
        socket.socket.shutdown(sock, socket.SHUT_RDWR)


def decode_body(body: bytes) -> dict[str, Any] | None:
    """A JSON body as a protocol message (``None`` if it is not one)."""
    try:
        return decode_line(body)
    except ProtocolError as exc:
        raise _Failure(exc, True) from None


def _error_reply(message: dict[str, Any] | None, request_id: int) -> dict[str, Any] | None:
    """The error object of a JSON-RPC error reply to ``request_id`` (or with a
    null id, which a server that could not read the request gives), else ``None``."""
    if message is None or "result" in message or message.get("id") not in (request_id, None):
        return None
    error = message.get("error")
    if (
        isinstance(error, dict)
        and type(error.get("code")) is int
        and isinstance(error.get("message"), str)
    ):
        return error
    return None


def _content_type(response: httpx.Response) -> str:
    value: str = response.headers.get("content-type", "")
    return value.split(";", 1)[0].strip().lower()


_OUR_METHODS = frozenset({"initialize", "tools/list", "tools/call", "server/discover"})


def _method(frame: bytes) -> str:
    """The method of one of our own frames, for an error message (error path only)."""
    try:
        method = json.loads(frame).get("method")
    except (ValueError, AttributeError):
        return "a request"
    return str(method) if method in _OUR_METHODS else "a request"
