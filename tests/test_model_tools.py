"""mcp_sync.model_tools: names, tool lists, dispatch of the model's calls."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from support import connect_fake

import mcp_sync
from mcp_sync import flows, model_tools
from mcp_sync.model_tools import (
    NAME_PATTERN,
    PROVIDERS,
    MalformedToolCall,
    ToolCallFailed,
    UnknownToolCall,
    export,
    provider_names,
)

OPENAI = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
ANTHROPIC = re.compile(r"^[a-zA-Z0-9_-]{1,128}$")
GEMINI = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_.:-]{0,127}$")
PNG = "iVBORw0KGgo="


def _python_flow(name: str, result: object = "ok", **kw: Any) -> flows.Flow:
    return flows.function(
        lambda args: result,
        name=name,
        description=f"the {name} flow",
        capabilities=(),
        effects=flows.Effects.pure(),
        **kw,
    )


# --------------------------------------------------------------------------
# Names


def test_mcp_flow_names_become_double_underscore_names() -> None:
    assert provider_names(["mcp/files/read_file", "mcp/everything/get-sum"]) == {
        "mcp/files/read_file": "mcp__files__read_file",
        "mcp/everything/get-sum": "mcp__everything__get-sum",
    }


def test_safe_names_keep_themselves_and_others_are_sanitised() -> None:
    names = provider_names(["lookup_weather", "mcp/my server/tool.v2", "mcp/café/x", "9lives"])
    assert names == {
        "lookup_weather": "lookup_weather",
        "mcp/my server/tool.v2": "mcp__my_server__tool_v2",
        "mcp/café/x": "mcp__cafe__x",
        "9lives": "_9lives",
    }


def test_collisions_get_a_stable_hash_suffix() -> None:
    flows_ = ["mcp/a.b/x", "mcp/a_b/x", "mcp/a b/x", "mcp/other/x"]
    names = provider_names(flows_)
    assert len(set(names.values())) == 4
    assert names["mcp/other/x"] == "mcp__other__x"
    for flow in flows_[:3]:
        assert re.fullmatch(r"mcp__a_b__x_[0-9a-f]{6}", names[flow]), names[flow]
    # The suffix depends on the flow name only: order and other servers do not matter.
    again = provider_names([*list(reversed(flows_)), "mcp/more/y"])
    assert all(again[f] == names[f] for f in flows_)


def test_an_exact_name_wins_over_a_sanitised_one() -> None:
    names = provider_names(["mcp/a/b", "mcp__a__b"])
    assert names["mcp__a__b"] == "mcp__a__b"
    assert names["mcp/a/b"].startswith("mcp__a__b_") and len(names["mcp/a/b"]) == 16


def test_long_names_are_cut_and_suffixed() -> None:
    long_tool = "t" * 200
    names = provider_names([f"mcp/s/{long_tool}", f"mcp/s/{long_tool}x"])
    values = list(names.values())
    assert len(set(values)) == 2
    assert all(len(v) == 64 and NAME_PATTERN.match(v) for v in values)


def test_every_name_fits_every_provider() -> None:
    weird = ["mcp/ö/..", "mcp/-/-", "mcp/\u202e/x", "mcp/日本/ツール", "x" * 300, "_", "mcp/a/" + "é" * 80]
    for name in provider_names(weird).values():
        assert NAME_PATTERN.match(name) and OPENAI.match(name) and ANTHROPIC.match(name)
        assert GEMINI.match(name), name


# --------------------------------------------------------------------------
# Tool lists


@pytest.fixture
def session() -> Any:
    with connect_fake(server="example") as session:
        yield session


def test_tool_list_shapes(session: mcp_sync.Session) -> None:
    echo = session.tool("echo")
    description = flows.describe_tool("example", "echo", echo.description)
    schema = mcp_sync.thaw(echo.input_schema)
    assert export(session, "openai").tools[0] == {
        "type": "function",
        "function": {"name": "mcp__example__echo", "description": description, "parameters": schema},
    }
    assert export(session, "openai-responses").tools[0] == {
        "type": "function", "name": "mcp__example__echo", "description": description,
        "parameters": schema, "strict": False,
    }  # fmt: skip
    assert export(session, "anthropic").tools[0] == {
        "name": "mcp__example__echo", "description": description, "input_schema": schema,
    }  # fmt: skip
    gemini = export(session, "gemini").tools
    assert len(gemini) == 1
    assert gemini[0]["functionDeclarations"][0] == {
        "name": "mcp__example__echo", "description": description, "parametersJsonSchema": schema,
    }  # fmt: skip


def test_tools_is_a_fresh_copy_each_time(session: mcp_sync.Session) -> None:
    exported = export(session, "openai")
    first = exported.tools
    first[0]["function"]["name"] = "changed"
    assert exported.tools[0]["function"]["name"] == "mcp__example__echo"


SCHEMA = {
    "type": "object",
    "properties": {
        "tags": {"type": "array"},
        "pairs": {"type": "array", "items": {"type": "array"}},
        "maybe": {"type": ["array", "null"]},
        "fixed": {"type": "array", "prefixItems": [{"type": "string"}]},
        "literal": {"type": "string", "default": {"type": "array"}, "enum": [{"type": "array"}]},
        "nested": {"anyOf": [{"type": "array"}, {"type": "string"}]},
    },
    "$defs": {"list": {"type": "array"}},
    "oneOf": [{"required": ["tags"]}, {"required": ["pairs"]}],
}


def test_schema_changes_per_provider() -> None:
    flow = _python_flow("schema", input_document=SCHEMA)
    openai = export([flow], "openai").tools[0]["function"]["parameters"]
    props = openai["properties"]
    assert props["tags"]["items"] == {} and props["pairs"]["items"] == {"type": "array", "items": {}}
    assert props["maybe"]["items"] == {} and "items" not in props["fixed"]
    assert props["literal"] == SCHEMA["properties"]["literal"]  # values are not schemas
    assert props["nested"]["anyOf"][0] == {"type": "array", "items": {}}
    assert openai["$defs"]["list"]["items"] == {}
    assert openai["oneOf"] == SCHEMA["oneOf"]
    anthropic = export([flow], "anthropic").tools[0]["input_schema"]
    assert "oneOf" not in anthropic
    assert anthropic["properties"] == SCHEMA["properties"]
    gemini = export([flow], "gemini").tools[0]["functionDeclarations"][0]["parametersJsonSchema"]
    assert gemini == SCHEMA
    assert "items" not in SCHEMA["properties"]["tags"]  # the flow's own document is untouched


def test_sources_sessions_flows_lists_and_servers(session: mcp_sync.Session) -> None:
    projected = flows.project(session, name_prefix="ex", include=["echo"])
    mixed = export([projected, _python_flow("local_lookup")], "anthropic")
    assert list(mixed) == ["ex__echo", "local_lookup"]
    assert mixed.names == {"ex__echo": "ex/echo", "local_lookup": "local_lookup"}
    assert mixed.flow("ex__echo").name == "ex/echo" and mixed.name_of("ex/echo") == "ex__echo"
    with pytest.raises(flows.DuplicateFlowError):
        export([session, session], "openai")
    with pytest.raises(TypeError, match="cannot export a int"):
        export(3, "openai")
    with pytest.raises(ValueError, match="unknown provider 'mistral'"):
        export(session, "mistral")


class _Servers:
    """A duck-typed stand-in for mcp_sync.Servers: names, session(name), call_tool."""

    def __init__(self, sessions: dict[str, mcp_sync.Session]) -> None:
        self.sessions = sessions
        self.calls: list[tuple[str, str, Any, Any]] = []

    @property
    def names(self) -> list[str]:
        return list(self.sessions)

    def session(self, name: str) -> mcp_sync.Session:
        return self.sessions[name]

    def call_tool(self, server: str, tool: str, arguments: Any = None, *, timeout_ms: Any = None) -> Any:
        self.calls.append((server, tool, arguments, timeout_ms))
        return self.sessions[server].call_tool(tool, arguments, timeout_ms=timeout_ms)


def test_a_servers_set_dispatches_through_servers_call_tool() -> None:
    with connect_fake(server="one") as one, connect_fake(server="two") as two:
        servers = _Servers({"one": one, "two": two})
        exported = export(servers, "openai")
        assert "mcp__one__echo" in exported and "mcp__two__echo" in exported
        call = {"id": "c1", "type": "function",
                "function": {"name": "mcp__two__echo", "arguments": '{"message": "hi"}'}}  # fmt: skip
        assert exported.call(call, timeout_ms=4000)["content"] == "hi"
        assert servers.calls == [("two", "echo", {"message": "hi"}, 4000)]


# --------------------------------------------------------------------------
# Dispatch


def _call(provider: str, name: str, arguments: Any, call_id: str = "id1") -> dict[str, Any]:
    if provider == "openai":
        return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}
    if provider == "openai-responses":
        return {"type": "function_call", "call_id": call_id, "name": name, "arguments": arguments}
    if provider == "anthropic":
        return {"type": "tool_use", "id": call_id, "name": name, "input": arguments}
    return {"functionCall": {"id": call_id, "name": name, "args": arguments}}


@pytest.mark.parametrize("provider", PROVIDERS)
def test_dispatch_text_and_error_results(session: mcp_sync.Session, provider: str) -> None:
    exported = export(session, provider)
    ok = exported.call(_call(provider, "mcp__example__echo", {"message": "hi"}))
    failed = exported.call(_call(provider, "mcp__example__fail", {}))
    if provider == "openai":
        assert ok == {"role": "tool", "tool_call_id": "id1", "content": "hi"}
        assert failed["content"] == "The tool reported an error:\nthe tool failed on purpose"
    elif provider == "openai-responses":
        assert ok == {"type": "function_call_output", "call_id": "id1", "output": "hi"}
        assert failed["output"].startswith("The tool reported an error:\n")
    elif provider == "anthropic":
        assert ok == {"type": "tool_result", "tool_use_id": "id1", "content": [{"type": "text", "text": "hi"}]}
        assert failed["is_error"] is True
        assert failed["content"] == [{"type": "text", "text": "the tool failed on purpose"}]
    else:
        assert ok == {"functionResponse": {"name": "mcp__example__echo", "response": {"output": "hi"}, "id": "id1"}}
        assert failed["functionResponse"]["response"] == {"error": "the tool failed on purpose"}


@pytest.mark.parametrize("provider", PROVIDERS)
def test_arguments_as_json_string_or_dict(session: mcp_sync.Session, provider: str) -> None:
    exported = export(session, provider)
    for arguments in ('{"a": 2, "b": 3}', {"a": 2, "b": 3}):
        result = exported.call(_call(provider, "mcp__example__add", arguments))
        assert "5" in json.dumps(result)


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize(
    ("arguments", "reason"),
    [
        ('{"message": ', "The arguments are not valid JSON (Expecting value)"),
        ("[1, 2]", "The arguments are not a JSON object"),
        ('{"a": NaN}', "The arguments are not valid JSON (NaN is not a JSON number)"),
        ('{"a": 1e999}', "The arguments are not valid JSON (1e999 is out of the range of a JSON number)"),
        ('{"a": [-2E+999]}', "The arguments are not valid JSON (-2E+999 is out of the range"),
        ("[" * 300 + "]" * 300, "The arguments nest deeper than 126 levels"),
        (["not", "a", "dict"], "The arguments are not a JSON object"),
    ],
)
def test_unparsable_arguments_go_back_to_the_model(
    session: mcp_sync.Session, provider: str, arguments: Any, reason: str, tmp_path: Any
) -> None:
    exported = export(session, provider)
    result = exported.call(_call(provider, "mcp__example__echo", arguments))
    text = json.dumps(result)
    assert reason in text and "call the tool again with a JSON object" in text
    if provider == "anthropic":
        assert result["is_error"] is True
    if provider == "gemini":
        assert "error" in result["functionResponse"]["response"]


@pytest.mark.parametrize("provider", PROVIDERS)
def test_an_invented_name_is_a_typed_error(session: mcp_sync.Session, provider: str) -> None:
    exported = export(session, provider)
    with pytest.raises(UnknownToolCall) as caught:
        exported.call(_call(provider, "mcp__example__rm_rf\u202e", {}))
    error = caught.value
    assert isinstance(error, mcp_sync.ToolNotFound) and error.kind == "tool_not_found"
    assert str(error) == (
        "the model called 'mcp__example__rm_rf\\u202e', which is not one of the 5 exported "
        "tools; nothing was called"
    )
    assert error.name == "mcp__example__rm_rf\u202e"
    assert "There is no tool named" in json.dumps(error.reply)


def test_a_failed_session_raises_with_a_reply_for_the_model() -> None:
    with connect_fake("--misbehave", server="bad") as session:
        exported = export(session, "anthropic")
        with pytest.raises(ToolCallFailed) as caught:
            exported.call(_call("anthropic", "mcp__bad__hang", {}), timeout_ms=100)
        error = caught.value
        assert isinstance(error, flows.FlowFailed) and error.cause_kind == "timeout"
        assert error.reply["is_error"] is True
        assert error.reply["content"][0]["text"].startswith("The call failed: ")
        assert "timeout_ms=100" in str(error)


@pytest.mark.parametrize(
    ("provider", "call"),
    [
        ("openai", {"type": "function_call", "call_id": "x", "name": "n", "arguments": "{}"}),
        ("openai", {"id": "x", "function": {"arguments": "{}"}}),
        ("openai", {"function": {"name": "n", "arguments": "{}"}}),
        ("openai-responses", {"id": "x", "function": {"name": "n", "arguments": "{}"}}),
        ("anthropic", {"name": "n", "input": {}}),
        ("anthropic", "mcp__example__echo"),
        ("gemini", {"text": "hello"}),
    ],
)
def test_a_call_in_another_shape_is_a_programming_error(provider: str, call: Any) -> None:
    exported = export([_python_flow("n")], provider)
    with pytest.raises(MalformedToolCall, match=r"^not (an|a) "):
        exported.call(call)


def test_reply_collects_one_turn(session: mcp_sync.Session) -> None:
    calls = [_call("anthropic", "mcp__example__echo", {"message": str(n)}, f"t{n}") for n in range(3)]
    (message,) = export(session, "anthropic").reply(calls)
    assert message["role"] == "user"
    assert [b["tool_use_id"] for b in message["content"]] == ["t0", "t1", "t2"]
    openai = export(session, "openai").reply(
        [_call("openai", "mcp__example__echo", '{"message": "x"}', f"c{n}") for n in range(2)]
    )
    assert [m["tool_call_id"] for m in openai] == ["c0", "c1"]
    (gemini,) = export(session, "gemini").reply([_call("gemini", "mcp__example__echo", {"message": "g"})])
    assert gemini["role"] == "user" and len(gemini["parts"]) == 1
    assert export(session, "gemini").reply([]) == []


def test_the_call_timeout_reaches_the_session() -> None:
    with connect_fake(server="example", request_timeout_ms=60_000) as session:
        exported = export(session, "openai")
        with pytest.raises(ToolCallFailed, match="timeout_ms=150"):
            exported.call(_call("openai", "mcp__example__sleep", '{"ms": 5000}'), timeout_ms=150)


# --------------------------------------------------------------------------
# Content


RICH = flows.FlowResult(
    content=(
        {"type": "text", "text": "first"},
        {"type": "image", "mimeType": "image/png", "data": PNG},
        {"type": "image", "mimeType": "image/svg+xml", "data": "PHN2Zz4="},
        {"type": "audio", "mimeType": "audio/wav", "data": "UklGRg=="},
        {"type": "resource_link", "uri": "file:///r.txt", "name": "r.txt", "description": "a file"},
        {"type": "resource", "resource": {"uri": "file:///e.txt", "text": "embedded text"}},
        {"type": "resource", "resource": {"uri": "file:///b.png", "blob": PNG, "mimeType": "image/png"}},
        {"type": "hologram"},
    )
)


def test_rich_content_per_provider() -> None:
    flow = _python_flow("rich", result=RICH)
    call = {"openai": _call("openai", "rich", "{}"), "openai-responses": _call("openai-responses", "rich", "{}"),
            "anthropic": _call("anthropic", "rich", {}), "gemini": _call("gemini", "rich", {})}  # fmt: skip
    openai = export([flow], "openai").call(call["openai"])["content"]
    assert openai.splitlines() == [
        "first",
        "[image of type image/png, 12 base64 characters, not shown]",
        "[image of type image/svg+xml, 8 base64 characters, not shown]",
        "[audio of type audio/wav, 8 base64 characters, not shown]",
        "[resource link: file:///r.txt (r.txt): a file]",
        "[resource: file:///e.txt]",
        "embedded text",
        "[resource: file:///b.png, blob of type image/png, 12 base64 characters, not shown]",
        "[hologram content, not shown]",
    ]
    responses = export([flow], "openai-responses").call(call["openai-responses"])["output"]
    images = [item for item in responses if item["type"] == "input_image"]
    assert [i["image_url"] for i in images] == [f"data:image/png;base64,{PNG}"] * 2
    anthropic = export([flow], "anthropic").call(call["anthropic"])["content"]
    assert [b["type"] for b in anthropic].count("image") == 2
    assert anthropic[1] == {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}}
    gemini = export([flow], "gemini").call(call["gemini"])["functionResponse"]
    assert gemini["parts"] == [{"inlineData": {"mimeType": "image/png", "data": PNG}}] * 2
    assert "embedded text" in gemini["response"]["output"]


def test_structured_content_without_text() -> None:
    result = flows.FlowResult(content=(), structured_content={"sum": 5})
    flow = _python_flow("structured", result=result)
    assert export([flow], "openai").call(_call("openai", "structured", "{}"))["content"] == '{"sum": 5}'
    gemini = export([flow], "gemini").call(_call("gemini", "structured", {}))
    assert gemini["functionResponse"]["response"] == {"output": {"sum": 5}}


def test_empty_results_say_so() -> None:
    flow = _python_flow("empty", result=None)
    assert export([flow], "openai").call(_call("openai", "empty", ""))["content"] == "(the tool returned no content)"
    anthropic = export([flow], "anthropic").call(_call("anthropic", "empty", None))
    assert anthropic["content"] == [{"type": "text", "text": "(the tool returned no content)"}]


def test_repr_and_len(session: mcp_sync.Session) -> None:
    exported = model_tools.export(session, "gemini")
    assert repr(exported) == "<ModelTools gemini 5 tools>" and len(exported) == 5


def test_cli_format_shapes(tmp_path: Any) -> None:
    import os
    import subprocess
    import sys
    from pathlib import Path

    repo = Path(__file__).resolve().parent.parent
    (tmp_path / "s.json").write_text(json.dumps(
        {"mcpServers": {"example": {"command": sys.executable, "args": ["-m", "mcp_sync.testing"]}}}
    ))  # fmt: skip
    env = {k: v for k, v in os.environ.items() if k != "MCP_SYNC_CONFIG"}
    env["PYTHONPATH"] = str(repo)

    def run(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "mcp_sync", "--mcp-config", "s.json", "tools", *argv],
            capture_output=True, text=True, cwd=tmp_path, env=env, timeout=60, check=False,
        )  # fmt: skip

    gemini = run("--format", "gemini")
    assert gemini.returncode == 0, gemini.stderr
    (tool,) = json.loads(gemini.stdout)
    assert [d["name"] for d in tool["functionDeclarations"]][:2] == ["mcp__example__echo", "mcp__example__add"]
    assert json.loads(run("--format", "json").stdout) == json.loads(run("--json").stdout)
    both = run("--json", "--format", "openai")
    assert (both.returncode, both.stderr) == (2, "mcp-sync: error: --json and --format openai: give one\n")


def test_a_real_servers_set_exports_and_dispatches() -> None:
    from mcp_sync.config import ConnectOptions
    from mcp_sync.testing import server_command

    command, *args = server_command()
    servers = mcp_sync.Servers([ConnectOptions(server="ex", command=command, args=args)])
    try:
        tools = model_tools.export(servers, "openai")
        assert "mcp__ex__echo" in [t["function"]["name"] for t in tools.tools]
        call = {"id": "c1", "type": "function",
                "function": {"name": "mcp__ex__echo", "arguments": '{"message": "hi"}'}}  # fmt: skip
        assert tools.call(call) == {"role": "tool", "tool_call_id": "c1", "content": "hi"}
    finally:
        servers.close()


def test_a_servers_entry_projection_applies_to_the_export() -> None:
    from mcp_sync.config import ConnectOptions
    from mcp_sync.testing import server_command

    command, *args = server_command()
    entry = ConnectOptions(server="ex", command=command, args=args, include=["echo", "add"],
                           exclude=["add"], name_prefix="files")  # fmt: skip
    servers = mcp_sync.Servers([entry])
    try:
        expected = {"name_prefix": "files", "include": ("echo", "add"), "exclude": ("add",)}
        assert servers.projection("ex") == expected
        names = [t["function"]["name"] for t in model_tools.export(servers, "openai").tools]
        assert names == ["files__echo"]
    finally:
        servers.close()


def test_a_bad_input_is_an_mcp_error_and_a_value_error() -> None:
    exported = export([_python_flow("n")], "anthropic")
    with pytest.raises(ValueError) as caught:
        exported.call({"name": "n", "input": {}})
    assert isinstance(caught.value, MalformedToolCall) and isinstance(caught.value, mcp_sync.McpError)
    assert caught.value.kind == "malformed_tool_call"
    with pytest.raises(mcp_sync.InvalidInput, match="unknown provider 'mistral'") as unknown:
        export([_python_flow("n")], "mistral")  # type: ignore[arg-type]
    assert isinstance(unknown.value, ValueError)
