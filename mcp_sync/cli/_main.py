"""The ``mcp-sync`` argument parser and the dispatch to each command."""

from __future__ import annotations

import argparse
import math
import os
import sys
from collections.abc import Sequence
from typing import Any

from ..config.locations import CLIENTS
from ..model_tools import PROVIDERS
from ._common import CONFIG_ENV, EXIT_INTERRUPTED, EXIT_USAGE, PROG, CliExit, looks_like_argument
from ._features import FEATURE_COMMANDS, add_feature_commands, run_feature_command
from ._tools import cmd_call, cmd_check, cmd_demo, cmd_example_config, cmd_tools
from ._version import version_report

__all__ = ["main"]

# What a shell reports for a process killed by SIGPIPE (128 + 13).
EXIT_BROKEN_PIPE = 141
# A week: far past any call, well inside what threading's waits accept.
MAX_TIMEOUT_MS = 7 * 24 * 3600 * 1000


class _Version(argparse.Action):
    """``--version``: computed only when asked (it scans the installed distributions)."""

    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, *args: Any, **kwargs: Any) -> None:
        line, warnings = version_report()
        sys.stdout.write(line + "\n")
        sys.stdout.flush()
        for warning in warnings:
            sys.stderr.write(f"{PROG}: warning: {warning}\n")
        parser.exit(0)


def _seconds(text: str) -> int:
    """``--timeout``: seconds (a decimal number) to whole milliseconds."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not math.isfinite(value) or value <= 0 or value * 1000 > MAX_TIMEOUT_MS:
        raise argparse.ArgumentTypeError(f"must be more than 0 and at most {MAX_TIMEOUT_MS // 1000} seconds")
    return max(1, round(value * 1000))


def _global_options(parser: argparse.ArgumentParser, *, after: bool) -> None:
    """The options every command that reads a config takes, on either side of
    the command's name. Given after it, a value leaves one given before it in
    place unless it names the same option again (``SUPPRESS``); ``--server``
    collects its names from both sides (``server_before`` holds the first)."""
    kept: dict[str, Any] = {"default": argparse.SUPPRESS} if after else {}
    if after:
        parser.add_argument("--version", action=_Version, help=argparse.SUPPRESS)
    parser.add_argument(
        "--mcp-config", metavar="PATH", **kept,
        help=f"the JSON file of servers (default: ${CONFIG_ENV}; this flag wins)",
    )  # fmt: skip
    parser.add_argument(
        "--from", dest="from_client", choices=CLIENTS, **kept,
        help="read the servers another MCP client runs, from its well-known config file "
        "(the project's first, then the user's)",
    )  # fmt: skip
    parser.add_argument(
        "--trust-project", action="store_true", **kept,
        help="run the commands, and send requests to the URLs, of a project's file read by --from "
        "(a checkout's .mcp.json) without asking",
    )  # fmt: skip
    parser.add_argument(
        "--server", dest="server" if after else "server_before", metavar="NAME", action="append",
        help="connect only this configured server (repeatable; default: every one)",
    )  # fmt: skip


def _parser() -> tuple[argparse.ArgumentParser, dict[str, argparse.ArgumentParser]]:
    """The parser, and the subcommands' parsers whose name argument
    ``--args`` may have taken (see :func:`_flow_after_args`)."""
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Connect the MCP servers of a config file and list or call their tools.",
        epilog=(
            "The options above may also be given after the command. "
            "exit codes: 0 ok, 1 the tool reported an error, 2 usage or config error, "
            "3 a server failed to connect, 4 the call failed, 130 interrupted, 141 stdout closed. "
            f"Try '{PROG} demo' to see the bundled example server."
        ),
    )
    parser.add_argument(
        "--version", action=_Version, help="print the version, and warn when mcp_sync is not this project's"
    )
    _global_options(parser, after=False)
    common = argparse.ArgumentParser(add_help=False)
    _global_options(common, after=True)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    tools = sub.add_parser("tools", parents=[common], help="list the flows of every configured server")
    tools.add_argument("--json", action="store_true", help="print the flow declarations as JSON")
    tools.add_argument(
        "--format",
        choices=("table", "json", *PROVIDERS),
        default=None,
        help="table (default), json (the flow declarations), or a model provider's tool "
        "list: " + ", ".join(PROVIDERS),
    )

    call = sub.add_parser(
        "call",
        parents=[common],
        help="call one flow and print its result",
        usage=f"{PROG} call FLOW [--args ARG [ARG ...]] [--timeout SECONDS] [--json] [--server NAME] "
        "[--mcp-config PATH | --from CLIENT [--trust-project]]",
    )
    call.add_argument(
        "flow",
        metavar="FLOW",
        nargs="?",
        help="the flow name (mcp/example/echo), or the tool's name when only one server has it",
    )
    call.add_argument(
        "--args",
        metavar="ARG",
        nargs="+",
        action="extend",
        help="the arguments, one or more after each --args: a JSON object, KEY=VALUE (VALUE is "
        "JSON when it parses, text otherwise), or @FILE.json (default: none)",
    )
    call.add_argument(
        "--timeout",
        metavar="SECONDS",
        type=_seconds,
        help="how long the call may take, in seconds (default: the server's requestTimeoutMs); "
        "each progress report moves the deadline to now plus this, up to ten times it",
    )
    call.add_argument("--json", action="store_true", help="print the whole result as JSON")

    sub.add_parser(
        "check",
        parents=[common],
        help="validate the config and connect each server, one line per server",
    )
    sub.add_parser("demo", help="run the bundled example server (needs no config)")
    sub.add_parser("example-config", help="print a config that runs the bundled example server")
    named = {"call": call, **add_feature_commands(sub, common)}
    return parser, named


_NAME_ARGUMENT = {"call": "flow", "prompt": "name"}


def _flow_after_args(ns: argparse.Namespace, named: dict[str, argparse.ArgumentParser]) -> None:
    """``call --args a=1 b=2 FLOW``: ``--args`` takes every word up to the next
    option, so a last word that cannot be an argument (no ``=``, not JSON,
    not ``@FILE``) is the name the command needs."""
    dest = _NAME_ARGUMENT.get(ns.command)
    if dest is None or getattr(ns, dest) is not None:
        return
    words: list[str] = ns.args or []
    if words and not looks_like_argument(words[-1]):
        setattr(ns, dest, words.pop())
        ns.args = words or None
        return
    named[ns.command].error(f"the following arguments are required: {dest.upper()}")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command; returns the exit code (``sys.exit(main())``)."""
    try:
        code = _run(argv)
        sys.stdout.flush()
    except BrokenPipeError:
        # The reader went away (``mcp-sync tools | head -1``): end quietly.
        # stdout points at devnull from here on so that the interpreter's own
        # flush at exit does not fail again (the idiom of Python's signal docs).
        _stdout_to_devnull()
        return EXIT_BROKEN_PIPE
    return code


def _stdout_to_devnull() -> None:
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # not a real file (a test's StringIO)
        pass


def _run(argv: Sequence[str] | None) -> int:
    out, err = sys.stdout, sys.stderr
    parser, named = _parser()
    try:
        ns = parser.parse_args(argv)
        _flow_after_args(ns, named)
    except SystemExit as exc:  # argparse: --help (0) or a usage error (2)
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    if hasattr(ns, "server_before"):
        before, after = ns.server_before or [], getattr(ns, "server", None) or []
        ns.server = [*before, *after] or None
    try:
        if ns.command == "tools":
            return cmd_tools(ns, out)
        if ns.command == "call":
            return cmd_call(ns, out, err)
        if ns.command == "check":
            return cmd_check(ns, out)
        if ns.command == "demo":
            return cmd_demo(out, err)
        if ns.command in FEATURE_COMMANDS:
            return run_feature_command(ns, out, err)
        return cmd_example_config(out)
    except CliExit as exc:
        out.flush()
        err.write(exc.message + "\n")
        return exc.code
    except KeyboardInterrupt:
        err.write(f"{PROG}: interrupted\n")
        return EXIT_INTERRUPTED
