"""Tasks: a tool call the server runs in the background while the client
polls, in both eras.

The handshake era (2025-11-25, experimental):

``call_tool`` calls a tool whose ``execution.taskSupport`` is ``"required"``
as a task, transparently, when the server declares
``tasks.requests.tools.call``: it creates the task, polls ``tasks/get`` at
the server's ``pollInterval`` (within ``[MIN_POLL_INTERVAL,
MAX_POLL_INTERVAL]`` and never past the caller's deadline), fetches the result
with ``tasks/result`` and returns it like any other. An ``"optional"`` tool
keeps the plain path unless ``task=True``. If the caller's deadline passes, or
the caller is interrupted, the task is cancelled (``tasks/cancel``, best
effort) before the error is raised.

While a task waits for input (``input_required``), ``tasks/result`` is asked
at once: the server then sends its requests (elicitation...), which the
session's handlers answer on the library's threads.

The modern era (2026-07-28) moved tasks to an extension,
``io.modelcontextprotocol/tasks`` (SEP-2663), which a server advertises in
``server/discover``. Its client declares the extension on each request that
may get a task, and the *server* decides, call by call, whether to answer
with a task handle (``resultType: "task"``) or with the result. So when the
server advertises the extension every ``tools/call`` declares it (unless
``task=False``), and a task handle is followed transparently
(:func:`follow_modern_task`): ``tasks/get`` at the server's ``pollIntervalMs`` until
the task carries its result (or error); questions it asks
(``inputRequests``) are answered by the same handlers as ``input_required``
results and sent back with ``tasks/update``; on timeout or interrupt
``tasks/cancel`` is sent from a library thread.
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..protocol.errors import InvalidResponse, McpError, ProtocolError, RemoteError, Timeout, remote_error
from ..protocol.redaction import Redacted
from .call_plan import answer_all, input_requests
from .eras.contract import MAX_INPUT_ROUNDS, TASKS_EXTENSION, EraCore

if TYPE_CHECKING:
    from ..protocol.catalog import Tool
    from .eras.contract import Era, Route

__all__ = [
    "CANCEL_TIMEOUT",
    "MAX_POLL_INTERVAL",
    "MIN_POLL_INTERVAL",
    "TaskStatus",
    "cancel_in_background",
    "check_task_option",
    "follow_modern_task",
    "offers_task_extension",
    "poll_task",
    "server_cancels",
]

MIN_POLL_INTERVAL = 0.05
"""A floor under the server's ``pollInterval``, so ``0`` cannot make us spin."""
MAX_POLL_INTERVAL = 30.0
"""A ceiling, so a huge ``pollInterval`` cannot hide a finished task for long."""
DEFAULT_POLL_INTERVAL = 1.0
"""Seconds between polls when the server suggests none."""
TTL_SLACK_MS = 60_000
"""Asked-for task lifetime beyond the caller's deadline, so the result is still there to fetch."""
MAX_TASK_ID = 1024
CANCEL_TIMEOUT = 5.0
"""Seconds a modern ``tasks/cancel`` (sent from a library thread) may take."""
CANCELLED_BY_SERVER = -32603
"""The ``RemoteError`` code for a task the server cancelled on its own: it
carries no JSON-RPC error, and this is the closest code (internal error)."""

TERMINAL = frozenset({"completed", "failed", "cancelled"})
STATUSES = TERMINAL | {"working", "input_required"}


@dataclass(frozen=True, slots=True)
class TaskStatus:
    """What ``tasks/get`` (or the creation result) said about a task."""

    task_id: str
    status: str
    status_message: str | None
    poll_interval: float


def check_task_option(core: EraCore, tool: Tool, task: bool | None, takes: bool) -> bool:
    """``call_tool(task=...)`` given explicitly: whether the call goes as a
    task, or a ``ProtocolError`` when the tool or the server cannot honour
    it. ``takes``: whether the server takes tasks for this call at all."""
    support = tool.task_support
    if task is True:
        if support == "forbidden" or not takes:
            raise ProtocolError(
                f"tool {tool.name!a} on server {core.server!r} cannot be called as a task "
                "(the server does not offer task-augmented tools/call for it)"
            )
        return True
    if task is False:
        if support == "required" and takes:
            raise ProtocolError(
                f"tool {tool.name!a} on server {core.server!r} must be called as a task "
                "(execution.taskSupport is required)"
            )
        return False
    raise ProtocolError("option task must be True, False or None")


def offers_task_extension(capabilities: Mapping[str, Any]) -> bool:
    """Whether a modern server advertised the tasks extension."""
    extensions = capabilities.get("extensions")
    return isinstance(extensions, Mapping) and isinstance(extensions.get(TASKS_EXTENSION), Mapping)


def server_cancels(capabilities: Mapping[str, Any]) -> bool:
    """Whether a handshake-era server declared ``tasks.cancel``."""
    tasks = capabilities.get("tasks")
    return isinstance(tasks, Mapping) and isinstance(tasks.get("cancel"), Mapping)


def parse_task(value: object, where: str, *, interval_key: str = "pollInterval") -> TaskStatus:
    """A ``Task`` object (the ``task`` of a creation result, or a ``tasks/get``
    result; in the modern era the handle itself, whose poll interval is
    ``pollIntervalMs``) after its checks."""
    if not isinstance(value, dict):
        raise InvalidResponse(f"{where} is not a task object")
    task_id = value.get("taskId")
    if not isinstance(task_id, str) or not task_id or len(task_id) > MAX_TASK_ID:
        raise InvalidResponse(f"{where} has no taskId of 1 to {MAX_TASK_ID} characters")
    status = value.get("status")
    if status not in STATUSES:
        raise InvalidResponse(f"{where} has an unknown task status")
    message = value.get("statusMessage")
    interval = value.get(interval_key)
    poll = DEFAULT_POLL_INTERVAL
    if isinstance(interval, (int, float)) and not isinstance(interval, bool):
        poll = interval / 1000.0 if math.isfinite(interval) and interval >= 0 else poll
    return TaskStatus(
        task_id=task_id,
        status=status,
        status_message=message if isinstance(message, str) else None,
        poll_interval=min(max(poll, MIN_POLL_INTERVAL), MAX_POLL_INTERVAL),
    )


def _remaining(route: Route, describe: Callable[[], str]) -> float:
    left = route.deadline - time.monotonic()
    if left <= 0:
        raise Timeout(f"{describe()} missed its deadline")
    return left


# --------------------------------------------------------------------- handshake era


def poll_task(  # noqa: PLR0917
    core: EraCore,
    era: Era,
    name: str,
    created: dict[str, Any],
    route: Route,
    describe: Callable[[], str],
) -> Any:
    """The handshake era: poll the task a ``tools/call`` created to a
    terminal status, then fetch its result with ``tasks/result``."""
    where = f"server {core.server!r}"
    task = parse_task(created.get("task"), f"{where}'s answer to a task call of tool {name!a}")
    try:
        while task.status not in TERMINAL and task.status != "input_required":
            route.pause(min(task.poll_interval, _remaining(route, describe)), core.ended)
            _remaining(route, describe)
            got = era.request(core, "tasks/get", {"taskId": task.task_id}, route.deadline, describe, watch=route)
            polled = parse_task(got, f"{where}'s tasks/get result for tool {name!a}")
            if polled.task_id != task.task_id:
                raise InvalidResponse(f"{where} answered tasks/get about another task")
            task = polled
        # Terminal: the result is ready. input_required: tasks/result makes
        # the server send its questions, and blocks until the task ends.
        _remaining(route, describe)
        result = era.request(core, "tasks/result", {"taskId": task.task_id}, route.deadline, describe, watch=route)
        task = TaskStatus(task.task_id, "completed", None, task.poll_interval)
        # tasks/result returns exactly what tools/call would have (plus a
        # related-task entry in _meta, which a result may carry anyway).
        return result
    except BaseException:
        if task.status not in TERMINAL:
            era.cancel_task(core, task.task_id, describe)
        raise


# --------------------------------------------------------------------- 2026-07-28


def follow_modern_task(  # noqa: PLR0917
    core: EraCore,
    era: Era,
    name: str,
    created: dict[str, Any],
    route: Route,
    describe: Callable[[], str],
) -> Any:
    """Follow the task a modern server answered ``tools/call`` with, to the
    result it carries (what ``tools/call`` would have returned): ``tasks/get``
    at its poll interval within the caller's deadline, its questions answered
    by the handlers and sent with ``tasks/update``; cancelled (from a library
    thread) if the caller times out or is interrupted first."""
    where = f"server {core.server!r}"
    subject = f"tool {name!a} on server {core.server!r}"
    detail = created
    task = parse_task(detail, f"{where}'s task for tool {name!a}", interval_key="pollIntervalMs")
    answered: set[str] = set()  # keys of the task's questions answered so far
    updates = 0
    try:
        while True:
            if task.status in TERMINAL:
                return _task_outcome(task, detail, where, name)
            if task.status == "input_required":
                requests, _ = input_requests(detail, subject, state=False)
                # A question stays listed until the server has taken its
                # answer in: each is answered once.
                fresh = {key: request for key, request in (requests or {}).items() if key not in answered}
                if fresh:
                    updates += 1
                    if updates > MAX_INPUT_ROUNDS:
                        raise ProtocolError(
                            f"the task of {subject} asked for input more than {MAX_INPUT_ROUNDS} times"
                        )
                    answers = answer_all(core, fresh, subject, route.deadline)
                    _remaining(route, describe)
                    era.request(
                        core, "tasks/update", {"taskId": task.task_id, "inputResponses": answers},
                        route.deadline, describe, watch=route, tasks=True,
                    )  # fmt: skip
                    answered.update(fresh)
            route.pause(min(task.poll_interval, _remaining(route, describe)), core.ended)
            _remaining(route, describe)
            got = era.request(
                core, "tasks/get", {"taskId": task.task_id}, route.deadline, describe, watch=route, tasks=True
            )
            polled = parse_task(got, f"{where}'s tasks/get result for tool {name!a}", interval_key="pollIntervalMs")
            if polled.task_id != task.task_id:
                raise InvalidResponse(f"{where} answered tasks/get about another task")
            task, detail = polled, got
    except BaseException:
        if task.status not in TERMINAL:
            era.cancel_task(core, task.task_id, describe)
        raise


def _task_outcome(task: TaskStatus, detail: dict[str, Any], where: str, name: str) -> Any:
    """The result a terminal modern task carries, or the error it ended with."""
    if task.status == "completed":
        result = detail.get("result")
        if not isinstance(result, dict):
            raise InvalidResponse(f"{where} completed the task of tool {name!a} without a result object")
        return result
    if task.status == "failed":
        raise _task_failed(detail.get("error"), where, name)
    raise RemoteError(
        f"{where} cancelled the task of tool {name!a} before it finished",
        CANCELLED_BY_SERVER,
        Redacted({"message": task.status_message, "data": None}),
    )


def _task_failed(error: object, where: str, name: str) -> McpError:
    if not (isinstance(error, dict) and type(error.get("code")) is int):
        return InvalidResponse(f"{where} failed the task of tool {name!a} without a JSON-RPC error object")
    code: int = error["code"]
    return remote_error(
        f"{where} failed the task of tool {name!a} with JSON-RPC error {code}",
        code,
        error.get("message"),
        error.get("data"),
    )


def cancel_in_background(core: EraCore, era: Era, task_id: str, describe: Callable[[], str]) -> None:
    """``tasks/cancel``, best effort, from a library thread: the caller's
    deadline (or interrupt) is not held up by it, and its answer is dropped."""

    def cancel() -> None:
        with contextlib.suppress(McpError):
            era.request(
                core, "tasks/cancel", {"taskId": task_id}, time.monotonic() + CANCEL_TIMEOUT, describe, tasks=True
            )

    core.inbound.background.submit(cancel)
