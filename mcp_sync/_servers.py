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

Locks:

- ``_Slot.lock``: one connect at a time per server. Its holder is the only
  thread that starts that server; every other thread that needs it waits here
  and takes the outcome of that one attempt.
- ``Servers._lock``: whether the set is closed and which health thread runs.

The bookkeeping of a slot (failures, next attempt) changes only under its lock.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import threading
import time
import weakref
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from . import _log
from ._client import connect
from ._eras import EraMemory, remembering
from ._errors import (
    ConnectionClosed,
    InvalidOption,
    McpError,
    RemoteError,
    ServerUnavailable,
)
from ._limits import check_limit
from ._redact import Diagnostics
from ._session import CLOSED_BY_CALLER, FORKED
from ._session_api import Session

if TYPE_CHECKING:
    from ._catalog import CallToolResult
    from ._submit import ToolCall
    from .config import ServerEntry

__all__ = ["DEFAULT_HEALTH_CHECK_TIMEOUT_MS", "RespawnPolicy", "Servers"]

DEFAULT_HEALTH_CHECK_TIMEOUT_MS = 5_000

_HEALTH_THREAD = "mcp_sync-servers-health"
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


@dataclass(eq=False)
class _Slot:
    """One configured server, in this process."""

    entry: ServerEntry
    lock: threading.Lock = field(default_factory=threading.Lock)
    session: Session | None = None
    connected_at: float = 0.0
    # Connect attempts that finished, and the error of the latest (None: it
    # connected). A thread that waited on the lock for an attempt gets its outcome.
    attempts: int = 0
    outcome: McpError | None = None
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
        self.attempts, self.outcome = 0, None
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
    not answer within ``health_check_timeout_ms``. ``diagnostics`` is passed
    to every :func:`connect`. :meth:`close` (also run at interpreter exit)
    closes every server.
    """

    def __init__(
        self,
        config: Any,
        /,
        *,
        diagnostics: Diagnostics | None = None,
        respawn: RespawnPolicy | None = None,
        health_check_interval_ms: int | None = None,
        health_check_timeout_ms: int | None = None,
    ) -> None:
        entries = _entries(config)
        if respawn is None:
            respawn = RespawnPolicy()
        elif not isinstance(respawn, RespawnPolicy):
            raise InvalidOption("option respawn must be a RespawnPolicy")
        if diagnostics is not None and not callable(diagnostics):
            raise InvalidOption("option diagnostics must be callable")
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
        self._policy = respawn
        self._slots: dict[str, _Slot] = {entry.server: _Slot(entry) for entry in entries}
        self._lock = threading.Lock()
        self._closed = False
        self._health = _Health()
        # A forgotten Servers stops its health thread (which holds only a weakref).
        weakref.finalize(self, self._health.halt)
        _registry.add(self)

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

    # ------------------------------------------------------------------ using

    def session(self, name: str) -> Session:
        """This process's session with server ``name``, connected (or
        replaced) now if need be.

        Raises :class:`KeyError` for a name that is not configured, whatever
        :func:`connect` raises when the attempt made for this call fails, and
        :class:`ServerUnavailable` while the server is held back after
        failing again and again.
        """
        slot = self._slot(name)
        session = slot.session
        if session is not None and not session.closed:
            return session
        return self._connect(slot)

    def call_tool(
        self,
        server: str,
        tool: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        timeout_ms: int | None = None,
        traceparent: str | None = None,
    ) -> CallToolResult:
        """``self.session(server).call_tool(tool, arguments, ...)``.

        A call that was under way when its server died fails (it may have had
        effects on the server, so it is not repeated); the next call gets a
        fresh server.
        """
        return self.session(server).call_tool(
            tool, arguments, timeout_ms=timeout_ms, traceparent=traceparent
        )

    def submit_tool(
        self,
        server: str,
        tool: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        timeout_ms: int | None = None,
        traceparent: str | None = None,
    ) -> ToolCall:
        """``self.session(server).submit_tool(tool, arguments, ...)``: the
        handle of a call on that server's current session (connected first if
        need be, which blocks)."""
        return self.session(server).submit_tool(
            tool, arguments, timeout_ms=timeout_ms, traceparent=traceparent
        )

    def map_tool(  # noqa: PLR0913
        self,
        server: str,
        tool: str,
        arguments: Iterable[Mapping[str, Any] | None],
        *,
        max_in_flight: int = 16,
        timeout_ms: int | None = None,
        traceparent: str | None = None,
    ) -> Iterator[CallToolResult]:
        """``self.session(server).map_tool(tool, arguments, ...)``, on the
        session current when it is called (a respawn meanwhile fails the calls
        in flight, as for call_tool)."""
        return self.session(server).map_tool(
            tool, arguments, max_in_flight=max_in_flight, timeout_ms=timeout_ms,
            traceparent=traceparent,
        )  # fmt: skip

    def close(self) -> None:
        """Close every server's session and stop the health check. Idempotent,
        thread-safe; later use raises :class:`ConnectionClosed`. Runs at
        interpreter exit too."""
        with self._lock:
            self._closed = True
            health = self._health
            thread = health.thread
        health.halt()
        for slot in self._slots.values():
            session = slot.session
            if session is not None:
                session.close()
        if thread is not None and thread is not threading.current_thread():
            thread.join(_JOIN)

    def __enter__(self) -> Servers:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # ------------------------------------------------------------------ connecting

    def _connect(self, slot: _Slot) -> Session:
        seen = slot.attempts
        with slot.lock:
            if self._closed:
                raise ConnectionClosed(CLOSED_BY_CALLER)
            session = slot.session
            if _live(session):
                assert session is not None
                return session
            if slot.attempts != seen and slot.outcome is not None:
                # We waited for another thread's attempt, and it failed.
                raise slot.outcome._copy()
            now = time.monotonic()
            if session is not None:
                self._retire(slot, session, now)
            if now < slot.retry_at:
                raise self._unavailable(slot, now)
            return self._attempt(slot)

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

    def _attempt(self, slot: _Slot) -> Session:
        name = slot.entry.server
        if slot.spawns or slot.ended_by is not None or slot.failures:
            cause = slot.ended_by or slot.last_error
            _log.servers_event(
                logging.INFO, "respawn", name,
                "starting server %r again (start %d in this process; failures in a row: %d)",
                name, slot.spawns + 1, slot.failures,
                attempt=slot.spawns + 1, failures=slot.failures, cause=cause,
            )  # fmt: skip
        try:
            with remembering(slot.era):
                session = connect(slot.entry, diagnostics=self._diagnostics)
        except McpError as exc:
            slot.attempts += 1
            slot.outcome = slot.last_error = exc
            slot.failures += 1
            now = time.monotonic()
            slot.retry_at = now + self._policy.delay(slot.failures)
            slot.ended_by = None
            self._held_back(slot, now)
            raise
        slot.attempts += 1
        slot.outcome = slot.ended_by = None
        slot.session = session
        slot.connected_at = time.monotonic()
        slot.spawns += 1
        if self._closed:  # close() ran while we were connecting
            session.close()
            raise ConnectionClosed(CLOSED_BY_CALLER)
        self._start_health()
        return session

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
                self._connect(slot)

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
