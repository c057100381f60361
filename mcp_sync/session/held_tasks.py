"""Tasks the server asks the client to run (MCP 2025-11-25, tasks utility).

A server may send ``sampling/createMessage`` or ``elicitation/create`` with a
``task`` param (``{"ttl": ms}``) when the client declared
``tasks.requests.sampling.createMessage`` / ``tasks.requests.elicitation.create``.
The client then answers at once with a ``CreateTaskResult`` (``{"task":
{"taskId", "status": "working", ...}}``), runs the handler on the session's
handler pool like any server request, and serves the outcome through
``tasks/get`` (status), ``tasks/result`` (the handler's result, or its error;
answered when the task ends, without holding a thread), ``tasks/list`` and
``tasks/cancel``.

:class:`ClientTasks` is the store those requests read. It is bounded: at
most ``MAX_HELD_TASKS`` tasks are held (a task-augmented request past that
is refused with an error reply); each lives at most its TTL (the server's,
within ``[MIN_TTL_MS, MAX_TTL_MS]``; ``DEFAULT_TTL_MS`` when it asks none),
after which it is dropped and its handler told (``request.cancelled``); a
result is dropped as soon as ``tasks/result`` has delivered it. One thread
per store (``mcp_sync-<server>-task-ttl``) times every held task: made when
the first task is held, gone once none is (and at close). A task's
handler is bounded by the task's TTL, not by ``Handlers.timeout_ms`` (the
point of a task is that the answer may take long: a person filling a form).

The 2026-07-28 revision has no server-to-client requests (a server asks
through ``input_required`` results instead), so this is the handshake era's
only.
"""

from __future__ import annotations

import heapq
import math
import threading
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

__all__ = [
    "DEFAULT_TTL_MS",
    "MAX_HELD_TASKS",
    "MAX_TTL_MS",
    "RELATED_TASK",
    "TASK_METHODS",
    "TASKABLE",
    "ClientTasks",
    "task_param",
]

TASK_METHODS = frozenset({"tasks/get", "tasks/result", "tasks/list", "tasks/cancel"})
TASKABLE: dict[str, tuple[str, str]] = {
    "sampling/createMessage": ("sampling", "createMessage"),
    "elicitation/create": ("elicitation", "create"),
}
"""The server requests a client may run as tasks, and where each sits in the
``tasks.requests`` capability."""
MAX_HELD_TASKS = 32
"""Tasks held at once (working, or finished and not yet fetched)."""
MAX_WAITERS = 4
"""``tasks/result`` requests waiting on one task at once."""
DEFAULT_TTL_MS = 300_000
MIN_TTL_MS = 1_000
MAX_TTL_MS = 3_600_000
POLL_INTERVAL_MS = 500
RELATED_TASK = "io.modelcontextprotocol/related-task"

INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
NOT_FOUND = "Failed to retrieve task: Task not found"

Reply = Callable[[int | str, Any, "tuple[int, str] | None"], None]
"""Sends one reply: ``(request_id, result, error)``."""


def task_param(params: object) -> Mapping[str, Any] | None:
    """The ``task`` param of a task-augmented request, or ``None``."""
    if isinstance(params, Mapping):
        task = params.get("task")
        if isinstance(task, Mapping):
            return task
    return None


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class _Held:
    """One task. Its fields change only under :attr:`ClientTasks._lock`."""

    __slots__ = (
        "cancelled", "created", "error", "expires", "method", "result", "status",
        "status_message", "task_id", "ttl_ms", "updated", "waiters",
    )  # fmt: skip

    def __init__(self, task_id: str, method: str, ttl_ms: int) -> None:
        self.task_id = task_id
        self.method = method
        self.ttl_ms = ttl_ms
        self.expires = time.monotonic() + ttl_ms / 1000
        self.created = self.updated = _now()
        self.status = "working"
        self.status_message: str | None = None
        self.result: Any = None
        self.error: tuple[int, str] | None = None
        self.waiters: list[int | str] = []
        self.cancelled = threading.Event()  # the handler's request.cancelled

    @property
    def terminal(self) -> bool:
        return self.status in ("completed", "failed", "cancelled")

    def view(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "taskId": self.task_id,
            "status": self.status,
            "createdAt": self.created,
            "lastUpdatedAt": self.updated,
            "ttl": self.ttl_ms,
            "pollInterval": POLL_INTERVAL_MS,
        }
        if self.status_message is not None:
            out["statusMessage"] = self.status_message
        return out

    def outcome(self) -> tuple[Any, tuple[int, str] | None]:
        """What ``tasks/result`` answers for this (terminal) task."""
        if self.status == "completed":
            result = dict(self.result) if isinstance(self.result, Mapping) else {}
            meta = dict(result.get("_meta") or {})
            meta[RELATED_TASK] = {"taskId": self.task_id}
            result["_meta"] = meta
            return result, None
        if self.status == "failed":
            return None, self.error or (INTERNAL_ERROR, "the task failed")
        return None, (INTERNAL_ERROR, "the task was cancelled")


class ClientTasks:
    """The tasks one session runs for its server (see the module's doc)."""

    def __init__(self, name: str, methods: frozenset[str], reply: Reply) -> None:
        self._name = name
        self.methods = methods  # the TASKABLE methods the handlers serve
        self._reply = reply
        # Guards _held, every _Held's fields, the expiry heap, _timer and
        # _closed: taken briefly by the reader (tasks/* requests), the handler
        # pool (a task ends), the timer thread and close(). Replies are sent
        # after it is released. The timer thread waits on _due (over _lock)
        # until the earliest expiry, or until woken by an earlier one, the
        # last task going, or close().
        self._lock = threading.Lock()
        self._due = threading.Condition(self._lock)
        self._held: dict[str, _Held] = {}
        # (expires, task id) of every held task; an entry whose task has
        # gone stays until its time, or until the heap is rebuilt (past
        # twice MAX_HELD_TASKS entries) or emptied (no task held).
        self._expiries: list[tuple[float, str]] = []
        self._timer: threading.Thread | None = None
        self._closed = False

    def capability(self) -> dict[str, Any]:
        """The client's ``tasks`` capability for these methods."""
        requests: dict[str, Any] = {}
        for method in sorted(self.methods):
            group, name = TASKABLE[method]
            requests.setdefault(group, {})[name] = {}
        return {"list": {}, "cancel": {}, "requests": requests}

    # ------------------------------------------------------- creating

    def create(self, method: str, task: Mapping[str, Any]) -> _Held | tuple[int, str]:
        """A new working task for ``method``, or the error that refuses it."""
        ttl = task.get("ttl", DEFAULT_TTL_MS)
        if ttl is None:
            ttl = DEFAULT_TTL_MS
        if type(ttl) not in (int, float) or not math.isfinite(ttl) or ttl < 0:
            return INVALID_PARAMS, "task.ttl must be a non-negative number of milliseconds"
        ttl_ms = int(min(max(ttl, MIN_TTL_MS), MAX_TTL_MS))
        import secrets  # a task id; most sessions never hold a task

        held = _Held(secrets.token_urlsafe(16), method, ttl_ms)
        with self._lock:
            if self._closed:
                return INTERNAL_ERROR, "the session is closing"
            if len(self._held) >= MAX_HELD_TASKS:
                return INTERNAL_ERROR, f"the client already holds {MAX_HELD_TASKS} tasks"
            self._held[held.task_id] = held
            self._time(held)
        return held

    def _time(self, held: _Held) -> None:
        """Put ``held`` on the timer (under the lock), starting its thread if
        there is none. Without a thread to be had, a task lives until it is
        fetched or the session closes, and the next task tries again."""
        expiries = self._expiries
        if len(expiries) >= 2 * MAX_HELD_TASKS:
            # Drop the entries of tasks gone (delivered, dropped) meanwhile.
            expiries[:] = [(task.expires, task.task_id) for task in self._held.values() if task is not held]
            heapq.heapify(expiries)
        heapq.heappush(expiries, (held.expires, held.task_id))
        if self._timer is not None:
            if expiries[0][1] == held.task_id:
                self._due.notify()  # due before what the thread waits for
            return
        thread = threading.Thread(target=self._run_timer, name=f"{self._name}-task-ttl", daemon=True)
        try:
            thread.start()
        except RuntimeError:
            return
        self._timer = thread

    def _run_timer(self) -> None:
        """The store's one timer thread: expires each task at its time; ends
        once no task is held, or at close."""
        expiries, due = self._expiries, self._due
        while True:
            expired: list[str] = []
            with due:
                while True:
                    if self._closed or not self._held:
                        expiries.clear()
                        self._timer = None
                        return
                    now = time.monotonic()
                    while expiries and expiries[0][0] <= now:
                        expired.append(heapq.heappop(expiries)[1])
                    if expired:
                        break
                    if not expiries:  # (held tasks always have an entry)
                        self._timer = None
                        return
                    due.wait(min(expiries[0][0] - now, threading.TIMEOUT_MAX))
            for task_id in expired:
                self._expire(task_id)

    def drop(self, held: _Held) -> None:
        with self._lock:
            self._held.pop(held.task_id, None)
            self._wake_if_idle()
        held.cancelled.set()

    def finish(self, held: _Held, result: Any, error: tuple[int, str] | None) -> None:
        """The handler of ``held`` ended (from the pool's thread)."""
        with self._lock:
            if self._held.get(held.task_id) is not held or held.terminal:
                return  # cancelled, expired or closed meanwhile: the answer is dropped
            held.status = "completed" if error is None else "failed"
            held.status_message = None if error is None else error[1]
            held.result, held.error = result, error
            held.updated = _now()
            waiters, held.waiters = held.waiters, []
            if waiters:
                self._held.pop(held.task_id, None)  # delivered: dropped
                self._wake_if_idle()
        self._deliver(held, waiters, dropped=bool(waiters))

    # ------------------------------------------------------- the tasks/* requests

    def serve(self, request_id: int | str, method: str, params: object) -> None:
        """Answer one ``tasks/*`` request (on the reader's thread: nothing here blocks)."""
        if method == "tasks/list":
            with self._lock:
                views = [held.view() for held in self._held.values()]
            self._reply(request_id, {"tasks": views}, None)
            return
        task_id = params.get("taskId") if isinstance(params, Mapping) else None
        if not isinstance(task_id, str):
            self._reply(request_id, None, (INVALID_PARAMS, "taskId must be a string"))
            return
        if method == "tasks/get":
            with self._lock:
                held = self._held.get(task_id)
                view = held.view() if held is not None else None
            self._reply(request_id, view, None if view is not None else (INVALID_PARAMS, NOT_FOUND))
        elif method == "tasks/result":
            self._result(request_id, task_id)
        else:
            self._cancel(request_id, task_id)

    def _result(self, request_id: int | str, task_id: str) -> None:
        error: tuple[int, str] | None = None
        with self._lock:
            held = self._held.get(task_id)
            if held is None:
                error = (INVALID_PARAMS, NOT_FOUND)
            elif not held.terminal:
                if len(held.waiters) >= MAX_WAITERS:
                    error = (INVALID_PARAMS, f"{MAX_WAITERS} requests already wait for this task's result")
                else:
                    held.waiters.append(request_id)  # answered when the task ends
                    return
            else:
                self._held.pop(task_id, None)  # delivered: dropped
                self._wake_if_idle()
        if held is None or error is not None:
            self._reply(request_id, None, error)
            return
        self._deliver(held, [request_id], dropped=True)

    def _cancel(self, request_id: int | str, task_id: str) -> None:
        with self._lock:
            held = self._held.get(task_id)
            if held is None:
                view, error = None, (INVALID_PARAMS, NOT_FOUND)
            elif held.terminal:
                view, error = None, (INVALID_PARAMS, "Cannot cancel task: already in terminal status")
            else:
                held.status, held.status_message, held.updated = "cancelled", "cancelled by the server", _now()
                waiters, held.waiters = held.waiters, []
                view, error = held.view(), None
        if held is not None and error is None:
            held.cancelled.set()
            self._reply(request_id, view, None)
            self._deliver(held, waiters, dropped=False)  # kept (as cancelled) until its ttl
            return
        self._reply(request_id, None, error)

    # ------------------------------------------------------- ending

    def _expire(self, task_id: str) -> None:
        """A task's TTL passed (on the timer thread): drop it; its handler is
        told, its waiters get an error. A task already gone is skipped."""
        with self._lock:
            held = self._held.pop(task_id, None)
            if held is None:
                return
            waiters, held.waiters = held.waiters, []
        held.cancelled.set()
        for waiter in waiters:
            self._reply(waiter, None, (INTERNAL_ERROR, "the task expired (its ttl passed)"))

    def _wake_if_idle(self) -> None:
        """(Under the lock) the last task has gone: the timer thread ends."""
        if not self._held and self._timer is not None:
            self._due.notify()

    def _deliver(self, held: _Held, waiters: list[int | str], *, dropped: bool) -> None:
        if dropped:
            held.cancelled.set()
        if not waiters:
            return
        result, error = held.outcome()
        for waiter in waiters:
            self._reply(waiter, result, error)

    def close(self, timeout: float = 0.0) -> None:
        """The session ends: every task is dropped, its handler told; nothing
        more is sent. The timer thread ends; waited for up to ``timeout`` s."""
        with self._lock:
            self._closed = True
            held = list(self._held.values())
            self._held.clear()
            self._expiries.clear()
            self._due.notify()
            timer = self._timer
        for task in held:
            task.cancelled.set()
        if timer is not None and timer is not threading.current_thread() and timeout > 0:
            timer.join(timeout)
