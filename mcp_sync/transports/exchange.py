"""One HTTP exchange, for both HTTP transports: credentials and their retry,
the deadline watchdog, and the sockets to wake when the transport closes.

httpx bounds each read, not a whole response, and a blocked read does not
notice a ``close()`` in another thread. So every exchange registers its
sockets here: the watchdog shuts them down when the exchange's deadline
passes, ``close_stream`` when its request is abandoned, ``wake_all`` when the
transport tears down; the blocked read then returns at once.
"""

from __future__ import annotations

import contextlib
import socket
import sys
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from ..protocol.errors import ConnectionClosed, LoginRequired, McpError, ProtocolError, Timeout
from ..protocol.limits import Limits
from .contract import wake
from .http_status import AuthHook, Failure, StatusMap, Stopped
from .watchdog import DeadlineWatch

if TYPE_CHECKING:
    from types import FrameType

    import httpx

__all__ = ["MAX_AUTH_RETRIES", "Exchanger"]

MAX_AUTH_RETRIES = 2
"""Times one request is sent again after its auth hook got new credentials."""
_SEND_DEPTH = 4
"""How many frames above the trace callback httpcore's HTTP/1.1 connection
sits when it reports that it starts sending (the callback, ``Trace.trace``,
``Trace.__enter__``, ``handle_request``)."""


class _Sockets(list[socket.socket]):
    """The sockets of one exchange in flight; ``abandoned`` once its request
    was given up (a socket found after that is woken as it is found)."""

    __slots__ = ("abandoned",)

    def __init__(self) -> None:
        super().__init__()
        self.abandoned = False


def _sending_stream() -> object:
    """The network stream of the HTTP/1.1 connection whose request is being
    sent, read off httpcore's ``HTTP11Connection`` on the calling stack
    (called from its ``send_request_headers`` trace event, on the thread
    sending). ``None`` when it is not there: another client's transport, or
    another httpcore, whose reused connections then cannot be woken early."""
    frame: FrameType | None = sys._getframe(1)
    for _ in range(_SEND_DEPTH):
        frame = frame.f_back if frame is not None else None
        if frame is None:
            return None
        if frame.f_code.co_name == "handle_request":
            owner = frame.f_locals.get("self")
            if type(owner).__name__ == "HTTP11Connection":
                return getattr(owner, "_network_stream", None)
            return None
    return None


class Exchanger:
    """Opens exchanges with one server and tracks their sockets."""

    def __init__(
        self,
        *,
        hx: Any,
        client: httpx.Client,
        owns_client: bool,
        server: str,
        url: str,
        limits: Limits,
        status: StatusMap,
        auth: AuthHook | None,
        stopping: threading.Event,
        role: str,
    ) -> None:
        self._hx = hx
        self.client = client
        self._owns_client = owns_client
        self._server = server
        self.url = url
        self._limits = limits
        self._status = status
        self._auth = auth
        self._stopping = stopping
        # Guards _inflight, _keys and _by_request: the sockets of each
        # exchange in flight. Taken briefly by the thread opening or ending an
        # exchange, by close_stream (an abandoned request) and by wake_all
        # (teardown); nobody waits on it for long.
        self._lock = threading.Lock()
        self._inflight: dict[int, _Sockets] = {}
        self._keys = 0
        self._by_request: dict[int, int] = {}  # request id -> its key in _inflight
        # Every socket our own client opened (it is ours to shut down).
        self._own_sockets: weakref.WeakSet[socket.socket] = weakref.WeakSet()
        # Ends any exchange still reading when its deadline passes.
        self._watch = DeadlineWatch(f"mcp_sync-{server}-{role}-deadline", wake)

    @contextlib.contextmanager
    def open(
        self,
        method: str,
        content: bytes | None,
        deadline: float,
        headers: dict[str, str],
        request_id: int | None = None,
        *,
        url: str | None = None,
    ) -> Iterator[httpx.Response]:
        """One streamed HTTP exchange, bounded by ``deadline`` and interruptible
        by :meth:`wake_all`; sent again with new credentials after a 401/403
        when the auth hook has them."""
        hx = self._hx
        if deadline - time.monotonic() <= 0:
            raise hx.TimeoutException("deadline passed before sending")
        if content is not None:
            headers["Content-Type"] = "application/json"
        sockets = _Sockets()
        key = self._register(sockets, request_id)
        watched = self._watch.add(deadline, sockets)
        trace = self._tracer(sockets)
        try:
            attempts = 0
            while True:
                sent = headers
                if self._auth is not None:
                    sent = {**headers, **self._credentials(method, content, deadline)}
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise hx.TimeoutException("deadline passed before sending")
                with self.client.stream(
                    method,
                    url or self.url,
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
            self._unregister(key, request_id)

    @contextlib.contextmanager
    def stream(self, headers: dict[str, str], connect_timeout: float) -> Iterator[httpx.Response]:
        """A GET held open until the server ends it or :meth:`wake_all`: no
        deadline and no read timeout (an event stream may stay quiet for
        ever); connecting is bounded by ``connect_timeout``."""
        hx = self._hx
        sockets = _Sockets()
        key = self._register(sockets, None)
        try:
            with self.client.stream(
                "GET",
                self.url,
                headers=headers,
                timeout=hx.Timeout(connect=connect_timeout, read=None, write=None, pool=connect_timeout),
                extensions={"trace": self._tracer(sockets)},
            ) as response:
                self._track(response.extensions.get("network_stream"), sockets)
                yield response
        finally:
            self._unregister(key, None)

    @contextlib.contextmanager
    def beside(self) -> Iterator[Callable[[str, dict[str, Any]], None]]:
        """A trace callback (httpx's ``trace`` extension) for a request made on
        this client beside the exchanges, such as an OAuth token fetch: its
        sockets are woken by :meth:`wake_all` as an exchange's are, so a
        closing session does not wait for that request's own deadline."""
        sockets = _Sockets()
        key = self._register(sockets, None)
        try:
            yield self._tracer(sockets)
        finally:
            self._unregister(key, None)

    def _register(self, sockets: _Sockets, request_id: int | None) -> int:
        with self._lock:
            if self._stopping.is_set():
                raise Stopped
            self._keys += 1
            key = self._keys
            self._inflight[key] = sockets
            if request_id is not None:
                self._by_request[request_id] = key
        return key

    def _unregister(self, key: int, request_id: int | None) -> None:
        with self._lock:
            self._inflight.pop(key, None)
            if request_id is not None:
                self._by_request.pop(request_id, None)

    def _tracer(self, sockets: _Sockets) -> Callable[[str, dict[str, Any]], None]:
        def trace(event: str, info: dict[str, Any]) -> None:
            # httpcore reports each new connection's stream ("...connect_tcp.complete",
            # "...start_tls.complete"): keep its socket so close() can wake a read.
            if event.endswith(".complete"):
                self._track(info.get("return_value"), sockets)
            elif event == "http11.send_request_headers.started":
                # A pooled connection taken again reports no connect event,
                # and its response's stream only once the headers have come
                # (a server may hold them back for seconds): find it now.
                self._track(_sending_stream(), sockets)

        return trace

    def _credentials(self, method: str, content: bytes | None, deadline: float) -> dict[str, str]:
        assert self._auth is not None
        try:
            return self._auth.headers(method, self.url, content, deadline)
        except Timeout:
            raise self._hx.TimeoutException("authorization missed the deadline") from None
        except McpError as exc:
            raise Failure(exc, True) from None

    def _reauthorize(self, response: httpx.Response, sent: dict[str, str], deadline: float) -> bool:
        """Ask the auth hook for new credentials after a 401/403; True: retry."""
        assert self._auth is not None
        status = response.status_code
        try:
            return self._auth.refused(status, response.headers, sent, deadline)
        except Timeout:
            raise self._hx.TimeoutException("authorization missed the deadline") from None
        except McpError as exc:
            if status == 401 or isinstance(exc, LoginRequired):
                self._status.refused = True
                raise Failure(exc, True) from None
            raise Failure(exc, False) from None

    def _track(self, stream: object, sockets: _Sockets) -> None:
        get_extra_info = getattr(stream, "get_extra_info", None)
        if get_extra_info is None:
            return
        try:
            sock = get_extra_info("socket")
        except Exception:  # a foreign stream type
            return
        if not isinstance(sock, socket.socket) or sock in sockets:
            return
        sockets.append(sock)
        if self._owns_client:
            self._own_sockets.add(sock)
        if self._stopping.is_set() or sockets.abandoned:
            wake(sock)  # wake_all or close_stream already swept this exchange

    # ----------------------------------------------------------- bodies

    def read_body(self, response: httpx.Response, deadline: float) -> bytes:
        """The whole body, refused at ``max_frame_bytes`` without holding more,
        read by ``deadline`` (the watchdog ends a read that would go past it).

        A body too long fails only its own request: over HTTP each body
        answers one POST, and the connection it came on is dropped with it."""
        hx = self._hx
        limit = self._limits.max_frame_bytes
        self.check_encoding(response)
        length = response.headers.get("content-length")
        if length is not None and (
            not length.strip().isdigit() or len(length) > 18 or int(length) > limit
        ):
            declared = length.strip()
            raise self._body_too_long(limit, f"{declared} bytes" if declared.isdigit() else "unreadable length")
        parts: list[bytes] = []
        held = 0
        try:
            for chunk in response.iter_raw():
                held += len(chunk)
                if held > limit:
                    raise self._body_too_long(limit, f"at least {held} bytes")
                parts.append(chunk)
        except hx.TimeoutException:
            raise
        except hx.TransportError as exc:
            if self._stopping.is_set():
                raise Stopped from None
            if time.monotonic() >= deadline:
                raise hx.ReadTimeout("the deadline passed") from None
            raise Failure(
                ConnectionClosed(
                    f"the HTTP connection to server {self._server!r} broke during a "
                    f"reply ({type(exc).__name__})"
                ),
                True,
            ) from None
        if time.monotonic() >= deadline:
            # A shut-down socket may also read as a clean (short) end.
            raise hx.ReadTimeout("the deadline passed")
        return b"".join(parts)

    def _body_too_long(self, limit: int, amount: str) -> Failure:
        return Failure(
            ProtocolError(
                f"server {self._server!r} sent a JSON body of {amount}, over max_frame_bytes={limit}"
            ),
            False,
        )

    def check_encoding(self, response: httpx.Response) -> None:
        # We ask for identity: a compressed body could expand past every bound
        # before a single byte of it was counted.
        encoding = response.headers.get("content-encoding", "").strip().lower()
        if encoding not in ("", "identity"):
            raise Failure(
                ProtocolError(
                    f"server {self._server!r} sent a compressed body "
                    "(Accept-Encoding asked for identity)"
                ),
                True,
            )

    # ----------------------------------------------------------- waking

    def close_stream(self, request_id: int) -> bool:
        """Wake the exchange of ``request_id`` (its caller left); False if
        none is in flight."""
        with self._lock:
            key = self._by_request.get(request_id)
            tracked = self._inflight.get(key) if key is not None else None
            if tracked is None:
                return False
            # Set before the copy: a socket tracked after it wakes itself.
            tracked.abandoned = True
            sockets = list(tracked)
        for sock in sockets:
            wake(sock)
        return True

    def wake_all(self) -> None:
        """Wake every blocked read (teardown: the requests they serve have
        already failed). Call after setting ``stopping``: a socket connected
        later is woken as it is tracked."""
        with self._lock:
            sockets = [s for group in self._inflight.values() for s in group]
        sockets.extend(self._own_sockets)
        for sock in sockets:
            wake(sock)

    def stop_watch(self) -> None:
        self._watch.close()

    def close_client(self) -> None:
        if self._owns_client:
            with contextlib.suppress(Exception):
                self.client.close()
