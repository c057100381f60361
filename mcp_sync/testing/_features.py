"""The fake server's resources, prompts, completion, logging, tasks, and the
tools that exercise a client's progress, log, elicitation, sampling, roots and
list_changed handling -- politely or not.

Declared by default: ``resources``, ``prompts``, ``completions``, ``logging``
and ``tasks`` capabilities with a small fixed set of resources and prompts.
Listed with ``--features``: the tools in :data:`FEATURE_TOOLS`. ``--raw
METHOD JSON`` answers METHOD with that result whatever was asked (for
malformed listings, contents, completions, task states).
"""

from __future__ import annotations

import base64
import itertools
import json
import os
import threading
import time
from typing import Any

from . import _media
from ._eras import declares_tasks
from ._host import Host

__all__ = ["FEATURE_CAPABILITIES", "FEATURE_TOOLS", "Features"]

FEATURE_CAPABILITIES: dict[str, Any] = {
    "tools": {"listChanged": True},
    "resources": {"listChanged": True},
    "prompts": {"listChanged": True},
    "completions": {},
    "logging": {},
    "tasks": {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}},
}

_ANY: dict[str, Any] = {"type": "object"}

FEATURE_TOOLS: list[dict[str, Any]] = [
    {"name": name, "description": text, "inputSchema": _ANY, **extra}
    for name, text, extra in (
        ("progress", "Report `steps` progress notifications `ms` apart, then answer. `foreign`: also "
         "report progress for tokens it was not given; `repeat`: also repeat a value; `gate`: a "
         "path that must exist before it goes on after the first step.", {}),
        ("log", "Send `count` log messages (`level`, `data`, `logger`), then answer.", {}),
        ("elicit", "Send elicitation/create with `params` and return the client's reply.", {}),
        ("sample", "Send sampling/createMessage with `params` and return the client's reply.", {}),
        ("roots", "Send roots/list and return the client's reply.", {}),
        ("storm", "Add `add` tools (and a badly named one if `bad`), send `count` list_changed "
         "notifications of `kind`, then answer.", {}),
        ("research", "A task: finish after `ms` (poll interval `poll`); `ask`: elicit first. In the "
         "modern era also: `ask: \"always\"` asks again after every answer, `lag` keeps an answered "
         "question listed for one more poll, `fail` and `cancel` end it so, `confirm` asks (input_required) "
         "before the task is created.",
         {"execution": {"taskSupport": "required"}}),
        ("maybe_task", "A tool that may be called as a task or not.",
         {"execution": {"taskSupport": "optional"}}),
        ("forever", "A task that never finishes.", {"execution": {"taskSupport": "required"}}),
        ("needs_url", "Answer JSON-RPC error -32042 (a URL elicitation is required) the first time "
         "it is called with a `key` (default \"account\"), then `connected`. `urls`: the "
         "elicitations listed instead of the fake one.", {}),
        ("ask", "Send the client each request of `requests` ([{method, params}...]) in turn, "
         "`\"$task\"` in params standing for the last taskId the client returned (`wait_ms` "
         "before each), and return every reply.", {}),
        ("bad_structured", "Answer structuredContent that breaks its own outputSchema.",
         {"outputSchema": {"type": "object", "properties": {"sum": {"type": "number"}}, "required": ["sum"]}}),
    )
]  # fmt: skip

RESOURCES: list[dict[str, Any]] = [
    {"uri": "fake://text/hello", "name": "hello", "mimeType": "text/plain", "description": "A greeting."},
    {"uri": "fake://blob/bytes", "name": "bytes", "mimeType": "application/octet-stream"},
]
TEMPLATES: list[dict[str, Any]] = [
    {"uriTemplate": "fake://text/{name}", "name": "text", "description": "Any text resource."},
]
PROMPTS: list[dict[str, Any]] = [
    {"name": "greet", "description": "Greet someone.",
     "arguments": [{"name": "name", "description": "Who", "required": True}]},
    {"name": "plain", "description": "A prompt without arguments."},
]  # fmt: skip
NAMES = ["alice", "bob", "carol", "dave"]
LEVELS = ["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"]


class _Task:
    def __init__(self, task_id: str, poll: int | None) -> None:
        self.task_id = task_id
        self.status = "working"
        self.poll = poll
        self.result: Any = None
        self.error: dict[str, Any] | None = None
        self.done = threading.Event()
        self.ask: object = False
        self.created = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        # The modern era's questions: key -> request, and how many were asked.
        self.questions: dict[str, Any] = {}
        self.asked = 0
        self.lag = False

    def question(self) -> None:
        self.asked += 1
        self.questions[f"pick-{self.asked}"] = {"method": "elicitation/create", "params": {
            "message": "Which one?",
            "requestedSchema": {"type": "object", "properties": {"pick": {"type": "string", "default": "a"}}}}}
        self.status = "input_required"

    def modern_view(self) -> dict[str, Any]:
        """The 2026-07-28 DetailedTask: what it carries depends on its status."""
        out: dict[str, Any] = {
            "taskId": self.task_id,
            "status": self.status,
            "createdAt": self.created,
            "lastUpdatedAt": self.created,
            "ttlMs": 60000,
        }
        if self.poll is not None:
            out["pollIntervalMs"] = self.poll
        if self.status == "completed":
            out["result"] = self.result
        elif self.status == "failed":
            out["error"] = self.error
        elif self.status == "input_required":
            out["inputRequests"] = dict(self.questions)
        return out

    def view(self) -> dict[str, Any]:
        out = {
            "taskId": self.task_id,
            "status": self.status,
            "createdAt": self.created,
            "lastUpdatedAt": self.created,
            "ttl": 60000,
        }
        if self.poll is not None:
            out["pollInterval"] = self.poll
        return out


class Features:
    """Serves the methods and tools above for one :class:`FakeServer`."""

    def __init__(self, server: Host) -> None:
        self.server = server
        self.tasks: dict[str, _Task] = {}
        self.task_ids = itertools.count(1)
        self.log_level = "debug"
        self.added = 0
        self.connected: set[str] = set()

    # --------------------------------------------------------------- methods

    def methods(self) -> dict[str, Any]:
        return {
            "resources/list": self.resources_list,
            "resources/templates/list": lambda rid, p: self.page(rid, p, TEMPLATES, "resourceTemplates"),
            "resources/read": self.resources_read,
            "prompts/list": lambda rid, p: self.page(rid, p, PROMPTS, "prompts"),
            "prompts/get": self.prompts_get,
            "completion/complete": self.complete,
            "logging/setLevel": self.set_level,
            "tasks/get": self.tasks_get,
            "tasks/result": self.tasks_result,
            "tasks/cancel": self.tasks_cancel,
            "tasks/update": self.tasks_update,
            "tasks/list": lambda rid, p: self.server.reply(rid, {"tasks": [t.view() for t in self.tasks.values()]}),
        }

    def page(self, rid: object, params: dict[str, Any], items: list[dict[str, Any]], key: str) -> None:
        size = self.server.opt.page_size or max(1, len(items))
        cursor = params.get("cursor")
        start = int(cursor) if isinstance(cursor, str) and cursor.isdigit() else 0
        result: dict[str, Any] = {key: items[start : start + size]}
        if start + size < len(items):
            result["nextCursor"] = str(start + size)
        self.server.reply(rid, result)

    def resources_list(self, rid: object, params: dict[str, Any]) -> None:
        extra = [
            {"uri": f"fake://text/r{index}", "name": f"r{index}"} for index in range(self.server.opt.extra_resources)
        ]
        if getattr(self.server.opt, "media", False):
            extra += _media.MEDIA_RESOURCES
        self.page(rid, params, RESOURCES + extra, "resources")

    def resources_read(self, rid: object, params: dict[str, Any]) -> None:
        uri = params.get("uri")
        media = _media.read(uri) if getattr(self.server.opt, "media", False) else None
        if media is not None:
            self.server.reply(rid, {"contents": [media]})
        elif uri == "fake://blob/bytes":
            blob = base64.b64encode(bytes(range(256))).decode()
            self.server.reply(rid, {"contents": [{"uri": uri, "mimeType": "application/octet-stream", "blob": blob}]})
        elif isinstance(uri, str) and uri.startswith("fake://text/"):
            text = f"Hello, {uri.rsplit('/', 1)[1]}!"
            self.server.reply(rid, {"contents": [{"uri": uri, "mimeType": "text/plain", "text": text}]})
        else:
            self.server.send({"jsonrpc": "2.0", "id": rid, "error": {
                "code": -32002, "message": "Resource not found", "data": {"uri": uri}}})

    def prompts_get(self, rid: object, params: dict[str, Any]) -> None:
        name = params.get("name")
        args = params.get("arguments") or {}
        if name == "greet" and isinstance(args.get("name"), str):
            text = f"Please greet {args['name']}."
        elif name == "plain":
            text = "A plain prompt."
        else:
            self.server.error(rid, -32602, "Invalid params")
            return
        self.server.reply(rid, {"description": f"The {name} prompt",
                                "messages": [{"role": "user", "content": {"type": "text", "text": text}}]})

    def complete(self, rid: object, params: dict[str, Any]) -> None:
        value = (params.get("argument") or {}).get("value", "")
        values = [name for name in NAMES if name.startswith(str(value))]
        self.server.reply(rid, {"completion": {"values": values, "total": len(values), "hasMore": False}})

    def set_level(self, rid: object, params: dict[str, Any]) -> None:
        level = params.get("level")
        if level not in LEVELS:
            self.server.error(rid, -32602, "Invalid params")
            return
        self.log_level = str(level)
        self.server.reply(rid, {})

    # --------------------------------------------------------------- tasks

    def tasks_get(self, rid: object, params: dict[str, Any]) -> None:
        task = self.tasks.get(str(params.get("taskId")))
        if task is None:
            self.server.error(rid, -32602, "Failed to retrieve task: Task not found")
        elif self.server.eras.modern(rid):
            view = task.modern_view()
            if task.lag:  # an answered question, still listed this once
                task.lag = False
                task.status = "completed" if task.result is not None else task.status
            self.server.reply(rid, view)
        else:
            self.server.reply(rid, task.view())

    def tasks_update(self, rid: object, params: dict[str, Any]) -> None:
        """The modern era: answers to a task's questions."""
        task = self.tasks.get(str(params.get("taskId")))
        responses = params.get("inputResponses")
        if task is None or not isinstance(responses, dict):
            self.server.error(rid, -32602, "Failed to update task")
            return
        for key, answer in responses.items():
            if task.questions.pop(key, None) is None:
                continue  # not outstanding: ignored, as the extension says
            picked = ((answer or {}).get("content") or {}).get("pick")
            if task.ask == "always":
                task.question()
                continue
            task.result = self.server.text(f"picked {json.dumps(picked)}")
            if task.lag:
                task.questions[key] = {"method": "elicitation/create", "params": {"message": "Which one?"}}
            else:
                task.status = "completed"
        self.server.reply(rid, {})

    def tasks_result(self, rid: object, params: dict[str, Any]) -> None:
        task = self.tasks.get(str(params.get("taskId")))
        if task is None:
            self.server.error(rid, -32602, "Failed to retrieve task: Task not found")
            return

        def wait() -> None:
            while task.status == "working" and task.ask:
                time.sleep(0.01)  # the fake's own pacing: the task turns input_required
            if task.ask and task.status == "input_required":
                answer = self.request("elicitation/create", {
                    "message": "Which one?",
                    "requestedSchema": {"type": "object", "properties": {"pick": {"type": "string", "default": "a"}}},
                    "_meta": {"io.modelcontextprotocol/related-task": {"taskId": task.task_id}},
                })  # fmt: skip
                task.result = self.server.text(f"picked {json.dumps(answer.get('result'))}")
                task.status = "completed"
                task.done.set()
            task.done.wait()
            result = dict(task.result)
            result["_meta"] = {"io.modelcontextprotocol/related-task": {"taskId": task.task_id}}
            self.server.reply(rid, result)

        self.spawn(wait)

    def tasks_cancel(self, rid: object, params: dict[str, Any]) -> None:
        task = self.tasks.get(str(params.get("taskId")))
        if task is None or task.status in ("completed", "failed", "cancelled"):
            self.server.error(rid, -32602, "Cannot cancel task")
            return
        task.status = "cancelled"
        task.result = self.server.text("cancelled", isError=True)
        task.done.set()
        # The modern extension acknowledges with an empty result.
        self.server.reply(rid, {} if self.server.eras.modern(rid) else task.view())

    def start_task(
        self, rid: object, name: str, args: dict[str, Any], params: dict[str, Any], *, modern: bool = False
    ) -> None:
        poll = args.get("poll", 20)
        task = _Task(f"task-{next(self.task_ids)}", poll if isinstance(poll, int) else None)
        self.tasks[task.task_id] = task
        if modern:  # the handle itself, typed by resultType
            self.server.reply(rid, {"resultType": "task", **task.modern_view()})
        else:
            self.server.reply(rid, {"task": task.view()})
            token = (params.get("_meta") or {}).get("progressToken")
            if token is not None:  # the token stays valid for the task's lifetime
                self.notify_progress(token, 1, 2, "task started")
        if name == "forever":
            return
        task.ask = args.get("ask") or False
        task.lag = bool(args.get("lag"))

        def finish() -> None:
            time.sleep(int(args.get("ms", 0)) / 1000)
            if task.status != "working":
                return
            if modern and args.get("fail"):
                task.error = {"code": -32050, "message": "the research failed", "data": {"why": "on purpose"}}
                task.status = "failed"
            elif modern and args.get("cancel"):
                task.status = "cancelled"
            elif task.ask and modern:
                task.question()  # asked in tasks/get, answered with tasks/update
            elif task.ask:
                task.status = "input_required"
                return  # tasks/result asks, then completes it
            else:
                task.result = self.server.text(f"researched {args.get('topic', 'nothing')}")
                task.status = "completed"
            task.done.set()

        threading.Thread(target=finish, daemon=True).start()

    # --------------------------------------------------------------- tools

    def call(self, rid: object, name: object, args: dict[str, Any], params: dict[str, Any]) -> bool:
        """Serve a feature tool; False if ``name`` is not one."""
        if name in ("research", "forever", "maybe_task"):
            if self.server.eras.modern(rid):
                # The modern extension: the server decides, if the client declared it.
                if not declares_tasks(params):
                    if name == "maybe_task":
                        self.server.reply(rid, self.server.text("plain answer"))
                    else:
                        self.server.eras.missing_tasks_capability(rid)
                elif name == "maybe_task" and not args.get("as_task"):
                    self.server.reply(rid, self.server.text("plain answer"))
                elif args.get("confirm") and not self.confirmed(rid, params):
                    pass  # asked first (input_required), the task comes on the retry
                else:
                    self.start_task(rid, str(name), args, params, modern=True)
            elif isinstance(params.get("task"), dict):
                self.start_task(rid, str(name), args, params)
            elif name == "maybe_task":
                self.server.reply(rid, self.server.text("plain answer"))
            else:
                self.server.error(rid, -32601, "Task augmentation required")
            return True
        work = {
            "progress": self.progress,
            "log": self.log,
            "elicit": lambda r, a, p: self.server.reply(r, self.asked("elicitation/create", a.get("params"))),
            "sample": lambda r, a, p: self.server.reply(r, self.asked("sampling/createMessage", a.get("params"))),
            "roots": lambda r, a, p: self.server.reply(r, self.asked("roots/list", None)),
            "storm": self.storm,
            "needs_url": self.needs_url,
            "ask": self.ask,
            "bad_structured": lambda r, a, p: self.server.reply(
                r, self.server.text("oops", structuredContent={"sum": "not a number"})
            ),
        }.get(name)  # type: ignore[call-overload]
        if work is None:
            return False
        self.spawn(work, rid, args, params)
        return True

    def spawn(self, work: Any, *args: Any) -> None:
        """Run ``work`` on a thread of its own, so that calls multiplex; over
        HTTP on the request's own thread, which writes its response."""
        if self.server.inline:
            work(*args)
        else:
            threading.Thread(target=work, args=args, daemon=True).start()

    def progress(self, rid: object, args: dict[str, Any], params: dict[str, Any]) -> None:
        token = (params.get("_meta") or {}).get("progressToken")
        steps = int(args.get("steps", 3))
        gate = args.get("gate")
        for step in range(1, steps + 1):
            time.sleep(int(args.get("ms", 0)) / 1000)
            if step == 2 and gate:
                # Going on needs the client to have seen step 1 already (its
                # callback opens the gate): progress that reached it only
                # with the result would never come.
                until = time.monotonic() + 30
                while not os.path.exists(str(gate)) and time.monotonic() < until:
                    time.sleep(0.01)
            if args.get("foreign"):
                for other in ("not-yours", 987654321):
                    self.notify_progress(other, step, steps, "foreign")
            if token is not None:
                self.notify_progress(token, step, steps, f"step {step}")
                if args.get("repeat"):
                    self.notify_progress(token, step, steps, "repeated")
        self.server.reply(rid, self.server.text(f"done after {steps} steps"))

    def confirmed(self, rid: object, params: dict[str, Any]) -> bool:
        """The modern era's ``confirm``: one multi round-trip question before
        the task is created (SEP-2663's composition with input_required)."""
        answer = (params.get("inputResponses") or {}).get("confirm")
        if params.get("requestState") == "confirming" and isinstance(answer, dict):
            if answer.get("action") == "accept":
                return True
            self.server.reply(rid, self.server.text("research declined"))
            return False
        self.server.reply(rid, {"resultType": "input_required", "requestState": "confirming", "inputRequests": {
            "confirm": {"method": "elicitation/create", "params": {
                "message": "Start the research?", "requestedSchema": {"type": "object", "properties": {}}}}}})
        return False

    def notify_progress(self, token: object, progress: float, total: float, message: str) -> None:
        self.server.send({"jsonrpc": "2.0", "method": "notifications/progress", "params": {
            "progressToken": token, "progress": progress, "total": total, "message": message}})  # fmt: skip

    def log(self, rid: object, args: dict[str, Any], params: dict[str, Any]) -> None:
        level = str(args.get("level", "info"))
        count = int(args.get("count", 1))
        sent = 0
        if level not in LEVELS or LEVELS.index(level) >= LEVELS.index(self.log_level):
            message: dict[str, Any] = {"level": level, "data": args.get("data", "hello")}
            if "logger" in args:
                message["logger"] = args["logger"]
            line = json.dumps({"jsonrpc": "2.0", "method": "notifications/message", "params": message})
            self.server.write_raw((line + "\n").encode() * count)
            sent = count
        self.server.reply(rid, self.server.text(f"sent {sent}"))

    def storm(self, rid: object, args: dict[str, Any], params: dict[str, Any]) -> None:
        for _ in range(int(args.get("add", 0))):
            self.added += 1
            self.server.tools.append({"name": f"added_{self.added}", "inputSchema": {"type": "object"}})
        if args.get("bad"):
            self.server.tools.append({"name": "bad/name", "inputSchema": {"type": "object"}})
        kind = str(args.get("kind", "tools"))
        line = json.dumps({"jsonrpc": "2.0", "method": f"notifications/{kind}/list_changed"}) + "\n"
        self.server.write_raw(line.encode() * int(args.get("count", 1)))
        self.server.reply(rid, self.server.text("stormed"))

    def needs_url(self, rid: object, args: dict[str, Any], params: dict[str, Any]) -> None:
        key = str(args.get("key", "account"))
        if key in self.connected:
            self.server.reply(rid, self.server.text(f"connected {key}"))
            return
        self.connected.add(key)
        elicitations = args.get("urls", [{
            "mode": "url", "elicitationId": f"elicit-{key}",
            "url": f"https://auth.example.com/connect?elicitation=elicit-{key}",
            "message": "Connect your account first.",
        }])  # fmt: skip
        self.server.error(rid, -32042, "This request requires more information.", {"elicitations": elicitations})

    def ask(self, rid: object, args: dict[str, Any], params: dict[str, Any]) -> None:
        replies: list[dict[str, Any]] = []
        task_id: object = None
        for step in args.get("requests", []):
            time.sleep(int(step.get("wait_ms", 0)) / 1000)
            sent = json.loads(json.dumps(step.get("params")).replace('"$task"', json.dumps(task_id)))
            answer = self.request(str(step.get("method")), sent)
            answer.pop("jsonrpc", None)
            answer.pop("id", None)
            created = (answer.get("result") or {}).get("task") if isinstance(answer.get("result"), dict) else None
            if isinstance(created, dict) and "taskId" in created:
                task_id = created["taskId"]
            replies.append(answer)
        self.server.reply(rid, self.server.text(json.dumps(replies), structuredContent={"replies": replies}))

    # --------------------------------------------------------------- asking the client

    def request(self, method: str, params: dict[str, Any] | None, timeout: float = 30.0) -> dict[str, Any]:
        """Send the client a request; its whole reply (or an error note)."""
        server = self.server
        server.next_client_id += 1
        client_id = f"srv-{server.next_client_id}"
        done = threading.Event()
        server.pending_client[client_id] = done
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": client_id, "method": method}
        if params is not None:
            message["params"] = params
        server.send(message)
        if not done.wait(timeout):
            return {"error": {"code": 0, "message": "the client did not answer"}}
        answer: dict[str, Any] = server.client_replies.pop(client_id)
        return answer

    def asked(self, method: str, params: Any) -> dict[str, Any]:
        answer = self.request(method, params)
        answer.pop("jsonrpc", None)
        answer.pop("id", None)
        return self.server.text(json.dumps(answer), structuredContent=answer)
