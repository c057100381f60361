"""Calls that do not block a thread: ``Session.submit_tool`` and ``Session.map_tool``.

A submitted call is a request in the session's request table like any other,
but no thread waits for it: its handle, a :class:`ToolCall` (a real
``concurrent.futures.Future``), is itself the table entry, settled in
whichever thread takes it off the table (the thread reading the server's
output, the end of the session, the deadline thread, a caller that cancels).
Only that thread settles it, so a handle settles exactly once.

Per session, once something was submitted (:class:`Calls`):

- one deadline thread (``mcp_sync-<server>-deadlines``) and a heap of
  ``(deadline, request id)``: at a call's deadline it withdraws the request
  (``notifications/cancelled`` if it was sent, the era's way) and fails the
  handle with :class:`Timeout`. Settled calls stay in the heap until their
  deadline or the next compaction, holding two numbers each;
- one thread for done callbacks (``...-callbacks``), which runs them in the
  order they were added, never on the thread that reads the server's output;
- a few threads (``...-rounds``) for the rare call that needs more than one
  round: a modern ``input_required`` result (answered by the handlers, as
  ``call_tool`` does) or a ``-32022`` refusal sent again at a mutual version.
  Such a call is running (``cancel()`` returns False) until it settles.

``result()`` (and ``exception()``) of a handle not yet done reads the
server's output in the calling thread when the transport lets callers read
(stdio) and nobody else is reading: one thread with many calls in flight
then crosses no thread boundary per call.
"""

from __future__ import annotations

import concurrent.futures as cf
import heapq
import logging
import operator
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from itertools import compress
from typing import TYPE_CHECKING, Any

from .._log import check_traceparent
from ..protocol.catalog import CallToolResult, Snapshot, Tool, parse_call_result
from ..protocol.errors import McpError, RemoteError, Timeout
from ..protocol.frames import check_arguments
from ..protocol.limits import request_budget, seconds
from ..protocol.output_check import check_deadline, check_structured_output
from ..protocol.versions import UNSUPPORTED_PROTOCOL_VERSION
from ..transports.workers import Workers
from .call_plan import drive, not_in_catalog, rounds

if TYPE_CHECKING:
    from ..transports.contract import Leader
    from .core import _Core

__all__ = ["Calls", "ToolCall", "calls_of", "map_tool", "submit_tool"]

_log = logging.getLogger("mcp_sync.calls")

CLOSE_JOIN = 1.0
"""Seconds the end of a session waits, in all, for the threads of its submitted calls."""
ROUNDS_WORKERS = 4
"""Threads that may run calls needing more than one round at once (more wait their turn)."""
DEADLINE_SLACK = 0.002
"""The deadline thread wakes up to this late (never early), so a burst of
deadlines costs one wake-up, not one each."""
LEAD_SLICE = 0.05
"""How long a thread reading for its own handle goes without looking at
whether it was settled some other way (cancelled from another thread)."""
_COMPACT_MIN = 1024
_REQUEST_ID = operator.itemgetter(1)  # of a (deadline, request id) in the heap
_PENDING = "PENDING"  # concurrent.futures' state of a future neither running nor settled
_FINISHED = "FINISHED"  # ... and of one settled with a result or an error
_RUNNING = "RUNNING"  # ... of one whose further rounds run on a rounds thread
_CANCELLED = "CANCELLED"
_NOTIFIED = "CANCELLED_AND_NOTIFIED"  # cancelled, and its waiters told
_INPUT_REQUIRED = "input_required"
_CREATED = threading.Lock()  # guards the lazy creation of each session's Calls (rare)
# Guards the lazy creation of each handle's condition (by whoever first needs
# to wait on the handle, add a callback or cancel it), so a handle gets one.
# Held for a few bytecodes, never while waiting; a settling takes no lock
# (see ToolCall._finished_unwatched).
_LAZY = threading.Lock()


class ToolCall(cf.Future[CallToolResult]):
    """A tool call in flight: a ``concurrent.futures.Future`` whose result is
    the :class:`CallToolResult` ``call_tool`` would have returned, or whose
    exception is the error it would have raised (:class:`Timeout` at the
    call's deadline). Made by :meth:`Session.submit_tool`.

    ``cancel()`` withdraws a call that has not completed (the server is told,
    the era's way, if it was sent) and returns True; False once a reply has
    come, or while a call that needed another round runs. Done callbacks run
    on a library thread, in the order they were added; one added to a
    handle already done runs at once in the thread that adds it.
    """

    # Future.__init__'s fields, as class defaults until set: most handles are
    # settled before anyone waits on them, so the condition, and the lists
    # only used under it (waiters, callbacks), are made on first use. (Empty
    # tuples: a list used before its condition exists would fail loudly.)
    _cond: threading.Condition | None = None
    _result: CallToolResult | None = None
    _exception: BaseException | None = None
    _waiters: Any = ()
    _done_callbacks: Any = ()
    # As the request table's entry (see _pending.Entry): completed by
    # _arrived or _failed; marked written by the transport's claim.
    _written = False
    _told = False
    request_id = 0
    """The JSON-RPC id of the call's request (0 until it is sent)."""

    def __init__(  # noqa: PLR0913, PLR0917
        self, calls: Calls, tool: Tool, catalog: Snapshot, params: dict[str, Any],
        deadline: float, option: str, timeout_ms: int,
    ) -> None:  # fmt: skip
        self._state = _PENDING
        self._calls = calls
        self._tool = tool
        self._catalog = catalog
        self._params = params
        self._deadline = deadline
        self._budget = (option, timeout_ms)

    def _describe(self) -> str:
        """The call, for a timeout's message."""
        option, timeout_ms = self._budget
        return f"tool {self._tool.name!a} on server {self._calls.core.server!r} ({option}={timeout_ms})"

    @property
    def _condition(self) -> threading.Condition:
        # What every Future method and concurrent.futures.wait/as_completed
        # take: made once (under _LAZY), its lists before it, and published
        # last, so a settling that finds it finds them too.
        cond = self._cond
        if cond is None:
            with _LAZY:
                cond = self._cond
                if cond is None:
                    self._waiters = []
                    self._done_callbacks = []
                    cond = self._cond = threading.Condition()
        return cond

    @_condition.setter
    def _condition(self, cond: threading.Condition) -> None:  # (Future's own __init__ would set it)
        self._cond = cond

    def set_result(self, result: CallToolResult) -> None:
        if self._cond is None:
            self._finished_unwatched(result, None)
        else:
            cf.Future.set_result(self, result)

    def set_exception(self, exception: BaseException | None) -> None:
        if self._cond is None:
            self._finished_unwatched(None, exception)
        else:
            cf.Future.set_exception(self, exception)

    def _finished_unwatched(self, result: CallToolResult | None, exception: BaseException | None) -> None:
        """Settle a handle that had no condition when its settler looked
        (nobody waited on it).

        No lock: the outcome and the state are stored, then the condition is
        looked for again. Whoever makes the condition (to wait on the handle,
        add a callback or cancel it) reads the state under it once made, so
        either it finds the handle finished, or its condition is there for
        this second look, which tells it the way Future.set_result would."""
        if self._state not in (_PENDING, _RUNNING):
            raise cf.InvalidStateError(f"{self._state}: {self!r}")
        self._result, self._exception = result, exception
        self._state = _FINISHED  # after the outcome: result() reads it without a lock
        cond = self._cond
        if cond is not None:
            with cond:
                for waiter in self._waiters:
                    if exception is None:
                        waiter.add_result(self)
                    else:
                        waiter.add_exception(self)
                cond.notify_all()
            self._invoke_callbacks()

    def done(self) -> bool:
        # One read of the state (a hint, as every lock-free read of it here):
        # the request table's done() asks it on the hot path.
        return self._state in (_FINISHED, _CANCELLED, _NOTIFIED)

    @property
    def tool(self) -> str:
        """The name of the tool called."""
        return self._tool.name

    def __repr__(self) -> str:
        return f"<ToolCall {self._tool.name!a} on server {self._calls.core.server!r} {self._state.lower()}>"

    # ------------------------------------------------------------ waiting

    def result(self, timeout: float | None = None) -> CallToolResult:
        """The call's result; raises its error, ``CancelledError`` if it was
        cancelled, ``TimeoutError`` (not :class:`Timeout`) if ``timeout`` s
        pass first while the call goes on."""
        if self._state == _FINISHED and self._exception is None:
            # Settled with a result: the common case, without the condition's
            # lock (the result is set before the state, under the lock).
            return self._result  # type: ignore[return-value]  # typeshed: CallToolResult | None
        return super().result(self._lead(timeout))

    def exception(self, timeout: float | None = None) -> BaseException | None:
        """The call's error, or ``None`` if it has a result (waits as :meth:`result`)."""
        return super().exception(self._lead(timeout))

    def _lead(self, timeout: float | None) -> float | None:
        """Read the server's output here while this call is not done, if the
        transport lets callers read and nobody else is; the wait left."""
        leader = self._calls.leader
        if leader is None or self._state != _PENDING:
            return timeout  # settled, or running (its rounds thread reads for it)
        start = time.monotonic()
        end = self._deadline if timeout is None else min(self._deadline, start + timeout)

        def done() -> bool:  # a read of one attribute, without the lock: a hint
            return self._state != _PENDING

        while True:
            # In slices: a handle settled without a reply (a cancel from
            # another thread) must not leave this thread reading until its end.
            until = min(end, time.monotonic() + LEAD_SLICE)
            leader.lead(done, until, True)
            now = time.monotonic()
            if done() or now >= end or now < until:
                break  # settled, out of time, or someone else reads: wait for the handle
        if timeout is None:
            return None
        return max(0.0, timeout - (time.monotonic() - start))

    # ------------------------------------------------------------ cancelling

    def cancel(self) -> bool:
        if self.done() or self.running():
            return super().cancel()
        entry = self._calls.core.withdraw(self.request_id, "cancelled by the client")
        if entry is None:
            return False  # a reply (or the end) is settling it right now
        cancelled = super().cancel()
        # Only this tells concurrent.futures.wait and as_completed.
        self.set_running_or_notify_cancel()
        return cancelled

    # ------------------------------------------------------------ settling

    def _arrived(self, raw: Any) -> None:
        """The reply's result, in the thread that took the call off the table."""
        core = self._calls.core
        era = core.era
        try:
            if era.input_rounds and era.result_kind(raw, "tools/call") == _INPUT_REQUIRED:
                self._calls.run_rounds(self, self._answer_rounds(raw))
                return
            outcome = self._parse(raw)
        except McpError as exc:
            self._settle_error(exc.with_traceback(None))  # its frames hold the core
            return
        except Exception as exc:  # a bug: the handle gets it, never the reading thread
            self._settle_error(exc)
            return
        self._settle(outcome)

    def _answer_rounds(self, raw: Any) -> Callable[[], Any]:
        # (Its own function: a lambda in _arrived would make a cell for each
        # name it closes over on every reply.)
        core, params, deadline, describe = self._calls.core, self._params, self._deadline, self._describe
        return lambda: rounds(core, "tools/call", params, deadline, describe, raw)

    def _failed(self, error: BaseException) -> None:
        core = self._calls.core
        if (
            isinstance(error, RemoteError)
            and error.code == UNSUPPORTED_PROTOCOL_VERSION
            and core.era.version_retry
            and core.terminal is None
        ):
            # The era sends it again at a version both sides list (once).
            params, deadline, describe = self._params, self._deadline, self._describe
            self._calls.run_rounds(self, lambda: drive(core, "tools/call", params, deadline, describe))
            return
        self._settle_error(error)

    def _parse(self, raw: Any) -> CallToolResult:
        core = self._calls.core
        outcome = parse_call_result(raw, self._tool.name, core.era.any_structured)
        if core.validate_output and self._tool.output_schema is not None:
            check_structured_output(self._catalog, self._tool, outcome, check_deadline(self._deadline))
        return outcome

    def _run_rounds(self, job: Callable[[], Any]) -> None:
        """A rounds thread's job: the rest of the call's plan, then its result."""
        try:
            outcome = self._parse(job())
        except McpError as exc:
            self._settle_error(exc.with_traceback(None))
            return
        except Exception as exc:  # a bug must still settle the handle
            self._settle_error(exc)
            return
        self._settle(outcome)

    def _settle(self, outcome: CallToolResult) -> None:
        try:  # noqa: SIM105 - contextlib.suppress costs an object per call
            self.set_result(outcome)
        except cf.InvalidStateError:  # only if user code set it
            pass

    def _settle_error(self, error: BaseException) -> None:
        try:  # noqa: SIM105
            self.set_exception(error)
        except cf.InvalidStateError:
            pass

    def _invoke_callbacks(self) -> None:
        # concurrent.futures runs the callbacks in the thread that completes
        # the future (here, often the one reading the server's output): hand
        # them to the callback thread instead, in their order.
        callbacks: list[Callable[[Any], object]] = self._done_callbacks
        if not callbacks:
            return
        self._done_callbacks = []
        if not self._calls.callbacks.submit(lambda: _run_callbacks(self, callbacks)):
            _run_callbacks(self, callbacks)  # the session's pool is closed: a library thread runs them


def _run_callbacks(call: ToolCall, callbacks: list[Callable[[Any], object]]) -> None:
    for callback in callbacks:
        try:
            callback(call)
        except Exception:
            _log.exception(
                "a done callback of a call of tool %a on server %r raised", call.tool, call._calls.core.server,
                extra={"mcp_event": "callback_failed", "mcp_server": call._calls.core.server},
            )  # fmt: skip


class Calls:
    """One session's submitted calls: the deadline heap and its thread, the
    callback thread and the rounds threads. Closed with the session."""

    def __init__(self, core: _Core) -> None:
        self.core = core
        transport = core.transport
        self.leader: Leader | None = None if transport is None else transport.leader
        name = f"mcp_sync-{core.server}"
        self._name = f"{name}-deadlines"
        self.callbacks = Workers(f"{name}-callbacks", max_workers=1, backlog=sys.maxsize)
        self._rounds = Workers(f"{name}-rounds", max_workers=ROUNDS_WORKERS, backlog=sys.maxsize)
        # _lock guards the heap, _compact_at, _thread and _closed; the
        # deadline thread waits on _cond (over _lock) until the earliest
        # deadline or a new earlier one. Taken bare where nobody need be woken.
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._heap: list[tuple[float, int]] = []
        self._compact_at = _COMPACT_MIN
        self._thread: threading.Thread | None = None
        self._closed = False
        # A call's budget when it names none: the session's (ms, the option's
        # name for messages, seconds), worked out once.
        budget, option = request_budget(core.limits, None)
        self.default_budget = (budget, option, seconds(budget))

    def watch(self, request_id: int, deadline: float) -> None:
        """Fail the call ``request_id`` with :class:`Timeout` at ``deadline``
        unless something else settles it first."""
        with self._lock:
            if self._closed:
                return  # the session has ended: every entry has failed
            heap = self._heap
            if len(heap) >= self._compact_at:
                # Drop what has settled: the heap holds at most about twice
                # the calls in flight, at a cost spread over the pushes.
                # (C all the way: no bytecode per item)
                heap[:] = compress(heap, map(self.core.table_has, map(_REQUEST_ID, heap)))
                heapq.heapify(heap)
                self._compact_at = max(_COMPACT_MIN, 2 * len(heap))
            heapq.heappush(heap, (deadline, request_id))
            if heap[0][1] != request_id:
                return  # the thread already wakes earlier than this deadline
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
                self._thread.start()
            else:
                self._cond.notify()

    def _run(self) -> None:
        cond, heap = self._cond, self._heap
        while True:
            expired: list[int] = []
            with cond:
                while not self._closed:
                    now = time.monotonic()
                    while heap and heap[0][0] <= now:
                        expired.append(heapq.heappop(heap)[1])
                    if expired:
                        break
                    wait = heap[0][0] - now + DEADLINE_SLACK if heap else None
                    cond.wait(None if wait is None else min(wait, threading.TIMEOUT_MAX))
                else:
                    return
            for request_id in expired:
                self.expire(request_id)

    def expire(self, request_id: int) -> None:
        """The call's deadline has passed: withdraw it and fail its handle."""
        call = self.core.withdraw(request_id, "timed out")
        if isinstance(call, ToolCall):
            call._settle_error(Timeout(f"{call._describe()} missed its deadline"))

    def run_rounds(self, call: ToolCall, job: Callable[[], Any]) -> None:
        """Run the rest of ``call``'s plan on a rounds thread."""
        call.set_running_or_notify_cancel()
        if not self._rounds.submit(lambda: call._run_rounds(job)):
            terminal = self.core.terminal
            error = terminal._copy() if terminal is not None else RuntimeError("no thread for the call's next round")
            call._settle_error(error)

    def close(self, wait: bool) -> None:
        """The session has ended (every entry has failed): stop the deadline
        thread, run what is queued for the other threads, and with ``wait``
        give them up to :data:`CLOSE_JOIN` s in all."""
        with self._cond:
            self._closed = True
            self._heap.clear()
            self._cond.notify()
            thread = self._thread
        end = time.monotonic() + (CLOSE_JOIN if wait else 0.0)
        self._rounds.close(max(0.0, end - time.monotonic()), drain=True)
        self.callbacks.close(max(0.0, end - time.monotonic()), drain=True)
        if wait and thread is not None and thread is not threading.current_thread():
            thread.join(max(0.0, end - time.monotonic()))


def calls_of(core: _Core, holder: list[Calls | None]) -> Calls:
    """The session's :class:`Calls` (``holder[0]``), made at the first submission."""
    calls = holder[0]
    if calls is not None:
        return calls
    with _CREATED:
        calls = holder[0]
        if calls is None:
            calls = holder[0] = Calls(core)
            core.on_end.append(calls.close)
    if core.terminal is not None:
        calls.close(False)  # the session ended as it was made: nothing may linger
    return calls


def submit_tool(  # noqa: PLR0913, PLR0917
    calls: Calls,
    name: str,
    arguments: Mapping[str, Any] | None,
    timeout_ms: int | None,
    traceparent: str | None,
    meta: Mapping[str, Any] | None = None,
) -> ToolCall:
    """Check and send one ``tools/call``; its handle. What ``call_tool`` would
    refuse before sending anything is raised here."""
    core = calls.core
    terminal = core.terminal
    if terminal is not None:
        raise terminal._copy()
    catalog = core.catalog  # one snapshot for the whole call, as call_tool does
    tool = catalog.by_name.get(name)
    if tool is None:
        raise not_in_catalog(name, core.server)
    limits = core.limits
    if timeout_ms is None:
        timeout_ms, option, timeout = calls.default_budget
    else:
        timeout_ms, option = request_budget(limits, timeout_ms)
        timeout = seconds(timeout_ms)
    args: Any = {} if arguments is None else arguments
    check_arguments(args, limits.max_outbound_frame_bytes)
    era = core.era
    # (No execution object means "forbidden": the property is skipped for
    # most tools, about 2k instructions per submitted call.)
    if tool.execution is not None and tool.task_support == "required":
        # Never as a task: refused as call_tool(task=False) would refuse it
        # (no other tool can be: task=False only refuses a required one).
        era.use_task(core, tool, False)
    params: dict[str, Any] = {"name": name, "arguments": args}
    if meta is not None:  # the caller's keys; traceparent and the era's win
        from .extensions import check_meta

        params["_meta"] = check_meta(meta, limits.max_outbound_frame_bytes)
    if traceparent is not None:
        params["_meta"] = {**params.get("_meta", {}), "traceparent": check_traceparent(traceparent)}
    # (Plain JSON-RPC sends the params as they are, without era.frame's call.)
    framed, headers = (params, None) if era.plain_requests else era.frame("tools/call", params)
    deadline = time.monotonic() + timeout
    call = ToolCall(calls, tool, catalog, params, deadline, option, timeout_ms)
    request_id, sent = core.submit("tools/call", framed, call, timeout, headers)
    call.request_id = request_id
    if sent:
        calls.watch(request_id, deadline)
    else:
        calls.expire(request_id)  # no room in the queue before the deadline
    return call


def map_tool(
    submit: Callable[[Mapping[str, Any] | None], ToolCall],
    arguments: Iterable[Mapping[str, Any] | None],
    max_in_flight: int,
) -> Iterator[CallToolResult]:
    """``submit`` each of ``arguments`` with at most ``max_in_flight`` calls
    (and results) held at once; yield the results in order. The first error
    is raised at its place, after the calls still in flight are cancelled
    (so is a generator closed early)."""
    if type(max_in_flight) is not int or max_in_flight < 1:
        raise ValueError("max_in_flight must be a positive int")
    return _mapped(submit, arguments, max_in_flight)


def _mapped(
    submit: Callable[[Mapping[str, Any] | None], ToolCall],
    arguments: Iterable[Mapping[str, Any] | None],
    max_in_flight: int,
) -> Iterator[CallToolResult]:
    in_flight: deque[cf.Future[CallToolResult]] = deque()
    try:
        for args in arguments:
            if len(in_flight) >= max_in_flight:
                yield in_flight.popleft().result()
            try:
                call: cf.Future[CallToolResult] = submit(args)
            except McpError as exc:
                # Refused before sending (bad arguments, a closed session):
                # raised at its place in the order, like any other failure.
                call = cf.Future()
                call.set_exception(exc)
            in_flight.append(call)
        while in_flight:
            yield in_flight.popleft().result()
    finally:
        for call in in_flight:
            call.cancel()
