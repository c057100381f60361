"""Cancelling a blocking call from another thread: ``cancel=`` on every
request method of ``Session`` (and ``Servers.call_tool``).

A cancel token is a :class:`CancelScope` or a plain ``threading.Event``.
When it fires, the request the call is waiting on is withdrawn from the
session's request table exactly as ``ToolCall.cancel()`` withdraws a
submitted call (``_Core.withdraw``: ``notifications/cancelled`` if it was
written, or over 2026-07-28 Streamable HTTP its reply stream closed), its
waiter fails with :class:`~mcp_sync.Cancelled` at once, and a task the call
was following is cancelled by the follower itself (``tasks/cancel`` where the
era says so), as on a timeout. A scope's deadline bounds every wait of every
call made under it.

Nothing here is on the path of a call made without a token: ``Session``
hands a feature its core as it is, or, for a call with a token,
:class:`Guarded`, a view of the core that satisfies the same contracts and
sends each request with a :class:`_Flight`. A flight is the request's
``Watch``: while its caller waits, the token knows how to withdraw it. The
caller then waits on its entry and never reads a stdio server's output
itself (it does not lead): a leader blocked reading would not notice a
cancel until its deadline, while a waiter's entry is released by the cancel.

A ``CancelScope`` calls its watchers itself. A plain ``threading.Event``
cannot tell anyone it was set, so while requests wait under one, one library
thread per event (``mcp_sync-cancel-event``) waits on it, in slices of
:data:`EVENT_LINGER`, and leaves one slice after the last request under it
ended.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable, Mapping
from functools import partial
from typing import TYPE_CHECKING, Any, ClassVar, TypeAlias

from .. import _log
from ..protocol.errors import Cancelled, InvalidOption, Timeout
from ..protocol.limits import check_limit, seconds
from .call_plan import ask as ask_plan
from .call_plan import session_call
from .listing import walk as walk_pages
from .progress import ProgressCallback, ProgressRoute, ProgressRoutes, seconds_clamped

if TYPE_CHECKING:
    from ..protocol.catalog import CallToolResult, PageWalk, Snapshot, Tool
    from ..protocol.errors import McpError
    from ..protocol.limits import Limits
    from ..transports.contract import Leader, Outbound, Transport
    from .call_plan import CallingCore
    from .eras.contract import Era, EraInbound
    from .pending import Entry, Watch, _Watched

__all__ = ["EVENT_LINGER", "CancelScope", "CancelToken", "Guarded", "call_tool", "guarded", "wait_or_cancel"]

EVENT_LINGER = 0.5
"""Seconds the thread watching a plain ``threading.Event`` waits at a time:
it leaves this long after the last request under the event ended."""
CANCELLED_REASON = "cancelled by the client"
"""The ``reason`` of the ``notifications/cancelled`` a fired token sends (as ``ToolCall.cancel()``'s)."""
_SCOPE_DEADLINE = "the deadline of its CancelScope"


class CancelScope:
    """A cancel token for blocking calls: pass it as ``cancel=`` to any
    number of calls, on any threads; :meth:`cancel` (from any thread) ends
    every one of them still waiting with :class:`~mcp_sync.Cancelled`, tells
    the server, and refuses every later call made under it before anything
    is sent.

    ``timeout_ms``: a deadline counted from now that bounds every wait of
    every call under the scope, whatever the call's own ``timeout_ms``; a
    call that meets it raises :class:`~mcp_sync.Timeout` naming the scope.

    A context manager: leaving the ``with`` block cancels the scope, so calls
    other threads still make under it end at once (the block's own calls
    have returned by then). A scope is not ambient: a call is under it only
    when it is passed as ``cancel=``. Cancelling is idempotent and
    thread-safe, and a scope cannot be reset: make a new one.
    """

    __slots__ = ("_fired", "_lock", "_watchers", "deadline", "timeout_ms")

    def __init__(self, *, timeout_ms: int | None = None) -> None:
        self.timeout_ms = None if timeout_ms is None else check_limit("timeout_ms", timeout_ms)
        """The deadline given, in ms from the scope's creation (``None``: none)."""
        self.deadline: float | None = None if timeout_ms is None else time.monotonic() + seconds(timeout_ms)
        """That deadline as a ``time.monotonic()`` value (``None``: none)."""
        # Guards _fired and _watchers: taken for a few steps, never while a
        # watcher runs.
        self._lock = threading.Lock()
        self._fired = False
        self._watchers: dict[int, Callable[[], None]] = {}

    def cancel(self) -> None:
        """Cancel every call under the scope, now and later. From any thread,
        any number of times."""
        with self._lock:
            if self._fired:
                return
            self._fired = True
            watchers = list(self._watchers.values())
            self._watchers.clear()
        for watcher in watchers:
            watcher()

    @property
    def cancelled(self) -> bool:
        """Whether the scope was cancelled (by :meth:`cancel` or by leaving
        its ``with`` block) or its deadline has passed."""
        deadline = self.deadline
        return self._fired or (deadline is not None and time.monotonic() >= deadline)

    def _watch(self, watcher: Callable[[], None]) -> int | None:
        """Call ``watcher`` when the scope is cancelled; a key for
        :meth:`_unwatch`, or ``None`` (not registered) if it already is."""
        key = next(_KEYS)
        with self._lock:
            if self._fired:
                return None
            self._watchers[key] = watcher
        return key

    def _unwatch(self, key: int) -> None:
        with self._lock:
            self._watchers.pop(key, None)

    def __enter__(self) -> CancelScope:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.cancel()

    def __repr__(self) -> str:
        state = "cancelled" if self.cancelled else "open"
        timeout = "" if self.timeout_ms is None else f" timeout_ms={self.timeout_ms}"
        return f"<CancelScope{timeout} {state}>"


CancelToken: TypeAlias = "CancelScope | threading.Event"
"""What ``cancel=`` takes."""

_KEYS = itertools.count(1)


# ------------------------------------------------------------------ tokens


def _check(cancel: object) -> None:
    if not isinstance(cancel, (CancelScope, threading.Event)):
        raise InvalidOption(f"option cancel must be a CancelScope or a threading.Event, got {type(cancel).__name__}")


def fired(cancel: CancelToken) -> bool:
    """Whether ``cancel`` was fired (a scope's deadline is not a cancel)."""
    return cancel._fired if isinstance(cancel, CancelScope) else cancel.is_set()


def watch(cancel: CancelToken, watcher: Callable[[], None]) -> Any:
    """Call ``watcher`` (once, from the firing thread or the event's
    watching thread) when ``cancel`` fires; a handle for :func:`unwatch`, or
    ``None`` when it has fired already (``watcher`` is then not called)."""
    if isinstance(cancel, CancelScope):
        key = cancel._watch(watcher)
        return None if key is None else (cancel, key)
    return _EventWatch.add(cancel, watcher)


def unwatch(handle: Any) -> None:
    """Forget a watcher (it may still be running, or about to)."""
    owner, key = handle
    owner._unwatch(key)


class _EventWatch:
    """The library thread that waits on one plain ``threading.Event`` while
    requests wait under it. ``_LOCK`` guards the registry and every watch's
    watchers; the thread takes it after each slice to decide whether to
    leave, so a watcher added meanwhile either finds it or starts a new one."""

    _LOCK: ClassVar[threading.Lock] = threading.Lock()
    _REGISTRY: ClassVar[dict[int, _EventWatch]] = {}

    def __init__(self, event: threading.Event) -> None:
        self.event = event
        self.watchers: dict[int, Callable[[], None]] = {}

    @classmethod
    def add(cls, event: threading.Event, watcher: Callable[[], None]) -> tuple[_EventWatch, int] | None:
        key = next(_KEYS)
        with cls._LOCK:
            if event.is_set():
                return None
            found = cls._REGISTRY.get(id(event))
            if found is None:
                # (The registry holds the event, so its id is not reused meanwhile.)
                found = cls._REGISTRY[id(event)] = _EventWatch(event)
                threading.Thread(target=found._run, name="mcp_sync-cancel-event", daemon=True).start()
            found.watchers[key] = watcher
        return found, key

    def _unwatch(self, key: int) -> None:
        with self._LOCK:
            self.watchers.pop(key, None)

    def _run(self) -> None:
        event = self.event
        while True:
            is_set = event.wait(EVENT_LINGER)
            with self._LOCK:
                watchers = list(self.watchers.values()) if is_set else []
                if is_set or not self.watchers:
                    self.watchers.clear()
                    del self._REGISTRY[id(event)]
                    break
        for watcher in watchers:
            watcher()


# ------------------------------------------------------------------ one request under a token


class _Unled:
    """A transport as a request under a token uses it: never read by the
    caller itself (no leader), so a cancel wakes it at once."""

    __slots__ = ("_transport",)

    leader: Leader | None = None

    def __init__(self, transport: Transport) -> None:
        self._transport = transport

    def send(self, item: Outbound, timeout: float) -> bool:
        return self._transport.send(item, timeout)

    def send_nowait(self, item: Outbound) -> bool:
        return self._transport.send_nowait(item)

    def reply(self, frame: bytes) -> bool:
        return self._transport.reply(frame)

    def listen(self) -> None:
        self._transport.listen()

    def shutdown(self, wait: bool) -> None:
        self._transport.shutdown(wait)


class _Flight:
    """One request of a call under a token: the ``Watch`` its entry follows.
    While the caller waits, a fired token withdraws the request
    (``core.withdraw``: the server is told if it was written) and fails the
    entry with :class:`Cancelled`. With an ``inner`` watch (the call's
    progress route) that watch does the following."""

    __slots__ = ("_cancellable", "_core", "_describe", "_inner", "_request_id", "cancel", "deadline")

    def __init__(  # noqa: PLR0913, PLR0917
        self,
        core: CallingCore,
        cancel: CancelToken,
        inner: Watch | None,
        deadline: float,
        describe: Callable[[], str],
        cancellable: bool,
    ) -> None:
        self._core = core
        self.cancel = cancel
        self._inner = inner
        self.deadline = deadline
        self._describe = describe
        self._cancellable = cancellable
        self._request_id = 0

    def wake(self) -> None:
        if self._inner is not None:
            self._inner.wake()

    def retry(self) -> None:
        if self._inner is not None:
            self._inner.retry()

    def follow(self, entry: _Watched, transport: Transport, item: Outbound, timeout: float) -> bool:
        assert item.request_id is not None
        self._request_id = item.request_id
        handle = watch(self.cancel, self.fire)
        if handle is None:
            self.fire()  # fired before the frame was handed on: it is never written
            return True
        try:
            if self._inner is not None:
                return self._inner.follow(entry, _Unled(transport), item, timeout)
            if not transport.send(item, timeout):
                return False
            return entry.wait(max(0.0, self.deadline - time.monotonic()))
        finally:
            unwatch(handle)

    def fire(self) -> None:
        """The token fired: withdraw the request (unless a reply or the end
        of the session took it first) and fail its waiter."""
        entry = self._core.withdraw(self._request_id, CANCELLED_REASON, self._cancellable)
        if entry is not None:
            entry._failed(Cancelled(f"{self._describe()} was cancelled"))


class _GuardedRoute(ProgressRoute):
    """A call's progress route under a token: a pause (a task's poll
    interval) ends when the token fires, so the follower's next request
    raises :class:`Cancelled` and the task is cancelled."""

    def __init__(  # noqa: PLR0913, PLR0917
        self,
        cancel: CancelToken,
        token: int,
        callback: ProgressCallback | None,
        timeout: float,
        extends: bool,
        hard_deadline: float,
    ) -> None:
        super().__init__(token, callback, timeout, extends, hard_deadline)
        self._cancel = cancel

    def pause(self, interval: float, ended: threading.Event) -> None:
        cancel = self._cancel
        handle = watch(cancel, self.wake)
        if handle is None:
            return
        try:
            until = time.monotonic() + interval
            while not (ended.is_set() or fired(cancel)):
                self.run()
                remaining = until - time.monotonic()
                if remaining <= 0:
                    return
                with self._cond:
                    if not (self._events or fired(cancel)):
                        self._cond.wait(seconds_clamped(remaining))
        finally:
            unwatch(handle)


class _GuardedRoutes(ProgressRoutes):
    """The session's progress routes as a call under a token opens them:
    each a :class:`_GuardedRoute`, its furthest deadline no later than the
    scope's. Only ``open`` and ``close`` are used, and both go to the
    session's own table (which files the server's notifications)."""

    def __init__(self, routes: ProgressRoutes, cancel: CancelToken) -> None:
        # (ProgressRoutes.__init__ is not run: this is a view of a table, not one.)
        self._table = routes
        self._cancel = cancel

    def open(
        self,
        callback: ProgressCallback | None,
        timeout: float,
        extends: bool,
        hard_deadline: float,
        make: Callable[[int, ProgressCallback | None, float, bool, float], ProgressRoute] | None = None,
    ) -> ProgressRoute:
        cancel = self._cancel
        deadline = cancel.deadline if isinstance(cancel, CancelScope) else None
        if deadline is not None:
            hard_deadline = min(hard_deadline, deadline)
        return self._table.open(callback, timeout, extends, hard_deadline, partial(_GuardedRoute, cancel))

    def close(self, route: ProgressRoute) -> None:
        self._table.close(route)


# ------------------------------------------------------------------ the core, under a token


class Guarded:
    """The session core as one call under a cancel token sees it: the same
    contracts (``CallingCore``, so every feature and the call plan take it),
    with every request sent as a :class:`_Flight` and every wait bounded by a
    scope's deadline. Made per call; everything else goes to the core."""

    __slots__ = (
        "_cancel", "_core", "_routes", "client_capabilities", "ended", "era", "limits", "server",
        "server_capabilities", "transport", "validate_output",
    )  # fmt: skip

    def __init__(self, core: CallingCore, cancel: CancelToken, routes: ProgressRoutes | None = None) -> None:
        self._core = core
        self._cancel = cancel
        self._routes = routes  # the session's progress tokens (for call_tool only)
        self.server: str = core.server
        self.limits: Limits = core.limits
        self.transport: Transport | None = core.transport
        self.ended: threading.Event = core.ended
        self.client_capabilities: Mapping[str, Any] = core.client_capabilities
        self.server_capabilities: Mapping[str, Any] = core.server_capabilities
        self.era: Era = core.era
        self.validate_output: bool = core.validate_output

    # ------------------------------------------------------------ bounds

    def _left(self, timeout: float, describe: Callable[[], str]) -> float:
        """``timeout``, cut to what is left of a scope's deadline; raises
        when the token fired, or the deadline passed, before the request."""
        cancel = self._cancel
        if fired(cancel):
            raise Cancelled(f"{describe()} was cancelled")
        deadline = cancel.deadline if isinstance(cancel, CancelScope) else None
        if deadline is None:
            return timeout
        left = deadline - time.monotonic()
        if left <= 0:
            raise Timeout(f"{describe()} missed {_SCOPE_DEADLINE} (timeout_ms={self._scope_ms()})")
        return min(timeout, left)

    def _scope_ms(self) -> int | None:
        return self._cancel.timeout_ms if isinstance(self._cancel, CancelScope) else None

    def _named(self, error: Timeout) -> Timeout:
        """A timeout that the scope's deadline caused says so."""
        cancel = self._cancel
        deadline = cancel.deadline if isinstance(cancel, CancelScope) else None
        if deadline is None or time.monotonic() < deadline or _SCOPE_DEADLINE in error.message:
            return error
        return Timeout(f"{error.message} ({_SCOPE_DEADLINE}, timeout_ms={self._scope_ms()})")

    # ------------------------------------------------------------ requests

    def request(  # noqa: PLR0913
        self,
        method: str,
        params: dict[str, Any],
        timeout: float,
        describe: Callable[[], str],
        *,
        cancellable: bool = True,
        watch: Watch | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> Any:
        core = self._core
        if method == "tasks/cancel":
            # The follower cancelling the call's task, after the token fired.
            return core.request(
                method, params, timeout, describe, cancellable=cancellable, watch=watch, headers=headers
            )
        timeout = self._left(timeout, describe)
        flight = _Flight(core, self._cancel, watch, time.monotonic() + timeout, describe, cancellable)
        try:
            return core.request(
                method, params, timeout, describe, cancellable=cancellable, watch=flight, headers=headers
            )
        except Timeout as exc:
            raise self._named(exc) from None

    def ask(self, method: str, params: dict[str, Any], timeout: float, describe: Callable[[], str]) -> Any:
        return ask_plan(self, method, params, self._left(timeout, describe), describe)

    def walk(
        self,
        walk: PageWalk,
        timeout: float,
        budget: str,
        params: Mapping[str, Any] | None = None,
        *,
        deadline: float | None = None,
    ) -> None:
        cancel = self._cancel
        scope = cancel.deadline if isinstance(cancel, CancelScope) else None
        if scope is not None:
            deadline = scope if deadline is None else min(deadline, scope)
        try:
            walk_pages(self, walk, timeout, budget, params, deadline)
        except Timeout as exc:
            raise self._named(exc) from None

    def call_tool(  # noqa: PLR0913, PLR0917
        self,
        name: str,
        arguments: Mapping[str, Any] | None,
        timeout_ms: int | None,
        traceparent: str | None,
        meta: Mapping[str, Any] | None,
        on_progress: ProgressCallback | None,
        extends: bool,
        max_timeout_ms: int | None,
        task: bool | None,
    ) -> CallToolResult:
        assert self._routes is not None
        routes = _GuardedRoutes(self._routes, self._cancel)
        try:
            return session_call(
                self, routes, name, arguments, timeout_ms, traceparent, meta, on_progress, extends,
                max_timeout_ms, task,
            )  # fmt: skip
        except Timeout as exc:
            raise self._named(exc) from None

    # ------------------------------------------------------------ the rest is the core's

    @property
    def catalog(self) -> Snapshot:
        return self._core.catalog

    @catalog.setter
    def catalog(self, snapshot: Snapshot) -> None:
        self._core.catalog = snapshot

    @property
    def inbound(self) -> EraInbound:
        return self._core.inbound

    @property
    def terminal(self) -> McpError | None:
        return self._core.terminal

    def terminate(self, error: McpError, *, wait: bool = False) -> None:
        self._core.terminate(error, wait=wait)

    def require(self, capability: str, what: str) -> None:
        self._core.require(capability, what)

    def notify(self, method: str, timeout: float, params: dict[str, Any] | None = None) -> None:
        self._core.notify(method, timeout, params)

    def cancel_request(self, request_id: int) -> None:
        self._core.cancel_request(request_id)

    def withdraw(self, request_id: int, reason: str, cancellable: bool = True) -> Entry | None:
        return self._core.withdraw(request_id, reason, cancellable)

    def send_and_forget(self, method: str, params: dict[str, Any]) -> None:
        self._core.send_and_forget(method, params)

    def emit(self, kind: Any, detail: Any) -> None:
        self._core.emit(kind, detail)

    def adopt(self, era: Era, capabilities: Mapping[str, Any]) -> None:
        self._core.adopt(era, capabilities)

    def load_catalog(self, keep: Callable[[Tool], bool] | None = None) -> tuple[Tool, ...]:
        return self._core.load_catalog(keep)

    def answer_input_request(self, method: str, params: Mapping[str, Any], deadline: float) -> dict[str, Any]:
        return self._core.answer_input_request(method, params, deadline)


def guarded(core: CallingCore, cancel: CancelToken) -> Guarded:
    """``core`` as one call under ``cancel`` sees it (checked: a scope or an event)."""
    _check(cancel)
    return Guarded(core, cancel)


def call_tool(  # noqa: PLR0913, PLR0917
    core: CallingCore,
    routes: ProgressRoutes,
    cancel: CancelToken,
    name: str,
    arguments: Mapping[str, Any] | None,
    timeout_ms: int | None,
    traceparent: str | None,
    meta: Mapping[str, Any] | None,
    on_progress: ProgressCallback | None,
    extends: bool,
    max_timeout_ms: int | None,
    task: bool | None,
) -> CallToolResult:
    """``Session.call_tool`` with ``cancel=``: the call, under the token
    (with the ``mcp_sync.calls`` DEBUG records when they are on)."""
    _check(cancel)
    view = Guarded(core, cancel, routes)

    def call() -> CallToolResult:
        return view.call_tool(
            name, arguments, timeout_ms, traceparent, meta, on_progress, extends, max_timeout_ms, task
        )

    if _log.CALLS.isEnabledFor(_log.DEBUG):
        return _log.logged_call(core.server, call, name, timeout_ms, traceparent)
    return call()


def wait_or_cancel(
    done: threading.Event, wakes: list[threading.Event], timeout: float | None, cancel: CancelToken
) -> None:
    """Wait up to ``timeout`` s (``None``: no bound) for ``done``, whose
    setter also sets each event of ``wakes``, ending early when ``cancel``
    fires or a scope's deadline passes. Raises :class:`Cancelled` or
    :class:`Timeout` for those; returns otherwise (``done`` may be unset:
    the caller's own timeout passed)."""
    _check(cancel)
    woken = threading.Event()
    wakes.append(woken)
    deadline = cancel.deadline if isinstance(cancel, CancelScope) else None
    if deadline is not None:
        left = max(0.0, deadline - time.monotonic())
        timeout = left if timeout is None else min(timeout, left)
    handle = watch(cancel, woken.set)
    try:
        if handle is not None and not done.is_set():
            woken.wait(timeout)
    finally:
        if handle is not None:
            unwatch(handle)
    if done.is_set():
        return
    if fired(cancel):
        raise Cancelled("the wait for a server's connect was cancelled")
    if deadline is not None and time.monotonic() >= deadline:
        raise Timeout(f"the wait for a server's connect missed {_SCOPE_DEADLINE}")
