"""``mcp-sync tools``, ``call``, ``check``, ``demo`` and ``example-config``."""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from typing import IO, TYPE_CHECKING, Any

from ..flows import Flow, FlowFailed, FlowResult, ProjectionError, project
from ..model_tools import export
from ..protocol.catalog import thaw
from ..protocol.errors import McpError
from ..protocol.text import escape
from ..session.connect import connect
from ._common import (
    EXIT_CALL_FAILED,
    EXIT_CONNECT_FAILED,
    EXIT_OK,
    EXIT_TOOL_ERROR,
    PROG,
    CliExit,
    call_arguments,
    chosen,
    close_all,
    connect_all,
    describe_error,
    first_line,
    load,
    quoted,
    server_kind,
    table,
    to_json,
    usage,
    with_flows,
)
from ._progress import invoke_with_progress

if TYPE_CHECKING:
    import argparse

    from ..session.api import Session

__all__ = ["cmd_call", "cmd_check", "cmd_demo", "cmd_example_config", "cmd_tools"]

_DEMO_MESSAGE = "hello from mcp-sync"
_PARAMETERS_WIDTH = 60
_APP_WIDTH = 80


# --------------------------------------------------------------------------
# Output


def _print_tools(flows: Sequence[Flow], out: IO[str]) -> None:
    rows = []
    apps = [_app(flow) for flow in flows]
    for flow, app in zip(flows, apps, strict=True):
        described = flow.tool.description if flow.tool is not None else flow.description
        shown = (escape(flow.name), escape(flow.server or "-"), _parameters(flow.input_document))
        rows.append((*shown, escape(first_line(described)), *((app or "-",) if any(apps) else ())))
    # The APP column (a tool's MCP App, a ui:// resource) only when a tool has one.
    table(("FLOW", "SERVER", "PARAMETERS", "DESCRIPTION", *(("APP",) if any(apps) else ())), rows, out)


def _app(flow: Flow) -> str | None:
    """The ``ui://`` URI of the flow's MCP App, escaped and cut to fit a column."""
    uri = flow.tool.ui_resource_uri if flow.tool is not None else None
    if uri is None:
        return None
    shown = escape(uri)
    return shown if len(shown) <= _APP_WIDTH else shown[: _APP_WIDTH - 1] + "…"


def _parameters(document: Mapping[str, Any]) -> str:
    """``name*: type, other: type`` (``*``: required), escaped, or ``-``."""
    properties = document.get("properties")
    if not isinstance(properties, Mapping) or not properties:
        return "-"
    required = document.get("required")
    needed = set(required) if isinstance(required, Sequence) and not isinstance(required, str) else set()
    parts = []
    for name, schema in properties.items():
        star = "*" if name in needed else ""
        parts.append(f"{escape(str(name))}{star}: {escape(_type_of(schema))}")
    text = ", ".join(parts)
    if len(text) > _PARAMETERS_WIDTH:
        text = text[: _PARAMETERS_WIDTH - 1] + "…"
    return text


def _type_of(schema: object) -> str:
    if not isinstance(schema, Mapping):
        return "any"
    kind = schema.get("type")
    if kind == "array" and isinstance(schema.get("items"), Mapping):
        return _type_of(schema["items"]) + "[]"
    if isinstance(kind, str):
        return kind
    if isinstance(kind, Sequence) and kind and all(isinstance(k, str) for k in kind):
        return "|".join(kind)
    if "enum" in schema:
        return "enum"
    for key in ("anyOf", "oneOf"):
        options = schema.get(key)
        if isinstance(options, Sequence) and options and not isinstance(options, str):
            return "|".join(_type_of(option) for option in options)
    return "any"


def _render_block(block: Mapping[str, Any]) -> str:
    kind = block.get("type")
    shown_kind = escape(kind) if isinstance(kind, str) else "unknown"
    if kind == "text" and isinstance(block.get("text"), str):
        return escape(block["text"], multiline=True)
    if kind in ("image", "audio"):
        mime = block.get("mimeType")
        data = block.get("data")
        size = len(data) if isinstance(data, str) else 0
        label = escape(mime) if isinstance(mime, str) else "unknown type"
        return f"[{shown_kind}: {label}, {size} base64 characters]"
    if kind == "resource_link":
        uri = block.get("uri")
        return f"[resource link: {escape(uri) if isinstance(uri, str) else '?'}]"
    if kind == "resource":
        resource = block.get("resource")
        text = resource.get("text") if isinstance(resource, Mapping) else None
        uri = resource.get("uri") if isinstance(resource, Mapping) else None
        if isinstance(text, str):
            return escape(text, multiline=True)
        return f"[resource: {escape(uri) if isinstance(uri, str) else '?'}]"
    return f"[{shown_kind} content]"


def _render(result: FlowResult) -> str:
    parts = [_render_block(block) for block in result.content]
    if not parts and result.structured_content is not None:
        parts.append(to_json(thaw(result.structured_content)))
    return "\n".join(parts)


# --------------------------------------------------------------------------
# Commands


def cmd_tools(ns: argparse.Namespace, out: IO[str]) -> int:
    shape = ns.format or ("json" if ns.json else "table")
    if ns.json and shape != "json":
        usage(f"--json and --format {shape}: give one")

    def body(flows: list[Flow]) -> int:
        if shape == "json":
            out.write(to_json([_flow_json(flow) for flow in flows]) + "\n")
        elif shape == "table":
            _print_tools(flows, out)
        else:
            out.write(to_json(export(flows, shape).tools) + "\n")
        return EXIT_OK

    return with_flows(ns, body)


def _flow_json(flow: Flow) -> dict[str, Any]:
    """A flow's declaration, with its tool's MCP App (``uiResourceUri``) when it has one."""
    out = flow.to_dict()
    uri = flow.tool.ui_resource_uri if flow.tool is not None else None
    if uri is not None:
        out["uiResourceUri"] = uri
    return out


def cmd_call(ns: argparse.Namespace, out: IO[str], err: IO[str]) -> int:
    arguments = call_arguments(ns.args)  # before anything is spawned

    def body(flows: list[Flow]) -> int:
        flow = _find(flows, ns.flow)
        return _invoke(flow, arguments, ns.json, out, err, ns.sessions.get(flow.server), ns.timeout)

    return with_flows(ns, body)


def _find(flows: Sequence[Flow], name: str) -> Flow:
    """The flow of that name, or the one flow whose tool has that name."""
    for flow in flows:
        if flow.name == name:
            return flow
    matches = [flow for flow in flows if flow.tool is not None and flow.tool.name == name]
    if len(matches) > 1:
        listed = ", ".join(quoted(flow.name) for flow in matches)
        usage(
            f"several servers have a tool named {quoted(name)} ({listed}); "
            "give the flow name or pick one with --server"
        )
    if not matches:
        usage(f"no flow named {quoted(name)}; '{PROG} tools' lists them")
    return matches[0]


def _invoke(  # noqa: PLR0917
    flow: Flow,
    arguments: dict[str, Any],
    as_json: bool,
    out: IO[str],
    err: IO[str],
    session: Session | None = None,
    timeout_ms: int | None = None,
) -> int:
    try:
        result = invoke_with_progress(flow, arguments, session, err, timeout_ms)
    except FlowFailed as exc:
        raise CliExit(
            EXIT_CALL_FAILED,
            f"{PROG}: flow {quoted(flow.name)} failed: {escape(str(exc))} ({exc.cause_kind})",
        ) from None
    text = to_json(result.to_dict()) if as_json else _render(result)
    if text:
        out.write(text + "\n")
    if result.is_error:
        err.write(f"{PROG}: flow {quoted(flow.name)}: the tool reported an error\n")
        return EXIT_TOOL_ERROR
    return EXIT_OK


def cmd_check(ns: argparse.Namespace, out: IO[str]) -> int:
    path, source, entries = load(ns)
    servers = chosen(ns, entries)
    out.write(f"{source} {escape(path)}: {len(entries)} server(s), the file is valid\n")
    connect_all(servers)
    try:
        failed = 0
        rows = []
        for server in servers:
            name = escape(server.entry.server)
            kind = server_kind(server.entry)
            if server.error is not None:
                failed += 1
                rows.append(("FAIL", name, kind, describe_error(server.error)))
                continue
            assert server.session is not None
            try:
                count = len(project(server.session, **server.entry.projection_kwargs()))
            except ProjectionError as exc:
                failed += 1
                rows.append(("FAIL", name, kind, escape(str(exc))))
                continue
            protocol = escape(server.session.protocol_version)
            rows.append(("ok", name, kind, f"{count} flow(s), protocol {protocol}"))
        table(("", "SERVER", "KIND", "RESULT"), rows, out)
        for server in servers:
            tail = server.stderr_lines("  ")
            if tail:
                out.write(f"server {quoted(server.entry.server)}: its stderr ended with:\n" + "\n".join(tail) + "\n")
        if failed:
            out.write(f"{failed} of {len(servers)} server(s) failed\n")
            return EXIT_CONNECT_FAILED
        out.write(f"all {len(servers)} server(s) connected\n")
        return EXIT_OK
    finally:
        close_all(servers)


def cmd_demo(out: IO[str], err: IO[str]) -> int:
    command = f"{escape(sys.executable)} -m mcp_sync.testing"
    out.write(f"connecting the bundled example server: {command}\n")
    try:
        session = connect(server="example", command=sys.executable, args=["-m", "mcp_sync.testing"])
    except McpError as exc:
        raise CliExit(
            EXIT_CONNECT_FAILED,
            f"{PROG}: the example server failed to connect: {describe_error(exc)}",
        ) from None
    with session:
        flows = project(session)
        out.write("\n")
        _print_tools(flows.flows, out)
        echo = flows["mcp/example/echo"]
        out.write(f"\n{PROG} call mcp/example/echo --args '{{\"message\": \"{_DEMO_MESSAGE}\"}}'\n")
        code = _invoke(echo, {"message": _DEMO_MESSAGE}, False, out, err)
    out.write(
        f"\nnext: '{PROG} example-config > servers.json', then "
        f"'{PROG} --mcp-config servers.json tools'\n"
    )
    return code


def cmd_example_config(out: IO[str]) -> int:
    # The shape Claude Desktop, Cursor and most clients write; the entry's
    # name is its key.
    config = {
        "mcpServers": {
            "example": {
                "command": sys.executable,
                "args": ["-m", "mcp_sync.testing"],
                "requestTimeoutMs": 30000,
            }
        }
    }
    out.write(to_json(config) + "\n")
    return EXIT_OK
