"""The contract between the session core and a transport.

A transport moves frames; the session core (``session.core._Core``) decides what
they mean. The core hands a transport :class:`Outbound` items and calls the
methods of :class:`Transport`; a transport calls back only the methods of
:class:`Sink`. Neither imports the other: this module is all they share.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from ..protocol.errors import McpError

if TYPE_CHECKING:
    import socket

__all__ = [
    "NOTIFICATION",
    "REPLY",
    "REQUEST",
    "Leader",
    "Outbound",
    "ShutdownOnce",
    "Sink",
    "Transport",
    "wake",
]

REQUEST = "request"
NOTIFICATION = "notification"
REPLY = "reply"


@dataclass(slots=True)
class Outbound:
    """One frame to send, with what the core knows about it, so no transport
    parses its own outbound bytes. Built once per request (except for a
    :class:`Leader`, which takes the frame and id alone), and never changed
    after: a dataclass with slots, whose generated
    ``__init__`` costs less than a named tuple's ``__new__`` (and far less
    than a frozen dataclass's, which goes through ``object.__setattr__``).
    A variant is made with ``dataclasses.replace``.

    ``kind``: ``REQUEST``, ``NOTIFICATION`` or ``REPLY``. ``request_id``: a
    request's id (for a ``notifications/cancelled``, the id of the request it
    cancels). ``headers``: the request's own MCP headers (2026-07-28 era, HTTP
    only; a request that has them is sent the modern way). ``hold``: a later
    deadline until which the reply may still be awaited (progress may extend
    the caller's deadline up to it)."""

    frame: bytes
    kind: str
    request_id: int | None = None
    method: str | None = None
    headers: Mapping[str, str] | None = None
    hold: float | None = None


class Leader(Protocol):
    """The optional capability of a transport whose callers may read their own
    replies (stdio): no hand-off between threads on the hot path."""

    def exchange(
        self, frame: bytes, request_id: int | None, timeout: float, done: Callable[[], bool], deadline: float
    ) -> bool:
        """``send`` a request, then read replies in the calling thread until
        ``done()`` or ``deadline`` if nobody else reads. False if the frame
        could not be queued within ``timeout`` s. (A leader carries
        everything in the frame: it takes the frame and the request's id, so
        its callers need not build an :class:`Outbound`.)"""

    def lead(self, done: Callable[[], bool], deadline: float, linger: bool = False) -> None:
        """Read replies in the calling thread until ``done()`` or ``deadline``,
        if nobody else reads (returning at once is allowed). ``linger``: the
        caller will soon lead again (many calls in flight): the transport may
        keep other readers off for a moment, within its own bound."""


class Transport(Protocol):
    """What the session core needs from the thing that moves its frames."""

    @property
    def leader(self) -> Leader | None:
        """This transport as a :class:`Leader`, or None: set at construction."""

    def send(self, item: Outbound, timeout: float) -> bool:
        """Queue an item, waiting at most ``timeout`` s for room; False if none came."""

    def send_nowait(self, item: Outbound) -> bool:
        """Queue an item only if there is room now (best effort: a
        ``notifications/cancelled``, a request nobody waits for)."""

    def reply(self, frame: bytes) -> bool:
        """Send a reply to a server request without making a caller wait for
        room; False if it could not be queued within ``request_timeout_ms``
        (the session then ends)."""

    def listen(self) -> None:
        """Start receiving what the server sends outside any request's reply,
        where that needs a stream of its own (Streamable HTTP's GET); a no-op
        elsewhere. Idempotent."""

    def shutdown(self, wait: bool) -> None:
        """Tear down (idempotent). ``wait``: block until a teardown already
        running in another thread has finished."""


class EraName(Protocol):
    """All a transport may know of the session's protocol era: its name."""

    @property
    def name(self) -> str:
        """``"modern"`` (2026-07-28) or ``"legacy"`` (the handshake era)."""


class Sink(Protocol):
    """What a transport may call on the session core (``session.core._Core``)."""

    @property
    def protocol_version(self) -> str | None:
        """The negotiated version, once the handshake passed (sent as
        ``MCP-Protocol-Version``)."""

    @property
    def era(self) -> EraName:
        """The era: in the 2026-07-28 one (``"modern"``) there are no client
        notifications or replies over HTTP, and no session to DELETE."""

    @property
    def terminal(self) -> McpError | None:
        """Why the session ended, once it has."""

    def failed(self) -> bool:
        """Whether the session ended for a reason other than the caller closing it."""

    def receive(self, line: bytes) -> None:
        """One inbound frame. Raises nothing: a broken rule ends the session."""

    def terminate(self, error: McpError, *, wait: bool = False) -> None:
        """End the session with ``error`` (the first call wins)."""

    def claim(self, request_id: int) -> bool:
        """Asked before writing a request: False means its caller gave up."""

    def waiting(self, request_id: int) -> bool:
        """Whether a caller still waits for this request's reply."""

    @property
    def table_size(self) -> Callable[[], int]:
        """How many requests wait for a reply, as a C method a transport may
        keep and call on a hot path (a hint: read without a lock)."""

    def fail(self, request_id: int, error: McpError) -> None:
        """Fail one request without ending the session."""

    def reopen(self, deadline: float) -> None:
        """Open a new protocol session on this transport (an HTTP server
        forgot ours): the handshake again at the version in use, by
        ``deadline``. Raises :class:`McpError` if the server will not."""

    def transport_closed(self, stderr_tail: str) -> None:
        """Called once, when the teardown is complete."""


class ShutdownOnce:
    """The teardown runs once, in the first thread that asks for it; later
    callers may wait for it to finish."""

    __slots__ = ("_done", "_lock", "begun")

    def __init__(self) -> None:
        # Guards the change of ``begun``: the one decision of which thread
        # tears down. Nobody waits on it for long; later callers wait on _done.
        self._lock = threading.Lock()
        # Read without the lock (a plain slot: hot paths look at it).
        self.begun = False
        self._done = threading.Event()

    def begin(self) -> bool:
        """True for the one caller that must run the teardown."""
        with self._lock:
            mine = not self.begun
            self.begun = True
        return mine

    def finished(self) -> None:
        self._done.set()

    def wait(self, timeout: float | None = None) -> bool:
        return self._done.wait(timeout)

    def run(self, teardown: Callable[[], None], wait: bool) -> None:
        """Run ``teardown`` if nobody has; else, with ``wait``, wait for it."""
        if not self.begin():
            if wait:
                self._done.wait()
            return
        try:
            teardown()
        finally:
            self._done.set()


def wake(sock: socket.socket) -> None:
    """Make a read blocked on ``sock`` in another thread return now.

    ``shutdown`` wakes it; ``close`` would not. The base-class method is used
    so an SSL socket is not unwrapped under the reading thread's feet.
    """
    import socket  # here: only HTTP transports have sockets, and stdio needs none

    with contextlib.suppress(OSError, ValueError):
        socket.socket.shutdown(sock, socket.SHUT_RDWR)
