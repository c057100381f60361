"""``Servers``: the MCP servers of a long-lived process.

A web worker, a task worker or a notebook kernel lives for days and may be
forked. :class:`Servers` is built from a config and starts nothing: it can sit
at module level, be imported by a process that forks, and be copied into
every child. Each server is connected on first use *in the process that uses
it*, shared by every thread there, and replaced on the next use after its
session ended (the server crashed, broke a rule, failed a health check, or the
session is a forked copy). A server that keeps failing is held back with an
exponential delay instead of being started again and again (see
:class:`RespawnPolicy`).

Every wait takes the caller's remaining budget (:class:`_Budget`). A connect
runs on a library thread of its own (:class:`_Connecting`, one per server at a
time); the caller that starts it and every caller that comes while it runs
wait for its outcome at most until their own deadlines, then raise
:class:`Timeout`. The connect goes on, and the next caller takes the session
it made. :meth:`Servers.close` stops a connect under way (through its
:class:`~._eras.Abort`) and waits for its thread: nothing outlives ``close()``.

Locks:

- ``_Slot.lock``: the slot's bookkeeping (its session, the connect under
  way, failures, next attempt), held for a few statements only, never across
  a connect. Whoever holds it decides whether a connect starts; one runs at
  a time per server.
- ``Servers._lock``: whether the set is closed and which health thread runs.
"""

from __future__ import annotations

import atexit
import contextlib
import contextvars
import logging
import math
import os
import sys
import threading
import time
import weakref
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from . import _log
from .protocol.errors import (
    ConnectionClosed,
    InvalidOption,
    McpError,
    RemoteError,
    ServerUnavailable,
    Timeout,
)
from .protocol.limits import DEFAULT_REQUEST_TIMEOUT_MS, check_limit, seconds
from .protocol.redaction import Diagnostics, MessageHook
from .session.api import Session
from .session.cancel import wait_or_cancel
from .session.connect import connect
from .session.core import CLOSED_BY_CALLER, FORKED
from .session.eras.negotiation import Abort, EraMemory, abortable, remembering

if TYPE_CHECKING:
    from .config import ServerEntry
    from .protocol.catalog import CallToolResult
    from .session.cancel import CancelToken
    from .session.progress import ProgressCallback
    from .session.submit import ToolCall

__all__ = ["DEFAULT_HEALTH_CHECK_TIMEOUT_MS", "RespawnPolicy", "Servers"]

DEFAULT_HEALTH_CHECK_TIMEOUT_MS = 5_000

_HEALTH_THREAD = "mcp_sync-servers-health"
_CONNECT_THREAD = "mcp_sync-servers-connect"
_JOIN = 5.0

# Every Servers of this process: a forked child resets their locks and
# counters, and the interpreter's exit closes them.
_registry: weakref.WeakSet[Servers] = weakref.WeakSet()


def _after_fork_in_child() -> None:
    for servers in list(_registry):
        servers._forked()


def _close_all() -> None:
    for servers in list(_registry):
        servers.close()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
atexit.register(_close_all)

@dataclass(frozen=True, slots=True)
class RespawnPolicy:
    """How :class:`Servers` replaces a server whose session ended.

    A *failure* is a connect that failed, or a session that ended by itself
    (not closed by its owner, not a forked copy) less than
    ``stable_after_ms`` after it connected. After ``n`` failures in a row the
    next attempt is made at once while ``n <= immediate``; otherwise not
    before ``first_delay_ms * 2**(n - immediate - 1)`` ms (at most
    ``max_delay_ms``) have passed since the last failure. Until then, asking
    for the server raises :class:`ServerUnavailable` at once: nothing waits,
    nothing is started. A session that stayed up ``stable_after_ms`` clears
    the count.

    With the defaults a server that dies at once is started three times in a
    row, then about 1, 3, 7, 15, 31 and 63 s later, then once a minute (8
    starts in the first minute, 1 a minute after that).
    """

    immediate: int = 2
    first_delay_ms: int = 1_000
    max_delay_ms: int = 60_000
    stable_after_ms: int = 10_000

    def __post_init__(self) -> None:
        if type(self.immediate) is not int or self.immediate < 0:
            raise InvalidOption("option immediate must be an integer of at least 0")
        for name in ("first_delay_ms", "max_delay_ms", "stable_after_ms"):
            check_limit(name, getattr(self, name))

    def delay(self, failures: int) -> float:
        """Seconds to hold back the next attempt after ``failures`` in a row."""
        if failures <= self.immediate:
            return 0.0
        doublings = min(failures - self.immediate - 1, 62)
        delay_ms: int = min(self.first_delay_ms * 2**doublings, self.max_delay_ms)
        return delay_ms / 1000.0


class _Budget:
    """How long one caller may still wait: its deadline (``None``: as long as
    the work it waits for takes, which bounds itself) and the option it came
    from, named in the :class:`Timeout` it gets. Every wait of a caller --
    the slot's lock, a connect under way -- takes what is left of it."""

    __slots__ = ("deadline", "option")

    def __init__(self, timeout_ms: int | None, option: str = "timeout_ms") -> None:
        self.deadline = None if timeout_ms is None else time.monotonic() + seconds(timeout_ms)
        self.option = f"{option}={timeout_ms}"

    @classmethod
    def of(cls, timeout_ms: object, entry: ServerEntry | None) -> _Budget:
        """A caller's ``timeout_ms`` (checked), else for a request the entry's
        ``request_timeout_ms`` (``entry`` None: no deadline of its own)."""
        if timeout_ms is not None:
            return cls(check_limit("timeout_ms", timeout_ms))
        if entry is None:
            return cls(None)
        given: int | None = getattr(entry, "request_timeout_ms", None)  # a limit field
        default = given or DEFAULT_REQUEST_TIMEOUT_MS
        return cls(default, "request_timeout_ms")

    def left(self) -> float | None:
        """Seconds left (at least 0), as ``threading`` takes them; None: no deadline."""
        if self.deadline is None:
            return None
        return min(max(self.deadline - time.monotonic(), 0.0), threading.TIMEOUT_MAX)

    def left_ms(self, server: str) -> int:
        """What is left, as a request's ``timeout_ms``; :class:`Timeout` when nothing is."""
        left = self.left()
        assert left is not None
        if left <= 0:
            raise Timeout(f"connecting server {server!r} took the whole budget ({self.option})")
        return max(1, math.floor(left * 1000))

    def missed(self, what: str, then: str = "") -> Timeout:
        """The error of a wait for ``what`` that ran out of budget."""
        return Timeout(f"{what} ({self.option}) missed its deadline{then}")


class _Connecting:
    """One connect of a slot's server, running on a library thread; the
    callers that need the server wait for :attr:`done` (each at most its own
    budget) and then take its outcome."""

    __slots__ = ("abort", "crash", "done", "error", "session", "thread", "wakes")

    def __init__(self) -> None:
        self.done = threading.Event()
        self.wakes: list[threading.Event] = []  # set with done: callers waiting under a cancel token
        self.abort = Abort()
        self.session: Session | None = None
        self.error: McpError | None = None
        self.crash: BaseException | None = None  # a bug: raised again to every waiter
        self.thread: threading.Thread | None = None

    def outcome(self) -> Session:
        if self.crash is not None:
            raise self.crash
        if self.error is not None:
            raise self.error._copy()  # one instance per waiter
        assert self.session is not None
        return self.session


@dataclass(eq=False)
class _Slot:
    """One configured server, in this process."""

    entry: ServerEntry
    lock: threading.Lock = field(default_factory=threading.Lock)
    session: Session | None = None
    connected_at: float = 0.0
    # The connect under way, if any: every caller that needs the server waits for it.
    connecting: _Connecting | None = None
    failures: int = 0  # in a row (see RespawnPolicy)
    last_error: McpError | None = None
    retry_at: float = 0.0  # time.monotonic() before which nothing is started
    ended_by: McpError | None = None  # what ended the session being replaced
    spawns: int = 0  # sessions connected in this process
    # The era auto settled: a respawn sends that era's opening request alone.
    era: EraMemory = field(default_factory=EraMemory)

    def reset(self) -> None:
        """In a forked child: the parent's lock holders and history stay behind."""
        self.lock = threading.Lock()
        self.connecting = None  # its thread stayed in the parent
        self.failures, self.last_error, self.retry_at = 0, None, 0.0
        self.spawns = 0


class _Health:
    """The idle health check's thread and its stop signal, in this process."""

    def __init__(self) -> None:
        self.stop = threading.Event()
        self.thread: threading.Thread | None = None

    def halt(self) -> None:
        self.stop.set()

    def reset(self) -> None:
        self.stop = threading.Event()
        self.thread = None  # threads do not cross a fork


class Servers:
    """A named set of MCP servers for a long-lived, possibly forking process.

    Build it from a config file path, an already parsed config (what
    :func:`mcp_sync.config.parse_config` takes), or one or more
    :class:`~mcp_sync.config.ConnectOptions` / ``HttpConnectOptions``. The
    config is validated here (:class:`~mcp_sync.config.ConfigError`); nothing
    is started.

    :meth:`session` connects a server on its first use in the current process;
    any number of threads may ask at once and one server is started.
    A session that ended is replaced on the next use, under ``respawn``
    (:class:`RespawnPolicy`). ``health_check_interval_ms`` turns on a library
    thread that pings every idle server that often and replaces one that does
    not answer within ``health_check_timeout_ms``. ``diagnostics`` and
    ``on_message`` are passed to every :func:`connect`. :meth:`close` (also run at interpreter exit)
    closes every server.
    """

    def __init__(  # noqa: PLR0913 (connect's switches, and the health check's)
        self,
        config: Any,
        /,
        *,
        diagnostics: Diagnostics | None = None,
        respawn: RespawnPolicy | None = None,
        health_check_interval_ms: int | None = None,
        health_check_timeout_ms: int | None = None,
        on_message: MessageHook | None = None,
    ) -> None:
        entries = _entries(config)
        if respawn is None:
            respawn = RespawnPolicy()
        elif not isinstance(respawn, RespawnPolicy):
            raise InvalidOption("option respawn must be a RespawnPolicy")
        if diagnostics is not None and not callable(diagnostics):
            raise InvalidOption("option diagnostics must be callable")
        if on_message is not None and not callable(on_message):
            raise InvalidOption("option on_message must be callable")
        self._interval: float | None = None
        if health_check_interval_ms is not None:
            ms = check_limit("health_check_interval_ms", health_check_interval_ms)
            self._interval = min(ms / 1000.0, threading.TIMEOUT_MAX)
        self._health_timeout_ms = (
            DEFAULT_HEALTH_CHECK_TIMEOUT_MS
            if health_check_timeout_ms is None
            else check_limit("health_check_timeout_ms", health_check_timeout_ms)
        )
        self._diagnostics = diagnostics
        self._on_message = on_message
        self._policy = respawn
        self._slots: dict[str, _Slot] = {entry.server: _Slot(entry) for entry in entries}
        self._lock = threading.Lock()
        self._closed = False
        self._health = _Health()
        self._closed_by = CLOSED_BY_CALLER
        # A forgotten Servers stops its health thread (which holds only a weakref).
        weakref.finalize(self, self._health.halt)
        _registry.add(self)
        if "IPython" in sys.modules:  # only an IPython shell may have built it in a cell
            self._replace_earlier_cells(sys._getframe(1).f_globals)

    def _replace_earlier_cells(self, namespace: Mapping[str, Any]) -> None:
        """Built in a notebook cell: close the Servers an earlier cell built
        for any of the same server names (see ``notebook.replace_earlier_cells``)."""
        from .notebook import REPLACED, replace_earlier_cells

        for earlier in replace_earlier_cells(self, namespace):
            assert isinstance(earlier, Servers)
            _log.servers_event(
                logging.INFO, "replaced", ", ".join(earlier.names),
                "closing the Servers of an earlier notebook cell for the same server names",
            )  # fmt: skip
            earlier._close(REPLACED)

    # ------------------------------------------------------------------ looking

    @property
    def names(self) -> tuple[str, ...]:
        """The configured server names, in config order."""
        return tuple(self._slots)

    def _slot(self, name: object) -> _Slot:
        slot = self._slots.get(name) if isinstance(name, str) else None
        if slot is None:
            known = ", ".join(repr(n) for n in self._slots) or "none"
            raise KeyError(f"no server named {name!r} is configured (configured: {known})")
        return slot

    def projection(self, name: str) -> dict[str, Any]:
        """Server ``name``'s ``name_prefix``, ``include`` and ``exclude`` from
        its config entry, as keyword arguments of :func:`mcp_sync.flows.project`
        (what :mod:`mcp_sync.model_tools` applies when it exports this set)."""
        return self._slot(name).entry.projection_kwargs()

    @property
    def respawn(self) -> RespawnPolicy:
        """The respawn policy in force."""
        return self._policy

    def __contains__(self, name: object) -> bool:
        return name in self._slots

    def __iter__(self) -> Iterator[str]:
        return iter(self._slots)

    def __len__(self) -> int:
        return len(self._slots)

    def __repr__(self) -> str:
        live = sum(1 for slot in self._slots.values() if _live(slot.session))
        state = "closed" if self._closed else f"{live} connected"
        return f"<Servers {list(self._slots)!r} {state}>"

    def _repr_mimebundle_(self, include: object = None, exclude: object = None) -> dict[str, str]:
        # Jupyter's display: each server and its state.
        from .protocol.display import bundle

        return bundle(self)

    def _display_rows(self) -> list[tuple[str, str]]:
        """Each configured server and its state in this process, in words."""
        now = time.monotonic()
        return [(name, "closed" if self._closed else _state(slot, now)) for name, slot in self._slots.items()]

    # ------------------------------------------------------------------ using

    def session(self, name: str, *, timeout_ms: int | None = None) -> Session:
        """This process's session with server ``name``, connected (or
        replaced) now if need be.

        Waits for that connect (started here, or by another caller) at most
        ``timeout_ms``, then raises :class:`Timeout` while the connect goes
        on (a later call takes its session); by default it waits for the
        connect's outcome, which ``handshake_timeout_ms`` bounds.

        Raises :class:`KeyError` for a name that is not configured, whatever
        :func:`connect` raises when the attempt this call waited for fails,
        and :class:`ServerUnavailable` while the server is held back after
        failing again and again.
        """
        slot = self._slot(name)
        budget = _Budget.of(timeout_ms, None)
        session = slot.session
        if session is not None and not session.closed:
            return session
        return self._connect(slot, budget)

    def _within(
        self, name: str, timeout_ms: int | None, cancel: CancelToken | None = None
    ) -> tuple[Session, int | None]:
        """Server ``name``'s session and the ``timeout_ms`` left for a
        request on it: unchanged when it was connected already, else what the
        connect left of the caller's budget (``request_timeout_ms`` when no
        ``timeout_ms`` was given). A connect waited for ends when ``cancel`` fires."""
        slot = self._slot(name)
        session = slot.session
        if session is not None and not session.closed:
            return session, timeout_ms
        budget = _Budget.of(timeout_ms, slot.entry)
        session = self._connect(slot, budget, cancel)
        return session, budget.left_ms(slot.entry.server)

    def call_tool(  # noqa: PLR0913
        self,
        server: str,
        tool: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        timeout_ms: int | None = None,
        traceparent: str | None = None,
        on_progress: ProgressCallback | None = None,
        meta: Mapping[str, Any] | None = None,
        cancel: CancelToken | None = None,
    ) -> CallToolResult:
        """``self.session(server).call_tool(tool, arguments, ...)``.

        A call that was under way when its server died fails (it may have had
        effects on the server, so it is not repeated); the next call gets a
        fresh server. A connect on the way counts against ``timeout_ms``
        (default ``request_timeout_ms``): the call is back by then.
        ``on_progress(progress, total, message)`` is called on this thread
        for each progress report of the call, as in :meth:`Session.call_tool`.
        ``cancel`` (a :class:`CancelScope` or a ``threading.Event``) fired from
        another thread ends the call, or the wait for its connect, with
        :class:`Cancelled`; the connect itself goes on.
        """
        session, left_ms = self._within(server, timeout_ms, cancel)
        return session.call_tool(
            tool, arguments, timeout_ms=left_ms, traceparent=traceparent, meta=meta, on_progress=on_progress,
            cancel=cancel,
        )

    def submit_tool(  # noqa: PLR0913
        self,
        server: str,
        tool: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        timeout_ms: int | None = None,
        traceparent: str | None = None,
        meta: Mapping[str, Any] | None = None,
    ) -> ToolCall:
        """``self.session(server).submit_tool(tool, arguments, ...)``: the
        handle of a call on that server's current session (connected first if
        need be, which blocks, and counts against ``timeout_ms``)."""
        session, left_ms = self._within(server, timeout_ms)
        return session.submit_tool(tool, arguments, timeout_ms=left_ms, traceparent=traceparent, meta=meta)

    def map_tool(  # noqa: PLR0913
        self,
        server: str,
        tool: str,
        arguments: Iterable[Mapping[str, Any] | None],
        *,
        max_in_flight: int = 16,
        timeout_ms: int | None = None,
        traceparent: str | None = None,
        meta: Mapping[str, Any] | None = None,
    ) -> Iterator[CallToolResult]:
        """``self.session(server).map_tool(tool, arguments, ...)``, on the
        session current when it is called (a respawn meanwhile fails the calls
        in flight, as for call_tool). A connect on the way waits at most
        ``timeout_ms`` (default ``request_timeout_ms``); each call then has
        its own."""
        slot = self._slot(server)
        session = slot.session
        if session is None or session.closed:
            session = self._connect(slot, _Budget.of(timeout_ms, slot.entry))
        return session.map_tool(
            tool, arguments, max_in_flight=max_in_flight, timeout_ms=timeout_ms,
            traceparent=traceparent, meta=meta,
        )  # fmt: skip

    def close(self) -> None:
        """Close every server's session, stop any connect under way (its
        server process ends, its threads with it) and the health check.
        Idempotent, thread-safe; later use raises :class:`ConnectionClosed`,
        and so does a wait for a connect that this stopped. Runs at
        interpreter exit too."""
        self._close(CLOSED_BY_CALLER)

    def _close(self, why: str) -> None:
        with self._lock:
            if not self._closed:
                self._closed_by = why
            self._closed = True
            health = self._health
            thread = health.thread
        health.halt()
        stopped: list[_Connecting] = []
        for slot in self._slots.values():
            with slot.lock:  # no connect starts after this (the closed flag is set)
                connecting = slot.connecting
            if connecting is not None:
                connecting.abort.abort(ConnectionClosed(CLOSED_BY_CALLER))
                stopped.append(connecting)
            session = slot.session
            if session is not None:
                session.close()
        current = threading.current_thread()
        for connecting in stopped:
            # The connect tears its transport down and ends; its callers are released.
            if connecting.thread is not None and connecting.thread is not current:
                connecting.thread.join(_JOIN)
        if thread is not None and thread is not current:
            thread.join(_JOIN)

    def __enter__(self) -> Servers:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # ------------------------------------------------------------------ connecting

    def _connect(self, slot: _Slot, budget: _Budget, cancel: CancelToken | None = None) -> Session:
        """The slot's live session, else the outcome of the connect under way
        or of one started now; waits at most what is left of ``budget``, and
        not past ``cancel`` firing."""
        name = slot.entry.server
        left = budget.left()
        if not slot.lock.acquire(timeout=-1 if left is None else left):
            raise budget.missed(f"waiting to connect server {name!r}")
        try:
            if self._closed:
                raise ConnectionClosed(self._closed_by)
            session = slot.session
            if _live(session):
                assert session is not None
                return session
            connecting = slot.connecting
            if connecting is None:
                now = time.monotonic()
                if session is not None:
                    self._retire(slot, session, now)
                if now < slot.retry_at:
                    raise self._unavailable(slot, now)
                connecting = slot.connecting = self._begin(slot)
        finally:
            slot.lock.release()
        if cancel is not None:
            wait_or_cancel(connecting.done, connecting.wakes, budget.left(), cancel)
        if not connecting.done.wait(budget.left() if cancel is None else 0):
            raise budget.missed(
                f"connecting server {name!r}", "; the connect goes on, and a later call may use it"
            )
        if self._closed:
            raise ConnectionClosed(self._closed_by)
        return connecting.outcome()

    def _retire(self, slot: _Slot, session: Session, now: float) -> None:
        """Account for a session that ended (holding the slot's lock)."""
        slot.session = None
        core = session._core
        error = core.terminal
        ended = core.ended_at or now
        if ended - slot.connected_at >= self._policy.stable_after_ms / 1000.0:
            slot.failures = 0
        slot.ended_by = error
        if error is None or not core.failed() or error.message == FORKED:
            return  # closed by its owner, or a copy in a forked child: no failure
        slot.failures += 1
        slot.last_error = error
        slot.retry_at = ended + self._policy.delay(slot.failures)
        self._held_back(slot, now)

    def _begin(self, slot: _Slot) -> _Connecting:
        """Start a connect of the slot's server on a library thread (holding
        the slot's lock)."""
        name = slot.entry.server
        if slot.spawns or slot.ended_by is not None or slot.failures:
            cause = slot.ended_by or slot.last_error
            _log.servers_event(
                logging.INFO, "respawn", name,
                "starting server %r again (start %d in this process; failures in a row: %d)",
                name, slot.spawns + 1, slot.failures,
                attempt=slot.spawns + 1, failures=slot.failures, cause=cause,
            )  # fmt: skip
        connecting = _Connecting()
        # The caller's context (logging, tracing) goes with the connect it started.
        context = contextvars.copy_context()
        connecting.thread = threading.Thread(
            target=context.run,
            args=(self._attempt, slot, connecting),
            name=_CONNECT_THREAD,
            daemon=True,
        )
        connecting.thread.start()
        return connecting

    def _attempt(self, slot: _Slot, connecting: _Connecting) -> None:
        """The connect thread: connect, record the outcome on the slot, wake the waiters."""
        session: Session | None = None
        error: McpError | None = None
        try:
            with remembering(slot.era), abortable(connecting.abort):
                session = connect(slot.entry, diagnostics=self._diagnostics, on_message=self._on_message)
        except McpError as exc:
            error = exc.with_traceback(None)
        except BaseException as exc:  # a bug: every waiter gets it
            connecting.crash = exc
        try:
            with slot.lock:
                slot.connecting = None
                now = time.monotonic()
                if session is not None:
                    slot.ended_by = None
                    slot.session = session
                    slot.connected_at = now
                    slot.spawns += 1
                elif error is not None and not self._closed:
                    slot.last_error = error
                    slot.failures += 1
                    slot.retry_at = now + self._policy.delay(slot.failures)
                    slot.ended_by = None
                    self._held_back(slot, now)
            if session is not None:
                if self._closed:  # close() ran while we were connecting
                    session.close()
                else:
                    self._start_health()
        finally:
            connecting.session, connecting.error = session, error
            connecting.done.set()
            for woken in connecting.wakes:
                woken.set()

    def _held_back(self, slot: _Slot, now: float) -> None:
        if slot.retry_at > now:
            name = slot.entry.server
            wait = slot.retry_at - now
            _log.servers_event(
                logging.WARNING, "backoff", name,
                "server %r failed %d times in a row; the next attempt is held back %.1f s",
                name, slot.failures, wait,
                failures=slot.failures, retry_in_s=round(wait, 3), cause=slot.last_error,
            )  # fmt: skip

    def _unavailable(self, slot: _Slot, now: float) -> ServerUnavailable:
        last = slot.last_error
        assert last is not None
        name = slot.entry.server
        retry_in = slot.retry_at - now
        return ServerUnavailable(
            f"server {name!r} is unavailable: it failed {slot.failures} times in a row "
            f"(last: {last.kind}, {last.message}); the next attempt is allowed in {retry_in:.1f} s",
            name,
            slot.failures,
            retry_in,
            last,
        )

    # ------------------------------------------------------------------ health

    def _start_health(self) -> None:
        if self._interval is None:
            return
        with self._lock:
            health = self._health
            if self._closed or health.thread is not None:
                return
            thread = threading.Thread(
                target=_health_loop,
                args=(weakref.ref(self), health.stop, self._interval),
                name=_HEALTH_THREAD,
                daemon=True,
            )
            health.thread = thread
        thread.start()

    def _check_health(self) -> None:
        """Ping every idle server; replace one that does not answer in time,
        and one whose session ended by itself."""
        for slot in self._slots.values():
            if self._closed:
                return
            session = slot.session
            if session is None:
                continue
            core = session._core
            if core.terminal is None:
                if core._pending:
                    continue  # busy: calls are waiting on it, a check would queue behind them
                try:
                    session.ping(timeout_ms=self._health_timeout_ms)
                    continue
                except RemoteError:
                    continue  # it answered: alive, without the probe
                except McpError as exc:
                    if core.terminal is None:  # still open, but did not answer in time
                        self._unhealthy(slot, exc)
            # A failure is recorded on the slot and logged; a request meets it next.
            with contextlib.suppress(McpError):
                self._connect(slot, _Budget(None))

    def _unhealthy(self, slot: _Slot, error: McpError) -> None:
        name = slot.entry.server
        _log.servers_event(
            logging.WARNING, "health", name,
            "server %r failed a health check; replacing it", name, cause=error,
        )  # fmt: skip
        session = slot.session
        if session is not None:
            session._core.terminate(
                ConnectionClosed(
                    f"server {name!r} failed a health check (health_check_timeout_ms="
                    f"{self._health_timeout_ms}) and was replaced"
                ),
                wait=True,
            )

    # ------------------------------------------------------------------ forking

    def _forked(self) -> None:
        """In a forked child: nothing the parent's threads held or counted
        applies here. The sessions in the slots are the parent's (ended in
        this child by the session layer) and are replaced on first use."""
        self._lock = threading.Lock()
        self._health.reset()
        for slot in self._slots.values():
            slot.reset()


def _live(session: Session | None) -> bool:
    return session is not None and not session.closed


def _state(slot: _Slot, now: float) -> str:
    """A slot's state in words (read without its lock: a display may be a
    moment out of date, never wrong about what it names)."""
    session = slot.session
    if slot.connecting is not None:
        return "connecting"
    if session is not None and not session.closed:
        era, info = session._core.era, session.server_info
        tools = len(session.tools)
        return f"connected: {info.name} {info.version}, {era.name} era, protocol {era.version}, {tools} tools"
    if slot.retry_at > now and slot.last_error is not None:
        return (
            f"held back after {slot.failures} failures in a row (last: {slot.last_error.kind}); "
            f"next attempt in {slot.retry_at - now:.1f} s"
        )
    if session is not None:
        error = session._core.terminal
        ended = f" ({error.kind}): {error.message}" if error is not None else ""
        return f"ended{ended}; the next use starts it again"
    return "not started (it starts on first use)"


def _health_loop(ref: weakref.ref[Servers], stop: threading.Event, interval: float) -> None:
    # Holds only a weak reference: a forgotten Servers is collected, its
    # finalizer sets ``stop``, and this thread ends.
    while not stop.wait(interval):
        servers = ref()
        if servers is None:
            return
        try:
            servers._check_health()
        except Exception as exc:  # a bug must not end the checks for good
            _log.servers_event(
                logging.ERROR, "health", "", "the health check failed: %s", type(exc).__name__, cause=exc
            )
        finally:
            del servers


def _entries(config: object) -> tuple[ServerEntry, ...]:
    from .config import ConfigError, ConnectOptions, HttpConnectOptions, load_config, parse_config

    if isinstance(config, (str, os.PathLike)):
        return load_config(config)
    models = (ConnectOptions, HttpConnectOptions)
    if isinstance(config, models):
        return (config,)
    if (
        isinstance(config, Sequence)
        and not isinstance(config, (str, bytes))
        and config
        and all(isinstance(item, models) for item in config)
    ):
        seen: dict[str, int] = {}
        for index, entry in enumerate(config):
            if entry.server in seen:
                raise ConfigError(
                    "<options>",
                    f"server name {entry.server!r} is already used by entry {seen[entry.server]}",
                    index=index,
                    field="server",
                )
            seen[entry.server] = index
        return tuple(config)
    # A parsed config file, in any format the config loader reads.
    return parse_config(config)
