"""``mcp-sync`` subcommands beyond tools: ``resources``, ``read URI``,
``prompts``, ``prompt NAME``, and progress on stderr for ``call``.

Same config, exit codes and escaping as the rest of the command (see
``mcp_sync.cli``): 2 for usage errors, 3 when a server fails to connect, 4 when
a request fails. With several configured servers, ``--server NAME`` picks one;
without it the one server that offers the feature (or, for ``prompt``, the
prompt) is used.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping, Sequence
from typing import IO, TYPE_CHECKING, Any

from ._errors import McpError
from ._text import escape

if TYPE_CHECKING:
    from ._session_api import Session
    from .cli import _Server
    from .flows import Flow, FlowResult

__all__ = ["FEATURE_COMMANDS", "add_feature_commands", "invoke_with_progress", "run_feature_command"]

FEATURE_COMMANDS = frozenset({"resources", "read", "prompts", "prompt"})
_PROGRESS_WIDTH = 100


def add_feature_commands(sub: Any, common: argparse.ArgumentParser) -> None:
    """Add the subcommands to the ``mcp-sync`` parser."""
    server_help = "the configured server to ask (needed when several could answer)"

    resources = sub.add_parser("resources", parents=[common], help="list the resources of every configured server")
    resources.add_argument("--templates", action="store_true", help="list resource templates instead")
    resources.add_argument("--server", metavar="NAME", help=server_help)
    resources.add_argument("--json", action="store_true", help="print them as JSON")

    read = sub.add_parser("read", parents=[common], help="read one resource and print its contents")
    read.add_argument("uri", metavar="URI", help="the resource's URI")
    read.add_argument("--server", metavar="NAME", help=server_help)
    read.add_argument("--json", action="store_true", help="print the whole result as JSON (blobs in base64)")

    prompts = sub.add_parser("prompts", parents=[common], help="list the prompts of every configured server")
    prompts.add_argument("--server", metavar="NAME", help=server_help)
    prompts.add_argument("--json", action="store_true", help="print them as JSON")

    prompt = sub.add_parser("prompt", parents=[common], help="get one prompt and print its messages")
    prompt.add_argument("name", metavar="NAME", help="the prompt's name")
    prompt.add_argument("--args", metavar="JSON", default="{}", help="its arguments, a JSON object of strings")
    prompt.add_argument("--server", metavar="NAME", help=server_help)
    prompt.add_argument("--json", action="store_true", help="print the whole result as JSON")


def run_feature_command(ns: argparse.Namespace, out: IO[str], err: IO[str]) -> int:
    from . import cli

    if ns.command == "prompt":
        arguments = _prompt_arguments(ns.args)  # before anything is spawned
        return cli._with_sessions(ns, lambda servers, path, source: _get_prompt(ns, servers, arguments, out))
    command: Callable[[argparse.Namespace, list[_Server], IO[str]], int] = {
        "resources": _list_resources,
        "read": _read,
        "prompts": _list_prompts,
    }[ns.command]
    return cli._with_sessions(ns, lambda servers, path, source: command(ns, servers, out))


# --------------------------------------------------------------------- helpers


def _failed(what: str, error: McpError) -> Exception:
    from . import cli

    return cli._Exit(cli.EXIT_CALL_FAILED, f"{cli.PROG}: {what} failed: {error.kind}: {escape(str(error))}")


def _offers(session: Session, capability: str) -> bool:
    return isinstance(session.server_capabilities.get(capability), Mapping)


def _chosen(ns: argparse.Namespace, servers: list[_Server], capability: str) -> list[Session]:
    """The sessions a command asks: ``--server``'s, or every one that offers it."""
    from . import cli

    sessions = [server.session for server in servers if server.session is not None]
    if ns.server is not None:
        named = [session for session in sessions if session.server == ns.server]
        if not named:
            cli._usage(f"--server: no configured server is named {cli._q(ns.server)}")
        if not _offers(named[0], capability):
            raise cli._Exit(
                cli.EXIT_CALL_FAILED,
                f"{cli.PROG}: server {cli._q(ns.server)} does not offer {capability}",
            )
        return named
    return [session for session in sessions if _offers(session, capability)]


def _one(ns: argparse.Namespace, servers: list[_Server], capability: str) -> Session:
    from . import cli

    sessions = _chosen(ns, servers, capability)
    if not sessions:
        raise cli._Exit(cli.EXIT_CALL_FAILED, f"{cli.PROG}: no configured server offers {capability}")
    if len(sessions) > 1:
        names = ", ".join(cli._q(session.server) for session in sessions)
        cli._usage(f"several servers offer {capability} ({names}); pick one with --server")
    return sessions[0]


def _prompt_arguments(text: str) -> dict[str, str]:
    from . import cli

    value = cli._call_arguments(text)
    if not all(isinstance(item, str) for item in value.values()):
        cli._usage("--args: prompt arguments must all be strings")
    return value


# --------------------------------------------------------------------- commands


def _list_resources(ns: argparse.Namespace, servers: list[_Server], out: IO[str]) -> int:
    from . import cli

    rows: list[tuple[str, ...]] = []
    found: list[dict[str, Any]] = []
    for session in _chosen(ns, servers, "resources"):
        try:
            items: Sequence[Any] = (
                session.list_resource_templates() if ns.templates else session.list_resources()
            )
        except McpError as exc:
            raise _failed(f"listing the resources of server {cli._q(session.server)}", exc) from None
        for item in items:
            found.append({"server": session.server, **item.to_dict()})
            uri = item.uri_template if ns.templates else item.uri
            rows.append(
                (escape(session.server), escape(uri), escape(item.name), escape(cli._first_line(item.description)))
            )
    if ns.json:
        out.write(cli._json(found) + "\n")
    else:
        cli._table(("SERVER", "URI TEMPLATE" if ns.templates else "URI", "NAME", "DESCRIPTION"), rows, out)
    return cli.EXIT_OK


def _read(ns: argparse.Namespace, servers: list[_Server], out: IO[str]) -> int:
    from . import cli

    session = _one(ns, servers, "resources")
    try:
        result = session.read_resource(ns.uri)
    except McpError as exc:
        raise _failed(f"reading {cli._q(ns.uri)} from server {cli._q(session.server)}", exc) from None
    if ns.json:
        out.write(cli._json(result.to_dict()) + "\n")
        return cli.EXIT_OK
    for item in result.contents:
        if item.text is not None:
            out.write(escape(item.text, multiline=True) + ("" if item.text.endswith("\n") else "\n"))
        else:
            mime = escape(item.mime_type) if item.mime_type else "unknown type"
            size = len(item.blob or b"")
            out.write(f"[blob {escape(item.uri)}: {mime}, {size} bytes; --json shows it in base64]\n")
    return cli.EXIT_OK


def _list_prompts(ns: argparse.Namespace, servers: list[_Server], out: IO[str]) -> int:
    from . import cli

    rows: list[tuple[str, ...]] = []
    found: list[dict[str, Any]] = []
    for session in _chosen(ns, servers, "prompts"):
        try:
            prompts = session.list_prompts()
        except McpError as exc:
            raise _failed(f"listing the prompts of server {cli._q(session.server)}", exc) from None
        for prompt in prompts:
            found.append({"server": session.server, **prompt.to_dict()})
            arguments = ", ".join(a.name + ("" if a.required else "?") for a in prompt.arguments)
            rows.append(
                (escape(session.server), escape(prompt.name), escape(arguments),
                 escape(cli._first_line(prompt.description)))
            )  # fmt: skip
    if ns.json:
        out.write(cli._json(found) + "\n")
    else:
        cli._table(("SERVER", "PROMPT", "ARGUMENTS", "DESCRIPTION"), rows, out)
    return cli.EXIT_OK


def _get_prompt(ns: argparse.Namespace, servers: list[_Server], arguments: dict[str, str], out: IO[str]) -> int:
    from . import cli

    if ns.server is not None:
        session = _one(ns, servers, "prompts")
    else:
        holders = []
        for candidate in _chosen(ns, servers, "prompts"):
            try:
                names = {prompt.name for prompt in candidate.list_prompts()}
            except McpError as exc:
                raise _failed(f"listing the prompts of server {cli._q(candidate.server)}", exc) from None
            if ns.name in names:
                holders.append(candidate)
        if not holders:
            cli._usage(f"no configured server has a prompt named {cli._q(ns.name)}; '{cli.PROG} prompts' lists them")
        if len(holders) > 1:
            cli._usage(f"several servers have a prompt named {cli._q(ns.name)}; pick one with --server")
        session = holders[0]
    try:
        result = session.get_prompt(ns.name, arguments)
    except McpError as exc:
        raise _failed(f"prompt {cli._q(ns.name)} of server {cli._q(session.server)}", exc) from None
    if ns.json:
        out.write(cli._json(result.to_dict()) + "\n")
        return cli.EXIT_OK
    for message in result.messages:
        content = message.content
        text = content.get("text") if content.get("type") == "text" else None
        kind = escape(str(content.get("type")))
        shown = escape(text, multiline=True) if isinstance(text, str) else f"[{kind} content]"
        out.write(f"{escape(message.role)}: {shown}\n")
    return cli.EXIT_OK


# --------------------------------------------------------------------- progress on stderr


def invoke_with_progress(
    flow: Flow, arguments: dict[str, Any], session: Session | None, err: IO[str]
) -> FlowResult:
    """``flow.invoke``, showing the call's progress on ``err`` when it is a
    terminal (one line, rewritten in place, cleared at the end)."""
    from .flows import FlowFailed, FlowResult

    isatty = getattr(err, "isatty", None)
    if session is None or flow.tool is None or isatty is None or not isatty():
        return flow.invoke(arguments)
    label = escape(flow.name)
    shown = False

    def report(progress: float, total: float | None, message: str | None) -> None:
        nonlocal shown
        line = f"{label}: {progress:g}" + (f"/{total:g}" if total is not None else "")
        if message:
            line += f" {escape(message)}"
        err.write("\r\x1b[K" + line[:_PROGRESS_WIDTH])
        err.flush()
        shown = True

    try:
        result = session.call_tool(flow.tool.name, arguments, on_progress=report)
    except McpError as exc:
        raise FlowFailed(str(exc), flow=flow.name, cause_kind=exc.kind) from exc
    finally:
        if shown:
            err.write("\r\x1b[K")
            err.flush()
    return FlowResult.from_call(result)

