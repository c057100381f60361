"""The clock of a connect's opening: how long the first requests may take.

Two budgets, one after the other:

- ``start_timeout_ms`` while the server has read nothing of what was sent to
  it. A server process that is alive but still starting (an ``npx`` or
  ``uvx`` installing its package, a container being pulled) reads nothing,
  and may take minutes the first time.
- ``handshake_timeout_ms`` from the moment the server is first seen reading:
  the whole negotiation (the era probe, its grace, the handshake) must be
  done by then.

"Seen reading" is the stdin pipe seen empty after a request was written to
it (Linux tells how many bytes a pipe holds; elsewhere, and over HTTP,
nothing tells, and the handshake budget counts from the first request).
Every wait of the opening -- a request's reply, the race's phases -- takes
its bound from one :class:`OpeningClock`, so no path adds time of its own.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from typing import TYPE_CHECKING

from ...protocol.errors import Timeout
from ...protocol.limits import Limits, seconds

if TYPE_CHECKING:
    from ...transports.contract import Outbound, Transport
    from ..pending import _Watched

__all__ = ["TICK", "OpeningClock", "OpeningWatch", "observing"]

TICK = 0.01
"""How often the pipe is looked at while a request waits to be read (s)."""


# Told, on the connecting thread, when a server process is started and when
# it is first seen reading ("starting", then "reading"): how the CLI says a
# server is still starting. Never told anything a server sent.
_OBSERVER: ContextVar[Callable[[str, str], None] | None] = ContextVar("mcp_sync_opening", default=None)


@contextlib.contextmanager
def observing(observer: Callable[[str, str], None]) -> Iterator[None]:
    """Connects inside call ``observer(server, "starting")`` when a server
    process starts and has read nothing, and ``observer(server, "reading")``
    when it is first seen reading (stdio on Linux only)."""
    token = _OBSERVER.set(observer)
    try:
        yield
    finally:
        _OBSERVER.reset(token)


class OpeningClock:
    """When the opening of one server process must be done by.

    Read and written by the thread that negotiates (and, for the race, by the
    attempts' threads under the race's condition): it holds plain values and
    makes no wait of its own."""

    __slots__ = ("_observer", "_unread", "budget", "cap", "limits", "read_at", "server", "started")

    def __init__(self, server: str, limits: Limits, transport: object, *, cap: float | None = None) -> None:
        self.limits = limits
        self.server = server
        self.started = time.monotonic()
        self.budget = seconds(limits.handshake_timeout_ms)
        # No deadline of this clock passes ``cap`` (a fresh process started
        # for the same connect gets what is left of the first one's budget).
        self.cap = cap
        unread: Callable[[], int | None] | None = getattr(transport, "stdin_unread", None)
        if unread is not None and unread() is None:
            unread = None  # the platform cannot tell
        self._unread = unread
        # When the server was first seen reading (None: not yet).
        self.read_at: float | None = None if unread is not None else self.started
        self._observer = _OBSERVER.get() if unread is not None else None
        if self._observer is not None:
            self._observer(server, "starting")

    @property
    def tells(self) -> bool:
        """Whether the pipe tells when the server reads (stdio on Linux)."""
        return self._unread is not None

    @property
    def reading(self) -> bool:
        """Whether the server has been seen reading (always, where nothing tells)."""
        return self.read_at is not None

    @property
    def deadline(self) -> float:
        """The opening's bound now: the start budget until the server reads,
        then the handshake budget from its first read."""
        if self.read_at is None:
            bound = self.started + seconds(self.limits.start_timeout_ms)
        else:
            bound = self.read_at + self.budget
        return bound if self.cap is None else min(bound, self.cap)

    def look(self) -> bool:
        """Look at the pipe once (call it only after a request was written or
        queued): whether the server has been seen reading, or has read
        everything sent so far (also after its process ended: the pipe keeps
        what it left). Notes the first time it is seen so."""
        if self.read_at is not None:
            return True
        assert self._unread is not None
        left = self._unread()
        if left is None or left == 0:
            self.read_at = time.monotonic()
            if self._observer is not None:
                self._observer(self.server, "reading")
            return True
        return False

    def describe(self, method: str) -> Callable[[], str]:
        """What a timeout of ``method`` says: which budget ran out."""

        def text() -> str:
            if self.read_at is None:
                budget = f"start_timeout_ms={self.limits.start_timeout_ms}: it read nothing, still starting?"
            else:
                budget = f"handshake_timeout_ms={self.limits.handshake_timeout_ms}"
            return f"{method} with server {self.server!r} ({budget})"

        return text

    def not_read(self) -> Timeout:
        """The error of a server that read nothing by the start budget."""
        return Timeout(
            f"server {self.server!r} read nothing within start_timeout_ms="
            f"{self.limits.start_timeout_ms} (it may still be starting: a first "
            "npx or uvx run installs its package)"
        )


class OpeningWatch:
    """The wait of one opening request sent alone (the handshake, or
    ``server/discover``): its :class:`~..pending.Watch`, whose deadline is the
    clock's, moved once the server is seen reading."""

    __slots__ = ("_cond", "clock", "deadline")

    def __init__(self, clock: OpeningClock) -> None:
        self.clock = clock
        self.deadline = clock.deadline
        # Guards nothing but the wait: the reply's arrival notifies it.
        self._cond = threading.Condition(threading.Lock())

    def wake(self) -> None:
        with self._cond:
            self._cond.notify_all()

    def retry(self) -> None:
        """Nothing to reset: a retry at another version keeps the clock."""

    def follow(self, entry: _Watched, transport: Transport, item: Outbound, timeout: float) -> bool:
        if not transport.send(item, timeout):
            return False
        clock = self.clock
        with self._cond:
            while not entry.done():
                reading = clock.look()
                self.deadline = clock.deadline
                remaining = self.deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._cond.wait(min(remaining, threading.TIMEOUT_MAX if reading else TICK))
        return True
