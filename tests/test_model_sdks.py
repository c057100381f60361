"""The real provider SDKs against exported tools and dispatched results.

- The SDKs' own request types (pydantic TypeAdapter over their TypedDicts,
  google-genai's models) validate every tool list and every result shape.
- A whole tool-calling loop runs with each real client against a stand-in for
  the provider's HTTP API on 127.0.0.1 (tests/model_standin.py): the stand-in
  answers with a tool call, the loop dispatches it to an MCP server through
  ModelTools, and the stand-in checks the follow-up request with the SDK's
  types before answering.

Set MCP_SYNC_TRANSCRIPTS=DIR to keep each loop's requests and responses.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from model_standin import CALL_ID, MESSAGE, StandIn, plain, standin
from pydantic import TypeAdapter
from support import connect_fake

import mcp_sync
from mcp_sync import flows, model_tools
from mcp_sync.model_tools import NAME_PATTERN

anthropic = pytest.importorskip("anthropic")
openai = pytest.importorskip("openai")
genai_types = pytest.importorskip("google.genai.types")

from anthropic.types import MessageParam, ToolParam, ToolResultBlockParam  # noqa: E402
from openai.types.chat import (  # noqa: E402
    ChatCompletionToolMessageParam,
    ChatCompletionToolUnionParam,
)
from openai.types.responses import FunctionToolParam, ResponseInputItemParam  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
PNG = "iVBORw0KGgo="


@pytest.fixture
def model() -> Iterator[StandIn]:
    with standin() as cfg:
        yield cfg
    _keep_transcript(cfg)


def _keep_transcript(cfg: StandIn) -> None:
    folder = os.environ.get("MCP_SYNC_TRANSCRIPTS")
    if folder and cfg.transcript:
        Path(folder).mkdir(parents=True, exist_ok=True)
        api = cfg.transcript[0]["api"]
        (Path(folder) / f"{api}.json").write_text(json.dumps(cfg.transcript, indent=2))


@pytest.fixture
def session() -> Iterator[mcp_sync.Session]:
    with connect_fake(server="example") as session:
        yield session


def _exact(adapter: TypeAdapter[Any], value: Any) -> None:
    """Valid for the SDK type, and nothing dropped: a TypedDict ignores keys it
    does not know, so what it gives back must be what went in."""
    assert plain(adapter.validate_python(value)) == value


# --------------------------------------------------------------------------
# The SDKs' types


def _all_flows(session: mcp_sync.Session) -> list[flows.Flow]:
    rich = flows.function(
        lambda args: flows.FlowResult(
            content=(
                {"type": "text", "text": "a picture"},
                {"type": "image", "mimeType": "image/png", "data": PNG},
                {"type": "resource_link", "uri": "file:///x", "name": "x"},
            ),
            is_error=bool(args.get("fail")),
        ),
        name="mcp/local/rich-result.v1",
        description="returns text, an image and a link",
        capabilities=(),
        effects=flows.Effects.pure(),
    )
    return [*flows.project(session).flows, rich]


def test_tool_lists_validate_with_the_sdk_types(session: mcp_sync.Session) -> None:
    sources = _all_flows(session)
    _exact(TypeAdapter(list[ChatCompletionToolUnionParam]), model_tools.export(sources, "openai").tools)
    _exact(TypeAdapter(list[FunctionToolParam]), model_tools.export(sources, "openai-responses").tools)
    _exact(TypeAdapter(list[ToolParam]), model_tools.export(sources, "anthropic").tools)
    gemini = model_tools.export(sources, "gemini").tools
    tools = TypeAdapter(list[genai_types.Tool]).validate_json(json.dumps(gemini))
    assert [d.name for d in tools[0].function_declarations] == [
        "mcp__example__echo", "mcp__example__add", "mcp__example__fail", "mcp__example__sleep",
        "mcp__example__blob", "mcp__local__rich-result_v1",
    ]  # fmt: skip
    assert tools[0].function_declarations[0].parameters_json_schema["type"] == "object"


@pytest.mark.parametrize("fail", [False, True])
def test_results_validate_with_the_sdk_types(session: mcp_sync.Session, fail: bool) -> None:
    sources = _all_flows(session)
    name = "mcp__local__rich-result_v1"
    arguments = {"fail": fail}
    chat = model_tools.export(sources, "openai").call(
        {"id": "c", "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}
    )
    _exact(TypeAdapter(ChatCompletionToolMessageParam), chat)
    responses = model_tools.export(sources, "openai-responses").call(
        {"type": "function_call", "call_id": "c", "name": name, "arguments": json.dumps(arguments)}
    )
    _exact(TypeAdapter(ResponseInputItemParam), responses)
    assert any(item["type"] == "input_image" for item in responses["output"])
    claude = model_tools.export(sources, "anthropic").reply(
        [{"type": "tool_use", "id": "c", "name": name, "input": arguments}]
    )
    _exact(TypeAdapter(list[MessageParam]), claude)
    _exact(TypeAdapter(ToolResultBlockParam), claude[0]["content"][0])
    assert claude[0]["content"][0].get("is_error", False) is fail
    gemini = model_tools.export(sources, "gemini").reply(
        [{"functionCall": {"id": "c", "name": name, "args": arguments}}]
    )
    (content,) = TypeAdapter(list[genai_types.Content]).validate_json(json.dumps(gemini))
    part = content.parts[0].function_response
    assert part.name == name and part.id == "c"
    assert part.parts[0].inline_data.mime_type == "image/png"
    assert ("error" in part.response) is fail


@pytest.mark.peer
def test_server_everything_exports_valid_tools(everything_stdio_cmd: list[str]) -> None:
    command, *args = everything_stdio_cmd
    with mcp_sync.connect(server="everything", command=command, args=args, handshake_timeout_ms=20_000) as s:
        for provider, adapter in (
            ("openai", TypeAdapter(list[ChatCompletionToolUnionParam])),
            ("openai-responses", TypeAdapter(list[FunctionToolParam])),
            ("anthropic", TypeAdapter(list[ToolParam])),
        ):
            tools = model_tools.export(s, provider).tools
            _exact(adapter, tools)
            names = [t.get("name") or t["function"]["name"] for t in tools]
            assert len(set(names)) == len(names) == len(s.tools)
            assert all(NAME_PATTERN.match(n) for n in names)
        gemini = model_tools.export(s, "gemini").tools
        TypeAdapter(list[genai_types.Tool]).validate_json(json.dumps(gemini))
        # A real structured result and a real image, through each provider's shape.
        exported = model_tools.export(s, "anthropic")
        image = exported.call({"type": "tool_use", "id": "i", "name": "mcp__everything__get-tiny-image", "input": {}})
        _exact(TypeAdapter(ToolResultBlockParam), image)
        assert any(block["type"] == "image" for block in image["content"])
        summed = model_tools.export(s, "gemini").call(
            {"functionCall": {"name": "mcp__everything__get-sum", "args": {"a": 2, "b": 3}}}
        )
        assert "5" in json.dumps(summed)


# --------------------------------------------------------------------------
# Whole loops with the real clients


def test_openai_chat_completions_loop(session: mcp_sync.Session, model: StandIn) -> None:
    tools = model_tools.export(session, "openai")
    client = openai.OpenAI(base_url=model.openai_base_url, api_key="sk-standin", max_retries=0)
    with client:
        messages: list[Any] = [{"role": "user", "content": "Say hello through the echo tool."}]
        response = client.chat.completions.create(model="stand-in", messages=messages, tools=tools.tools)
        message = response.choices[0].message
        assert message.tool_calls and message.tool_calls[0].function.name == "mcp__example__echo"
        messages.append(message.model_dump(exclude_none=True))
        messages.extend(tools.reply(message.tool_calls, timeout_ms=10_000))
        final = client.chat.completions.create(model="stand-in", messages=messages, tools=tools.tools)
    assert model.problems == []
    assert final.choices[0].message.content == f"The tool said: {MESSAGE}"
    assert messages[-1] == {"role": "tool", "tool_call_id": CALL_ID, "content": MESSAGE}
    assert len(model.exchanges("openai")) == 2


def test_openai_responses_loop(session: mcp_sync.Session, model: StandIn) -> None:
    tools = model_tools.export(session, "openai-responses")
    client = openai.OpenAI(base_url=model.openai_base_url, api_key="sk-standin", max_retries=0)
    with client:
        items: list[Any] = [{"role": "user", "content": "Say hello through the echo tool."}]
        response = client.responses.create(model="stand-in", input=items, tools=tools.tools)
        calls = [item for item in response.output if item.type == "function_call"]
        assert [c.name for c in calls] == ["mcp__example__echo"]
        items.extend(call.model_dump(exclude_none=True) for call in calls)
        items.extend(tools.reply(calls))
        final = client.responses.create(model="stand-in", input=items, tools=tools.tools)
    assert model.problems == []
    assert final.output_text == f"The tool said: {MESSAGE}"
    assert items[-1] == {"type": "function_call_output", "call_id": CALL_ID, "output": MESSAGE}


def test_anthropic_messages_loop(session: mcp_sync.Session, model: StandIn) -> None:
    tools = model_tools.export(session, "anthropic")
    client = anthropic.Anthropic(base_url=model.url, api_key="sk-ant-standin", max_retries=0)
    with client:
        messages: list[Any] = [{"role": "user", "content": "Say hello through the echo tool."}]
        response = client.messages.create(
            model="stand-in", max_tokens=256, messages=messages, tools=tools.tools
        )
        assert response.stop_reason == "tool_use"
        messages.append({"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in response.content]})
        calls = [block for block in response.content if block.type == "tool_use"]
        messages.extend(tools.reply(calls))
        final = client.messages.create(model="stand-in", max_tokens=256, messages=messages, tools=tools.tools)
    assert model.problems == []
    assert final.content[0].text == f"The tool said: {MESSAGE}"
    assert messages[-1]["content"][0]["tool_use_id"] == CALL_ID


def test_gemini_generate_content_loop(session: mcp_sync.Session, model: StandIn) -> None:
    from google import genai

    tools = model_tools.export(session, "gemini")
    client = genai.Client(api_key="standin", http_options=genai_types.HttpOptions(base_url=model.url))
    with client:
        config = genai_types.GenerateContentConfig(tools=tools.tools)
        contents: list[Any] = [genai_types.Content(role="user", parts=[genai_types.Part(text="Say hello.")])]
        response = client.models.generate_content(model="stand-in", contents=contents, config=config)
        calls = response.function_calls or []
        assert [c.name for c in calls] == ["mcp__example__echo"]
        contents.append(response.candidates[0].content)
        contents.extend(tools.reply(calls))
        final = client.models.generate_content(model="stand-in", contents=contents, config=config)
    assert model.problems == []
    assert final.text == f'The tool said: {{"output": "{MESSAGE}"}}'


def test_the_stand_in_catches_a_malformed_follow_up(session: mcp_sync.Session, model: StandIn) -> None:
    # The check that the loops rely on can fail: a result with the wrong id.
    client = openai.OpenAI(base_url=model.openai_base_url, api_key="sk-standin", max_retries=0)
    with client, pytest.raises(openai.BadRequestError):
        client.chat.completions.create(
            model="stand-in",
            messages=[
                {"role": "user", "content": "x"},
                {"role": "tool", "tool_call_id": "someone-else", "content": "x"},
            ],
        )
    assert model.problems and "not call_standin_1" in model.problems[0]


# --------------------------------------------------------------------------
# The CLI's --format output


@pytest.mark.peer
@pytest.mark.parametrize(
    ("shape", "adapter"),
    [
        ("openai", TypeAdapter(list[ChatCompletionToolUnionParam])),
        ("anthropic", TypeAdapter(list[ToolParam])),
        ("openai-responses", TypeAdapter(list[FunctionToolParam])),
    ],
)
def test_cli_format_over_the_example_config(everything_bin: Path, shape: str, adapter: Any) -> None:
    import subprocess

    env = {k: v for k, v in os.environ.items() if k != "MCP_SYNC_CONFIG"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    done = subprocess.run(
        [sys.executable, "-m", "mcp_sync", "--mcp-config", "examples/servers.json", "tools", "--format", shape],
        capture_output=True, text=True, cwd=REPO, env=env, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    tools = json.loads(done.stdout)
    _exact(adapter, tools)
    names = [t.get("name") or t["function"]["name"] for t in tools]
    assert len(names) == len(set(names)) > 10
    assert all(NAME_PATTERN.match(n) for n in names)
    assert "mcp__everything__get-sum" in names and "mcp__example__echo" in names
