"""Where and how the session's handlers run, in both eras.

A server request (handshake era) and a question of an ``input_required``
result or of a task (2026-07-28) are answered the same way: by
:class:`ServerRequests`, on a small bounded pool of library threads
(``Handlers.max_concurrency``), never on the thread reading the server's
output and never on a caller's thread, so a handler waiting on a human holds
up nobody's reply. One set of rules decides the outcome (:meth:`ServerRequests._outcome`):
a handler that raises, refuses (``HandlerError``), returns something
unusable or outlives ``Handlers.timeout_ms`` is an error, never an exception
out of here. In the handshake era that error is the reply the server gets;
in the modern era, which has no error answer to an input request, the
waiting call ends with an ``McpError`` carrying it, by its own deadline at
the latest.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from ..protocol.errors import ConnectionClosed, InputRequired, McpError, ProtocolError, Timeout
from ..protocol.frames import encode
from ..protocol.limits import reply_not_queued, seconds
from ..protocol.roots import RootsProvider, normalize_roots
from ..transports.workers import Workers
from .handlers import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    METHOD_NOT_FOUND,
    HandlerError,
    Handlers,
    Root,
    _Refused,
    elicitation_reply,
    parse_elicitation,
    parse_sampling,
    sampling_reply,
)
from .held_tasks import TASK_METHODS, TASKABLE, ClientTasks, _Held, task_param

if TYPE_CHECKING:
    from .eras.contract import EraCore

__all__ = ["HANDLER_FAILED", "HANDLER_LATE", "REQUEST_TIMEOUT", "ServerRequests"]

REQUEST_TIMEOUT = -32001  # what the official SDKs use for a request that timed out
HANDLER_FAILED = "the client's handler failed"
HANDLER_LATE = "the client's handler did not answer in time"

_log = logging.getLogger("mcp_sync.handlers")


class _InFlight:
    """A server request being answered: whoever pops it from the table
    (the handler's thread, the timer, a cancellation) decides the reply."""

    __slots__ = ("cancelled", "timer")

    def __init__(self) -> None:
        self.cancelled = threading.Event()
        self.timer: threading.Timer | None = None


@dataclass(frozen=True, slots=True)
class _Failure:
    """The error that answers a server request: ``source`` says whether the
    request was refused before any handler ran, the handler refused it
    (``HandlerError``), or the handler raised (or returned nonsense)."""

    code: int
    message: str
    source: Literal["refused", "handler", "raised", "closed"]


CLOSED = "connection scope closed"  # as a session closed by its caller says
_CLOSED = _Failure(INTERNAL_ERROR, CLOSED, "closed")


class _Answer:
    """One ``input_required`` question answered on the handler pool for a
    caller that waits for it (modern era). ``_done`` is a bare lock,
    released once the outcome is set (by the handler's thread, or by the
    session's end): the caller acquires it with its timeout."""

    __slots__ = ("_done", "_guard", "_set", "cancelled", "outcome")

    def __init__(self) -> None:
        self._done = threading.Lock()
        self._done.acquire()
        # Guards _set and outcome: the handler's thread and close() may both
        # finish this answer; the first wins. Nobody waits on it for long.
        self._guard = threading.Lock()
        self._set = False
        self.cancelled = threading.Event()
        self.outcome: tuple[Any, _Failure | None] = (None, None)

    def finish(self, outcome: tuple[Any, _Failure | None]) -> None:
        with self._guard:
            if self._set:
                return
            self._set = True
            self.outcome = outcome
        self._done.release()

    def run(
        self,
        outcome: Callable[[str, object, threading.Event], tuple[Any, _Failure | None]],
        method: str,
        params: object,
    ) -> None:
        # What escapes _outcome is no Exception (a SystemExit, say, in the
        # handler): the waiting caller still gets a failure, not a None answer.
        result: tuple[Any, _Failure | None] = (None, _Failure(INTERNAL_ERROR, HANDLER_FAILED, "raised"))
        try:
            result = outcome(method, params, self.cancelled)
        finally:
            self.finish(result)

    def wait(self, until: float) -> bool:
        return self._done.acquire(True, min(max(0.0, until - time.monotonic()), threading.TIMEOUT_MAX))


class ServerRequests:
    """Answers one session's server requests, and in the modern era the
    questions of ``input_required`` results: one handler pool, one timeout
    and one set of failure rules for both."""

    def __init__(self, core: EraCore, handlers: Handlers | None) -> None:
        self._core = core
        self._handlers = handlers if handlers is not None else Handlers()
        limits = core.limits
        self._name = f"mcp_sync-{core.server}"
        self._timeout = seconds(
            self._handlers.timeout_ms if self._handlers.timeout_ms is not None else limits.request_timeout_ms
        )
        backlog = max(64, limits.queue_capacity)
        self._pool_backlog = backlog
        self._pool = Workers(
            f"{self._name}-handler", max_workers=self._handlers.max_concurrency, backlog=backlog
        )
        # Guards _inflight, _answers and _roots (the reader, the pool's
        # threads, waiting callers and close() take it briefly; nobody waits long).
        self._lock = threading.Lock()
        self._inflight: dict[int | str, _InFlight] = {}
        self._answers: set[_Answer] = set()  # input questions a caller waits for
        roots = self._handlers.roots
        self._roots: RootsProvider | None = roots
        # Server requests the server may send as tasks (2025-11-25): those
        # whose handlers are configured, unless Handlers(tasks=False).
        taskable = frozenset(m for m in TASKABLE if self._serves(m)) if self._handlers.tasks else frozenset()
        self._tasks = ClientTasks(self._name, taskable, self._task_reply) if taskable else None

    # ------------------------------------------------------- reader side

    def receive(self, request_id: int | str, method: str, params: object) -> None:
        """A server request, from the thread reading the server's output:
        answered at once when that costs nothing, else handed to the pool."""
        if method == "ping":
            self._reply_soon(request_id, result={})
            return
        if self._tasks is not None:
            if method in TASK_METHODS:
                self._tasks.serve(request_id, method, params)
                return
            task = task_param(params) if method in self._tasks.methods else None
            if task is not None:
                self._start_task(request_id, method, params, task)
                return
        if not self._serves(method):
            self._reply_soon(request_id, error=(METHOD_NOT_FOUND, "Method not found"))
            return
        entry = _InFlight()
        with self._lock:
            if request_id in self._inflight:
                duplicate = True
            else:
                duplicate = False
                self._inflight[request_id] = entry
        if duplicate:
            self._reply_soon(request_id, error=(INVALID_PARAMS, "a request with this id is already in progress"))
            return
        if not self._pool.submit(lambda: self._run(request_id, method, params, entry)):
            with self._lock:
                self._inflight.pop(request_id, None)
            self._overwhelmed()

    def task_capability(self) -> dict[str, Any] | None:
        """The client's ``tasks`` capability (2025-11-25), or ``None``."""
        return self._tasks.capability() if self._tasks is not None else None

    def _start_task(self, request_id: int | str, method: str, params: object, task: Mapping[str, Any]) -> None:
        """A task-augmented request: answered at once with a ``CreateTaskResult``;
        the handler runs on the pool and ``tasks/result`` serves its outcome."""
        assert self._tasks is not None and isinstance(params, Mapping)
        created = self._tasks.create(method, task)
        if isinstance(created, tuple):
            self._reply_soon(request_id, error=created)
            return
        inner = {key: value for key, value in params.items() if key != "task"}
        view = created.view()
        if not self._pool.submit(lambda: self._run_task(created, method, inner)):
            self._tasks.drop(created)
            self._overwhelmed()
            return
        self._reply_soon(request_id, result={"task": view})

    def _run_task(self, held: _Held, method: str, params: Mapping[str, Any]) -> None:
        result, failure = self._outcome(method, params, held.cancelled)
        assert self._tasks is not None
        self._tasks.finish(held, result, None if failure is None else (failure.code, failure.message))

    def _task_reply(self, request_id: int | str, result: Any, error: tuple[int, str] | None) -> None:
        self._send(_reply(request_id, result=result, error=error))

    def cancelled(self, params: object) -> None:
        """``notifications/cancelled`` for one of the server's requests: its
        answer is dropped and its handler told (``request.cancelled``)."""
        if not isinstance(params, Mapping):
            return
        request_id = params.get("requestId")
        if type(request_id) not in (int, str):
            return
        with self._lock:
            entry = self._inflight.pop(request_id, None)  # type: ignore[arg-type]
        if entry is not None:
            entry.cancelled.set()
            if entry.timer is not None:
                entry.timer.cancel()

    def _serves(self, method: str) -> bool:
        handlers = self._handlers
        if method == "elicitation/create":
            return handlers.elicitation is not None or handlers.url_elicitation is not None
        if method == "sampling/createMessage":
            return handlers.sampling is not None
        if method == "roots/list":
            return self._roots is not None
        return False

    # ------------------------------------------------------- pool side

    def _run(self, request_id: int | str, method: str, params: object, entry: _InFlight) -> None:
        timer = threading.Timer(self._timeout, self._timed_out, args=(request_id,))
        timer.name = f"{self._name}-handler-timer"
        timer.daemon = True
        entry.timer = timer
        try:
            timer.start()
        except RuntimeError:
            entry.timer = None
        try:
            result, failure = self._outcome(method, params, entry.cancelled)
        finally:
            timer.cancel()
        with self._lock:
            mine = self._inflight.pop(request_id, None) is entry
        if mine:
            error = None if failure is None else (failure.code, failure.message)
            self._send(_reply(request_id, result=result, error=error))

    def _outcome(self, method: str, params: object, cancelled: threading.Event) -> tuple[Any, _Failure | None]:
        """Run the handler for one request: its result, or the error that
        answers it (a handler that raises, refuses or returns nonsense is an
        error, never an exception out of here). Both eras go through this."""
        try:
            return self.answer(method, params, cancelled), None
        except _Refused as refused:
            return None, _Failure(refused.code, refused.message, "refused")
        except HandlerError as failure:
            code = failure.code if type(failure.code) is int else INTERNAL_ERROR
            return None, _Failure(code, str(failure.message), "handler")
        except Exception:
            _log.exception(
                "the %s handler of server %r raised", method, self._core.server,
                extra={"mcp_event": "handler_failed", "mcp_server": self._core.server, "mcp_method": method},
            )  # fmt: skip
            return None, _Failure(INTERNAL_ERROR, HANDLER_FAILED, "raised")

    def _timed_out(self, request_id: int | str) -> None:
        with self._lock:
            entry = self._inflight.pop(request_id, None)
        if entry is None:
            return
        entry.cancelled.set()
        _log.warning(
            "a handler of server %r did not answer within %.0f ms", self._core.server, self._timeout * 1000,
            extra={"mcp_event": "handler_timeout", "mcp_server": self._core.server},
        )  # fmt: skip
        self._send(_reply(request_id, error=(REQUEST_TIMEOUT, HANDLER_LATE)))

    def answer(self, method: str, params: object, cancelled: threading.Event) -> dict[str, Any]:
        """The result for one server request (``_Refused`` for an error reply).
        Runs a handler: never called on the reading thread."""
        if params is None:
            params = {}
        if not isinstance(params, Mapping):
            raise _Refused(INVALID_PARAMS, "params must be an object")
        server = self._core.server
        handlers = self._handlers
        if method == "elicitation/create":
            request = parse_elicitation(server, params, cancelled)
            handler = handlers.elicitation if request.mode == "form" else handlers.url_elicitation
            if handler is None:
                raise _Refused(INVALID_PARAMS, f"this client does not support {request.mode} mode elicitation")
            return elicitation_reply(request, handler(request))
        if method == "sampling/createMessage":
            assert handlers.sampling is not None
            sampling = parse_sampling(server, params, cancelled)
            return sampling_reply(handlers.sampling(sampling))
        if method == "roots/list":
            return {"roots": [root.to_dict() for root in self._current_roots()]}
        raise _Refused(METHOD_NOT_FOUND, "Method not found")

    def answer_input_request(self, method: str, params: object, deadline: float) -> dict[str, Any]:
        """Answer one question of an ``input_required`` result (2026-07-28)
        the way a server request is answered: on the handler pool, within
        ``Handlers.timeout_ms``, the handler's failure decided by the same
        rules. The caller waits until ``deadline`` at most; a handler still
        running then is told (``request.cancelled``) and its answer dropped.

        Raises :class:`InputRequired` when no handler answers ``method``,
        :class:`Timeout` when the deadline or ``Handlers.timeout_ms`` passes
        first, and :class:`ProtocolError` for what would be an error reply in
        the handshake era (unusable params, a handler that raised or refused)."""
        server = self._core.server
        if not self._serves(method):
            # The call plan names every request it could not answer.
            raise InputRequired(f"no handler answers {method[:64]!a}", (method,))
        now = time.monotonic()
        if deadline <= now:
            raise Timeout(f"server {server!r} asked for {method!a} after the caller's deadline")
        job = _Answer()
        with self._lock:
            self._answers.add(job)
        try:
            if not self._pool.submit(lambda: job.run(self._outcome, method, params)):
                job.finish((None, _CLOSED))
                if self._core.terminal is None:
                    raise ProtocolError(
                        f"server {server!r} asked for {method!a} while every handler thread was busy "
                        f"and {self._pool_backlog} more were waiting"
                    )
            late = now + self._timeout < deadline  # Handlers.timeout_ms comes before the caller's deadline
            answered = job.wait(min(deadline, now + self._timeout))
        except BaseException:  # an interrupt while waiting: the answer is no longer wanted
            job.cancelled.set()
            raise
        finally:
            with self._lock:
                self._answers.discard(job)
        if not answered:
            job.cancelled.set()
            if late:
                raise Timeout(
                    f"the {method} handler did not answer server {server!r} within "
                    f"{self._timeout * 1000:.0f} ms (Handlers.timeout_ms)"
                )
            raise Timeout(
                f"server {server!r} asked for {method!a} and the handler had not answered by the caller's deadline"
            )
        result, failure = job.outcome
        if failure is None:
            return result  # type: ignore[no-any-return]
        # What the handshake era would have replied to the server, raised to
        # the caller: the revision has no error answer to an input request.
        if failure.source == "closed":
            terminal = self._core.terminal  # set before the handlers are closed
            raise terminal._copy() if terminal is not None else ConnectionClosed(CLOSED)
        if failure.source == "refused":
            raise ProtocolError(f"server {server!r} asked for {method!a} with unusable params: {failure.message}")
        if failure.source == "raised":
            raise ProtocolError(
                f"the {method} handler failed on a request of server {server!r} "
                f"(error {failure.code}: {failure.message})"
            )
        raise ProtocolError(f"the {method} handler refused the request of server {server!r} (error {failure.code})")

    # ------------------------------------------------------- roots

    def _current_roots(self) -> tuple[Root, ...]:
        with self._lock:
            provider = self._roots
        if callable(provider):
            try:
                return normalize_roots(provider())
            except ProtocolError as exc:
                raise HandlerError(f"the client's roots are unusable: {exc.message}") from None
        return provider if isinstance(provider, tuple) else ()

    @property
    def roots_provider(self) -> RootsProvider | None:
        with self._lock:
            return self._roots

    def set_roots(self, roots: RootsProvider) -> None:
        if self._roots is None:
            raise ProtocolError("set_roots needs a session connected with Handlers(roots=...)")
        value: RootsProvider = roots if callable(roots) else normalize_roots(roots)
        with self._lock:
            self._roots = value

    # ------------------------------------------------------- replies

    def _reply_soon(
        self, request_id: int | str, *, result: Any = None, error: tuple[int, str] | None = None
    ) -> None:
        """Answer at once, from the thread that read the request (a ping, a
        refusal): the transport's ``reply`` never makes a reading caller wait
        for room in the outbound queue (it may be the only thread reading)."""
        self._send(_reply(request_id, result=result, error=error))

    def _send(self, message: dict[str, Any]) -> None:
        """Send one reply through the transport's ``reply``, the one way every
        answer to a server request leaves; the session ends if it cannot be
        queued within ``request_timeout_ms`` (a server that reads nothing)."""
        core = self._core
        transport = core.transport
        if core.terminal is not None or transport is None:
            return  # nothing is sent once the session is over
        limits = core.limits
        try:
            frame = encode(message, limits.max_outbound_frame_bytes)
        except ProtocolError:  # an answer too large (or unencodable) to send
            frame = encode(
                _error_message(message["id"], INTERNAL_ERROR, "the client's answer could not be sent"),
                limits.max_outbound_frame_bytes,
            )
        try:
            queued = transport.reply(frame)
        except McpError:
            return  # the transport already ended the session if it had to
        if not queued:
            core.terminate(reply_not_queued(limits))

    def _overwhelmed(self) -> None:
        limits = self._core.limits
        self._core.terminate(
            ProtocolError(
                "server requests arrive faster than they can be answered "
                f"(queue_capacity={limits.queue_capacity})"
            )
        )

    def close(self, deadline: float) -> None:
        """Drop what is in flight (no reply is sent after the end) and wait
        for the threads until ``deadline`` at most."""
        with self._lock:
            entries = list(self._inflight.values())
            self._inflight.clear()
            answers = list(self._answers)
        # A caller waiting for an input handler fails now, with the session's
        # end, rather than at its deadline.
        for answer in answers:
            answer.cancelled.set()
            answer.finish((None, _CLOSED))
        for entry in entries:
            entry.cancelled.set()
            if entry.timer is not None:
                entry.timer.cancel()
        if self._tasks is not None:
            self._tasks.close(max(0.0, deadline - time.monotonic()))
        self._pool.close(max(0.0, deadline - time.monotonic()))


def _error_message(request_id: int | str, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}


def _reply(request_id: int | str, *, result: Any = None, error: tuple[int, str] | None = None) -> dict[str, Any]:
    if error is not None:
        return _error_message(request_id, *error)
    return {"jsonrpc": "2.0", "id": request_id, "result": result}
