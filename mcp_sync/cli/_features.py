"""``mcp-sync`` subcommands beyond tools: ``resources``, ``read URI``,
``prompts`` and ``prompt NAME``.

Same config, exit codes and escaping as the rest of the command (see
``mcp_sync.cli``): 2 for usage errors, 3 when a server fails to connect, 4 when
a request fails. ``--server NAME`` (repeatable) connects and asks only the
servers it names; without it, the one server that offers the feature (or, for
``prompt``, the prompt) is used.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping, Sequence
from typing import IO, TYPE_CHECKING, Any

from ..protocol.errors import McpError
from ..protocol.text import escape
from ._common import (
    EXIT_CALL_FAILED,
    EXIT_OK,
    PROG,
    CliExit,
    Server,
    call_arguments,
    first_line,
    quoted,
    table,
    to_json,
    usage,
    with_sessions,
)

if TYPE_CHECKING:
    from ..session.api import Session

__all__ = ["FEATURE_COMMANDS", "add_feature_commands", "run_feature_command"]

FEATURE_COMMANDS = frozenset({"resources", "read", "prompts", "prompt"})


def add_feature_commands(sub: Any, common: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """Add the subcommands to the ``mcp-sync`` parser; returns ``prompt``'s,
    whose name ``--args`` may take."""
    resources = sub.add_parser("resources", parents=[common], help="list the resources of every configured server")
    resources.add_argument("--templates", action="store_true", help="list resource templates instead")
    resources.add_argument("--json", action="store_true", help="print them as JSON")

    read = sub.add_parser("read", parents=[common], help="read one resource and print its contents")
    read.add_argument("uri", metavar="URI", help="the resource's URI")
    read.add_argument("--json", action="store_true", help="print the whole result as JSON (blobs in base64)")

    prompts = sub.add_parser("prompts", parents=[common], help="list the prompts of every configured server")
    prompts.add_argument("--json", action="store_true", help="print them as JSON")

    prompt = sub.add_parser(
        "prompt",
        parents=[common],
        help="get one prompt and print its messages",
        usage=f"{PROG} prompt NAME [--args ARG [ARG ...]] [--json] [--server NAME] "
        "[--mcp-config PATH | --from CLIENT [--trust-project]]",
    )
    prompt.add_argument("name", metavar="NAME", nargs="?", help="the prompt's name")
    prompt.add_argument(
        "--args",
        metavar="ARG",
        nargs="+",
        action="extend",
        help="its arguments, one or more after each --args: a JSON object of strings, KEY=VALUE "
        "or @FILE.json",
    )
    prompt.add_argument("--json", action="store_true", help="print the whole result as JSON")
    return {"prompt": prompt}


def run_feature_command(ns: argparse.Namespace, out: IO[str], err: IO[str]) -> int:
    if ns.command == "prompt":
        arguments = _prompt_arguments(ns.args)  # before anything is spawned
        return with_sessions(ns, lambda servers, path, source: _get_prompt(ns, servers, arguments, out))
    command: Callable[[argparse.Namespace, list[Server], IO[str]], int] = {
        "resources": _list_resources,
        "read": _read,
        "prompts": _list_prompts,
    }[ns.command]
    return with_sessions(ns, lambda servers, path, source: command(ns, servers, out))


# --------------------------------------------------------------------- helpers


def _failed(what: str, error: McpError) -> Exception:
    return CliExit(EXIT_CALL_FAILED, f"{PROG}: {what} failed: {error.kind}: {escape(str(error))}")


def _offers(session: Session, capability: str) -> bool:
    return isinstance(session.server_capabilities.get(capability), Mapping)


def _chosen(ns: argparse.Namespace, servers: list[Server], capability: str) -> list[Session]:
    """The sessions a command asks: ``--server``'s, or every one that offers it."""
    sessions = [server.session for server in servers if server.session is not None]
    if ns.server:  # only the named servers were connected
        for session in sessions:
            if not _offers(session, capability):
                raise CliExit(EXIT_CALL_FAILED, f"{PROG}: server {quoted(session.server)} does not offer {capability}")
        return sessions
    return [session for session in sessions if _offers(session, capability)]


def _one(ns: argparse.Namespace, servers: list[Server], capability: str) -> Session:
    sessions = _chosen(ns, servers, capability)
    if not sessions:
        raise CliExit(EXIT_CALL_FAILED, f"{PROG}: no configured server offers {capability}")
    if len(sessions) > 1:
        names = ", ".join(quoted(session.server) for session in sessions)
        usage(f"several servers offer {capability} ({names}); pick one with --server")
    return sessions[0]


def _prompt_arguments(text: list[str] | None) -> dict[str, str]:
    value = call_arguments(text, strings=True)
    if not all(isinstance(item, str) for item in value.values()):
        usage("--args: prompt arguments must all be strings")
    return value


# --------------------------------------------------------------------- commands


def _list_resources(ns: argparse.Namespace, servers: list[Server], out: IO[str]) -> int:
    rows: list[tuple[str, ...]] = []
    found: list[dict[str, Any]] = []
    for session in _chosen(ns, servers, "resources"):
        try:
            items: Sequence[Any] = (
                session.list_resource_templates() if ns.templates else session.list_resources()
            )
        except McpError as exc:
            raise _failed(f"listing the resources of server {quoted(session.server)}", exc) from None
        for item in items:
            found.append({"server": session.server, **item.to_dict()})
            uri = item.uri_template if ns.templates else item.uri
            rows.append(
                (escape(session.server), escape(uri), escape(item.name), escape(first_line(item.description)))
            )
    if ns.json:
        out.write(to_json(found) + "\n")
    else:
        table(("SERVER", "URI TEMPLATE" if ns.templates else "URI", "NAME", "DESCRIPTION"), rows, out)
    return EXIT_OK


def _read(ns: argparse.Namespace, servers: list[Server], out: IO[str]) -> int:
    session = _one(ns, servers, "resources")
    try:
        result = session.read_resource(ns.uri)
    except McpError as exc:
        raise _failed(f"reading {quoted(ns.uri)} from server {quoted(session.server)}", exc) from None
    if ns.json:
        out.write(to_json(result.to_dict()) + "\n")
        return EXIT_OK
    for item in result.contents:
        if item.text is not None:
            out.write(escape(item.text, multiline=True) + ("" if item.text.endswith("\n") else "\n"))
        else:
            mime = escape(item.mime_type) if item.mime_type else "unknown type"
            size = len(item.blob or b"")
            out.write(f"[blob {escape(item.uri)}: {mime}, {size} bytes; --json shows it in base64]\n")
    return EXIT_OK


def _list_prompts(ns: argparse.Namespace, servers: list[Server], out: IO[str]) -> int:
    rows: list[tuple[str, ...]] = []
    found: list[dict[str, Any]] = []
    for session in _chosen(ns, servers, "prompts"):
        try:
            prompts = session.list_prompts()
        except McpError as exc:
            raise _failed(f"listing the prompts of server {quoted(session.server)}", exc) from None
        for prompt in prompts:
            found.append({"server": session.server, **prompt.to_dict()})
            arguments = ", ".join(a.name + ("" if a.required else "?") for a in prompt.arguments)
            rows.append(
                (escape(session.server), escape(prompt.name), escape(arguments),
                 escape(first_line(prompt.description)))
            )  # fmt: skip
    if ns.json:
        out.write(to_json(found) + "\n")
    else:
        table(("SERVER", "PROMPT", "ARGUMENTS", "DESCRIPTION"), rows, out)
    return EXIT_OK


def _get_prompt(ns: argparse.Namespace, servers: list[Server], arguments: dict[str, str], out: IO[str]) -> int:
    if ns.server and len(servers) == 1:
        session = _one(ns, servers, "prompts")
    else:
        holders = []
        for candidate in _chosen(ns, servers, "prompts"):
            try:
                names = {prompt.name for prompt in candidate.list_prompts()}
            except McpError as exc:
                raise _failed(f"listing the prompts of server {quoted(candidate.server)}", exc) from None
            if ns.name in names:
                holders.append(candidate)
        if not holders:
            usage(f"no configured server has a prompt named {quoted(ns.name)}; '{PROG} prompts' lists them")
        if len(holders) > 1:
            usage(f"several servers have a prompt named {quoted(ns.name)}; pick one with --server")
        session = holders[0]
    try:
        result = session.get_prompt(ns.name, arguments)
    except McpError as exc:
        raise _failed(f"prompt {quoted(ns.name)} of server {quoted(session.server)}", exc) from None
    if ns.json:
        out.write(to_json(result.to_dict()) + "\n")
        return EXIT_OK
    for message in result.messages:
        content = message.content
        text = content.get("text") if content.get("type") == "text" else None
        kind = escape(str(content.get("type")))
        shown = escape(text, multiline=True) if isinstance(text, str) else f"[{kind} content]"
        out.write(f"{escape(message.role)}: {shown}\n")
    return EXIT_OK
