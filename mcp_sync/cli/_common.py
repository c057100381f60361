"""What every ``mcp-sync`` command shares: exit codes, the error that ends a
command, terminal-safe output, reading the config, connecting its servers and
parsing ``--args``.

The command modules (``_tools``, ``_features``, ``session.progress``) import from here
and never from each other's privates; this module imports none of them.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING, Any, NoReturn

from ..flows import DuplicateFlowError, Flow, ProjectionError, catalog, project
from ..protocol.errors import McpError
from ..protocol.frames import json_depth
from ..protocol.limits import MAX_JSON_DEPTH
from ..protocol.text import escape
from ..session.connect import connect
from ..session.eras.negotiation import EraMemory, remembering
from ..session.eras.opening import observing
from ._starting import StartingStatus

if TYPE_CHECKING:
    import argparse

    from ..config import ServerEntry
    from ..protocol.redaction import DiagnosticEvent
    from ..session.api import Session
    from ..session.options import ConnectOptions, HttpConnectOptions

EXIT_OK = 0
EXIT_TOOL_ERROR = 1
EXIT_USAGE = 2
EXIT_CONNECT_FAILED = 3
EXIT_CALL_FAILED = 4
EXIT_INTERRUPTED = 130

CONFIG_ENV = "MCP_SYNC_CONFIG"
PROG = "mcp-sync"
DESCRIPTION_WIDTH = 100
# How much of a failed server's stderr a message shows: the lines that say
# why (mcp_sync.protocol.stderr_tail chooses them), each cut to a width.
STDERR_LINES = 12
STDERR_LINE_CHARS = 160
SERVER_HINT = f"'{PROG} check' tests each one; --server NAME picks the ones to use"


# --------------------------------------------------------------------------
# Errors that end the command


class CliExit(Exception):
    """Print ``message`` to stderr and exit with ``code``."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def usage(message: str) -> NoReturn:
    raise CliExit(EXIT_USAGE, f"{PROG}: error: {message}")


def describe_error(error: BaseException) -> str:
    if isinstance(error, McpError):
        return f"{error.kind}: {escape(str(error))}"
    if isinstance(error, CliExit):
        return escape(error.message)
    return f"{type(error).__name__}: {escape(str(error))}"


# --------------------------------------------------------------------------
# Output. Server text goes through escape() (mcp_sync.protocol.text) so it cannot
# move the cursor, recolour the terminal or reorder what is shown.


def quoted(text: str) -> str:
    return f'"{escape(text)}"'


def first_line(text: str | None) -> str:
    if not text:
        return ""
    lines = text.strip().splitlines()
    line = lines[0].strip() if lines else ""
    if len(line) > DESCRIPTION_WIDTH:
        line = line[: DESCRIPTION_WIDTH - 1] + "…"
    return line


def table(header: Sequence[str], rows: Sequence[Sequence[str]], out: IO[str]) -> None:
    widths = [len(h) for h in header]
    for row in rows:
        widths = [max(w, len(cell)) for w, cell in zip(widths, row, strict=True)]
    for row in (header, *rows):
        cells = [cell.ljust(width) for cell, width in zip(row, widths, strict=True)]
        out.write("  ".join(cells).rstrip() + "\n")


def to_json(value: object) -> str:
    return json.dumps(value, indent=2, ensure_ascii=True)


# --------------------------------------------------------------------------
# --args

# A file of arguments is read with the bound a config file has.
MAX_ARGS_FILE_BYTES = 16 * 1024 * 1024
# The arguments sit at depth 3 of the frame (envelope, params, arguments).
_DEEPEST = MAX_JSON_DEPTH - 2


def call_arguments(texts: Sequence[str] | None, *, strings: bool = False) -> dict[str, Any]:
    """The arguments of every ``--args``, merged: each is a JSON object,
    ``@FILE`` (a file holding one) or ``KEY=VALUE``, whose value is parsed
    as JSON when it parses and kept as text otherwise (always kept as text
    with ``strings``). A key given twice is a usage error."""
    merged: dict[str, Any] = {}
    for text in texts or ["{}"]:
        for key, value in _one_argument(text, strings).items():
            if key in merged:
                usage(f"--args: the argument {quoted(key)} is given twice")
            merged[key] = value
    return merged


_JSON_OPENERS = ("{", "[", '"')


def looks_like_argument(text: str) -> bool:
    """Whether a word after ``--args`` is meant as arguments: ``@FILE``,
    ``KEY=VALUE``, or JSON (an object, or what is written like one)."""
    if text.startswith("@") or "=" in text or text.lstrip().startswith(_JSON_OPENERS):
        return True
    try:
        json.loads(text)
    except (ValueError, RecursionError):
        return False
    return True


def _one_argument(text: str, strings: bool) -> dict[str, Any]:
    if text.startswith("@"):
        return _json_object(_read_arguments_file(text[1:]), f"--args @{escape(text[1:])}")
    key, equals, value = text.partition("=")
    if equals and not text.lstrip().startswith(_JSON_OPENERS):
        if not key:
            usage(f"--args {quoted(text)}: KEY=VALUE needs a key")
        return {key: value if strings else _json_or_text(value)}
    if not looks_like_argument(text):
        usage(f"--args {quoted(text)}: expected KEY=VALUE, a JSON object or @FILE.json")
    return _json_object(text, "--args")


def _json_or_text(text: str) -> Any:
    try:
        return _parse(text, "--args")
    except ValueError:
        return text


def _parse(text: str, label: str) -> Any:
    # json's parser recurses: check the depth first, without recursion.
    try:
        data = text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        usage(f"{label}: not valid UTF-8 text")
    if json_depth(data) > _DEEPEST:
        usage(f"{label}: nests objects and arrays deeper than {_DEEPEST} levels")
    try:
        return json.loads(text, parse_constant=_no_constant)
    except RecursionError:
        usage(f"{label}: nests objects and arrays deeper than {_DEEPEST} levels")


def _json_object(text: str, label: str) -> dict[str, Any]:
    try:
        value = _parse(text, label)
    except ValueError as exc:
        usage(f"{label}: not valid JSON: {escape(str(exc))}")
    if not isinstance(value, dict):
        kind = "an array" if isinstance(value, list) else type(value).__name__
        usage(f"{label}: must be a JSON object, got {kind}")
    return value


def _read_arguments_file(path: str) -> str:
    label = f"--args @{escape(path)}"
    if not path:
        usage("--args @: the path is empty")
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_ARGS_FILE_BYTES + 1)
    except FileNotFoundError:
        usage(f"{label}: file not found")
    except IsADirectoryError:
        usage(f"{label}: is a directory, not a file")
    except OSError as exc:
        usage(f"{label}: cannot be read: {escape(exc.strerror or type(exc).__name__)}")
    if len(data) > MAX_ARGS_FILE_BYTES:
        usage(f"{label}: is larger than {MAX_ARGS_FILE_BYTES} bytes")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        usage(f"{label}: is not UTF-8 text")


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


# --------------------------------------------------------------------------
# The config


def _config_path(ns: argparse.Namespace) -> tuple[str, str]:
    """``(path, source)``, where ``source`` is the flag or variable that named it."""
    flag: str | None = getattr(ns, "mcp_config", None)
    if flag is not None:
        if not flag:
            usage("--mcp-config: the path is empty")
        return flag, "--mcp-config"
    from_env = os.environ.get(CONFIG_ENV, "")
    if from_env:
        return from_env, CONFIG_ENV
    usage(
        f"no server config: pass --mcp-config PATH or set {CONFIG_ENV}.\n"
        f"  '{PROG} example-config > servers.json' writes one that runs the bundled "
        "example server;\n"
        f"  '{PROG} demo' runs that server now, with no config."
    )


def load(ns: argparse.Namespace) -> tuple[str, str, tuple[ServerEntry, ...]]:
    """``(path, source, entries)`` of the config the flags or variable name."""
    # Imported here so that pydantic loads only for commands that read a config.
    from ..config import ConfigError, load_client_config, load_config

    client: str | None = getattr(ns, "from_client", None)
    if client is not None:
        if getattr(ns, "mcp_config", None) is not None:
            usage("give --mcp-config or --from, not both")
        source = f"--from {client}"
        try:
            path, entries = load_client_config(client)
        except ConfigError as exc:
            # "no file found" names the client itself; a bad file, its path.
            prefix = "--from" if exc.path == client else source
            usage(f"{prefix} {escape(str(exc))}")
        sys.stderr.write(f"{PROG}: reading {escape(path)} ({source})\n")
        _trust_project_file(ns, client, path, entries)
        return path, source, entries
    path, source = _config_path(ns)
    try:
        entries = load_config(path)
    except ConfigError as exc:
        usage(f"{source} {escape(str(exc))}")
    return path, source, entries


def _trust_project_file(
    ns: argparse.Namespace, client: str, path: str, entries: tuple[ServerEntry, ...]
) -> None:
    """A project's file (a checkout's ``.mcp.json``) is written by whoever
    wrote the checkout: its commands run, and its URLs are sent requests
    (with the headers and variables it names), only once the user says so,
    on a terminal, or with ``--trust-project``. A user-scope file is the
    user's own."""
    from ..config.locations import candidates

    scopes = {str(location.path): location.scope for location in candidates(client)}
    if scopes.get(path) != "project" or not entries or getattr(ns, "trust_project", False):
        return
    commands = sum(1 for entry in entries if not hasattr(entry, "url"))
    urls = len(entries) - commands
    would = " and ".join(
        part
        for part in (
            f"run {commands} command(s)" if commands else "",
            f"send requests to {urls} URL(s)" if urls else "",
        )
        if part
    )
    if not (sys.stdin.isatty() and sys.stderr.isatty()):
        usage(
            f"--from {client}: {escape(path)} is a project's file and would {would}; "
            "refusing without a terminal to ask. Pass --trust-project if you trust this checkout"
        )
    sys.stderr.write("".join(line + "\n" for line in consent_lines(path, entries)))
    if commands and urls:
        question = "Run these commands and send these requests?"
    elif commands:
        question = "Run these commands?"
    else:
        question = "Send these requests?"
    sys.stderr.write(f"{question} [y/N] ")
    sys.stderr.flush()
    answer = sys.stdin.readline().strip().lower()
    if answer not in ("y", "yes"):
        usage(f"--from {client}: not trusted; nothing was run or sent")


def consent_lines(path: str, entries: Sequence[ServerEntry]) -> list[str]:
    """What the trust question shows of a project's file: every entry, with
    everything that decides what runs or where the user's values go. A stdio
    server: the file its command resolves to (on the ``PATH`` its ``env``
    sets), its arguments, ``cwd`` and ``env``; an HTTP server: its URL,
    headers, bearer token variable and OAuth settings. What a ``${VAR}``
    expanded to is shown as the reference (its ``Secret`` renders so); what
    the file wrote is shown as it is, escaped for the terminal."""
    from ..session.options import ConnectOptions, HttpConnectOptions

    stdio = [entry for entry in entries if isinstance(entry, ConnectOptions)]
    http = [entry for entry in entries if isinstance(entry, HttpConnectOptions)]
    lines: list[str] = []
    head = f"{PROG}: {escape(path)} is a project's file; it"
    if stdio:
        lines.append(f"{head} runs:")
        for command in stdio:
            lines += _command_lines(command)
    if http:
        lines.append("and it sends requests to:" if stdio else f"{head} sends requests to:")
        for remote in http:
            lines += _request_lines(remote)
    if _has_reference(entries):
        lines.append(
            "  (${NAME} stands for the value of NAME in your environment: "
            "the server receives the value)"
        )
    return lines


def _command_lines(entry: ConnectOptions) -> list[str]:
    from ..transports.process import resolve_command

    env = entry.env or {}
    resolved = resolve_command(entry.command, entry.cwd, env)
    argv = " ".join(_shell_word(part) for part in (resolved or entry.command, *entry.args))
    lines = [f"  server {quoted(entry.server)}: {argv}"]
    if resolved is None:
        lines.append(f"    command {_shell_word(entry.command)} is not found on its PATH")
    elif str(entry.command) != resolved:
        lines.append(f"    command {_shell_word(entry.command)} resolves to {_shell_word(resolved)}")
    if isinstance(entry.cwd, str) and not os.path.isabs(entry.cwd):
        where = _shell_word(os.path.abspath(entry.cwd))
        lines.append(f"    cwd {_shell_word(entry.cwd)} ({where})")
    elif entry.cwd is not None:
        lines.append(f"    cwd {_shell_word(entry.cwd)}")
    for key, value in env.items():
        lines.append(f"    env {escape(key)}={_shell_word(value)}")
    return lines


def _request_lines(entry: HttpConnectOptions) -> list[str]:
    kind = " (HTTP+SSE)" if entry.transport == "sse" else ""
    lines = [f"  server {quoted(entry.server)}{kind}: {_shell_word(entry.url)}"]
    for name, value in (entry.headers or {}).items():
        lines.append(f"    header {escape(name)}: {_shell_word(value)}")
    if entry.bearer_token_env:
        token = escape(entry.bearer_token_env)
        lines.append(f"    header Authorization: Bearer ${{{token}}} (bearerTokenEnv)")
    if entry.auth is not None:
        lines.append(f"    auth {_auth_summary(entry.auth)}")
    return lines


def _shell_word(value: object) -> str:
    """One value as a shell word would show it: bare when it can be, else in
    double quotes (in which a ``${NAME}`` stands for its value too)."""
    text = str(value)
    if text and not any(ch.isspace() or ch in "\"'\\" for ch in text):
        return escape(text)
    return escape('"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"')


def _auth_summary(auth: Any) -> str:
    fields = auth.model_dump(exclude_defaults=True, by_alias=True, mode="json")
    parts = [f"type={_shell_word(type(auth).__name__)}"]
    for key, value in fields.items():
        shown = f"${{{value}}}" if key.endswith("Env") and isinstance(value, str) else value
        parts.append(f"{escape(str(key))}={_shell_word(shown)}")
    return " ".join(parts)


def _has_reference(entries: Sequence[ServerEntry]) -> bool:
    from ..protocol.secret import Secret
    from ..session.options import ConnectOptions

    for entry in entries:
        values: list[object]
        if isinstance(entry, ConnectOptions):
            values = [entry.command, entry.cwd, *entry.args, *(entry.env or {}).values()]
        elif entry.bearer_token_env or entry.auth is not None:
            return True
        else:
            values = [entry.url, *(entry.headers or {}).values()]
        if any(isinstance(value, Secret) for value in values):
            return True
    return False


# --------------------------------------------------------------------------
# Connecting


@dataclass
class Server:
    """One entry of the config and what connecting it gave."""

    index: int  # in the config file, whatever --server picked
    entry: ServerEntry
    session: Session | None = None
    error: BaseException | None = None
    # The redacted tail of the server's stderr, delivered by the session's
    # diagnostics observer when the server failed (lines joined with "\n").
    stderr: str = ""
    # The era auto settled for this server: a later connect in this process
    # sends that era's opening request alone (see mcp_sync.session.eras.negotiation).
    era: EraMemory = field(default_factory=EraMemory)

    def observe(self, event: DiagnosticEvent) -> None:
        if event.kind == "stderr":
            self.stderr = str(event.detail.reveal())

    def stderr_lines(self, indent: str) -> list[str]:
        """The lines of its stderr that say most, escaped, each under ``indent``."""
        from ..protocol.stderr_tail import pick_lines

        shown = []
        for line in pick_lines(self.stderr, max_lines=STDERR_LINES) if self.stderr else ():
            text = escape(line)
            if len(text) > STDERR_LINE_CHARS:
                text = text[: STDERR_LINE_CHARS - 1] + "…"
            shown.append(indent + text)
        return shown


def chosen(ns: argparse.Namespace, entries: Sequence[ServerEntry]) -> list[Server]:
    """The servers to connect: every entry, or those ``--server`` names."""
    servers = [Server(index, entry) for index, entry in enumerate(entries)]
    names: list[str] | None = getattr(ns, "server", None)
    if not names:
        return servers
    configured = [server.entry.server for server in servers]
    for name in names:
        if name not in configured:
            listed = ", ".join(quoted(known) for known in configured) or "none"
            usage(f"--server: no configured server is named {quoted(name)} (configured: {listed})")
    return [server for server in servers if server.entry.server in names]


def server_kind(entry: ServerEntry) -> str:
    return "http" if hasattr(entry, "url") else "stdio"


def _missing_token(entry: ServerEntry) -> str | None:
    variable: str | None = getattr(entry, "bearer_token_env", None)
    if variable and not os.environ.get(variable):
        return f"bearerTokenEnv {variable} is not set (or is empty)"
    return None


def connect_all(servers: Sequence[Server], err: IO[str] | None = None) -> None:
    """Connect every server at once (each connect blocks on its own handshake).
    On a terminal ``err`` (stderr by default), a line says which server is
    still starting while one has read nothing for a while."""
    status = StartingStatus(sys.stderr if err is None else err)

    def attempt(server: Server) -> None:
        problem = _missing_token(server.entry)
        if problem is not None:
            server.error = CliExit(EXIT_USAGE, problem)
            return
        try:
            with remembering(server.era), observing(status.report):
                server.session = connect(server.entry, diagnostics=server.observe)
        except Exception as exc:
            server.error = exc

    if servers:
        with status, ThreadPoolExecutor(max_workers=min(8, len(servers))) as pool:
            list(pool.map(attempt, servers))


def close_all(servers: Sequence[Server]) -> None:
    sessions = [s.session for s in servers if s.session is not None]
    if len(sessions) == 1:
        sessions[0].close()
    elif sessions:
        # A server may take its grace period to exit; close them side by side.
        with ThreadPoolExecutor(max_workers=min(8, len(sessions))) as pool:
            list(pool.map(lambda session: session.close(), sessions))


def where(server: Server, path: str, source: str) -> str:
    return f"server {quoted(server.entry.server)} (entry {server.index} of {source} {escape(path)})"


def project_all(servers: Sequence[Server], path: str, source: str) -> list[Flow]:
    flows: list[Flow] = []
    for server in servers:
        assert server.session is not None
        try:
            source_flows = project(server.session, **server.entry.projection_kwargs())
        except ProjectionError as exc:
            usage(f"{where(server, path, source)}: {escape(str(exc))}")
        flows.extend(source_flows.flows)
    try:
        catalog(flows)
    except DuplicateFlowError as exc:
        usage(f"{source} {escape(path)}: {escape(str(exc))}; give one server a namePrefix")
    return flows


def with_flows(ns: argparse.Namespace, body: Callable[[list[Flow]], int]) -> int:
    """Load the config, connect every server, run ``body`` on their flows, close."""
    return with_sessions(ns, lambda servers, path, source: body(project_all(servers, path, source)))


def with_sessions(ns: argparse.Namespace, body: Callable[[list[Server], str, str], int]) -> int:
    """Load the config, connect its servers (``--server``'s only, when given),
    run ``body`` on them, close."""
    path, source, entries = load(ns)
    servers = chosen(ns, entries)
    connect_all(servers)
    ns.sessions = {server.entry.server: server.session for server in servers}
    try:
        for server in servers:
            if server.error is None:
                continue
            if isinstance(server.error, CliExit) and server.error.code == EXIT_USAGE:
                usage(f"{where(server, path, source)}: {server.error.message}")
            # A configured server is one the operator opted into: running
            # without it would leave the command silently short of tools.
            lines = [f"{PROG}: {where(server, path, source)} failed to connect: {describe_error(server.error)}"]
            tail = server.stderr_lines("    ")
            if tail:
                lines += ["  its stderr ended with:", *tail]
            lines.append(f"  every configured server must connect; {SERVER_HINT}.")
            raise CliExit(EXIT_CONNECT_FAILED, "\n".join(lines))
        return body(servers, path, source)
    finally:
        close_all(servers)
