"""The issue's Bar against real servers: server-everything (pinned) over stdio and
Streamable HTTP, and an official-SDK server that asks its client for input."""

from __future__ import annotations

import logging
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import PEERS_SRC, sdk_stdio_command
from support import captured_logs

import mcp_sync


@pytest.fixture
def everything_logs() -> Iterator[list[logging.LogRecord]]:
    with captured_logs("mcp_sync.server.everything") as got:
        yield got


def _wait_for(check: object, within: float = 10.0) -> bool:
    deadline = time.monotonic() + within
    while not check():  # type: ignore[operator]
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def _handlers(asked: list[object], tmp_path: Path) -> mcp_sync.Handlers:
    def elicit(request: mcp_sync.ElicitationRequest) -> mcp_sync.ElicitationResult:
        asked.append(request)
        return mcp_sync.ElicitationResult.accept({"name": "Ada Lovelace"})

    def sample(request: mcp_sync.SamplingRequest) -> mcp_sync.SamplingResult:
        asked.append(request)
        return mcp_sync.SamplingResult(content={"type": "text", "text": "Paris"}, model="test-model")

    return mcp_sync.Handlers(elicitation=elicit, sampling=sample, roots=[tmp_path])


def test_everything_over_stdio_end_to_end(
    everything_stdio_cmd: list[str], everything_logs: list[logging.LogRecord], tmp_path: Path
) -> None:
    command, *args = everything_stdio_cmd
    asked: list[object] = []
    with mcp_sync.connect(
        server="everything", command=command, args=args, handlers=_handlers(asked, tmp_path)
    ) as session:
        names = {tool.name for tool in session.tools}
        # Listed only to a client that declares elicitation, sampling and roots.
        assert {"trigger-elicitation-request", "trigger-sampling-request", "get-roots-list"} <= names

        resources = session.list_resources()
        read = session.read_resource(resources[0].uri)
        assert read.contents[0].text and read.contents[0].uri == resources[0].uri
        templates = session.list_resource_templates()
        blob_template = next(t for t in templates if "blob" in t.uri_template)
        blob = session.read_resource(blob_template.uri_template.replace("{resourceId}", "7"))
        assert blob.contents[0].blob is not None and b"Resource 7" in blob.contents[0].blob

        prompts = session.list_prompts()
        simple = session.get_prompt("simple-prompt")
        assert "simple-prompt" in {p.name for p in prompts} and simple.messages[0].role == "user"
        args_prompt = session.get_prompt("args-prompt", {"city": "Paris"})
        assert "Paris" in args_prompt.messages[0].content["text"]
        completion = session.complete(blob_template, {"name": "resourceId", "value": "3"})
        assert completion.values == ("3",)

        progress: list[tuple[float, float | None]] = []
        session.call_tool(
            "trigger-long-running-operation", {"duration": 1, "steps": 4},
            on_progress=lambda p, t, m: progress.append((p, t)),
        )  # fmt: skip
        assert len(progress) >= 3 and progress[-1] == (4.0, 4.0)

        session.call_tool("toggle-simulated-logging")
        # Its first simulated message comes at once (a random level), then one every 5 s.
        assert _wait_for(lambda: any("Roots updated" not in r.getMessage() for r in everything_logs))
        session.call_tool("toggle-simulated-logging")

        research = session.call_tool("simulate-research-query", {"topic": "owls"}, timeout_ms=30_000)
        assert not research.is_error and "Research Report: owls" in research.content[0]["text"]

        elicited = session.call_tool("trigger-elicitation-request")
        assert "Ada Lovelace" in elicited.content[1]["text"]
        # The schema's defaults filled the fields the handler left out (SEP-1034).
        assert '"integer": 42' in elicited.content[-1]["text"]
        sampled = session.call_tool("trigger-sampling-request", {"prompt": "Capital of France?"})
        assert "Paris" in sampled.content[0]["text"]
        roots = session.call_tool("get-roots-list")
        assert tmp_path.as_uri() in roots.content[0]["text"]
    assert [type(a).__name__ for a in asked] == ["ElicitationRequest", "SamplingRequest"]
    assert all(r.name == "mcp_sync.server.everything" for r in everything_logs)


def test_everything_over_http_sends_requests_and_logs_on_its_streams(
    everything_http_server: str, everything_logs: list[logging.LogRecord], tmp_path: Path
) -> None:
    asked: list[object] = []
    with mcp_sync.connect_http(
        server="everything", url=everything_http_server, handlers=_handlers(asked, tmp_path)
    ) as session:
        elicited = session.call_tool("trigger-elicitation-request")
        assert "Ada Lovelace" in elicited.content[1]["text"]
        # Its simulated log is not part of any request's reply: it comes on the
        # standalone GET stream that a session with handlers keeps open.
        session.call_tool("toggle-simulated-logging")
        assert _wait_for(lambda: bool(everything_logs))
        session.call_tool("toggle-simulated-logging")
        progress: list[float] = []
        session.call_tool(
            "trigger-long-running-operation", {"duration": 0.3, "steps": 3},
            on_progress=lambda p, t, m: progress.append(p),
        )  # fmt: skip
        assert progress == [1.0, 2.0, 3.0]
    assert not [t for t in threading.enumerate() if t.name.startswith("mcp_sync-everything")]


def test_an_official_sdk_server_asks_and_reports(tmp_path: Path) -> None:
    sdk_stdio_command()  # skips (or fails under CI) when the SDK is missing
    script = PEERS_SRC / "sdk_features_server.py"
    names: list[str] = []

    def elicit(request: mcp_sync.ElicitationRequest) -> mcp_sync.ElicitationResult:
        names.append(threading.current_thread().name)
        assert request.defaults == {"name": "nobody"}
        return mcp_sync.ElicitationResult.accept({"name": "Grace"})

    handlers = mcp_sync.Handlers(elicitation=elicit)
    # ctx.elicit() sends a server request: the handshake era's way (the modern
    # era asks through input_required results instead, tested with the fake).
    with mcp_sync.connect(
        server="sdk", command=sys.executable, args=[str(script)], handlers=handlers, protocol="legacy"
    ) as session:
        assert session.call_tool("ask_name").content[0]["text"] == "Hello, Grace!"
        steps: list[str | None] = []
        session.call_tool("count", {"steps": 3}, on_progress=lambda p, t, m: steps.append(m))
        assert steps == ["step 1", "step 2", "step 3"]
        assert session.read_resource("note://hello").contents[0].text == "Hello from the SDK."
        assert "Ada" in session.get_prompt("greet", {"name": "Ada"}).messages[0].content["text"]
    assert names and names[0].startswith("mcp_sync-sdk-handler")
