"""The fake server's protocol eras (``--era legacy|modern|dual``).

- ``legacy`` (the default): the ``initialize`` handshake only, as before;
  ``server/discover`` is an unknown method (``-32601``).
- ``modern``: 2026-07-28 only. Every request must carry ``_meta`` with a
  protocol version and client capabilities (else ``-32602``); a version it
  does not list gets ``-32022`` naming its own; ``initialize`` is refused with
  ``-32022`` too. Results carry ``resultType`` and the server's identity.
- ``dual``: both, like the official SDK's server: the first request decides
  for the whole process (a request with modern ``_meta`` other than
  ``initialize`` opens the modern era); a later request from the other era is
  refused (``initialize`` with ``-32022``, a modern request with ``-32600``).
- ``sdk``: both, the way the TypeScript SDK v2's ``serveStdio`` does it: a
  first ``server/discover`` is answered in the modern era without deciding;
  the next request decides (a modern one keeps the modern era, ``initialize``
  or any request without modern ``_meta`` pins the handshake era, and later
  modern requests are then served as handshake-era ones).

``--delay METHOD=MS`` (repeatable) waits MS milliseconds after reading a
METHOD request before doing anything with it (answering, or ``--exit-on``):
a server that reads the probe and is slow to answer it, or exits only later.

Misbehaviours for the modern era: ``--result-type VALUE`` (every
``tools/call`` result carries it), ``--version-loop`` (every request is
refused with ``-32022`` listing the very version it asked for),
``--modern-versions V,...`` (what the server lists), ``--refuse-first`` (the
first request gets ``-32022`` anyway), and the tools added by
``--input-tools`` (``ask_input``, ``state_only``, ``input_loop``,
``bad_input``), which answer with ``input_required`` -- as do, with that
option, ``prompts/get`` of ``ask_prompt`` and ``resources/read`` of
``fake://input/ask`` (an elicitation first; a requestState that comes back
changed is refused with ``-32602``).

Tasks in the modern era are the 2026-07-28 extension (SEP-2663):
``server/discover`` advertises ``io.modelcontextprotocol/tasks`` instead of
the ``tasks`` capability; a ``tools/call`` that declares the extension may
be answered with a task handle (``resultType: "task"``), one that does not
gets ``-32021`` for a tool that must run as a task; ``tasks/get`` carries the
result, error or questions inline, ``tasks/update`` takes the answers,
``tasks/cancel`` acknowledges, ``tasks/result`` and ``tasks/list`` are
``-32601`` (see ``_features.py``).
"""

from __future__ import annotations

import argparse
import threading
import time
from typing import Any

from ._host import Host
from ._listen import instructions

__all__ = ["INPUT_TOOLS", "REQUEST_STATE", "TASKS_EXTENSION", "EraGate", "add_options", "declares_tasks"]

META_VERSION = "io.modelcontextprotocol/protocolVersion"
META_CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"
META_SERVER_INFO = "io.modelcontextprotocol/serverInfo"
TASKS_EXTENSION = "io.modelcontextprotocol/tasks"
SERVER_INFO = {"name": "mcp-sync-fake", "version": "1.0"}

# Opaque to the client, and built to catch one that is not: it looks like JSON,
# has escapes, non-ASCII and a line separator. The retry must carry it exactly.
REQUEST_STATE = '{"step":1,"note":"caf\u00e9 \u2028 \\"quoted\\"","n":[1,2]}'

INPUT_TOOLS: list[dict[str, Any]] = [
    {"name": name, "description": text, "inputSchema": {"type": "object"}}
    for name, text in (
        ("ask_input", "Ask the client for input (`method`, default elicitation/create; "
                      "`count` requests; `state` false for none), then report what came back."),
        ("state_only", "Answer input_required with only a requestState, `rounds` times."),
        ("input_loop", "Answer input_required forever."),
        ("bad_input", "Answer input_required with neither inputRequests nor requestState."),
    )
]


def add_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--delay", action="append", default=[], metavar="METHOD=MS",
                        help="wait MS milliseconds after reading a METHOD request")
    parser.add_argument("--era", choices=("legacy", "modern", "dual", "sdk"), default="legacy",
                        help="which protocol era(s) to serve (default legacy)")
    parser.add_argument("--modern-versions", default="2026-07-28", metavar="V,...",
                        help="the modern versions the server lists")
    parser.add_argument("--result-type", help="modern era: every tools/call result carries this")
    parser.add_argument("--version-loop", action="store_true",
                        help="modern era: refuse every request with -32022 naming its own version")
    parser.add_argument("--refuse-first", action="store_true",
                        help="modern era: refuse the first request with -32022 (listing the "
                             "versions it does support)")
    parser.add_argument("--input-tools", action="store_true",
                        help="also list ask_input, state_only, input_loop, bad_input")


def declares_tasks(params: object) -> bool:
    """Whether a modern request declares the tasks extension in its client capabilities."""
    meta = params.get("_meta") if isinstance(params, dict) else None
    capabilities = meta.get(META_CAPABILITIES) if isinstance(meta, dict) else None
    extensions = capabilities.get("extensions") if isinstance(capabilities, dict) else None
    return isinstance(extensions, dict) and TASKS_EXTENSION in extensions


def has_modern_meta(params: object) -> bool:
    meta = params.get("_meta") if isinstance(params, dict) else None
    return isinstance(meta, dict) and META_VERSION in meta


class EraGate:
    """Routes each request to the era that serves it."""

    def __init__(self, server: Host, options: argparse.Namespace) -> None:
        self.server = server
        self.mode: str = options.era
        self.versions = [v for v in options.modern_versions.split(",") if v]
        self.result_type: str | None = options.result_type
        self.version_loop: bool = options.version_loop
        self.refuse_first: bool = options.refuse_first
        self.locked: str | None = None if self.mode in ("dual", "sdk") else self.mode
        self.delays = {method: int(ms) for method, _, ms in (d.partition("=") for d in options.delay)}
        # Over HTTP there is no connection to lock: each request picks its era.
        self.per_request = False
        self.lock = threading.Lock()
        # Ids of requests being served in the modern era: their results are
        # stamped with resultType and the server's identity.
        self.modern_ids: set[object] = set()

    def delay(self, method: str) -> None:
        """``--delay``: wait before doing anything with a ``method`` request."""
        ms = self.delays.get(method)
        if ms:
            time.sleep(ms / 1000)

    def era_of(self, method: str, params: object) -> str:
        if self.mode not in ("dual", "sdk"):
            return self.mode
        if self.per_request:
            return "modern" if method != "initialize" and has_modern_meta(params) else "legacy"
        with self.lock:
            if self.locked is None:
                modern = method != "initialize" and has_modern_meta(params)
                if modern and method == "server/discover" and self.mode == "sdk":
                    return "modern"  # an optimistic answer: the next request decides
                self.locked = "modern" if modern else "legacy"
            return self.locked

    def handle(self, rid: object, method: str, params: dict[str, Any]) -> bool:
        """Serve a modern request, or refuse one from the wrong era. False:
        the legacy code serves it."""
        era = self.era_of(method, params)
        if era == "legacy":
            return self.refused_on_legacy(rid, method, params)
        if method == "initialize":
            self.refuse(rid, str(params.get("protocolVersion")))
            return True
        if self.refused_version(rid, params) or self.answered_modern(rid, method, params):
            return True
        with self.lock:
            self.modern_ids.add(rid)
        return False  # tools/list, tools/call, the rest: the shared code, stamped

    def refused_on_legacy(self, rid: object, method: str, params: dict[str, Any]) -> bool:
        """A modern request on a connection locked to the handshake era: refused."""
        if (self.mode == "dual" and not self.per_request and method != "initialize"
                and has_modern_meta(params)):
            self.server.error(rid, -32600, "this connection serves the handshake era")
            return True
        return False

    def refused_version(self, rid: object, params: dict[str, Any]) -> bool:
        """Refuse a request without the modern _meta, or of a version not served."""
        meta = params.get("_meta")
        if not (isinstance(meta, dict) and isinstance(meta.get(META_VERSION), str)
                and isinstance(meta.get(META_CAPABILITIES), dict)):
            self.server.error(rid, -32602, "Invalid params: missing _meta protocolVersion or clientCapabilities")
            return True
        version = meta[META_VERSION]
        if self.version_loop:
            self.refuse(rid, version, [version])
            return True
        if version not in self.versions or self.refuse_first:
            self.refuse_first = False
            self.refuse(rid, version)
            return True
        return False

    def answered_modern(self, rid: object, method: str, params: dict[str, Any]) -> bool:
        """Answer what only the modern era has (discovery, its refusals, the input tools)."""
        server = self.server
        if method == "server/discover":
            server.reply(rid, {
                "resultType": "complete",
                "supportedVersions": self.versions,
                "capabilities": self.capabilities(),
                "_meta": {META_SERVER_INFO: SERVER_INFO},
                "ttlMs": 0,
                "cacheScope": "private",
                **instructions(server.opt),
            })
            return True
        if method in ("ping", "tasks/result", "tasks/list"):
            server.error(rid, -32601, "Method not found")  # not in this revision (nor its tasks extension)
            return True
        if method.startswith("tasks/") and not declares_tasks(params):
            self.missing_tasks_capability(rid)
            return True
        if method == "tools/call" and self.input_tool(rid, params):
            return True
        reads = method in ("prompts/get", "resources/read") and self.server.opt.input_tools
        return bool(reads) and self.input_read(rid, method, params)

    def capabilities(self) -> Any:
        """What ``server/discover`` offers: the handshake era's capabilities,
        with tasks as the 2026-07-28 extension instead of the old slot."""
        offered = self.server.capabilities()
        if self.server.opt.capabilities is not None or not isinstance(offered, dict) or "tasks" not in offered:
            return offered
        modern = {key: value for key, value in offered.items() if key != "tasks"}
        modern["extensions"] = {TASKS_EXTENSION: {}}
        return modern

    def modern(self, rid: object) -> bool:
        """Whether request ``rid`` is being served in the modern era."""
        with self.lock:
            return rid in self.modern_ids

    def missing_tasks_capability(self, rid: object) -> None:
        self.server.send({"jsonrpc": "2.0", "id": rid, "error": {
            "code": -32021, "message": "Missing required client capability",
            "data": {"requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}}}})

    def refuse(self, rid: object, requested: str, supported: list[str] | None = None) -> None:
        self.server.send({"jsonrpc": "2.0", "id": rid, "error": {
            "code": -32022, "message": "Unsupported protocol version",
            "data": {"supported": supported if supported is not None else self.versions,
                     "requested": requested}}})

    def stamp(self, rid: object, result: Any, method: str | None = None) -> Any:
        """A result of a modern request, with resultType and identity added."""
        with self.lock:
            if rid not in self.modern_ids:
                return result
            self.modern_ids.discard(rid)
        if not isinstance(result, dict):
            return result
        stamped = {"resultType": "complete", **result}
        if self.result_type is not None and "content" in result:
            stamped["resultType"] = self.result_type
        if "tools" in result:
            stamped.setdefault("ttlMs", 0)
            stamped.setdefault("cacheScope", "private")
        stamped.setdefault("_meta", {META_SERVER_INFO: SERVER_INFO})
        return stamped

    # ------------------------------------------------------------ input_required

    def input_read(self, rid: object, method: str, params: dict[str, Any]) -> bool:
        """``prompts/get`` of ``ask_prompt`` and ``resources/read`` of
        ``fake://input/ask``: one elicitation (with the tricky state) first,
        then the prompt or the resource, naming the answer."""
        if method == "prompts/get" and params.get("name") != "ask_prompt":
            return False
        if method == "resources/read" and params.get("uri") != "fake://input/ask":
            return False
        responses = params.get("inputResponses")
        state = params.get("requestState")
        if responses is None and state is None:
            self.server.reply(rid, {"resultType": "input_required", "requestState": REQUEST_STATE, "inputRequests": {
                "who": {"method": "elicitation/create", "params": {
                    "message": "Who is asking?",
                    "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}}}}}})
            return True
        if state != REQUEST_STATE:
            self.server.error(rid, -32602, "request state was tampered with")
            return True
        answer = (responses or {}).get("who") or {}
        name = str((answer.get("content") or {}).get("name", "nobody"))
        if method == "prompts/get":
            result: dict[str, Any] = {"description": "asked", "messages": [
                {"role": "user", "content": {"type": "text", "text": f"Hello, {name}."}}]}
        else:
            result = {"contents": [{"uri": "fake://input/ask", "mimeType": "text/plain", "text": f"for {name}"}],
                      "ttlMs": 0, "cacheScope": "private"}
        self.server.reply(rid, {"resultType": "complete", **result})
        return True

    def input_tool(self, rid: object, params: dict[str, Any]) -> bool:
        name = params.get("name")
        args = params.get("arguments") or {}
        responses = params.get("inputResponses")
        state = params.get("requestState")
        reply = self.server.reply
        if name == "ask_input":
            token = (params.get("_meta") or {}).get("progressToken")
            if token is not None:  # each round reports its own progress, from 1
                self.server.features.notify_progress(token, 1, 1, "round")
            if responses is None and state is None:
                method = str(args.get("method", "elicitation/create"))
                requests = {
                    f"q{i}": {"method": method, "params": {
                        "message": f"question {i}",
                        "requestedSchema": {"type": "object", "properties": {}}}}
                    for i in range(int(args.get("count", 1)))
                }
                result: dict[str, Any] = {"resultType": "input_required", "inputRequests": requests}
                if args.get("state", True):
                    result["requestState"] = REQUEST_STATE
                reply(rid, result)
                return True
            expected = REQUEST_STATE if args.get("state", True) else None
            if state != expected:
                reply(rid, {**self.server.text("request state was tampered with", isError=True),
                            "resultType": "complete"})
                return True
            reply(rid, {**self.server.text("input received"), "resultType": "complete",
                        "structuredContent": {"inputResponses": responses, "requestState": state}})
            return True
        if name == "state_only":
            rounds = int(args.get("rounds", 1))
            done = 0 if state is None else int(str(state).rsplit("-", 1)[-1])
            if done >= rounds:
                reply(rid, {**self.server.text(f"done after {done} rounds"), "resultType": "complete"})
            else:
                reply(rid, {"resultType": "input_required", "requestState": f"round-{done + 1}"})
            return True
        if name == "input_loop":
            reply(rid, {"resultType": "input_required", "requestState": "again"})
            return True
        if name == "bad_input":
            reply(rid, {"resultType": "input_required"})
            return True
        return False

