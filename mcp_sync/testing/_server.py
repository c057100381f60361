"""A scriptable fake MCP server over stdio, with no dependencies.

Run it as ``python -m mcp_sync.testing [options]``. Well-behaved by default
(tools ``echo``, ``add``, ``fail``, ``sleep``, ``blob``); options and a few
tools make it misbehave in the ways real servers do, so a test can check that
a client copes. See ``docs/guides/test-with-the-fake-server.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import Any, BinaryIO, ClassVar

from . import _media
from ._eras import INPUT_TOOLS, EraGate
from ._eras import add_options as add_era_options
from ._features import FEATURE_CAPABILITIES, FEATURE_TOOLS, Features
from ._listen import LISTEN_TOOLS, ListenHub, instructions
from ._listen import add_options as add_listen_options

__all__ = ["DEFAULT_TOOLS", "FakeServer", "parse_args", "spawn_grandchild"]


def _schema(**props: str) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {name: {"type": kind} for name, kind in props.items()},
        "required": list(props),
    }


DEFAULT_TOOLS: list[dict[str, Any]] = [
    {"name": "echo", "description": "Echo a message back.", "inputSchema": _schema(message="string")},
    {
        "name": "add",
        "description": "Add two numbers.",
        "inputSchema": _schema(a="number", b="number"),
        "outputSchema": {"type": "object", "properties": {"sum": {"type": "number"}}},
    },
    {"name": "fail", "description": "Always reports a tool error.", "inputSchema": _schema()},
    {"name": "sleep", "description": "Answer after `ms` milliseconds.", "inputSchema": _schema(ms="integer")},
    {"name": "blob", "description": "Return `bytes` bytes of text.", "inputSchema": _schema(bytes="integer")},
]

# Tools that misbehave on purpose. Listed only with --misbehave so that the
# default catalog stays small and polite.
MISBEHAVING_TOOLS: list[dict[str, Any]] = [
    {"name": name, "description": text, "inputSchema": {"type": "object"}}
    for name, text in (
        ("crash", "Exit at once with `code` (default 3) instead of answering."),
        ("hang", "Never answer."),
        ("ping_client", "Ping the client (id `id`) and report whether the pong matched."),
        ("ping_later", "Answer, then after `ms` milliseconds ping the client (id `id`)."),
        ("late_pong", "Report whether the pong to ping_later's ping matched."),
        ("ask_client", "Send the client a request `method` and return its reply."),
        ("null_error", "Write an error reply with a null id, then answer."),
        ("raw", "Write `lines` raw to stdout ({id} is the request id; an item may be "
                "{prefix, repeat, times, suffix}), then answer unless `reply` is false."),
        ("flood", "Write `bytes` bytes to stdout without a newline."),
        ("huge_reply", "Answer with `bytes` bytes of text, streamed: id last as the TypeScript "
                       "SDK writes it, or first with `id_first`; `id` replaces the id (any JSON), "
                       "`method` makes it a server request instead."),
        ("stderr", "Write `text` (or `bytes` bytes of noise) to stderr, then answer."),
        ("grandchild", "Start a long-lived grandchild process and return its pid; `setsid` "
                       "puts it in a session of its own, `detach` also orphans it (double fork)."),
        ("ping_flood", "Send `count` pings, stop reading stdin for `stall_ms`, then answer "
                       "unless `reply` is false."),
        ("stall", "Answer, then stop reading stdin for `ms` milliseconds."),
        ("notify", "Send notifications (tools/list_changed, message), then answer."),
        ("deep", "Answer with a result nested `depth` levels deep."),
        ("exit_after_reply", "Answer, then exit with `code`."),
        ("close_stdout", "Close stdout and keep running."),
        ("close_stdin", "Close stdin, then answer and keep running."),
    )
]

SUPPORTED = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
# The results a server may mark as reusable (ttlMs, cacheScope): --ttl-ms.
CACHEABLE = frozenset({"tools/list", "prompts/list", "resources/list", "resources/templates/list", "resources/read"})


class FakeServer:
    """The server's state and request handling. ``out`` is the client's stdin."""

    def __init__(self, options: argparse.Namespace, out: BinaryIO) -> None:
        self.opt = options
        self.out = out
        self.write_lock = threading.Lock()
        self.tools = self._catalog()
        self.pending_client: dict[object, threading.Event] = {}
        self.client_replies: dict[object, Any] = {}
        self.next_client_id = 0
        self.log = open(options.log, "ab", buffering=0) if options.log else None  # noqa: SIM115
        self.stall_until = 0.0
        self.features = Features(self)
        self.eras = EraGate(self, options)
        self.hub = ListenHub(self)
        # Over HTTP every call is answered on its request's own thread.
        self.inline = False
        # Requests whose reply gets --ttl-ms and --cache-scope.
        self.hinted: set[object] = set()

    # --------------------------------------------------------------- output

    def send(self, message: dict[str, Any]) -> None:
        self.write_raw(json.dumps(message).encode() + b"\n")

    def write_raw(self, data: bytes) -> None:
        with self.write_lock:
            if self.opt.noise:
                self.out.write(
                    b"\n   \nplain log text\n\xff\xfe not utf-8\n[1,2]\n42\nnull\n"
                    b'{"no":"jsonrpc"}\n{"jsonrpc":"2.0","method":"notifications/message","params":{}}\n'
                )
            self.out.write(data)
            self.out.flush()

    def reply(self, request_id: object, result: Any) -> None:
        if self.hinted and request_id in self.hinted:
            self.hinted.discard(request_id)
            result = {**result, "ttlMs": self.opt.ttl_ms, "cacheScope": self.opt.cache_scope}
        result = self.eras.stamp(request_id, result)
        self.send({"jsonrpc": "2.0", "result": result, "id": request_id})

    def error(self, request_id: object, code: int, message: str, data: Any = None) -> None:
        error: dict[str, Any] = {"code": code, "message": message}
        if data is not None:
            error["data"] = data
        self.send({"jsonrpc": "2.0", "error": error, "id": request_id})

    @staticmethod
    def text(value: str, **extra: Any) -> dict[str, Any]:
        return {"content": [{"type": "text", "text": value}], **extra}

    def huge_reply(self, rid: object, args: dict[str, Any]) -> None:
        """Stream one reply of any size without holding it (see huge_reply)."""
        ident = json.dumps(args.get("id", rid))
        if "method" in args:
            head, end = f'{{"method":{json.dumps(args["method"])},"params":{{"pad":"', '"}'
        else:
            head, end = '{"result":{"content":[{"type":"text","text":"', '"}]}'
        if args.get("id_first"):
            head = f'{{"jsonrpc":"2.0","id":{ident},' + head[1:]
            end += "}\n"
        else:
            end += f',"jsonrpc":"2.0","id":{ident}}}\n'
        total = int(args.get("bytes", 0))
        chunk = b"x" * 65536
        with self.write_lock:
            self.out.write(head.encode())
            while total > 0:
                self.out.write(chunk[: min(total, len(chunk))])
                total -= len(chunk)
            self.out.write(end.encode())
            self.out.flush()

    # --------------------------------------------------------------- input

    def handle_line(self, line: bytes) -> None:
        if self.log is not None:
            self.log.write(line if line.endswith(b"\n") else line + b"\n")
        try:
            message = json.loads(line)
        except ValueError:
            return
        if not isinstance(message, dict):
            return
        method = message.get("method")
        request_id = message.get("id")
        if method is None:  # a reply to one of our requests
            if request_id in self.pending_client:
                self.client_replies[request_id] = message
                self.pending_client.pop(request_id).set()
            return
        if "id" not in message:
            if method == "notifications/cancelled":
                self.hub.cancelled(message.get("params"))
            return  # notifications: initialized, cancelled
        self.eras.delay(method)
        if method in self.opt.hang_on:
            return
        if method in self.opt.exit_on:
            os._exit(self.opt.exit_code)
        raw = dict(self.opt.raw).get(method)
        if raw is not None:
            self.reply(request_id, json.loads(raw))
            return
        for answer in self.opt.answer:
            answered, _, text = answer.partition("=")
            if answered == method:
                self.write_raw(text.replace("{id}", json.dumps(request_id)).encode() + b"\n")
                return
        params = message.get("params") or {}
        self._note_hint(request_id, method)
        if isinstance(params, dict) and self.eras.handle(request_id, method, params):
            return
        handler: Callable[[object, dict[str, Any]], None] | None = {
            "initialize": self.on_initialize,
            "tools/list": self.on_tools_list,
            "tools/call": self.on_tools_call,
            "ping": lambda rid, _p: self.reply(rid, {}),
            **self.features.methods(),
            **self.hub.methods(),
        }.get(method)
        if handler is None:
            self.error(request_id, -32601, "Method not found")
            return
        handler(request_id, message.get("params") or {})

    def _note_hint(self, request_id: object, method: str) -> None:
        """With --ttl-ms, mark the reply to a cacheable request for its hints."""
        if self.opt.ttl_ms is not None and method in CACHEABLE:
            self.hinted.add(request_id)

    def on_initialize(self, request_id: object, params: dict[str, Any]) -> None:
        if self.opt.initialize_result is not None:
            self.reply(request_id, json.loads(self.opt.initialize_result))
            return
        asked = params.get("protocolVersion")
        version = self.opt.protocol_version or (asked if asked in SUPPORTED else "2025-06-18")
        capabilities = self.capabilities()
        self.reply(
            request_id,
            {
                "protocolVersion": version,
                "capabilities": capabilities,
                "serverInfo": {"name": "mcp-sync-fake", "version": "1.0"},
                **instructions(self.opt),
            },
        )

    def capabilities(self) -> Any:
        if self.opt.capabilities is not None:
            return json.loads(self.opt.capabilities)
        if self.opt.listen:
            return {**FEATURE_CAPABILITIES, "resources": {"listChanged": True, "subscribe": True}}
        return FEATURE_CAPABILITIES

    def on_tools_list(self, request_id: object, params: dict[str, Any]) -> None:
        for _ in range(self.opt.list_changed):
            self.send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
        if self.opt.raw_tools_list is not None:
            self.reply(request_id, json.loads(self.opt.raw_tools_list))
            return
        size = self.opt.page_size or max(1, len(self.tools))
        cursor = params.get("cursor")
        start = int(cursor) if isinstance(cursor, str) and cursor.isdigit() else 0
        page: dict[str, Any] = {"tools": self.tools[start : start + size]}
        mode = self.opt.cursor_mode
        if mode == "endless":
            page["nextCursor"] = str(start + size)
        elif mode == "repeat":
            page["nextCursor"] = str(size)  # the second page points at itself
        elif mode == "empty":
            page["nextCursor"] = ""
        elif start + size < len(self.tools):
            page["nextCursor"] = str(start + size)
        self.reply(request_id, page)

    def on_tools_call(self, request_id: object, params: dict[str, Any]) -> None:
        name = params.get("name")
        args = params.get("arguments") or {}
        if self.features.call(request_id, name, args, params):
            return
        if self.opt.media and isinstance(name, str) and _media.call(self, request_id, name, args):
            return
        if name == "publish" and self.opt.listen:
            self.hub.publish(request_id, args, self.eras.modern(request_id))
            return
        if not self.inline and (name == "sleep" or name in ("ping_client", "ask_client", "hang")):
            # Slow tools run on their own thread so calls multiplex.
            threading.Thread(target=self.call, args=(request_id, name, args), daemon=True).start()
        else:
            self.call(request_id, name, args)

    def call(self, rid: object, name: object, args: dict[str, Any]) -> None:
        tool = self.TOOLS.get(name) if isinstance(name, str) else None
        if tool is None:
            self.reply(rid, self.text(f"unknown tool {name}", isError=True))
        else:
            tool(self, rid, args)

    # One method per tool of the catalog (and of the misbehaving tools), in TOOLS below.

    def _tool_echo(self, rid: object, args: dict[str, Any]) -> None:
        self.reply(rid, self.text(str(args.get("message", ""))))

    def _tool_add(self, rid: object, args: dict[str, Any]) -> None:
        a, b = args.get("a", 0), args.get("b", 0)
        if not all(type(n) in (int, float) for n in (a, b)):
            self.reply(rid, self.text("add needs numbers a and b", isError=True))
        else:
            self.reply(rid, self.text(str(a + b), structuredContent={"sum": a + b}))

    def _tool_fail(self, rid: object, args: dict[str, Any]) -> None:
        self.reply(rid, self.text("the tool failed on purpose", isError=True))

    def _tool_sleep(self, rid: object, args: dict[str, Any]) -> None:
        time.sleep(int(args.get("ms", 0)) / 1000)
        self.reply(rid, self.text("slept"))

    def _tool_blob(self, rid: object, args: dict[str, Any]) -> None:
        self.reply(rid, self.text("x" * int(args.get("bytes", 0))))

    def _tool_crash(self, rid: object, args: dict[str, Any]) -> None:
        sys.stdout.flush()
        os._exit(int(args.get("code", 3)))

    def _tool_hang(self, rid: object, args: dict[str, Any]) -> None:
        pass  # never answers

    def _tool_ping_later(self, rid: object, args: dict[str, Any]) -> None:
        def later() -> None:
            time.sleep(int(args.get("ms", 0)) / 1000)
            outcome = self.ask(rid, "ping", args.get("id"), check_pong=True)
            self.late_pong = outcome["content"][0]["text"]

        self.late_pong = "no pong yet"
        threading.Thread(target=later, daemon=True).start()
        self.reply(rid, self.text("will ping"))

    def _tool_late_pong(self, rid: object, args: dict[str, Any]) -> None:
        self.reply(rid, self.text(getattr(self, "late_pong", "never pinged")))

    def _tool_ping_client(self, rid: object, args: dict[str, Any]) -> None:
        self.reply(rid, self.ask(rid, "ping", args.get("id"), check_pong=True))

    def _tool_ask_client(self, rid: object, args: dict[str, Any]) -> None:
        self.reply(rid, self.ask(rid, str(args.get("method")), args.get("id")))

    def _tool_null_error(self, rid: object, args: dict[str, Any]) -> None:
        self.send({"jsonrpc": "2.0", "error": args.get("error") or {
            "code": -32000, "message": "uncorrelated failure"}, "id": None})
        self.reply(rid, self.text("after null error"))

    def _tool_raw(self, rid: object, args: dict[str, Any]) -> None:
        for item in args.get("lines", []):
            if isinstance(item, dict) and "repeat" in item:
                # A big line built here: {"prefix", "repeat", "times", "suffix"}.
                data = (
                    str(item.get("prefix", "")).replace("{id}", json.dumps(rid))
                    + str(item["repeat"]) * int(item.get("times", 1))
                    + str(item.get("suffix", ""))
                ).encode()
            elif isinstance(item, dict):
                data = bytes.fromhex(item["hex"])
            else:
                data = str(item).replace("{id}", json.dumps(rid)).encode("utf-8", "surrogatepass")
            self.write_raw(data + b"\n")
        if args.get("reply", True):
            self.reply(rid, self.text("raw done"))

    def _tool_flood(self, rid: object, args: dict[str, Any]) -> None:
        total = int(args.get("bytes", 0))
        chunk = b"x" * 65536
        with self.write_lock:
            while total > 0:
                self.out.write(chunk[: min(total, len(chunk))])
                total -= len(chunk)
            self.out.flush()

    def _tool_huge_reply(self, rid: object, args: dict[str, Any]) -> None:
        self.huge_reply(rid, args)

    def _tool_stderr(self, rid: object, args: dict[str, Any]) -> None:
        data = args["text"].encode() if "text" in args else b"e" * int(args.get("bytes", 0))
        sys.stderr.buffer.write(data)
        sys.stderr.buffer.flush()
        self.reply(rid, self.text("wrote stderr"))

    def _tool_grandchild(self, rid: object, args: dict[str, Any]) -> None:
        pid = spawn_grandchild(setsid=bool(args.get("setsid")), detach=bool(args.get("detach")))
        self.reply(rid, self.text(str(pid)))

    def _tool_ping_flood(self, rid: object, args: dict[str, Any]) -> None:
        self.stall_until = time.monotonic() + int(args.get("stall_ms", 0)) / 1000
        pings = b"".join(
            b'{"jsonrpc":"2.0","id":"flood-%d","method":"ping"}\n' % n
            for n in range(int(args.get("count", 0)))
        )
        self.write_raw(pings)
        if args.get("reply", True):
            self.reply(rid, self.text("flooded"))

    def _tool_stall(self, rid: object, args: dict[str, Any]) -> None:
        self.stall_until = time.monotonic() + int(args.get("ms", 0)) / 1000
        self.reply(rid, self.text("stalling"))

    def _tool_notify(self, rid: object, args: dict[str, Any]) -> None:
        self.send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
        self.send({"jsonrpc": "2.0", "method": "notifications/message",
                   "params": {"level": "info", "data": "hello"}})
        self.reply(rid, self.text("notified"))

    def _tool_deep(self, rid: object, args: dict[str, Any]) -> None:
        depth = int(args.get("depth", 1))
        nested = "[" * depth + "]" * depth
        self.write_raw(
            f'{{"jsonrpc":"2.0","result":{{"content":[],"deep":{nested}}},"id":{json.dumps(rid)}}}\n'.encode()
        )

    def _tool_close_stdout(self, rid: object, args: dict[str, Any]) -> None:
        with self.write_lock:
            os.close(1)

    def _tool_close_stdin(self, rid: object, args: dict[str, Any]) -> None:
        # Closed before the answer, so that every later write finds it closed.
        os.close(0)
        self.reply(rid, self.text("closed stdin"))

    def _tool_exit_after_reply(self, rid: object, args: dict[str, Any]) -> None:
        self.reply(rid, self.text("bye"))
        os._exit(int(args.get("code", 0)))

    TOOLS: ClassVar[dict[str, Callable[[FakeServer, object, dict[str, Any]], None]]] = {
        "echo": _tool_echo,
        "add": _tool_add,
        "fail": _tool_fail,
        "sleep": _tool_sleep,
        "blob": _tool_blob,
        "crash": _tool_crash,
        "hang": _tool_hang,
        "ping_later": _tool_ping_later,
        "late_pong": _tool_late_pong,
        "ping_client": _tool_ping_client,
        "ask_client": _tool_ask_client,
        "null_error": _tool_null_error,
        "raw": _tool_raw,
        "flood": _tool_flood,
        "huge_reply": _tool_huge_reply,
        "stderr": _tool_stderr,
        "grandchild": _tool_grandchild,
        "ping_flood": _tool_ping_flood,
        "stall": _tool_stall,
        "notify": _tool_notify,
        "deep": _tool_deep,
        "close_stdout": _tool_close_stdout,
        "close_stdin": _tool_close_stdin,
        "exit_after_reply": _tool_exit_after_reply,
    }

    def ask(self, rid: object, method: str, client_id: object, check_pong: bool = False) -> Any:
        if client_id is None:
            self.next_client_id += 1
            client_id = f"srv-{self.next_client_id}"
        done = threading.Event()
        self.pending_client[client_id] = done
        self.send({"jsonrpc": "2.0", "id": client_id, "method": method})
        if not done.wait(10):
            return self.text("the client did not answer", isError=True)
        answer = self.client_replies.pop(client_id)
        exact = type(answer.get("id")) is type(client_id) and answer.get("id") == client_id
        if check_pong:
            ok = exact and answer.get("result") == {}
            return self.text("pong ok" if ok else f"bad pong {answer!r}", isError=not ok)
        return self.text(json.dumps(answer), structuredContent=answer)

    def _catalog(self) -> list[dict[str, Any]]:
        if self.opt.tools is not None:
            source = self.opt.tools
            if not source.lstrip().startswith("["):
                with open(source, encoding="utf-8") as handle:
                    source = handle.read()
            tools: list[dict[str, Any]] = json.loads(source)
        else:
            tools = list(DEFAULT_TOOLS)
        if self.opt.misbehave:
            tools += MISBEHAVING_TOOLS
        if self.opt.features:
            tools += FEATURE_TOOLS
        if self.opt.media:
            tools += _media.MEDIA_TOOLS
            if not self.opt.features:
                tools += [tool for tool in FEATURE_TOOLS if tool["name"] == "progress"]
        if self.opt.input_tools:
            tools += INPUT_TOOLS
        if self.opt.listen:
            tools += LISTEN_TOOLS
        for index in range(self.opt.extra_tools):
            tools.append({"name": f"tool_{index}", "inputSchema": {"type": "object"}})
        return tools


_SLEEPER = "import time\nwhile True: time.sleep(60)"


def spawn_grandchild(*, setsid: bool = False, detach: bool = False) -> int:
    """A process that outlives us unless our process group is killed, or,
    with ``setsid``, one that leaves the group too; with ``detach`` its parent
    exits at once, so it is nobody's child of ours either."""
    if not detach:
        child = subprocess.Popen(
            [sys.executable, "-c", _SLEEPER], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL, start_new_session=setsid,
        )
        return child.pid
    # Double fork: an intermediate process starts the sleeper, prints its pid, exits.
    intermediate = (
        "import subprocess, sys\n"
        f"p = subprocess.Popen([sys.executable, '-c', {_SLEEPER!r}], start_new_session=True,"
        " stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
        "print(p.pid)"
    )
    out = subprocess.run(
        [sys.executable, "-c", intermediate], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL, check=True,
    )
    return int(out.stdout)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m mcp_sync.testing", description=__doc__)
    p.add_argument("--tools", help="catalog as a JSON array, or a file holding one")
    p.add_argument("--extra-tools", type=int, default=0, help="add N trivial tools")
    p.add_argument("--misbehave", action="store_true", help="also list the misbehaving tools")
    p.add_argument("--features", action="store_true",
                   help="also list the tools that exercise progress, logs, handlers, tasks, list_changed")
    p.add_argument("--extra-resources", type=int, default=0, help="list N more resources")
    p.add_argument("--media", action="store_true",
                   help="also list tools that answer images, audio, resources, tables and an MCP App")
    p.add_argument("--raw", nargs=2, action="append", default=[], metavar=("METHOD", "JSON"),
                   help="answer METHOD with this JSON result")
    p.add_argument("--page-size", type=int, default=0, help="tools per tools/list page")
    p.add_argument("--cursor-mode", choices=("normal", "endless", "repeat", "empty"),
                   default="normal")
    p.add_argument("--raw-tools-list", help="answer tools/list with this JSON result")
    p.add_argument("--ttl-ms", type=int, metavar="MS",
                   help="mark list and read results fresh for MS ms (ttlMs), with --cache-scope")
    p.add_argument("--cache-scope", choices=("public", "private"), default="public",
                   help="the cacheScope that goes with --ttl-ms (default public)")
    p.add_argument("--protocol-version", help="answer initialize with this version")
    p.add_argument("--capabilities", help="answer initialize with these capabilities (JSON)")
    p.add_argument("--initialize-result", help="answer initialize with this JSON result")
    p.add_argument("--hang-on", action="append", default=[], metavar="METHOD",
                   help="never answer METHOD")
    p.add_argument("--exit-on", action="append", default=[], metavar="METHOD",
                   help="exit with --exit-code when METHOD arrives")
    p.add_argument("--exit-code", type=int, default=3)
    p.add_argument("--noise", action="store_true", help="write noise before every frame")
    p.add_argument("--list-changed", type=int, default=0,
                   help="send N tools/list_changed notifications before the tools/list reply")
    p.add_argument("--stderr", action="append", default=[], metavar="TEXT",
                   help="write TEXT to stderr at start")
    p.add_argument("--stderr-flood", type=int, default=0, metavar="BYTES",
                   help="write BYTES to stderr from a thread while serving")
    p.add_argument("--stdout-flood", type=int, default=0, metavar="BYTES",
                   help="at start, write BYTES to stdout with no newline")
    p.add_argument("--ignore-sigterm", action="store_true")
    p.add_argument("--ignore-stdin-eof", action="store_true",
                   help="keep running after stdin closes")
    p.add_argument("--grandchild-pidfile", help="start a grandchild at once; write its pid here")
    p.add_argument("--marker", help="create this file at start (proves the server was spawned)")
    p.add_argument("--log", help="append every line received to this file")
    p.add_argument("--starts", help="append the server's pid to this file at each start")
    p.add_argument("--start-delay", type=int, default=0, metavar="MS",
                   help="wait MS milliseconds before reading anything (a slow start)")
    p.add_argument("--answer", action="append", default=[], metavar="METHOD=TEXT",
                   help="answer METHOD with the raw line TEXT ({id} is the request id)")
    add_era_options(p)
    add_listen_options(p)
    p.add_argument("--http", action="store_true",
                   help="serve Streamable HTTP on 127.0.0.1 instead of stdio; print the URL")
    p.add_argument("--port", type=int, default=0, help="the --http port (default: any free one)")
    p.add_argument("--header-log", help="--http: append each POST's MCP headers to this file")
    p.add_argument("--header-mismatch", action="store_true",
                   help="--http, modern era: refuse every tools/call with -32020 (header mismatch)")
    return p.parse_args(argv)
