"""Progress: ``call_tool(..., on_progress=callback)``.

A call that asks for progress sends a ``progressToken`` of its own. The
thread reading the server's output only files each ``notifications/progress``
under its token (a token this session did not hand out is ignored) and wakes
the caller; the caller runs its callback on its own thread, in order, between
reads. So a slow callback slows only its own call, never the reader, and every
callback of a call has run by the time ``call_tool`` returns. A callback that
raises ends the call with that exception (the request is abandoned and
cancelled like a timed-out one).

With ``progress_extends_deadline=True`` each notification moves the call's
deadline to "now + timeout", never past a hard maximum (``max_timeout_ms``,
by default ten times the timeout): a server that keeps reporting progress
forever still meets a deadline.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, cast

from ..protocol.errors import ProtocolError
from ..protocol.limits import MAX_SAFE_INTEGER, check_limit, seconds

if TYPE_CHECKING:
    from ..transports.contract import Outbound, Transport
    from .pending import _Watched

__all__ = [
    "MAX_PROGRESS_MESSAGE_CHARS",
    "ProgressCallback",
    "ProgressRoute",
    "ProgressRoutes",
    "open_route",
]

ProgressCallback = Callable[[float, "float | None", "str | None"], None]
"""``callback(progress, total, message)``: ``total`` and ``message`` may be ``None``."""

MAX_PENDING_EVENTS = 64
"""Notifications held for a caller that has not run them yet; past this the
oldest are dropped (the newest progress is the one that matters)."""
MAX_PROGRESS_MESSAGE_CHARS = 1024
"""A progress message longer than this is cut (with an ellipsis)."""
DEFAULT_EXTENSION_FACTOR = 10
"""Without ``max_timeout_ms``, progress may extend a call to this many times its timeout."""


class ProgressRoute:
    """One caller's progress token. The reader :meth:`push`-es, the caller
    :meth:`run`-s; ``deadline`` is the caller's, moved by progress when asked."""

    def __init__(
        self,
        token: int,
        callback: ProgressCallback | None,
        timeout: float,
        extends: bool,
        hard_deadline: float,
    ) -> None:
        self.token = token
        self._callback = callback
        self._timeout = timeout
        self._extends = extends
        self.hard_deadline = hard_deadline
        self.deadline = min(time.monotonic() + timeout, hard_deadline)
        # Guards _events and _last; its condition wakes the waiting caller.
        self._cond = threading.Condition(threading.Lock())
        self._events: deque[tuple[float, float | None, str | None]] = deque(maxlen=MAX_PENDING_EVENTS)
        self._last = -math.inf

    # ------------------------------------------------------- reader side

    def push(self, progress: float, total: float | None, message: str | None) -> None:
        with self._cond:
            # The spec says progress MUST increase: anything else is noise
            # (and must not keep extending a deadline).
            if progress <= self._last:
                return
            self._last = progress
            self._events.append((progress, total, message))
            if self._extends:
                self.deadline = min(
                    max(self.deadline, time.monotonic() + self._timeout), self.hard_deadline
                )
            self._cond.notify_all()

    def wake(self) -> None:
        with self._cond:
            self._cond.notify_all()

    def pending(self) -> bool:
        return bool(self._events)

    # ------------------------------------------------------- caller side

    def run(self) -> None:
        """Run the queued callbacks, oldest first, on the calling thread."""
        while True:
            with self._cond:
                if not self._events:
                    return
                event = self._events.popleft()
            if self._callback is not None:
                self._callback(*event)

    def retry(self) -> None:
        """A new request of the same call begins (a retry after
        ``input_required``): its progress counts from scratch."""
        with self._cond:
            self._last = -math.inf

    def follow(self, entry: _Watched, transport: Transport, item: Outbound, timeout: float) -> bool:
        """Send ``item`` and wait for its reply, running callbacks as they
        come, until the (movable) deadline. False: the deadline came first."""

        def ready() -> bool:
            return entry.done() or bool(self._events)

        if self._extends and self.hard_deadline > self.deadline:
            # A transport reading on its own threads must keep reading past
            # the first deadline, up to the furthest progress may move it.
            item = dataclasses.replace(item, hold=self.hard_deadline)
        leader = transport.leader
        sent = (
            transport.send(item, timeout)
            if leader is None
            else leader.exchange(item.frame, item.request_id, timeout, ready, self.deadline)
        )
        if not sent:
            return False
        while True:
            self.run()
            if entry.done():
                return True
            if self.deadline <= time.monotonic():
                return False
            # Read for ourselves if nobody else does; else wait to be woken.
            if leader is not None:
                leader.lead(ready, self.deadline)
            with self._cond:
                remaining = self.deadline - time.monotonic()
                if not ready() and remaining > 0:
                    self._cond.wait(seconds_clamped(remaining))

    def pause(self, interval: float, ended: threading.Event) -> None:
        """Wait ``interval`` s (a task's poll interval), running callbacks as
        they come; returns early when the session ends."""
        until = time.monotonic() + interval
        while not ended.is_set():
            self.run()
            remaining = until - time.monotonic()
            if remaining <= 0:
                return
            with self._cond:
                if not self._events:
                    self._cond.wait(seconds_clamped(remaining))


def seconds_clamped(value: float) -> float:
    return min(value, threading.TIMEOUT_MAX)


class ProgressRoutes:
    """The tokens handed out on this session and the callers they belong to."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._routes: dict[int, ProgressRoute] = {}
        self._tokens = itertools.count(1)

    def open(
        self,
        callback: ProgressCallback | None,
        timeout: float,
        extends: bool,
        hard_deadline: float,
        make: Callable[[int, ProgressCallback | None, float, bool, float], ProgressRoute] | None = None,
    ) -> ProgressRoute:
        """A route with a fresh token; ``make`` builds it (a subclass) instead
        of :class:`ProgressRoute` (a call under a cancel token)."""
        route = (make or ProgressRoute)(next(self._tokens), callback, timeout, extends, hard_deadline)
        with self._lock:
            self._routes[route.token] = route
        return route

    def close(self, route: ProgressRoute) -> None:
        with self._lock:
            self._routes.pop(route.token, None)

    def wake_all(self) -> None:
        with self._lock:
            routes = list(self._routes.values())
        for route in routes:
            route.wake()

    def notify(self, params: object) -> None:
        """A ``notifications/progress`` from the reader thread. Anything
        malformed, or for a token we did not hand out, is dropped."""
        if not isinstance(params, Mapping):
            return
        token = params.get("progressToken")
        if type(token) is not int:
            return  # ours are integers
        with self._lock:
            route = self._routes.get(token)
        if route is None:
            return
        progress = params.get("progress")
        total = params.get("total")
        message = params.get("message")
        if not _finite(progress) or (total is not None and not _finite(total)):
            return
        if message is not None:
            if not isinstance(message, str):
                message = None
            elif len(message) > MAX_PROGRESS_MESSAGE_CHARS:
                message = message[: MAX_PROGRESS_MESSAGE_CHARS - 1] + "…"
        route.push(float(progress), None if total is None else float(total), message)  # type: ignore[arg-type]


def _finite(value: object) -> bool:
    return type(value) in (int, float) and math.isfinite(value)  # type: ignore[arg-type]


def open_route(
    routes: ProgressRoutes,
    callback: ProgressCallback | None,
    timeout_ms: int,
    extends: bool,
    max_timeout_ms: int | None,
) -> tuple[ProgressRoute, int]:
    """A route for one call (close it with ``routes.close``), and the
    furthest its deadline may move, in ms."""
    if not (callback is None or callable(cast(object, callback))):
        raise ProtocolError("on_progress must be callable")
    if max_timeout_ms is None:
        hard_ms = min(timeout_ms * DEFAULT_EXTENSION_FACTOR, MAX_SAFE_INTEGER) if extends else timeout_ms
    else:
        hard_ms = max(check_limit("max_timeout_ms", max_timeout_ms), timeout_ms)
    route = routes.open(callback, seconds(timeout_ms), extends, time.monotonic() + seconds(hard_ms))
    return route, hard_ms
