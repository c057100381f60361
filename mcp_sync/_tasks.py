"""Tasks (2025-11-25, experimental): a tool call the server runs in the
background while the client polls.

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
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ._catalog import CallToolResult, Tool, parse_call_result
from ._errors import InvalidResponse, ProtocolError, Timeout

if TYPE_CHECKING:
    from ._progress import ProgressRoute
    from ._session import _Core

__all__ = ["MAX_POLL_INTERVAL", "MIN_POLL_INTERVAL", "TaskStatus", "call_as_task", "use_task"]

MIN_POLL_INTERVAL = 0.05
"""A floor under the server's ``pollInterval``, so ``0`` cannot make us spin."""
MAX_POLL_INTERVAL = 30.0
"""A ceiling, so a huge ``pollInterval`` cannot hide a finished task for long."""
DEFAULT_POLL_INTERVAL = 1.0
"""Seconds between polls when the server suggests none."""
TTL_SLACK_MS = 60_000
"""Asked-for task lifetime beyond the caller's deadline, so the result is still there to fetch."""
MAX_TASK_ID = 1024

TERMINAL = frozenset({"completed", "failed", "cancelled"})
STATUSES = TERMINAL | {"working", "input_required"}


@dataclass(frozen=True, slots=True)
class TaskStatus:
    """What ``tasks/get`` (or the creation result) said about a task."""

    task_id: str
    status: str
    status_message: str | None
    poll_interval: float


def use_task(core: _Core, tool: Tool, task: bool | None) -> bool:
    """Whether this call goes as a task: a ``required`` tool always (when the
    server can take tasks at all), an ``optional`` one when asked."""
    support = tool.task_support
    server_takes_tasks = _server_takes_tool_tasks(core.server_capabilities)
    if task is None:
        return support == "required" and server_takes_tasks
    if task is True:
        if support == "forbidden" or not server_takes_tasks:
            raise ProtocolError(
                f"tool {tool.name!a} on server {core.server!r} cannot be called as a task "
                "(the server does not offer task-augmented tools/call for it)"
            )
        return True
    if task is False:
        if support == "required" and server_takes_tasks:
            raise ProtocolError(
                f"tool {tool.name!a} on server {core.server!r} must be called as a task "
                "(execution.taskSupport is required)"
            )
        return False
    raise ProtocolError("option task must be True, False or None")


def _server_takes_tool_tasks(capabilities: Mapping[str, Any]) -> bool:
    tasks = capabilities.get("tasks")
    requests = tasks.get("requests") if isinstance(tasks, Mapping) else None
    tools = requests.get("tools") if isinstance(requests, Mapping) else None
    return isinstance(tools, Mapping) and isinstance(tools.get("call"), Mapping)


def _server_cancels(capabilities: Mapping[str, Any]) -> bool:
    tasks = capabilities.get("tasks")
    return isinstance(tasks, Mapping) and isinstance(tasks.get("cancel"), Mapping)


def parse_task(value: object, where: str) -> TaskStatus:
    """A ``Task`` object (the ``task`` of a creation result, or a ``tasks/get``
    result) after its checks."""
    if not isinstance(value, dict):
        raise InvalidResponse(f"{where} is not a task object")
    task_id = value.get("taskId")
    if not isinstance(task_id, str) or not task_id or len(task_id) > MAX_TASK_ID:
        raise InvalidResponse(f"{where} has no taskId of 1 to {MAX_TASK_ID} characters")
    status = value.get("status")
    if status not in STATUSES:
        raise InvalidResponse(f"{where} has an unknown task status")
    message = value.get("statusMessage")
    interval = value.get("pollInterval")
    poll = DEFAULT_POLL_INTERVAL
    if isinstance(interval, (int, float)) and not isinstance(interval, bool):
        poll = interval / 1000.0 if math.isfinite(interval) and interval >= 0 else poll
    return TaskStatus(
        task_id=task_id,
        status=status,
        status_message=message if isinstance(message, str) else None,
        poll_interval=min(max(poll, MIN_POLL_INTERVAL), MAX_POLL_INTERVAL),
    )


def call_as_task(
    core: _Core,
    tool: Tool,
    arguments: Any,
    route: ProgressRoute,
    describe: Callable[[], str],
    *,
    meta: Mapping[str, Any],
) -> CallToolResult:
    """Create the task, poll it to a terminal status, fetch its result."""
    name = tool.name
    where = f"server {core.server!r}"

    def remaining() -> float:
        left = route.deadline - time.monotonic()
        if left <= 0:
            raise Timeout(f"{describe()} missed its deadline")
        return left

    ttl_ms = math.ceil((route.hard_deadline - time.monotonic()) * 1000) + TTL_SLACK_MS
    params: dict[str, Any] = {"name": name, "arguments": arguments, "task": {"ttl": ttl_ms}}
    params["_meta"] = {**meta, "progressToken": route.token}
    # Not watched: a progress callback that raised now would lose the task
    # id, and with it the means to cancel the task. Progress that comes
    # meanwhile waits in the route and is delivered at the first poll.
    created = core.request("tools/call", params, remaining(), describe)
    if not isinstance(created, dict) or "task" not in created:
        # A server may answer a task-augmented call directly.
        return parse_call_result(created, name)
    task = parse_task(created.get("task"), f"{where}'s answer to a task call of tool {name!a}")
    try:
        while task.status not in TERMINAL and task.status != "input_required":
            route.pause(min(task.poll_interval, remaining()), core.ended)
            got = core.request("tasks/get", {"taskId": task.task_id}, remaining(), describe, watch=route)
            polled = parse_task(got, f"{where}'s tasks/get result for tool {name!a}")
            if polled.task_id != task.task_id:
                raise InvalidResponse(f"{where} answered tasks/get about another task")
            task = polled
        # Terminal: the result is ready. input_required: tasks/result makes
        # the server send its questions, and blocks until the task ends.
        result = core.request("tasks/result", {"taskId": task.task_id}, remaining(), describe, watch=route)
        task = TaskStatus(task.task_id, "completed", None, task.poll_interval)
        # tasks/result returns exactly what tools/call would have (plus a
        # related-task entry in _meta, which a result may carry anyway).
        return parse_call_result(result, name)
    except BaseException:
        if task.status not in TERMINAL and _server_cancels(core.server_capabilities):
            core.send_and_forget("tasks/cancel", {"taskId": task.task_id})
        raise

