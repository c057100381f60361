"""A stand-in for the model APIs of OpenAI, Anthropic and Gemini, on 127.0.0.1.

Standard library only. It plays a model that uses tools: the first request
of a conversation (no tool result in it yet) is answered with one call to the
offered tool whose name ends in ``echo`` (arguments ``{"message": MESSAGE}``);
the follow-up, which must carry the tool's result, is checked with the
provider SDK's own request types and answered with text that quotes the
result. Anything wrong with a follow-up is recorded in ``problems`` (and
answered with HTTP 400), so a test asserts ``problems == []``.

Endpoints (the SDKs' real paths):

- ``POST /v1/chat/completions``: OpenAI Chat Completions (base URL ``/v1``)
- ``POST /v1/responses``: OpenAI Responses (base URL ``/v1``)
- ``POST /v1/messages``: Anthropic Messages (base URL ``/``)
- ``POST /v1beta/models/<model>:generateContent`` (or ``/v1/...``, what
  google-genai uses with a custom base URL): Gemini (base URL ``/``)

Every exchange is kept in ``transcript`` (request and response bodies).
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MESSAGE = "hello from the stand-in model"
CALL_ID = "call_standin_1"


@dataclass
class StandIn:
    url: str = ""
    problems: list[str] = field(default_factory=list)
    transcript: list[dict[str, Any]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def openai_base_url(self) -> str:
        return self.url + "/v1"

    def exchanges(self, api: str) -> list[dict[str, Any]]:
        with self.lock:
            return [t for t in self.transcript if t["api"] == api]


def _pick(names: list[str]) -> str | None:
    for name in names:
        if name.endswith("echo"):
            return name
    return names[0] if names else None


def _validate(adapter_of: Callable[[], Any], value: Any, strict_json: bool = False) -> str | None:
    from pydantic import ValidationError

    try:
        adapter = adapter_of()
        if strict_json:  # google-genai's models forbid unknown keys themselves
            adapter.validate_json(json.dumps(value))
        elif plain(adapter.validate_python(value)) != value:
            # A TypedDict ignores keys it does not know: what comes back must
            # be what went in.
            return "the SDK type dropped or changed fields"
    except ValidationError as exc:
        return str(exc)
    return None


def plain(value: Any) -> Any:
    """A validated TypedDict value as plain JSON data. Fields typed ``Iterable``
    validate lazily: iterating them here validates each item."""
    if isinstance(value, dict):
        return {key: plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple, Iterator)):
        return [plain(item) for item in value]
    return value


# ---------------------------------------------------------------- OpenAI chat


def _chat(body: dict[str, Any]) -> tuple[int, dict[str, Any], list[str]]:
    from openai.types.chat import ChatCompletionMessageParam, ChatCompletionToolUnionParam
    from pydantic import TypeAdapter

    problems: list[str] = []
    tools = body.get("tools") or []
    if (p := _validate(lambda: TypeAdapter(list[ChatCompletionToolUnionParam]), tools)) is not None:
        problems.append(f"tools: {p}")
    messages = body.get("messages", [])
    results = [m for m in messages if m.get("role") == "tool"]
    if not results:
        name = _pick([t["function"]["name"] for t in tools if t.get("type") == "function"])
        message: dict[str, Any] = {"role": "assistant", "content": None}
        if name is not None:
            message["tool_calls"] = [
                {
                    "id": CALL_ID,
                    "type": "function",
                    "function": {"name": name, "arguments": json.dumps({"message": MESSAGE})},
                }
            ]
        return 200, _chat_completion(message, "tool_calls"), problems
    if (p := _validate(lambda: TypeAdapter(list[ChatCompletionMessageParam]), messages)) is not None:
        problems.append(f"messages: {p}")
    result = results[-1]
    if result.get("tool_call_id") != CALL_ID:
        problems.append(f"the tool message answers {result.get('tool_call_id')!r}, not {CALL_ID}")
    text = result.get("content") if isinstance(result.get("content"), str) else json.dumps(result.get("content"))
    return 200, _chat_completion({"role": "assistant", "content": f"The tool said: {text}"}, "stop"), problems


def _chat_completion(message: dict[str, Any], finish: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-standin",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": "stand-in",
        "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }


# ---------------------------------------------------------------- OpenAI responses


def _responses(body: dict[str, Any]) -> tuple[int, dict[str, Any], list[str]]:
    from openai.types.responses import FunctionToolParam, ResponseInputParam
    from pydantic import TypeAdapter

    problems: list[str] = []
    tools = body.get("tools") or []
    if (p := _validate(lambda: TypeAdapter(list[FunctionToolParam]), tools)) is not None:
        problems.append(f"tools: {p}")
    items = body.get("input")
    items = items if isinstance(items, list) else [{"role": "user", "content": items}]
    outputs = [i for i in items if isinstance(i, dict) and i.get("type") == "function_call_output"]
    if not outputs:
        name = _pick([t["name"] for t in tools])
        output = [
            {
                "type": "function_call",
                "id": "fc_standin_1",
                "call_id": CALL_ID,
                "name": name,
                "arguments": json.dumps({"message": MESSAGE}),
                "status": "completed",
            }
        ]
        return 200, _response(output), problems
    if (p := _validate(lambda: TypeAdapter(ResponseInputParam), items)) is not None:
        problems.append(f"input: {p}")
    result = outputs[-1]
    if result.get("call_id") != CALL_ID:
        problems.append(f"the output answers {result.get('call_id')!r}, not {CALL_ID}")
    text = result.get("output") if isinstance(result.get("output"), str) else json.dumps(result.get("output"))
    message = {
        "type": "message",
        "id": "msg_standin_1",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": f"The tool said: {text}", "annotations": []}],
    }
    return 200, _response([message]), problems


def _response(output: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "id": "resp_standin",
        "object": "response",
        "created_at": 1_700_000_000,
        "model": "stand-in",
        "status": "completed",
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
    }


# ---------------------------------------------------------------- Anthropic


def _messages(body: dict[str, Any]) -> tuple[int, dict[str, Any], list[str]]:
    from anthropic.types import MessageParam, ToolParam
    from pydantic import TypeAdapter

    problems: list[str] = []
    tools = body.get("tools") or []
    if (p := _validate(lambda: TypeAdapter(list[ToolParam]), tools)) is not None:
        problems.append(f"tools: {p}")
    messages = body.get("messages", [])
    results = [
        block
        for m in messages
        if m.get("role") == "user" and isinstance(m.get("content"), list)
        for block in m["content"]
        if block.get("type") == "tool_result"
    ]
    if not results:
        name = _pick([t["name"] for t in tools])
        content = [{"type": "tool_use", "id": CALL_ID, "name": name, "input": {"message": MESSAGE}}]
        return 200, _message(content, "tool_use"), problems
    if (p := _validate(lambda: TypeAdapter(list[MessageParam]), messages)) is not None:
        problems.append(f"messages: {p}")
    result = results[-1]
    if result.get("tool_use_id") != CALL_ID:
        problems.append(f"the tool_result answers {result.get('tool_use_id')!r}, not {CALL_ID}")
    texts = [b["text"] for b in result.get("content", []) if b.get("type") == "text"]
    return 200, _message([{"type": "text", "text": "The tool said: " + " ".join(texts)}], "end_turn"), problems


def _message(content: list[dict[str, Any]], stop: str) -> dict[str, Any]:
    return {
        "id": "msg_standin",
        "type": "message",
        "role": "assistant",
        "model": "stand-in",
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {"input_tokens": 1, "output_tokens": 1},
    }


# ---------------------------------------------------------------- Gemini


def _generate(body: dict[str, Any]) -> tuple[int, dict[str, Any], list[str]]:
    from google.genai import types
    from pydantic import TypeAdapter

    problems: list[str] = []
    tools = body.get("tools") or []
    if (p := _validate(lambda: TypeAdapter(list[types.Tool]), tools, strict_json=True)) is not None:
        problems.append(f"tools: {p}")
    contents = body.get("contents", [])
    responses = [
        part["functionResponse"]
        for c in contents
        for part in c.get("parts", [])
        if "functionResponse" in part
    ]
    if not responses:
        names = [d["name"] for t in tools for d in t.get("functionDeclarations", [])]
        name = _pick(names)
        part = {"functionCall": {"id": CALL_ID, "name": name, "args": {"message": MESSAGE}}}
        return 200, _candidate([part]), problems
    if (p := _validate(lambda: TypeAdapter(list[types.Content]), contents, strict_json=True)) is not None:
        problems.append(f"contents: {p}")
    result = responses[-1]
    if result.get("id") != CALL_ID:
        problems.append(f"the functionResponse answers {result.get('id')!r}, not {CALL_ID}")
    text = json.dumps(result.get("response"))
    return 200, _candidate([{"text": f"The tool said: {text}"}]), problems


def _candidate(parts: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
        "usageMetadata": {"promptTokenCount": 1, "candidatesTokenCount": 1, "totalTokenCount": 2},
        "modelVersion": "stand-in",
    }


# ---------------------------------------------------------------- server


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        path = self.path.split("?", 1)[0]
        if path == "/v1/chat/completions":
            api, handler = "openai", _chat
        elif path == "/v1/responses":
            api, handler = "openai-responses", _responses
        elif path == "/v1/messages":
            api, handler = "anthropic", _messages
        elif path.startswith(("/v1beta/models/", "/v1/models/")) and path.endswith(":generateContent"):
            api, handler = "gemini", _generate
        else:
            self._send(404, {"error": {"message": f"no such endpoint {path}"}})
            return
        try:
            status, reply, problems = handler(body)
        except Exception as exc:  # a test bug: report it, do not hang the client
            status, reply, problems = 500, {"error": {"message": repr(exc)}}, [repr(exc)]
        if problems:
            status, reply = 400, {"error": {"type": "invalid_request_error", "message": "; ".join(problems)}}
        cfg = self.server.cfg
        with cfg.lock:
            cfg.problems.extend(f"{api}: {p}" for p in problems)
            cfg.transcript.append({"api": api, "path": path, "request": body, "status": status, "response": reply})
        self._send(status, reply)

    def _send(self, status: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    cfg: StandIn


@contextlib.contextmanager
def standin() -> Iterator[StandIn]:
    """Run the stand-in on 127.0.0.1 (an ephemeral port); yields it (``.url`` set)."""
    cfg = StandIn()
    server = _Server(("127.0.0.1", 0), _Handler)
    server.cfg = cfg
    cfg.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.05}, name="model-standin", daemon=True
    )
    thread.start()
    try:
        yield cfg
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def environment(cfg: StandIn) -> dict[str, str]:
    """The variables that point each real SDK at the stand-in."""
    return {
        "OPENAI_BASE_URL": cfg.openai_base_url,
        "OPENAI_API_KEY": "sk-standin-not-a-real-key",
        "ANTHROPIC_BASE_URL": cfg.url,
        "ANTHROPIC_API_KEY": "sk-ant-standin-not-a-real-key",
        "GEMINI_API_KEY": "standin-not-a-real-key",
        "GEMINI_BASE_URL": cfg.url,
    }


if __name__ == "__main__":  # run by hand: python tests/model_standin.py
    with standin() as running:
        print(running.url, flush=True)
        threading.Event().wait()
