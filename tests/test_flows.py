"""mcp_sync.flows: projection, declarations, invocation, composition, narrowing."""

from __future__ import annotations

import dataclasses
import re
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import mcp_sync
from mcp_sync import flows
from mcp_sync.flows import (
    MCP_CAPABILITIES,
    MCP_EFFECTS,
    Action,
    Capability,
    DuplicateFlowError,
    Effects,
    Flow,
    FlowFailed,
    FlowResult,
    NarrowingError,
    ProjectionError,
)
from mcp_sync.protocol.catalog import CallToolResult, Tool, freeze
from mcp_sync.testing import server_command

# --------------------------------------------------------------------------
# A duck-typed session: the attributes project() uses, nothing else.


def _tool(name: str, description: str | None = None, **schema: Any) -> Tool:
    return Tool(
        name=name,
        description=description,
        input_schema=freeze({"type": "object", **schema}),
    )


class FakeSession:
    def __init__(
        self,
        server: str = "files",
        tools: tuple[Tool, ...] | None = None,
        *,
        error: mcp_sync.McpError | None = None,
        result: CallToolResult | None = None,
    ) -> None:
        self.server = server
        self.tools = tools if tools is not None else (
            _tool("read", "Read a file.", properties={"path": {"type": "string"}}),
            _tool("write", "Write a file.\nSecond line."),
            _tool("stat"),
        )
        self.calls: list[tuple[str, Any]] = []
        self.error = error
        self.result = result or CallToolResult(
            content=(freeze({"type": "text", "text": "ok"}),)
        )

    def call_tool(self, name: str, arguments: dict[str, Any] | None = None) -> CallToolResult:
        self.calls.append((name, arguments))
        if self.error is not None:
            raise self.error
        return self.result


# --------------------------------------------------------------------------
# Names and descriptions


def test_default_names_are_scoped_by_server() -> None:
    source = flows.project(FakeSession())
    assert list(source) == ["mcp/files/read", "mcp/files/write", "mcp/files/stat"]
    assert [f.name for f in source.flows] == list(source)
    assert all(f.server == "files" for f in source.flows)
    assert [f.tool.name for f in source.flows if f.tool] == ["read", "write", "stat"]


def test_custom_prefix() -> None:
    source = flows.project(FakeSession(), name_prefix="fs")
    assert list(source) == ["fs/read", "fs/write", "fs/stat"]
    source = flows.project(FakeSession(), name_prefix="team/fs")
    assert next(iter(source)) == "team/fs/read"


@pytest.mark.parametrize("prefix", ["", "/fs", "fs/", "a//b", "a/../b", ".", "a\x1bb", "a\u202eb"])
def test_bad_prefix_is_an_error(prefix: str) -> None:
    with pytest.raises(ProjectionError, match="name_prefix"):
        flows.project(FakeSession(), name_prefix=prefix)


def test_empty_prefix_message() -> None:
    with pytest.raises(ProjectionError, match=r"^name_prefix must not be empty$"):
        flows.project(FakeSession(), name_prefix="")


def test_description_with_and_without_server_text() -> None:
    source = flows.project(FakeSession())
    assert source["mcp/files/read"].description == (
        'MCP tool "read" on server "files". Server-supplied description: Read a file.'
    )
    # The server's text is carried whole, newlines included: it is the model's to read.
    assert source["mcp/files/write"].description == (
        'MCP tool "write" on server "files". Server-supplied description: '
        "Write a file.\nSecond line."
    )
    assert source["mcp/files/stat"].description == 'MCP tool "stat" on server "files"'


def test_empty_server_description_adds_nothing() -> None:
    session = FakeSession(tools=(_tool("x", ""),))
    assert flows.project(session)["mcp/files/x"].description == 'MCP tool "x" on server "files"'
    assert flows.describe_tool("s", "t", None) == 'MCP tool "t" on server "s"'


# --------------------------------------------------------------------------
# The declaration


def test_input_document_is_the_servers_schema_unchanged_and_frozen() -> None:
    session = FakeSession()
    flow = flows.project(session)["mcp/files/read"]
    assert flow.input_document is session.tools[0].input_schema
    assert dict(flow.input_document) == {
        "type": "object",
        "properties": MappingProxyType({"path": MappingProxyType({"type": "string"})}),
    }
    with pytest.raises(TypeError):
        flow.input_document["type"] = "array"  # type: ignore[index]
    with pytest.raises(dataclasses.FrozenInstanceError):
        flow.name = "other"  # type: ignore[misc]


def test_every_mcp_flow_shares_one_capability_tuple() -> None:
    source = flows.project(FakeSession())
    for flow in source.flows:
        assert flow.capabilities is MCP_CAPABILITIES
        assert flow.effects is MCP_EFFECTS
    assert isinstance(MCP_CAPABILITIES, tuple)


def test_capabilities_are_derived_from_the_action_enumeration() -> None:
    assert flows.capabilities_for(Action) == MCP_CAPABILITIES
    assert len(MCP_CAPABILITIES) == len(Action)
    for action, text in zip(Action, MCP_CAPABILITIES, strict=True):
        assert text == f"{action.namespace}:{action.operation}:**"
        cap = Capability.parse(text)
        assert (cap.namespace, cap.operation, cap.resource) == (
            action.namespace,
            action.operation,
            "**",
        )
        assert cap.action is action
    assert "*" not in MCP_CAPABILITIES


def test_adding_an_action_adds_a_capability() -> None:
    @dataclasses.dataclass(frozen=True)
    class NewAction:
        namespace: str
        operation: str

    wider = flows.capabilities_for([*Action, NewAction("clock", "read")])
    assert wider[: len(MCP_CAPABILITIES)] == MCP_CAPABILITIES
    assert wider[len(MCP_CAPABILITIES) :] == ("clock:read:**",)
    # The shipped list is computed, not restated: removing an action removes one too.
    assert flows.capabilities_for(list(Action)[1:]) == MCP_CAPABILITIES[1:]


def test_effects_envelope() -> None:
    assert Effects(
        reads=("**",),
        writes=("**",),
        mode="expected",
        on_conflict="serialize",
        tier="irreversible",
    ) == MCP_EFFECTS
    assert MCP_EFFECTS.to_dict() == {
        "reads": ["**"],
        "writes": ["**"],
        "mode": "expected",
        "onConflict": "serialize",
        "tier": "irreversible",
    }
    with pytest.raises(dataclasses.FrozenInstanceError):
        MCP_EFFECTS.tier = "read_only"  # type: ignore[misc]


@pytest.mark.parametrize(
    "text",
    [
        "fs:read:**",
        "fs:read:/tmp/**",
        "net:connect:example.com",
        "process:exec:/usr/bin/git",
        "x-y:do_it:*",
    ],
)
def test_capability_parse_accepts_three_components(text: str) -> None:
    assert str(Capability.parse(text)) == text


@pytest.mark.parametrize(
    "text",
    [
        "*",
        "**",
        "",
        "fs",
        "fs:read",
        "fs:read:a:b",
        "*:*:*",
        "fs:*:**",
        ":read:**",
        "fs::**",
        "fs:read:",
        "FS:read:**",
        "fs:read:a b",
        "fs:read:a\x1b",
        "fs:read:\u202e",
    ],
)
def test_capability_parse_refuses_everything_else(text: str) -> None:
    with pytest.raises(ValueError):
        Capability.parse(text)


def test_capability_parse_refuses_non_strings() -> None:
    with pytest.raises(ValueError, match="must be a string"):
        Capability.parse(["fs", "read", "**"])


def test_to_dict_is_plain_json() -> None:
    flow = flows.project(FakeSession())["mcp/files/read"]
    data = flow.to_dict()
    assert data["name"] == "mcp/files/read"
    assert data["inputDocument"] == {"type": "object", "properties": {"path": {"type": "string"}}}
    assert type(data["inputDocument"]) is dict
    assert data["capabilities"] == list(MCP_CAPABILITIES)
    assert data["effects"]["tier"] == "irreversible"
    assert data["server"] == "files" and data["tool"] == "read"


# --------------------------------------------------------------------------
# Invoking


def test_arguments_pass_through_without_schema_validation() -> None:
    session = FakeSession()
    flow = flows.project(session)["mcp/files/read"]
    # "path" should be a string per the schema; the server decides, not the flow.
    result = flow.invoke({"path": 42, "extra": [1, {"x": None}]})
    assert session.calls == [("read", {"path": 42, "extra": [1, {"x": None}]})]
    assert result == FlowResult(content=({"type": "text", "text": "ok"},))
    assert result.text == "ok"


def test_none_is_empty_arguments_and_any_mapping_works() -> None:
    session = FakeSession()
    flow = flows.project(session)["mcp/files/stat"]
    flow.invoke()
    flow.invoke(MappingProxyType({"a": 1}))
    assert session.calls == [("stat", {}), ("stat", {"a": 1})]
    assert type(session.calls[1][1]) is dict


@pytest.mark.parametrize("arguments", [[("a", 1)], "a=1", 3, {1: "x"}, {("a",): 1}])
def test_arguments_must_be_a_str_keyed_mapping(arguments: Any) -> None:
    session = FakeSession()
    flow = flows.project(session)["mcp/files/read"]
    with pytest.raises(FlowFailed) as caught:
        flow.invoke(arguments)
    assert caught.value.cause_kind == "invalid_arguments"
    assert caught.value.kind == "flow_failed"
    assert session.calls == []


def test_tool_error_is_a_successful_invocation() -> None:
    session = FakeSession(
        result=CallToolResult(
            content=(freeze({"type": "text", "text": "no such file"}),),
            is_error=True,
        )
    )
    result = flows.project(session)["mcp/files/read"].invoke({"path": "/nope"})
    assert result.is_error is True
    assert result.text == "no such file"
    assert result.structured_content is None


def test_structured_content_is_carried() -> None:
    session = FakeSession(
        result=CallToolResult(content=(), structured_content=freeze({"sum": 3}))
    )
    result = flows.project(session)["mcp/files/stat"].invoke()
    assert result.structured_content == {"sum": 3}
    assert result.to_dict() == {"content": [], "isError": False, "structuredContent": {"sum": 3}}


@pytest.mark.parametrize(
    "error",
    [
        mcp_sync.ConnectionClosed("connection scope closed"),
        mcp_sync.Timeout("tool 'read' on server 'files' (request_timeout_ms=5)"),
        mcp_sync.ProtocolError("an outbound frame of 9 bytes is over max_outbound_frame_bytes=1"),
        mcp_sync.InvalidResponse("the result of tool 'read' has no content array"),
        mcp_sync.ToolNotFound("tool 'read' is not in the catalog of server 'files'"),
        mcp_sync.RemoteError(
            "server 'files' answered with JSON-RPC error -32000",
            -32000,
            mcp_sync.Redacted({"message": "secret ghp_abc", "data": None}),
        ),
    ],
)
def test_session_failure_is_flow_failed_with_the_public_message(
    error: mcp_sync.McpError,
) -> None:
    flow = flows.project(FakeSession(error=error))["mcp/files/read"]
    with pytest.raises(FlowFailed) as caught:
        flow.invoke({"path": "/x"})
    failed = caught.value
    assert str(failed) == str(error) == failed.message
    assert failed.kind == "flow_failed"
    assert failed.cause_kind == error.kind
    assert failed.flow == "mcp/files/read"
    assert failed.__cause__ is error
    assert "ghp_abc" not in str(failed) and "ghp_abc" not in repr(failed)


def test_other_exceptions_are_not_disguised() -> None:
    class Boom(RuntimeError):
        pass

    class Broken(FakeSession):
        def call_tool(self, name: str, arguments: dict[str, Any] | None = None) -> CallToolResult:
            raise Boom("a bug")

    with pytest.raises(Boom):
        flows.project(Broken())["mcp/files/read"].invoke({})


# --------------------------------------------------------------------------
# include / exclude


def test_include_then_exclude_in_server_order() -> None:
    session = FakeSession()
    assert list(flows.project(session, include=["stat", "read"])) == [
        "mcp/files/read",
        "mcp/files/stat",
    ]
    assert list(flows.project(session, exclude=["write"])) == ["mcp/files/read", "mcp/files/stat"]
    assert list(flows.project(session, include=["read", "write"], exclude=["write"])) == [
        "mcp/files/read"
    ]
    assert list(flows.project(session, include=[])) == list(flows.project(session))
    assert len(flows.project(session, include=["read"], exclude=["read"])) == 0


def test_unknown_include_name_is_an_error() -> None:
    with pytest.raises(ProjectionError) as caught:
        flows.project(FakeSession(), include=["read", "delete", "chmod"])
    assert str(caught.value) == (
        "include names 'delete', 'chmod', not in the catalog of server 'files'"
    )


def test_unknown_exclude_name_is_ignored() -> None:
    assert len(flows.project(FakeSession(), exclude=["delete"])) == 3


@pytest.mark.parametrize("field", ["include", "exclude"])
def test_a_bare_string_is_not_a_list_of_names(field: str) -> None:
    with pytest.raises(ProjectionError, match="not one string"):
        flows.project(FakeSession(), **{field: "read"})


# --------------------------------------------------------------------------
# Python functions and composition


def _greet_flow(name: str = "local/greet") -> Flow:
    @flows.function(
        name=name,
        description="Greet someone.",
        input_document={"type": "object", "properties": {"who": {"type": "string"}}},
        capabilities=["fs:read:/tmp/**"],
        effects=Effects(
            reads=("/tmp/**",), writes=(), mode="enforced", on_conflict="parallel", tier="read_only"
        ),
    )
    def greet(arguments: dict[str, Any]) -> str:
        return f"hello {arguments.get('who', 'world')}"

    return greet


def test_function_flow() -> None:
    flow = _greet_flow()
    assert isinstance(flow, Flow)
    assert flow.server is None and flow.tool is None
    assert flow.capabilities == ("fs:read:/tmp/**",)
    assert flow.invoke({"who": "Ada"}).text == "hello Ada"
    assert flow.input_document["properties"]["who"] == {"type": "string"}
    with pytest.raises(TypeError):
        flow.input_document["type"] = "x"  # type: ignore[index]


def test_function_results() -> None:
    def make(value: object) -> Flow:
        return flows.function(
            lambda _args: value,
            name="local/f",
            description="f",
            capabilities=[],
            effects=Effects.pure(),
        )

    assert make(None).invoke().content == ()
    assert make("x").invoke().text == "x"
    structured = make({"a": [1, 2]}).invoke()
    assert structured.structured_content == {"a": (1, 2)}
    assert structured.text == '{"a": [1, 2]}'
    assert make([1]).invoke().structured_content is None
    ready = FlowResult(content=(), is_error=True)
    assert make(ready).invoke() is ready
    assert make(None).input_document == {"type": "object"}


def test_function_failures_propagate() -> None:
    def fails(_args: dict[str, Any]) -> None:
        raise FlowFailed("disk full", flow="local/f", cause_kind="io")

    flow = flows.function(
        fails, name="local/f", description="f", capabilities=[], effects=Effects.pure()
    )
    with pytest.raises(FlowFailed, match="disk full"):
        flow.invoke()


@pytest.mark.parametrize(
    "kwargs",
    [
        {"name": ""},
        {"name": "a//b"},
        {"description": ""},
        {"capabilities": ["*"]},
        {"capabilities": "fs:read:**"},
        {"input_document": {"type": "array"}},
    ],
)
def test_function_declaration_is_checked(kwargs: dict[str, Any]) -> None:
    declared: dict[str, Any] = {
        "name": "local/f",
        "description": "f",
        "capabilities": [],
        "effects": Effects.pure(),
        **kwargs,
    }
    with pytest.raises(ValueError):
        flows.function(lambda _a: None, **declared)


def test_catalog_composes_mcp_and_python_sources() -> None:
    combined = flows.catalog(
        flows.project(FakeSession("files")),
        flows.project(FakeSession("backup")),
        _greet_flow(),
    )
    assert list(combined) == [
        "mcp/files/read",
        "mcp/files/write",
        "mcp/files/stat",
        "mcp/backup/read",
        "mcp/backup/write",
        "mcp/backup/stat",
        "local/greet",
    ]
    assert combined.invoke("local/greet", {}).text == "hello world"
    nested = flows.catalog(combined, [_greet_flow("local/other")])
    assert len(nested) == 8


def test_duplicate_names_fail_composition() -> None:
    with pytest.raises(DuplicateFlowError, match=r"'mcp/files/read' is declared twice"):
        flows.catalog(flows.project(FakeSession("files")), flows.project(FakeSession("files")))
    # A distinct prefix is the way out.
    flows.catalog(
        flows.project(FakeSession("files")),
        flows.project(FakeSession("files"), name_prefix="mirror"),
    )
    with pytest.raises(DuplicateFlowError, match="MCP server 'files' and a Python flow"):
        flows.catalog(flows.project(FakeSession()), _greet_flow("mcp/files/read"))
    with pytest.raises(DuplicateFlowError):
        flows.catalog(_greet_flow(), _greet_flow())


def test_catalog_refuses_a_bare_function() -> None:
    def undeclared(_args: dict[str, Any]) -> str:
        return "?"

    with pytest.raises(TypeError, match=r"flows\.function"):
        flows.catalog(undeclared)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        flows.catalog(["not a flow"])  # type: ignore[list-item]


# --------------------------------------------------------------------------
# Narrowing


def test_narrow_an_mcp_flow() -> None:
    flow = flows.project(FakeSession())["mcp/files/read"]
    narrow = flow.narrow(
        capabilities=["fs:read:/srv/data/**"],
        effects=dataclasses.replace(MCP_EFFECTS, reads=("/srv/data/**",), writes=()),
    )
    assert narrow.capabilities == ("fs:read:/srv/data/**",)
    assert narrow.effects.reads == ("/srv/data/**",) and narrow.effects.writes == ()
    assert narrow.name == flow.name and narrow.run is flow.run
    # The original is untouched.
    assert flow.capabilities is MCP_CAPABILITIES and flow.effects is MCP_EFFECTS
    # Narrowing to nothing is allowed.
    assert flow.narrow(capabilities=[]).capabilities == ()


def test_narrow_keeps_unspecified_fields() -> None:
    flow = flows.project(FakeSession())["mcp/files/read"]
    assert flow.narrow().capabilities is MCP_CAPABILITIES
    assert flow.narrow(capabilities=["net:connect:**"]).effects is MCP_EFFECTS


@pytest.mark.parametrize(
    "capabilities",
    [
        ["fs:read:/etc/**"],  # outside /tmp/**
        ["fs:read:**"],  # wider resource
        ["fs:write:/tmp/x"],  # another action
        ["fs:read:/tmp/**", "net:connect:**"],  # one good, one new
        ["*"],  # unparseable
    ],
)
def test_narrowing_cannot_widen_capabilities(capabilities: list[str]) -> None:
    flow = _greet_flow()
    with pytest.raises(NarrowingError):
        flow.narrow(capabilities=capabilities)
    assert flow.narrow(capabilities=["fs:read:/tmp/cache/*"]).capabilities == (
        "fs:read:/tmp/cache/*",
    )


def test_narrowing_cannot_widen_mcp_capabilities_with_a_new_action() -> None:
    flow = flows.project(FakeSession())["mcp/files/read"]
    with pytest.raises(NarrowingError, match="cannot add authority"):
        flow.narrow(capabilities=["clock:read:**"])


@pytest.mark.parametrize(
    "change",
    [
        {"reads": ("/etc/**",)},
        {"reads": ("**",)},
        {"writes": ("/tmp/x",)},
        {"on_conflict": "serialize", "writes": ("/tmp/**",)},
    ],
)
def test_narrowing_cannot_widen_effects(change: dict[str, Any]) -> None:
    flow = _greet_flow()
    with pytest.raises(NarrowingError, match="cannot widen"):
        flow.narrow(effects=dataclasses.replace(flow.effects, **change))


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("tier", "reversible"),
        ("tier", "read_only"),
        ("mode", "enforced"),
        ("on_conflict", "parallel"),
    ],
)
def test_narrowing_cannot_relax_how_carefully_a_flow_is_run(field: str, value: str) -> None:
    flow = flows.project(FakeSession())["mcp/files/read"]
    with pytest.raises(NarrowingError, match="cannot relax"):
        change: dict[str, Any] = {field: value}
        flow.narrow(effects=dataclasses.replace(MCP_EFFECTS, **change))


def test_narrowing_may_make_a_flow_more_careful() -> None:
    flow = _greet_flow()
    careful = dataclasses.replace(
        flow.effects, mode="expected", on_conflict="serialize", tier="irreversible"
    )
    assert flow.narrow(effects=careful).effects.tier == "irreversible"


def test_source_narrow_replaces_one_flow() -> None:
    source = flows.project(FakeSession())
    narrowed = source.narrow("mcp/files/read", capabilities=["fs:read:/srv/**"])
    assert narrowed["mcp/files/read"].capabilities == ("fs:read:/srv/**",)
    assert narrowed["mcp/files/write"] is source["mcp/files/write"]
    assert list(narrowed) == list(source)
    with pytest.raises(NarrowingError):
        source.narrow("mcp/files/read", capabilities=["fs:read:**", "bogus:op:**"])


# --------------------------------------------------------------------------
# Resource patterns: containment is sound


def _regex(pattern: str) -> re.Pattern[str]:
    out = []
    for token in re.findall(r"\*\*|\*|[^*]", pattern):
        out.append(".*" if token == "**" else "[^/]*" if token == "*" else re.escape(token))
    return re.compile("".join(out) + r"\Z", re.DOTALL)


@pytest.mark.parametrize(
    ("outer", "inner", "covered"),
    [
        ("**", "/tmp/**", True),
        ("/tmp/**", "/tmp/a/b", True),
        ("/tmp/**", "/tmp/*", True),
        ("/tmp/*", "/tmp/**", False),
        ("/tmp/*", "/tmp/a/b", False),
        ("/tmp/**", "/tmpx", False),
        ("*", "**", False),
        ("a*", "a*b", True),
        ("/a", "/a", True),
        ("/a", "/b", False),
    ],
)
def test_pattern_covers_examples(outer: str, inner: str, covered: bool) -> None:
    assert flows.pattern_covers(outer, inner) is covered


_patterns = st.text(alphabet="ab/*", max_size=6).filter(bool)


@given(outer=_patterns, inner=_patterns, probe=st.text(alphabet="ab/", max_size=6))
def test_pattern_covers_is_sound(outer: str, inner: str, probe: str) -> None:
    if flows.pattern_covers(outer, inner) and _regex(inner).match(probe):
        assert _regex(outer).match(probe), (outer, inner, probe)


@given(pattern=_patterns)
def test_a_pattern_covers_itself(pattern: str) -> None:
    assert flows.pattern_covers(pattern, pattern)
    assert flows.pattern_covers("**", pattern)


# --------------------------------------------------------------------------
# Against a real session (the bundled fake server)


def _connect(*options: str, **kwargs: Any) -> mcp_sync.Session:
    command, *args = server_command(*options)
    return mcp_sync.connect(server="example", command=command, args=args, **kwargs)


def test_projection_of_a_live_session() -> None:
    with _connect() as session:
        source = flows.project(session)
        assert list(source) == [
            "mcp/example/echo",
            "mcp/example/add",
            "mcp/example/fail",
            "mcp/example/sleep",
            "mcp/example/blob",
        ]
        assert source["mcp/example/echo"].invoke({"message": "hi"}).text == "hi"
        added = source["mcp/example/add"].invoke({"a": 2, "b": 3})
        assert added.structured_content == {"sum": 5} and added.is_error is False
        assert source["mcp/example/add"].output_document == session.tools[1].output_schema
        failed = source["mcp/example/fail"].invoke()
        assert failed.is_error is True
    with pytest.raises(FlowFailed) as caught:
        source["mcp/example/echo"].invoke({"message": "late"})
    assert caught.value.cause_kind == "connection_closed"
    assert str(caught.value) == "connection scope closed"


def test_a_timed_out_call_is_flow_failed() -> None:
    with _connect(request_timeout_ms=100) as session:
        flow = flows.project(session)["mcp/example/sleep"]
        with pytest.raises(FlowFailed) as caught:
            flow.invoke({"ms": 2000})
        assert caught.value.cause_kind == "timeout"
        assert isinstance(caught.value.__cause__, mcp_sync.Timeout)


def test_an_outbound_refusal_is_flow_failed_and_the_session_lives() -> None:
    with _connect(max_outbound_frame_bytes=512) as session:
        flow = flows.project(session)["mcp/example/echo"]
        with pytest.raises(FlowFailed) as caught:
            flow.invoke({"message": "x" * 1000})
        assert caught.value.cause_kind == "protocol_error"
        assert "max_outbound_frame_bytes=512" in str(caught.value)
        assert flow.invoke({"message": "still here"}).text == "still here"


def test_a_tool_without_description(tmp_path: Path) -> None:
    tools = '[{"name": "bare", "inputSchema": {"type": "object"}}]'
    with _connect("--tools", tools) as session:
        flow = flows.project(session)["mcp/example/bare"]
        assert flow.description == 'MCP tool "bare" on server "example"'


# --------------------------------------------------------------------------
# Real catalogs (npm peers installed by scripts/test)


def test_server_everything_projection(everything_stdio_cmd: list[str]) -> None:
    command, *args = everything_stdio_cmd
    with mcp_sync.connect(server="everything", command=command, args=args) as session:
        names = [tool.name for tool in session.tools]
        source = flows.project(session)
        assert list(source) == [f"mcp/everything/{name}" for name in names]
        for flow in source.flows:
            assert flow.tool is not None
            assert flow.input_document is flow.tool.input_schema
            assert flow.input_document["type"] == "object"
            assert flow.capabilities is MCP_CAPABILITIES and flow.effects is MCP_EFFECTS
            expected = f'MCP tool "{flow.tool.name}" on server "everything"'
            if flow.tool.description:
                expected += f". Server-supplied description: {flow.tool.description}"
            assert flow.description == expected
        echo = source["mcp/everything/echo"]
        assert echo.description.startswith(
            'MCP tool "echo" on server "everything". Server-supplied description: '
        )
        assert echo.invoke({"message": "hi"}).text == "Echo: hi"
        # The server's schema is the authority: a bad argument is the tool's error, as data.
        assert echo.invoke({"wrong": 1}).is_error is True

        picked = flows.project(
            session, name_prefix="ev", include=["echo", "get-sum", "get-env"], exclude=["get-env"]
        )
        assert list(picked) == ["ev/echo", "ev/get-sum"]
        assert picked["ev/get-sum"].invoke({"a": 2, "b": 3}).is_error is False
        with pytest.raises(ProjectionError, match="'no-such-tool'"):
            flows.project(session, include=["echo", "no-such-tool"])


def test_server_filesystem_projection(filesystem_stdio_cmd: list[str]) -> None:
    command, *args = filesystem_stdio_cmd
    root = Path(args[0])
    (root / "note.txt").write_text("hello from a file")
    with mcp_sync.connect(server="files", command=command, args=args) as session:
        source = flows.project(session, include=["read_text_file", "list_directory"])
        assert sorted(source) == ["mcp/files/list_directory", "mcp/files/read_text_file"]
        read = source["mcp/files/read_text_file"]
        assert read.output_document is not None  # this server declares outputSchema
        result = read.invoke({"path": str(root / "note.txt")})
        assert result.is_error is False
        assert "hello from a file" in result.text
        assert result.structured_content is not None
        outside = read.invoke({"path": "/etc/hostname"})
        assert outside.is_error is True  # refused by the server: data, not an exception
        everything = flows.project(session)
        assert len(everything) == len(session.tools)
        assert all(isinstance(f.input_document, Mapping) for f in everything.flows)


def test_flows_module_does_not_need_pydantic() -> None:
    code = "import sys, mcp_sync, mcp_sync.flows; assert 'pydantic' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_a_bad_projection_or_declaration_is_an_mcp_error_and_a_value_error() -> None:
    with pytest.raises(ValueError, match="include names 'serach'") as caught:
        flows.project(FakeSession(), include=["serach"])
    assert isinstance(caught.value, ProjectionError) and isinstance(caught.value, mcp_sync.McpError)
    assert caught.value.kind == "invalid_projection"
    with pytest.raises(mcp_sync.InvalidInput) as bad_prefix:
        flows.project(FakeSession(), name_prefix="a//b")
    assert isinstance(bad_prefix.value, ValueError)
    with pytest.raises(flows.DeclarationError) as bad_capability:
        flows.Capability.parse("fs:read")
    assert isinstance(bad_capability.value, ValueError) and bad_capability.value.kind == "invalid_declaration"
    with pytest.raises(mcp_sync.InvalidInput):
        flows.catalog(flows.project(FakeSession()), flows.project(FakeSession()))
