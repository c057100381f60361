"""The session: its request table, the handshake, tool calls, and the one
place where a session dies (``_Core.terminate``).

A transport (stdio or HTTP) moves bytes. Everything that decides what a frame
means, which waiter it completes and when the session ends lives here, so both
transports behave the same. The public ``Session`` over this core is in
``session/api.py``; features see the core only as ``session.feature_contract.Core``.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import threading
import time
import weakref
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from .. import _log
from ..protocol.catalog import (
    PageWalk,
    Snapshot,
    Tool,
    freeze,
)
from ..protocol.errors import (
    ConnectionClosed,
    McpError,
    NotSupported,
    ProtocolError,
    Timeout,
)
from ..protocol.frames import TooManyValues, decode_line, encode, load_fast_json
from ..protocol.limits import Limits
from ..protocol.redaction import DiagnosticEvent, Diagnostics, MessageHook, Redacted
from ..protocol.versions import SUPPORTED_PROTOCOL_VERSIONS
from ..transports.contract import NOTIFICATION, REQUEST, Outbound, Transport
from .call_plan import ask, not_in_catalog
from .eras.handshake import LegacyEra
from .eras.handshake import initialize_params as _initialize_params
from .listing import catalog_tools
from .listing import walk as walk_pages
from .message_tap import MessageTap, run_observer
from .pending import Entry, Watch, _Pending, _Watched
from .replies import remote_failure, reply_parts, server_message, stray_error

if TYPE_CHECKING:
    from .eras.contract import Era
    from .handlers import Handlers
    from .inbound import Inbound

__all__ = ["CLIENT_INFO", "SUPPORTED_PROTOCOL_VERSIONS"]


def _client_info() -> Mapping[str, str]:
    from types import MappingProxyType

    from .._version import __version__

    return MappingProxyType({"name": "mcp-sync", "version": __version__})


CLIENT_INFO: Mapping[str, str] = _client_info()


def initialize_params(
    protocol_version: str, capabilities: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The params of our ``initialize`` request (also sent by the HTTP
    transport when it renews a session). ``capabilities`` declares only what
    the caller's handlers serve."""
    return _initialize_params(protocol_version, capabilities, CLIENT_INFO)


_not_in_catalog = not_in_catalog  # (Session raises it too)

CLOSED_BY_CALLER = "connection scope closed"
# How long a caller whose deadline passed waits for a completion already under way.
_COMPLETION_GRACE = 1.0
FORKED = "the session belongs to the process that opened it, not to this forked child"

# Every live session core, so that a forked child can disown them (see _Core.disown).
_cores: weakref.WeakSet[_Core] = weakref.WeakSet()


def _after_fork_in_child() -> None:
    for core in list(_cores):
        core.disown()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def _best_effort(
    transport: Transport | None, limits: Limits, message: dict[str, Any], kind: str, request_id: int
) -> bool | None:
    """Queue ``message`` only if there is room now: whether it was queued, or
    ``None`` when it could not go at all (no transport, or a frame over the
    outbound limit)."""
    if transport is None:
        return None
    try:
        frame = encode(message, limits.max_outbound_frame_bytes)
    except ProtocolError:
        return None
    return transport.send_nowait(Outbound(frame, kind, request_id, message["method"]))


class _Core:
    """All session state. I/O threads hold this, never the public Session, so
    a forgotten Session can be garbage-collected and its finalizer can run."""

    def __init__(
        self,
        server: str,
        limits: Limits,
        diagnostics: Diagnostics | None,
        *,
        handlers: Handlers | None = None,
        auto_refresh: bool = False,
        validate_output: bool = False,
        cache: str = "off",
        on_message: MessageHook | None = None,
    ) -> None:
        from .inbound import Inbound

        load_fast_json()
        self.server = server
        self.limits = limits
        self.diagnostics = diagnostics
        self.transport: Transport | None = None
        # Set once the session is terminal: wakes anything waiting on a timer
        # (a task poll's interval, an auto refresh's pause).
        self.ended = threading.Event()
        self.validate_output = validate_output
        # What serves the server's notifications and requests (handlers,
        # progress, logs, list_changed): never run on the reading thread.
        self.inbound: Inbound = Inbound(self, handlers, auto_refresh=auto_refresh, cache=cache)
        # What the client declares it can do: in initialize, and in the
        # modern era in every request's _meta. Only what the handlers serve.
        self.client_capabilities: Mapping[str, Any] = self.inbound.capabilities()
        self.server_capabilities: Mapping[str, Any] = freeze({})
        # Guards terminal and the terminal sweep of _pending; withdraw
        # (abandon's too) removes an entry and decides whether to tell the
        # server under it (claim waits for that decision when it raced it). Each
        # entry is taken off by one atomic dict operation (pop, popitem), so
        # exactly one thread ever holds it to complete it: a reply's pop on
        # the read path needs no lock for that, nor do _enter and claim's
        # common path, which order their steps instead (see there).
        self._lock = threading.Lock()
        self._pending: dict[int, Entry] = {}
        # Why the session ended (the first terminate() wins), None while open.
        self.terminal: McpError | None = None
        self._ids = itertools.count(1)
        self.catalog = Snapshot(())
        # The protocol era (._era): how every request is framed and what each
        # era-specific step does. Until negotiation (._eras) adopts one, a
        # handshake-era object without a version: plain JSON-RPC.
        self.era: Era = LegacyEra(None, client_info=CLIENT_INFO)
        self.ended_at = 0.0  # time.monotonic() of the terminal transition
        # Set by era negotiation while its probe is out: takes an error reply
        # with a null id (True: taken, no diagnostic event).
        self.unattributed: Callable[[dict[str, Any]], bool] | None = None
        # Set while user code (the diagnostic observer, the message hook) runs on this thread.
        self._callback = threading.local()
        # Shown each inbound message past the limits (None: one attribute check per message).
        self.message_tap = None if on_message is None else MessageTap(server, on_message, self._callback)
        # Run (with terminate's ``wait``) once the session has ended and every
        # waiter has failed: what else owns threads (submitted calls: ._submit).
        self.on_end: list[Callable[[bool], None]] = []
        _cores.add(self)

    def disown(self) -> None:
        """In a forked child: the server, its pipes and the HTTP session are
        the parent's, and the threads that served them were not copied. End
        the session here without touching any of it: no signal to the
        parent's server, no DELETE of the parent's HTTP session, no read of
        the parent's replies."""
        self._lock = threading.Lock()  # a parent thread may have held it at fork time
        self._pending = {}
        self.terminal = ConnectionClosed(FORKED)
        self.transport = None
        self.ended = threading.Event()
        self.ended.set()
        # The parent's handler, log and refresh threads were not copied, and
        # their locks may have been held at fork time: start from nothing.
        from .inbound import Inbound

        self.inbound = Inbound(self, None, auto_refresh=False)
        self.on_end = []

    @property
    def protocol_version(self) -> str | None:
        """The version in use, once the era is settled (the HTTP transport
        sends it as MCP-Protocol-Version)."""
        return self.era.version

    def adopt(self, era: Era, capabilities: Mapping[str, Any]) -> None:
        """Negotiation settled ``era``, whose opening result declared the
        server's ``capabilities``: from now on every request goes through it."""
        self.server_capabilities = freeze(capabilities)
        self.era = era

    # ----------------------------------------------------------- ending

    def terminate(self, error: McpError, *, wait: bool = False) -> None:
        """The terminal transition: the first call wins, every waiter fails
        with that error, and the transport is torn down."""
        with self._lock:
            if self.terminal is not None:
                first = False
            else:
                first = True
                self.terminal = error
                # Emptied in place (the transport holds the table's __len__),
                # one atomic popitem at a time: a reply popping its entry
                # without the lock meanwhile takes it from this sweep.
                pending = []
                with contextlib.suppress(KeyError):
                    while True:
                        pending.append(self._pending.popitem()[1])
        if first:
            self.ended.set()
            for entry in pending:
                entry._failed(error._copy())
            self.ended_at = _log.ended(self, error)  # after the waiters are released
        if self.transport is not None:
            self.transport.shutdown(wait)
        self.inbound.close(wait)
        for hook in tuple(self.on_end):
            hook(wait)

    def discard(self) -> None:
        """Tear down a session that a fresh one replaces (era negotiation's
        respawn). Its stderr is not reported: the fresh session's is what
        the caller gets."""
        self.diagnostics = None
        self.terminate(ConnectionClosed(CLOSED_BY_CALLER), wait=True)

    def failed(self) -> bool:
        """Whether the session ended for a reason other than the caller closing it."""
        error = self.terminal
        return error is not None and not (
            isinstance(error, ConnectionClosed) and error.message == CLOSED_BY_CALLER
        )

    def emit(self, kind: Any, detail: Any) -> None:
        observer = self.diagnostics
        if observer is not None:  # what it raises is swallowed (run_observer)
            event = DiagnosticEvent(kind=kind, server=self.server, detail=Redacted(detail))
            run_observer(self._callback, observer, event)

    def transport_closed(self, stderr_tail: str) -> None:
        """Called once by the transport when its teardown is complete."""
        if stderr_tail and self.failed():
            self.emit("stderr", stderr_tail)
        _log.torn_down(self, self.ended_at)

    # ----------------------------------------------------------- writing

    def claim(self, request_id: int) -> bool:
        """The transport asks before writing a request frame: False means the
        caller gave up and the frame is skipped.

        No lock on the way every frame goes: the entry is marked written,
        then looked for again. Only if it was taken off in between does this
        wait for the table lock, under which withdraw (abandon's too)
        decides whether to tell the server and records it in ``_told``: the frame goes
        exactly when the server is told it is given up, so the server never
        hears of a request it was not sent, nor is sent one it is not told
        of."""
        pending = self._pending
        entry = pending.get(request_id)
        if entry is None:
            return False
        entry._written = True
        if request_id in pending:
            return True
        with self._lock:
            return entry._told

    def waiting(self, request_id: int) -> bool:
        """Whether a caller still waits for this request's reply."""
        return request_id in self._pending

    @property
    def table_has(self) -> Callable[[object], bool]:
        """:meth:`waiting` as the table's own C method, for a check over many
        ids at once (a hint, read without the lock)."""
        return self._pending.__contains__

    @property
    def table_size(self) -> Callable[[], int]:
        """The request table's own C ``__len__``, for a transport to keep:
        how many requests wait (a hint, read without the lock)."""
        return self._pending.__len__

    def fail(self, request_id: int, error: McpError) -> None:
        """Fail one request without ending the session (an HTTP transport whose
        server answered that request with an error status)."""
        with self._lock:
            entry = self._pending.pop(request_id, None)
        if entry is not None:
            entry._failed(error)

    def request(  # noqa: PLR0917
        self,
        method: str,
        params: dict[str, Any],
        timeout: float,
        describe: Callable[[], str],
        cancellable: bool = True,
        watch: Watch | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> Any:
        """Send a request and block for its result, at most ``timeout`` s (or,
        with a ``watch``, until its deadline, which progress may move).
        Callers name the options: they are not keyword-only only because a
        keyword-only default costs a dict lookup on every request."""
        tracing = _log.TRACING
        if tracing.hook is not None and not tracing.inside():  # mcp_sync.otel.instrument()
            return tracing.hook(self, method, params, timeout, describe, cancellable, watch, headers)
        deadline = time.monotonic() + timeout
        request_id = next(self._ids)
        entry = _Pending() if watch is None else _Watched(watch)
        transport = self.transport
        assert transport is not None
        # Registered inside the try: an interrupt anywhere after this point
        # still takes the entry off the table.
        try:
            frame = self._enter(request_id, method, params, entry)
            if entry.settle(transport, frame, request_id, method, headers, timeout, deadline):
                return entry.outcome()
            # The deadline passed, waiting for room in the queue or for the reply.
            if self._abandon(request_id, cancellable):
                raise Timeout(f"{describe()} missed its deadline")
            # A reply, or the end of the session, won the race and is being
            # set on the entry right now. Bounded all the same: a completer
            # stopped half-way (a KeyboardInterrupt in the main thread while
            # it dispatched our reply) must not leave us waiting forever.
            if entry.wait(_COMPLETION_GRACE):
                return entry.outcome()
            raise Timeout(f"{describe()} missed its deadline")
        except BaseException:
            self._abandon(request_id, cancellable)
            raise

    def _enter(self, request_id: int, method: str, params: dict[str, Any], entry: Entry) -> bytes:
        """Encode a request (its size and JSON checked), put ``entry`` in the
        table under ``request_id`` and return its frame: what every request
        shares (:meth:`request`, :meth:`submit`). Raises, with nothing
        registered, for a frame that cannot go or a session that has ended.
        Called inside the caller's ``try``, whose handler abandons
        ``request_id`` on any exception (an interrupt just after the entry
        went in included)."""
        frame = encode(
            {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params},
            self.limits.max_outbound_frame_bytes,
        )
        # No lock: the entry goes in, then the session's end is looked at.
        # terminate() sets terminal before it sweeps the table, so an entry
        # either is swept (and failed) or sees the end here.
        pending = self._pending
        pending[request_id] = entry
        terminal = self.terminal
        if terminal is not None:
            pending.pop(request_id, None)
            raise terminal._copy()
        return frame

    def _abandon(self, request_id: int, cancellable: bool) -> bool:
        """Forget a request whose caller stopped waiting. False if a reply (or
        the end of the session) got there first."""
        return self.withdraw(request_id, "timed out", cancellable) is not None

    def _cancel_notice(self, request_id: int, reason: str) -> None:
        """Tell the server a request it has read is abandoned, the era's way
        (``notifications/cancelled``; a modern HTTP request's stream closed).
        Best effort: a full queue drops it rather than making us late."""
        transport = self.transport
        params = {"requestId": request_id, "reason": reason}
        message = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": params}
        sent = _best_effort(transport, self.limits, message, NOTIFICATION, request_id)
        if sent is not None:
            _log.cancelled(self.server, request_id, sent)

    def submit(
        self,
        method: str,
        params: dict[str, Any],
        entry: Entry,
        timeout: float,
        headers: Mapping[str, str] | None = None,
    ) -> tuple[int, bool]:
        """Send a request without waiting for its reply: ``entry`` is in the
        table before the frame can be written, and whoever takes it off
        completes it (the reply, the end of the session, :meth:`withdraw`).
        Returns the request's id and whether the frame was queued within
        ``timeout`` s (if not, the entry is still in the table)."""
        request_id = next(self._ids)
        transport = self.transport
        assert transport is not None
        try:
            frame = self._enter(request_id, method, params, entry)
            return request_id, transport.send(Outbound(frame, REQUEST, request_id, method, headers), timeout)
        except BaseException:
            self._abandon(request_id, True)
            raise

    def withdraw(self, request_id: int, reason: str, cancellable: bool = True) -> Entry | None:
        """Take a request off the table (its deadline passed, or its caller
        cancelled it or stopped waiting) and tell the server if it was sent
        (and ``cancellable``); the entry, for the caller to complete, or
        ``None`` if another thread got there first (a reply, the end of the
        session)."""
        with self._lock:
            entry = self._pending.pop(request_id, None)
            if entry is None:
                return None
            told = entry._told = entry._written and cancellable and self.terminal is None
        if told:
            self._cancel_notice(request_id, reason)
        return entry

    def send_and_forget(self, method: str, params: dict[str, Any]) -> None:
        """Best effort: a request whose reply nobody waits for (it is dropped
        as one nobody waits for), queued only if there is room now."""
        if self.terminal is None:
            request_id = next(self._ids)
            message = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
            _best_effort(self.transport, self.limits, message, REQUEST, request_id)

    def require(self, capability: str, what: str) -> None:
        """Raise (nothing sent) unless the session is open and the server
        declared ``capability``."""
        terminal = self.terminal
        if terminal is not None:
            raise terminal._copy()
        if not isinstance(self.server_capabilities.get(capability), Mapping):
            raise NotSupported(
                f"server {self.server!r} did not declare the {capability} capability, "
                f"which {what} needs"
            )

    def cancel_request(self, request_id: int) -> None:
        """Stop waiting for a request sent earlier (a replaced listen stream)
        and tell the server, best effort: over 2026-07-28 HTTP that closes
        its reply stream."""
        self._abandon(request_id, True)

    def notify(self, method: str, timeout: float, params: dict[str, Any] | None = None) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        frame = encode(message, self.limits.max_outbound_frame_bytes)
        transport = self.transport
        assert transport is not None
        if self.terminal is not None:
            raise self.terminal._copy()
        if not transport.send(Outbound(frame, NOTIFICATION, None, method), timeout):
            raise Timeout(f"{method} could not be queued before handshake_timeout_ms expired")

    # ----------------------------------------------------------- reading

    def receive(self, line: bytes) -> None:
        """One inbound frame from the transport. Raises nothing: a rule
        broken here ends the session. Once the session has ended, lines
        already read are not dispatched."""
        if self.terminal is not None:
            return
        try:
            message = decode_line(line)
            if message is None:
                return
            if self.message_tap is not None:
                self.message_tap(message)
            request_id = message.get("id")
            if (
                type(request_id) is int
                and "result" in message
                and "error" not in message
                and "method" not in message
                and message["jsonrpc"] == "2.0"
            ):
                # Every call's reply: a result for one of our integer ids,
                # which _dispatch's rules would accept as it is (so it need
                # not go there). Anything else does. (An atomic pop: no lock.)
                entry = self._pending.pop(request_id, None)
                if entry is not None:
                    entry._arrived(message["result"])
                return
            self._dispatch(message)
        except TooManyValues as exc:
            # A reply too costly to parse fails its request alone (a late
            # one is dropped); any other such frame ends the session.
            if exc.request_id is None:
                self.terminate(ProtocolError(exc.message))
            else:
                self.fail(exc.request_id, ProtocolError(exc.message))
        except ProtocolError as exc:
            # Kept without its frames: they hold this core, and the cycle
            # would outlive a dropped session until a GC pass.
            self.terminate(exc.with_traceback(None))

    def _dispatch(self, message: dict[str, Any]) -> None:
        """Every frame but a plain result reply (see :meth:`receive`): its
        JSON-RPC shape checked (``session.replies``), then handed on."""
        if message["jsonrpc"] != "2.0":
            raise ProtocolError('a protocol frame has a jsonrpc version other than "2.0"')
        if "method" in message:
            server_message(self, message)
            return
        request_id, error = reply_parts(message)
        if request_id is None:
            stray_error(self, self.unattributed, error)
            return
        if type(request_id) is not int:
            return  # we only send integer ids: never ours
        with self._lock:
            entry = self._pending.pop(request_id, None)
        if entry is None:
            return  # nobody waits for it (timed out, or never ours)
        if error is None:
            entry._arrived(message["result"])
        else:
            entry._failed(remote_failure(self.server, error))

    # ----------------------------------------------------------- handshake

    def reopen(self, deadline: float) -> None:
        """A new protocol session on the same transport, for an HTTP server
        that forgot ours: the era opens it again, by ``deadline``."""
        self.era.reopen(self, deadline)

    def load_catalog(self, keep: Callable[[Tool], bool] | None = None) -> tuple[Tool, ...]:
        """Walk ``tools/list`` (in either era) into the frozen snapshot.
        ``keep`` may leave a validated entry out of it."""
        tools = catalog_tools(self, keep)
        self.catalog = Snapshot(tools)
        return tools

    def ask(self, method: str, params: dict[str, Any], timeout: float, describe: Callable[[], str]) -> Any:
        """A request and its final result, the way the era sends it
        (``input_required`` answered by the handlers): ``call_plan.ask``."""
        return ask(self, method, params, timeout, describe)

    def walk(
        self,
        walk: PageWalk,
        timeout: float,
        budget: str,
        params: Mapping[str, Any] | None = None,
        *,
        deadline: float | None = None,
    ) -> None:
        """Follow a paginated list to its end (``session.listing.walk``): each
        page within ``timeout`` s, the whole walk by ``deadline`` if given."""
        walk_pages(self, walk, timeout, budget, params, deadline)

    def answer_input_request(
        self, method: str, params: Mapping[str, Any], deadline: float
    ) -> dict[str, Any]:
        """The client's answer to one request a server embedded in an
        ``input_required`` result (``elicitation/create``,
        ``sampling/createMessage``, ``roots/list``), made by ``deadline``:
        the same handlers that answer server requests in the handshake era,
        on the same pool and under the same rules (the call plan's seam)."""
        return self.inbound.requests.answer_input_request(method, params, deadline)

    # ----------------------------------------------------------- calling

    def close(self) -> None:
        # From inside an observer the teardown may be running in this very
        # thread, or this thread may be reading: end the session and leave
        # the teardown to finish without waiting for it here.
        wait = not getattr(self._callback, "active", False)
        self.terminate(ConnectionClosed(CLOSED_BY_CALLER), wait=wait)
