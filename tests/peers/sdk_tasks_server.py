"""The tasks extension of 2026-07-28 (``io.modelcontextprotocol/tasks``,
SEP-2663) on the official SDK (``mcp==2.3.0``). A test peer only.

The SDK ships no tasks extension, but it has the machinery one is built on:
``MCPServer(extensions=[...])`` advertises the identifier in
``server/discover``, ``MethodBinding`` serves ``tasks/get``,
``tasks/update`` and ``tasks/cancel``, and ``intercept_tool_call`` answers a
``tools/call`` with a task handle. So this checks the client against the
SDK's own dispatch, capability advertisement and result serialization.

Tools (each runs as a task for a client that declares the extension; without
the declaration the server refuses it with ``-32021``, as the extension says):

- ``research(topic)``: working for two polls, then asks which source to use
  (``inputRequests``), then completes naming the topic and the answer.
- ``forever()``: never finishes.
- ``cancelled()`` (not a task): the ids of the tasks a client cancelled.

    python sdk_tasks_server.py            (stdio)
"""

from __future__ import annotations

import itertools
from typing import Any

from mcp.server.extension import Extension, MethodBinding
from mcp.server.mcpserver import MCPServer
from mcp.shared.exceptions import MCPError
from mcp_types import RequestParams

TASKS = "io.modelcontextprotocol/tasks"
STAMP = "2026-07-28T00:00:00Z"

_tasks: dict[str, dict[str, Any]] = {}
_cancelled: list[str] = []
_ids = itertools.count(1)


class TaskParams(RequestParams):
    taskId: str  # the wire names, camelCase


class UpdateParams(TaskParams):
    inputResponses: dict[str, Any]


def _declared(ctx: Any) -> bool:
    """Whether this request's own client capabilities declare the extension."""
    capabilities = (ctx.meta or {}).get("io.modelcontextprotocol/clientCapabilities") or {}
    return TASKS in (capabilities.get("extensions") or {})


def _view(task: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in task.items() if not key.startswith("_")}


def _task(params: TaskParams) -> dict[str, Any]:
    task = _tasks.get(params.taskId)
    if task is None:
        raise MCPError(-32602, "Failed to retrieve task: Task not found")
    return task


class Tasks(Extension):
    identifier = TASKS

    def methods(self) -> list[MethodBinding]:
        async def get(ctx: Any, params: TaskParams) -> dict[str, Any]:
            task = _task(params)
            if task["_tool"] == "research" and task["status"] == "working":
                task["_polls"] += 1
                if task["_polls"] >= 2 and task["_answer"] is None:
                    task["status"] = "input_required"
                    task["inputRequests"] = {"source": {"method": "elicitation/create", "params": {
                        "message": "Which source?",
                        "requestedSchema": {"type": "object", "properties": {"source": {"type": "string"}}},
                    }}}  # fmt: skip
                elif task["_answer"] is not None:
                    task["status"] = "completed"
                    text = f"{task['_topic']} from {task['_answer']}"
                    # research is `-> str`, so it publishes an outputSchema ({"result": string}):
                    # its result carries the structuredContent that schema promises.
                    task["result"] = {
                        "content": [{"type": "text", "text": text}], "structuredContent": {"result": text},
                        "isError": False,
                    }
            return {"resultType": "complete", **_view(task)}

        async def update(ctx: Any, params: UpdateParams) -> dict[str, Any]:
            task = _task(params)
            answer = params.inputResponses.get("source")
            if task["status"] == "input_required" and isinstance(answer, dict):
                task["_answer"] = (answer.get("content") or {}).get("source", "?")
                task["status"] = "working"
                task.pop("inputRequests", None)
            return {"resultType": "complete"}

        async def cancel(ctx: Any, params: TaskParams) -> dict[str, Any]:
            task = _task(params)
            _cancelled.append(params.taskId)
            task["status"] = "cancelled"
            return {"resultType": "complete"}

        return [
            MethodBinding("tasks/get", TaskParams, get),
            MethodBinding("tasks/update", UpdateParams, update),
            MethodBinding("tasks/cancel", TaskParams, cancel),
        ]

    async def intercept_tool_call(self, params: Any, ctx: Any, call_next: Any) -> Any:
        if params.name not in ("research", "forever"):
            return await call_next(ctx)
        if not _declared(ctx):
            raise MCPError(-32021, "Missing required client capability",
                           {"requiredCapabilities": {"extensions": {TASKS: {}}}})  # fmt: skip
        task_id = f"sdk-task-{next(_ids)}"
        task = _tasks[task_id] = {
            "taskId": task_id, "status": "working", "createdAt": STAMP, "lastUpdatedAt": STAMP,
            "ttlMs": None, "pollIntervalMs": 20,
            "_tool": params.name, "_polls": 0, "_answer": None, "_topic": (params.arguments or {}).get("topic"),
        }  # fmt: skip
        return {"resultType": "task", **_view(task)}


server: MCPServer = MCPServer(name="sdk-tasks", version="1.0.0", log_level="WARNING", extensions=[Tasks()])


@server.tool(description="Research a topic (a task that asks which source to use).")
def research(topic: str) -> str:
    return "a task only"


@server.tool(description="A task that never finishes.")
def forever() -> str:
    return "a task only"


@server.tool(description="The ids of the tasks a client cancelled.")
def cancelled() -> list[str]:
    return list(_cancelled)


if __name__ == "__main__":
    server.run("stdio")
