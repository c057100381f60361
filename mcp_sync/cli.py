"""The ``mcp-sync`` command (also ``python -m mcp_sync``).

Reads a config file of servers (``--mcp-config PATH``, ``--from CLIENT`` for
the file Claude Desktop, Claude Code, Cursor or VS Code uses, or
``MCP_SYNC_CONFIG``; a flag wins), connects every server in it, projects
their tools into flows and lists or calls them, or prints them as a model
provider's tool list (``tools --format openai``). Exit codes:

====  ==========================================================
0     success
1     ``call``: the tool ran and reported an error (``isError``)
2     usage error: bad flags, or a config file that cannot be used
3     a configured server failed to connect (``check``: any did)
4     ``call``: the call itself failed (timeout, closed session, ...)
130   interrupted
====  ==========================================================

Text that came from a server is printed with control, format (bidi) and
line-separator characters escaped, so it cannot move the cursor, recolour
the terminal or reorder what is shown. ``--json`` output is ASCII JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING, Any, NoReturn

from ._catalog import thaw
from ._cli_features import (
    FEATURE_COMMANDS,
    add_feature_commands,
    invoke_with_progress,
    run_feature_command,
)
from ._client import connect
from ._errors import McpError
from ._jsonrpc import json_depth
from ._limits import MAX_JSON_DEPTH
from ._locations import CLIENTS
from ._text import escape
from .flows import (
    DuplicateFlowError,
    Flow,
    FlowFailed,
    FlowResult,
    ProjectionError,
    catalog,
    project,
)
from .model_tools import PROVIDERS, export

if TYPE_CHECKING:
    from ._session_api import Session
    from .config import ServerEntry

__all__ = [
    "CONFIG_ENV",
    "EXIT_CALL_FAILED",
    "EXIT_CONNECT_FAILED",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_TOOL_ERROR",
    "EXIT_USAGE",
    "escape",
    "main",
]

EXIT_OK = 0
EXIT_TOOL_ERROR = 1
EXIT_USAGE = 2
EXIT_CONNECT_FAILED = 3
EXIT_CALL_FAILED = 4
EXIT_INTERRUPTED = 130

CONFIG_ENV = "MCP_SYNC_CONFIG"
PROG = "mcp-sync"
_DESCRIPTION_WIDTH = 100
_DEMO_MESSAGE = "hello from mcp-sync"


# --------------------------------------------------------------------------
# Terminal safety: server text goes through escape() (mcp_sync._text)


def _q(text: str) -> str:
    return f'"{escape(text)}"'


# --------------------------------------------------------------------------
# Errors that end the command


class _Exit(Exception):
    """Print ``message`` to stderr and exit with ``code``."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def _usage(message: str) -> NoReturn:
    raise _Exit(EXIT_USAGE, f"{PROG}: error: {message}")


# --------------------------------------------------------------------------
# Arguments


def _parser() -> argparse.ArgumentParser:
    config_help = f"the JSON file of servers (default: ${CONFIG_ENV}; this flag wins)"
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Connect the MCP servers of a config file and list or call their tools.",
        epilog=(
            "exit codes: 0 ok, 1 the tool reported an error, 2 usage or config error, "
            "3 a server failed to connect, 4 the call failed, 130 interrupted. "
            f"Try '{PROG} demo' to see the bundled example server."
        ),
    )
    from_help = (
        "read the servers another MCP client runs, from its well-known config file "
        "(the project's first, then the user's)"
    )
    parser.add_argument("--mcp-config", metavar="PATH", help=config_help)
    parser.add_argument("--from", dest="from_client", choices=CLIENTS, help=from_help)
    # The flags are also accepted after the subcommand; SUPPRESS keeps a value
    # given before it from being overwritten with None.
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--mcp-config", metavar="PATH", default=argparse.SUPPRESS, help=config_help
    )
    common.add_argument(
        "--from", dest="from_client", choices=CLIENTS, default=argparse.SUPPRESS, help=from_help
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    tools = sub.add_parser(
        "tools", parents=[common], help="list the flows of every configured server"
    )
    tools.add_argument("--json", action="store_true", help="print the flow declarations as JSON")
    tools.add_argument(
        "--format",
        choices=("table", "json", *PROVIDERS),
        default=None,
        help="table (default), json (the flow declarations), or a model provider's tool "
        "list: " + ", ".join(PROVIDERS),
    )

    call = sub.add_parser("call", parents=[common], help="call one flow and print its result")
    call.add_argument("flow", metavar="FLOW", help="the flow name, e.g. mcp/example/echo")
    call.add_argument(
        "--args",
        metavar="JSON",
        default="{}",
        help="the arguments, a JSON object (default: {})",
    )
    call.add_argument("--json", action="store_true", help="print the whole result as JSON")

    sub.add_parser(
        "check",
        parents=[common],
        help="validate the config and connect each server, one line per server",
    )
    sub.add_parser("demo", help="run the bundled example server (needs no config)")
    sub.add_parser(
        "example-config", help="print a config that runs the bundled example server"
    )
    add_feature_commands(sub, common)
    return parser


def _config_path(ns: argparse.Namespace) -> tuple[str, str]:
    """``(path, source)``, where ``source`` is the flag or variable that named it."""
    flag: str | None = getattr(ns, "mcp_config", None)
    if flag is not None:
        if not flag:
            _usage("--mcp-config: the path is empty")
        return flag, "--mcp-config"
    from_env = os.environ.get(CONFIG_ENV, "")
    if from_env:
        return from_env, CONFIG_ENV
    _usage(
        f"no server config: pass --mcp-config PATH or set {CONFIG_ENV}.\n"
        f"  '{PROG} example-config > servers.json' writes one that runs the bundled "
        "example server;\n"
        f"  '{PROG} demo' runs that server now, with no config."
    )


def _load(ns: argparse.Namespace) -> tuple[str, str, tuple[ServerEntry, ...]]:
    # Imported here so that pydantic loads only for commands that read a config.
    from .config import ConfigError, load_client_config, load_config

    client: str | None = getattr(ns, "from_client", None)
    if client is not None:
        if getattr(ns, "mcp_config", None) is not None:
            _usage("give --mcp-config or --from, not both")
        source = f"--from {client}"
        try:
            path, entries = load_client_config(client)
        except ConfigError as exc:
            # "no file found" names the client itself; a bad file, its path.
            prefix = "--from" if exc.path == client else source
            _usage(f"{prefix} {escape(str(exc))}")
        sys.stderr.write(f"{PROG}: reading {escape(path)} ({source})\n")
        return path, source, entries
    path, source = _config_path(ns)
    try:
        entries = load_config(path)
    except ConfigError as exc:
        _usage(f"{source} {escape(str(exc))}")
    return path, source, entries


def _call_arguments(text: str) -> dict[str, Any]:
    # The arguments sit at depth 3 of the frame (envelope, params, arguments),
    # and json's parser recurses: check the depth first, without recursion.
    deepest = MAX_JSON_DEPTH - 2
    try:
        data = text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        _usage("--args: not valid UTF-8 text")
    if json_depth(data) > deepest:
        _usage(f"--args: nests objects and arrays deeper than {deepest} levels")
    try:
        value = json.loads(text, parse_constant=_no_constant)
    except RecursionError:
        _usage(f"--args: nests objects and arrays deeper than {deepest} levels")
    except ValueError as exc:
        _usage(f"--args: not valid JSON: {escape(str(exc))}")
    if not isinstance(value, dict):
        kind = "an array" if isinstance(value, list) else type(value).__name__
        _usage(f"--args: must be a JSON object, got {kind}")
    return value


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


# --------------------------------------------------------------------------
# Connecting


@dataclass
class _Server:
    index: int
    entry: ServerEntry
    session: Session | None = None
    error: BaseException | None = None


def _kind(entry: ServerEntry) -> str:
    return "http" if hasattr(entry, "url") else "stdio"


def _missing_token(entry: ServerEntry) -> str | None:
    variable: str | None = getattr(entry, "bearer_token_env", None)
    if variable and not os.environ.get(variable):
        return f"bearerTokenEnv {variable} is not set (or is empty)"
    return None


def _connect_all(entries: Sequence[ServerEntry]) -> list[_Server]:
    """Connect every entry at once (each connect blocks on its own handshake)."""
    servers = [_Server(index, entry) for index, entry in enumerate(entries)]

    def attempt(server: _Server) -> None:
        problem = _missing_token(server.entry)
        if problem is not None:
            server.error = _Exit(EXIT_USAGE, problem)
            return
        try:
            server.session = connect(server.entry)
        except Exception as exc:
            server.error = exc

    if servers:
        with ThreadPoolExecutor(max_workers=min(8, len(servers))) as pool:
            list(pool.map(attempt, servers))
    return servers


def _close_all(servers: Sequence[_Server]) -> None:
    sessions = [s.session for s in servers if s.session is not None]
    if len(sessions) == 1:
        sessions[0].close()
    elif sessions:
        # A server may take its grace period to exit; close them side by side.
        with ThreadPoolExecutor(max_workers=min(8, len(sessions))) as pool:
            list(pool.map(lambda session: session.close(), sessions))


def _describe_error(error: BaseException) -> str:
    if isinstance(error, McpError):
        return f"{error.kind}: {escape(str(error))}"
    if isinstance(error, _Exit):
        return escape(error.message)
    return f"{type(error).__name__}: {escape(str(error))}"


def _where(server: _Server, path: str, source: str) -> str:
    return f"server {_q(server.entry.server)} (entry {server.index} of {source} {escape(path)})"


def _project_all(servers: Sequence[_Server], path: str, source: str) -> list[Flow]:
    flows: list[Flow] = []
    for server in servers:
        assert server.session is not None
        try:
            source_flows = project(server.session, **server.entry.projection_kwargs())
        except ProjectionError as exc:
            _usage(f"{_where(server, path, source)}: {escape(str(exc))}")
        flows.extend(source_flows.flows)
    try:
        catalog(flows)
    except DuplicateFlowError as exc:
        _usage(f"{source} {escape(path)}: {escape(str(exc))}; give one server a namePrefix")
    return flows


def _with_servers(ns: argparse.Namespace, body: Callable[[list[Flow]], int]) -> int:
    """Load the config, connect every server, run ``body`` on their flows, close."""
    return _with_sessions(ns, lambda servers, path, source: body(_project_all(servers, path, source)))


def _with_sessions(
    ns: argparse.Namespace, body: Callable[[list[_Server], str, str], int]
) -> int:
    """Load the config, connect every server, run ``body`` on them, close."""
    path, source, entries = _load(ns)
    servers = _connect_all(entries)
    ns.sessions = {server.entry.server: server.session for server in servers}
    try:
        for server in servers:
            if server.error is None:
                continue
            if isinstance(server.error, _Exit) and server.error.code == EXIT_USAGE:
                _usage(f"{_where(server, path, source)}: {server.error.message}")
            # A configured server is one the operator opted into: running
            # without it would leave the command silently short of tools.
            raise _Exit(
                EXIT_CONNECT_FAILED,
                f"{PROG}: {_where(server, path, source)} failed to connect: "
                f"{_describe_error(server.error)}\n"
                f"  every configured server must connect; '{PROG} check' tests each one.",
            )
        return body(servers, path, source)
    finally:
        _close_all(servers)


# --------------------------------------------------------------------------
# Output


def _first_line(text: str | None) -> str:
    if not text:
        return ""
    lines = text.strip().splitlines()
    line = lines[0].strip() if lines else ""
    if len(line) > _DESCRIPTION_WIDTH:
        line = line[: _DESCRIPTION_WIDTH - 1] + "…"
    return line


def _table(header: Sequence[str], rows: Sequence[Sequence[str]], out: IO[str]) -> None:
    widths = [len(h) for h in header]
    for row in rows:
        widths = [max(w, len(cell)) for w, cell in zip(widths, row, strict=True)]
    for row in (header, *rows):
        cells = [cell.ljust(width) for cell, width in zip(row, widths, strict=True)]
        out.write("  ".join(cells).rstrip() + "\n")


def _print_tools(flows: Sequence[Flow], out: IO[str]) -> None:
    rows = []
    for flow in flows:
        described = flow.tool.description if flow.tool is not None else flow.description
        rows.append(
            (escape(flow.name), escape(flow.server or "-"), escape(_first_line(described)))
        )
    _table(("FLOW", "SERVER", "DESCRIPTION"), rows, out)


def _json(value: object) -> str:
    return json.dumps(value, indent=2, ensure_ascii=True)


def _render(result: FlowResult) -> str:
    parts: list[str] = []
    for block in result.content:
        kind = block.get("type")
        shown_kind = escape(kind) if isinstance(kind, str) else "unknown"
        if kind == "text" and isinstance(block.get("text"), str):
            parts.append(escape(block["text"], multiline=True))
        elif kind in ("image", "audio"):
            mime = block.get("mimeType")
            data = block.get("data")
            size = len(data) if isinstance(data, str) else 0
            label = escape(mime) if isinstance(mime, str) else "unknown type"
            parts.append(f"[{shown_kind}: {label}, {size} base64 characters]")
        elif kind == "resource_link":
            uri = block.get("uri")
            parts.append(f"[resource link: {escape(uri) if isinstance(uri, str) else '?'}]")
        elif kind == "resource":
            resource = block.get("resource")
            text = resource.get("text") if isinstance(resource, Mapping) else None
            uri = resource.get("uri") if isinstance(resource, Mapping) else None
            if isinstance(text, str):
                parts.append(escape(text, multiline=True))
            else:
                parts.append(f"[resource: {escape(uri) if isinstance(uri, str) else '?'}]")
        else:
            parts.append(f"[{shown_kind} content]")
    if not parts and result.structured_content is not None:
        parts.append(_json(thaw(result.structured_content)))
    return "\n".join(parts)


# --------------------------------------------------------------------------
# Commands


def _cmd_tools(ns: argparse.Namespace, out: IO[str]) -> int:
    shape = ns.format or ("json" if ns.json else "table")
    if ns.json and shape != "json":
        _usage(f"--json and --format {shape}: give one")

    def body(flows: list[Flow]) -> int:
        if shape == "json":
            out.write(_json([flow.to_dict() for flow in flows]) + "\n")
        elif shape == "table":
            _print_tools(flows, out)
        else:
            out.write(_json(export(flows, shape).tools) + "\n")
        return EXIT_OK

    return _with_servers(ns, body)


def _cmd_call(ns: argparse.Namespace, out: IO[str], err: IO[str]) -> int:
    arguments = _call_arguments(ns.args)  # before anything is spawned

    def body(flows: list[Flow]) -> int:
        by_name = {flow.name: flow for flow in flows}
        flow = by_name.get(ns.flow)
        if flow is None:
            _usage(f"no flow named {_q(ns.flow)}; '{PROG} tools' lists them")
        return _invoke(flow, arguments, ns.json, out, err, ns.sessions.get(flow.server))

    return _with_servers(ns, body)


def _invoke(  # noqa: PLR0917
    flow: Flow,
    arguments: dict[str, Any],
    as_json: bool,
    out: IO[str],
    err: IO[str],
    session: Session | None = None,
) -> int:
    try:
        result = invoke_with_progress(flow, arguments, session, err)
    except FlowFailed as exc:
        raise _Exit(
            EXIT_CALL_FAILED,
            f"{PROG}: flow {_q(flow.name)} failed: {escape(str(exc))} ({exc.cause_kind})",
        ) from None
    text = _json(result.to_dict()) if as_json else _render(result)
    if text:
        out.write(text + "\n")
    if result.is_error:
        err.write(f"{PROG}: flow {_q(flow.name)}: the tool reported an error\n")
        return EXIT_TOOL_ERROR
    return EXIT_OK


def _cmd_check(ns: argparse.Namespace, out: IO[str]) -> int:
    path, source, entries = _load(ns)
    out.write(f"{source} {escape(path)}: {len(entries)} server(s), the file is valid\n")
    servers = _connect_all(entries)
    try:
        failed = 0
        rows = []
        for server in servers:
            name = escape(server.entry.server)
            kind = _kind(server.entry)
            if server.error is not None:
                failed += 1
                rows.append(("FAIL", name, kind, _describe_error(server.error)))
                continue
            assert server.session is not None
            try:
                count = len(project(server.session, **server.entry.projection_kwargs()))
            except ProjectionError as exc:
                failed += 1
                rows.append(("FAIL", name, kind, escape(str(exc))))
                continue
            rows.append(
                (
                    "ok",
                    name,
                    kind,
                    f"{count} flow(s), protocol {escape(server.session.protocol_version)}",
                )
            )
        _table(("", "SERVER", "KIND", "RESULT"), rows, out)
        if failed:
            out.write(f"{failed} of {len(servers)} server(s) failed\n")
            return EXIT_CONNECT_FAILED
        out.write(f"all {len(servers)} server(s) connected\n")
        return EXIT_OK
    finally:
        _close_all(servers)


def _cmd_demo(out: IO[str], err: IO[str]) -> int:
    command = f"{escape(sys.executable)} -m mcp_sync.testing"
    out.write(f"connecting the bundled example server: {command}\n")
    try:
        session = connect(
            server="example", command=sys.executable, args=["-m", "mcp_sync.testing"]
        )
    except McpError as exc:
        raise _Exit(
            EXIT_CONNECT_FAILED,
            f"{PROG}: the example server failed to connect: {_describe_error(exc)}",
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


def _cmd_example_config(out: IO[str]) -> int:
    config = [
        {
            "server": "example",
            "command": sys.executable,
            "args": ["-m", "mcp_sync.testing"],
            "requestTimeoutMs": 30000,
        }
    ]
    out.write(_json(config) + "\n")
    return EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command; returns the exit code (``sys.exit(main())``)."""
    out, err = sys.stdout, sys.stderr
    try:
        ns = _parser().parse_args(argv)
    except SystemExit as exc:  # argparse: --help (0) or a usage error (2)
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    try:
        if ns.command == "tools":
            return _cmd_tools(ns, out)
        if ns.command == "call":
            return _cmd_call(ns, out, err)
        if ns.command == "check":
            return _cmd_check(ns, out)
        if ns.command == "demo":
            return _cmd_demo(out, err)
        if ns.command in FEATURE_COMMANDS:
            return run_feature_command(ns, out, err)
        return _cmd_example_config(out)
    except _Exit as exc:
        out.flush()
        err.write(exc.message + "\n")
        return exc.code
    except KeyboardInterrupt:
        err.write(f"{PROG}: interrupted\n")
        return EXIT_INTERRUPTED
