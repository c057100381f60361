"""The mcp-sync command, run as a subprocess: exit codes, messages, output."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import types
from pathlib import Path
from typing import Any

import pytest

import mcp_sync
from mcp_sync.cli import escape
from mcp_sync.cli._version import version_report
from mcp_sync.config import load_config

REPO = Path(__file__).resolve().parent.parent
EXAMPLE = {"server": "example", "command": sys.executable, "args": ["-m", "mcp_sync.testing"]}
NO_CONFIG = (
    "mcp-sync: error: no server config: pass --mcp-config PATH or set MCP_SYNC_CONFIG.\n"
    "  'mcp-sync example-config > servers.json' writes one that runs the bundled example "
    "server;\n"
    "  'mcp-sync demo' runs that server now, with no config.\n"
)
HINT = (
    "  every configured server must connect; 'mcp-sync check' tests each one; "
    "--server NAME picks the ones to use."
)
TABLE = (
    "FLOW               SERVER   PARAMETERS              DESCRIPTION\n"
    "mcp/example/echo   example  message*: string        Echo a message back.\n"
    "mcp/example/add    example  a*: number, b*: number  Add two numbers.\n"
    "mcp/example/fail   example  -                       Always reports a tool error.\n"
    "mcp/example/sleep  example  ms*: integer            Answer after `ms` milliseconds.\n"
    "mcp/example/blob   example  bytes*: integer         Return `bytes` bytes of text.\n"
)


def run(
    *argv: str,
    cwd: Path | None = None,
    config_env: str | None = None,
    program: list[str] | None = None,
    path: Path | None = None,
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "MCP_SYNC_CONFIG"}
    paths = [str(REPO), str(path) if path else None, env.get("PYTHONPATH")]
    env["PYTHONPATH"] = os.pathsep.join(filter(None, paths))
    if config_env is not None:
        env["MCP_SYNC_CONFIG"] = config_env
    return subprocess.run(
        [*(program or [sys.executable, "-m", "mcp_sync"]), *argv],
        capture_output=True,
        text=True,
        encoding="utf-8",
        env=env,
        cwd=cwd or REPO,
        timeout=120,
        check=False,
    )


def config(tmp_path: Path, *entries: dict[str, Any], name: str = "servers.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(list(entries)))
    return path


def fake(server: str = "example", *options: str, **fields: Any) -> dict[str, Any]:
    return {
        "server": server,
        "command": sys.executable,
        "args": ["-m", "mcp_sync.testing", *options],
        **fields,
    }


def usage_error(done: subprocess.CompletedProcess[str], message: str) -> None:
    assert done.returncode == 2, (done.returncode, done.stderr)
    assert done.stdout == ""
    assert done.stderr == f"mcp-sync: error: {message}\n"


# --------------------------------------------------------------------------
# Usage errors: exit 2, naming the flag and the path


@pytest.mark.parametrize("command", ["tools", "check", "call mcp/example/echo"])
def test_no_config_says_how_to_get_one(command: str) -> None:
    done = run(*command.split())
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr == NO_CONFIG


def test_empty_flag() -> None:
    usage_error(run("--mcp-config", "", "tools"), "--mcp-config: the path is empty")


def test_missing_file(tmp_path: Path) -> None:
    usage_error(
        run("--mcp-config", "missing.json", "tools", cwd=tmp_path),
        "--mcp-config missing.json: file not found",
    )


def test_missing_file_named_by_the_variable(tmp_path: Path) -> None:
    usage_error(
        run("tools", cwd=tmp_path, config_env="missing.json"),
        "MCP_SYNC_CONFIG missing.json: file not found",
    )


def test_a_directory(tmp_path: Path) -> None:
    usage_error(
        run("--mcp-config", ".", "tools", cwd=tmp_path),
        "--mcp-config .: is a directory, not a file",
    )


def test_a_path_through_a_file(tmp_path: Path) -> None:
    config(tmp_path, EXAMPLE)
    usage_error(
        run("--mcp-config", "servers.json/x", "tools", cwd=tmp_path),
        "--mcp-config servers.json/x: cannot be read: Not a directory",
    )


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads a file whatever its mode")
def test_an_unreadable_file(tmp_path: Path) -> None:
    path = config(tmp_path, EXAMPLE)
    path.chmod(0)
    usage_error(
        run("--mcp-config", "servers.json", "tools", cwd=tmp_path),
        "--mcp-config servers.json: cannot be read: permission denied",
    )


def test_invalid_json(tmp_path: Path) -> None:
    (tmp_path / "servers.json").write_text('[{"server": "x",}]')
    # The reason is this interpreter's json module's (its wording changed in 3.13).
    with pytest.raises(json.JSONDecodeError) as caught:
        json.loads('[{"server": "x",}]')
    reason = f"{caught.value.msg} at line {caught.value.lineno} column {caught.value.colno}"
    usage_error(
        run("--mcp-config", "servers.json", "tools", cwd=tmp_path),
        f"--mcp-config servers.json: is not valid JSON: {reason}",
    )


def test_not_an_array(tmp_path: Path) -> None:
    (tmp_path / "servers.json").write_text(json.dumps(EXAMPLE))
    usage_error(
        run("--mcp-config", "servers.json", "check", cwd=tmp_path),
        '--mcp-config servers.json: must be an object with "mcpServers" or "servers", or an '
        "array of server entries; it is an object with neither key",
    )


def test_schema_failure_names_entry_and_field(tmp_path: Path) -> None:
    config(tmp_path, EXAMPLE, fake("second", maxTools=0))
    usage_error(
        run("--mcp-config", "servers.json", "tools", cwd=tmp_path),
        "--mcp-config servers.json: entry 1, field maxTools: "
        "must be a positive integer no larger than 2**53-1",
    )


def test_schema_failure_in_check(tmp_path: Path) -> None:
    config(tmp_path, {"server": "x", "command": "y", "args": [], "url": "https://x/"})
    usage_error(
        run("check", "--mcp-config", "servers.json", cwd=tmp_path),
        "--mcp-config servers.json: entry 0, field url: has both command and url; "
        "a server is stdio (command) or HTTP (url), never both",
    )


def test_the_flag_wins_over_the_variable(tmp_path: Path) -> None:
    config(tmp_path, EXAMPLE, name="good.json")
    done = run("--mcp-config", "good.json", "tools", cwd=tmp_path, config_env="missing.json")
    assert done.returncode == 0, done.stderr
    assert done.stdout == TABLE


def test_the_variable_alone(tmp_path: Path) -> None:
    config(tmp_path, EXAMPLE)
    done = run("tools", cwd=tmp_path, config_env="servers.json")
    assert done.returncode == 0, done.stderr
    assert done.stdout == TABLE


def test_args_not_json(tmp_path: Path) -> None:
    # A server that cannot start proves --args is checked before anything is spawned.
    config(tmp_path, {"server": "x", "command": str(tmp_path / "missing"), "args": []})
    usage_error(
        run("--mcp-config", "servers.json", "call", "mcp/x/y", "--args", "{a:1}", cwd=tmp_path),
        "--args: not valid JSON: Expecting property name enclosed in double quotes: "
        "line 1 column 2 (char 1)",
    )


@pytest.mark.parametrize(("args", "kind"), [("[1]", "an array"), ("3", "int"), ('"x"', "str")])
def test_args_not_an_object(tmp_path: Path, args: str, kind: str) -> None:
    config(tmp_path, {"server": "x", "command": str(tmp_path / "missing"), "args": []})
    usage_error(
        run("--mcp-config", "servers.json", "call", "mcp/x/y", "--args", args, cwd=tmp_path),
        f"--args: must be a JSON object, got {kind}",
    )


def test_unknown_flow(tmp_path: Path) -> None:
    config(tmp_path, EXAMPLE)
    usage_error(
        run("--mcp-config", "servers.json", "call", "mcp/example/nope", cwd=tmp_path),
        "no flow named \"mcp/example/nope\"; 'mcp-sync tools' lists them",
    )


def test_unknown_flow_name_is_escaped(tmp_path: Path) -> None:
    config(tmp_path, EXAMPLE)
    usage_error(
        run("--mcp-config", "servers.json", "call", "x\x1b[2Jy\u202e", cwd=tmp_path),
        "no flow named \"x\\x1b[2Jy\\u202e\"; 'mcp-sync tools' lists them",
    )


def test_unknown_include_name(tmp_path: Path) -> None:
    config(tmp_path, fake(include=["echo", "nope"]))
    usage_error(
        run("--mcp-config", "servers.json", "tools", cwd=tmp_path),
        'server "example" (entry 0 of --mcp-config servers.json): '
        "include names 'nope', not in the catalog of server 'example'",
    )


def test_duplicate_flow_names(tmp_path: Path) -> None:
    config(tmp_path, fake("a", namePrefix="same"), fake("b", namePrefix="same"))
    usage_error(
        run("--mcp-config", "servers.json", "tools", cwd=tmp_path),
        "--mcp-config servers.json: flow name 'same/echo' is declared twice "
        "(MCP server 'a' and MCP server 'b'); give one server a namePrefix",
    )


def test_unset_bearer_token_variable(tmp_path: Path) -> None:
    config(
        tmp_path,
        EXAMPLE,
        {
            "server": "remote",
            "url": "http://127.0.0.1:9/mcp",
            "bearerTokenEnv": "NO_SUCH_TOKEN_VAR",
        },
    )
    usage_error(
        run("--mcp-config", "servers.json", "tools", cwd=tmp_path),
        'server "remote" (entry 1 of --mcp-config servers.json): '
        "bearerTokenEnv NO_SUCH_TOKEN_VAR is not set (or is empty)",
    )


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        ([], "the following arguments are required: COMMAND"),
        (["frobnicate"], "argument COMMAND: invalid choice: 'frobnicate'"),
        (["tools", "--colour"], "unrecognized arguments: --colour"),
        (["call"], "the following arguments are required: FLOW"),
        (["--mcp-config"], "argument --mcp-config: expected one argument"),
    ],
)
def test_argument_errors(argv: list[str], fragment: str) -> None:
    done = run(*argv)
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.startswith("usage: mcp-sync")
    assert re.search(rf"^mcp-sync( call)?: error: {re.escape(fragment)}", done.stderr, re.M)


def test_help() -> None:
    done = run("--help")
    assert done.returncode == 0
    assert "--mcp-config PATH" in done.stdout and "exit codes" in done.stdout


# --------------------------------------------------------------------------
# A server that fails takes the command down


def test_a_server_that_cannot_start(tmp_path: Path) -> None:
    config(tmp_path, EXAMPLE, {"server": "broken", "command": "./no-such-server", "args": []})
    for command in (["tools"], ["call", "mcp/example/echo"]):
        done = run("--mcp-config", "servers.json", *command, cwd=tmp_path)
        assert done.returncode == 3
        assert done.stdout == ""
        first, second = done.stderr.splitlines()
        # The reason after the colon is the session's own (model-safe) text.
        assert first.startswith(
            'mcp-sync: server "broken" (entry 1 of --mcp-config servers.json) failed to '
            "connect: spawn_failed: server 'broken' could not be started: "
        ), first
        assert second == HINT


def test_a_server_that_dies_in_the_handshake(tmp_path: Path) -> None:
    config(tmp_path, fake("dies", "--exit-on", "initialize"))
    done = run("--mcp-config", "servers.json", "tools", cwd=tmp_path)
    assert done.returncode == 3
    assert done.stderr.startswith(
        'mcp-sync: server "dies" (entry 0 of --mcp-config servers.json) failed to connect: '
        "connection_closed: "
    )


def broken(name: str = "broken", **fields: Any) -> dict[str, Any]:
    """A server that writes why it cannot start to stderr, then exits."""
    says = (
        "import os, sys; sys.stderr.write('starting\\nstill starting\\nloading the token ' "
        "+ os.environ['THE_TOKEN'] + '\\nTraceback (most recent call last):\\n"
        "\\x1b[31mModuleNotFoundError: No module named mcp_sync\\u202e\\n'); sys.exit(1)"
    )
    env = {"THE_TOKEN": "tok-0123456789abcdef0123"}
    return {"server": name, "command": sys.executable, "args": ["-c", says], "env": env, **fields}


def test_a_failing_server_shows_the_tail_of_its_own_stderr(tmp_path: Path) -> None:
    config(tmp_path, EXAMPLE, broken())
    for command in (["tools"], ["call", "echo", "--args", "message=hi"], ["resources"]):
        done = run("--mcp-config", "servers.json", *command, cwd=tmp_path)
        assert done.returncode == 3, done.stderr
        assert done.stdout == ""
        lines = done.stderr.splitlines()
        assert lines[0] == (
            'mcp-sync: server "broken" (entry 1 of --mcp-config servers.json) failed to connect: '
            "connection_closed: exited with code 1"
        )
        # Its lines, escaped; the value of a variable the server was given is masked.
        assert lines[1:-1] == [
            "  its stderr ended with:",
            "    starting",
            "    still starting",
            lines[4],
            "    Traceback (most recent call last):",
            "    \\x1b[31mModuleNotFoundError: No module named mcp_sync\\u202e",
        ]
        assert lines[4].startswith("    loading the token ") and "0123456789abcdef" not in lines[4]
        assert lines[-1] == HINT
    checked = run("--mcp-config", "servers.json", "check", cwd=tmp_path)
    assert checked.returncode == 3
    assert checked.stdout.splitlines()[-3:] == [
        "  Traceback (most recent call last):",
        "  \\x1b[31mModuleNotFoundError: No module named mcp_sync\\u202e",
        "1 of 2 server(s) failed",
    ]


def test_server_connects_only_the_named_servers(tmp_path: Path) -> None:
    config(tmp_path, EXAMPLE, broken(), fake("second", namePrefix="two", include=["add"]))
    done = run("--mcp-config", "servers.json", "tools", "--server", "example", cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (0, TABLE, "")
    both = run("--mcp-config", "servers.json", "tools", "--server", "second", "--server", "example", cwd=tmp_path)
    assert both.stdout == TABLE + "two/add            second   a*: number, b*: number  Add two numbers.\n"
    called = run(
        "--mcp-config", "servers.json", "call", "two/add", "--args", '{"a": 1, "b": 2}', "--server", "second",
        cwd=tmp_path,
    )  # fmt: skip
    assert (called.returncode, called.stdout) == (0, "3\n"), called.stderr
    checked = run("--mcp-config", "servers.json", "check", "--server", "example", cwd=tmp_path)
    assert checked.returncode == 0, checked.stdout
    assert checked.stdout.splitlines()[-1] == "all 1 server(s) connected"
    # Still all or nothing among the named ones.
    failed = run("--mcp-config", "servers.json", "tools", "--server", "example", "--server", "broken", cwd=tmp_path)
    assert failed.returncode == 3 and 'server "broken"' in failed.stderr


def test_server_unknown_name_is_a_usage_error(tmp_path: Path) -> None:
    config(tmp_path, EXAMPLE, broken())
    for command in ("tools", "check", "call", "resources"):
        argv = [command, "--server", "exampel"] + (["echo"] if command == "call" else [])
        usage_error(
            run("--mcp-config", "servers.json", *argv, cwd=tmp_path),
            '--server: no configured server is named "exampel" (configured: "example", "broken")',
        )


def test_check_reports_every_server(tmp_path: Path) -> None:
    config(
        tmp_path,
        EXAMPLE,
        {"server": "broken", "command": "./no-such-server", "args": []},
        fake("picky", include=["nope"]),
        fake("small", exclude=["fail", "blob"]),
    )
    done = run("--mcp-config", "servers.json", "check", cwd=tmp_path)
    assert done.returncode == 3
    assert done.stderr == ""
    lines = done.stdout.splitlines()
    assert lines[:3] == [
        "--mcp-config servers.json: 4 server(s), the file is valid",
        "      SERVER   KIND   RESULT",
        "ok    example  stdio  5 flow(s), protocol 2025-11-25",
    ]
    assert lines[3].startswith(
        "FAIL  broken   stdio  spawn_failed: server 'broken' could not be started: "
    )
    assert lines[4:] == [
        "FAIL  picky    stdio  include names 'nope', not in the catalog of server 'picky'",
        "ok    small    stdio  3 flow(s), protocol 2025-11-25",
        "2 of 4 server(s) failed",
    ]


def test_check_all_good(tmp_path: Path) -> None:
    config(tmp_path, EXAMPLE)
    done = run("--mcp-config", "servers.json", "check", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "all 1 server(s) connected"


# --------------------------------------------------------------------------
# tools and call


def test_tools_table_and_json(tmp_path: Path) -> None:
    config(tmp_path, EXAMPLE, fake("second", namePrefix="two", include=["add"]))
    done = run("--mcp-config", "servers.json", "tools", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout == TABLE + "two/add            second   a*: number, b*: number  Add two numbers.\n"
    done = run("--mcp-config", "servers.json", "tools", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    listed = json.loads(done.stdout)
    assert [f["name"] for f in listed][-1] == "two/add"
    add = listed[-1]
    assert add["description"] == (
        'MCP tool "add" on server "second". Server-supplied description: Add two numbers.'
    )
    assert add["server"] == "second" and add["tool"] == "add"
    assert add["inputDocument"]["properties"] == {"a": {"type": "number"}, "b": {"type": "number"}}
    assert add["effects"]["tier"] == "irreversible"
    assert all(c.endswith(":**") for c in add["capabilities"])


def test_tools_shows_each_tools_parameters(tmp_path: Path) -> None:
    schema = {
        "type": "object",
        "properties": {
            "path": {"type": "string"},
            "tags": {"type": "array", "items": {"type": "string"}},
            "mode": {"enum": ["a", "b"]},
            "limit": {"type": ["integer", "null"]},
            "when": {"anyOf": [{"type": "string"}, {"type": "number"}]},
            "x\u001b[2J": {},
        },
        "required": ["path", "mode"],
    }
    tools = [{"name": "find", "description": "Find things.", "inputSchema": schema}]
    config(tmp_path, fake("files", "--tools", json.dumps(tools)))
    done = run("--mcp-config", "servers.json", "tools", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    header, row = done.stdout.splitlines()
    assert header.split() == ["FLOW", "SERVER", "PARAMETERS", "DESCRIPTION"]
    assert re.split(" {2,}", row)[2] == (
        "path*: string, tags: string[], mode*: enum, limit: integer|null, when: string|number, "
    )[:59] + "…"
    # --json carries each tool's whole input schema.
    (listed,) = json.loads(run("--mcp-config", "servers.json", "tools", "--json", cwd=tmp_path).stdout)
    assert listed["inputDocument"] == schema
    short = [{"name": "t", "inputSchema": {"type": "object", "properties": {"x\u001b[2J": {}}}}]
    config(tmp_path, fake("odd", "--tools", json.dumps(short)))
    done = run("--mcp-config", "servers.json", "tools", cwd=tmp_path)
    assert re.split(" {2,}", done.stdout.splitlines()[1])[2] == "x\\x1b[2J: any"


def test_server_text_is_escaped_on_the_terminal(tmp_path: Path) -> None:
    tools = [
        {
            "name": "evil",
            "description": "Looks \x1b[31mred\x1b[0m \u202eesrever\u202c\u200b\nhidden second line",
            "inputSchema": {"type": "object"},
        }
    ]
    config(tmp_path, fake("odd", "--tools", json.dumps(tools)))
    done = run("--mcp-config", "servers.json", "tools", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[1] == (
        "mcp/odd/evil  odd     -           Looks \\x1b[31mred\\x1b[0m \\u202eesrever\\u202c\\u200b"
    )
    assert "\x1b" not in done.stdout and "\u202e" not in done.stdout
    # JSON output carries the flow's description as a model sees it: the
    # characters shown escaped, never the characters themselves.
    done = run("--mcp-config", "servers.json", "tools", "--json", cwd=tmp_path)
    assert "\x1b" not in done.stdout and "\u202e" not in done.stdout
    description = json.loads(done.stdout)[0]["description"]
    assert "\u202e" not in description and "\\u202eesrever" in description


def test_call_prints_content(tmp_path: Path) -> None:
    config(tmp_path, EXAMPLE)
    done = run(
        "--mcp-config", "servers.json", "call", "mcp/example/echo",
        "--args", '{"message": "line one\\nline \\u001b[2Jtwo\\u2066"}',
        cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout == "line one\nline \\x1b[2Jtwo\\u2066\n"


def test_call_default_args_and_json(tmp_path: Path) -> None:
    config(tmp_path, EXAMPLE)
    done = run(
        "--mcp-config", "servers.json", "call", "mcp/example/add", "--args", '{"a": 2, "b": 3}',
        "--json", cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {
        "content": [{"type": "text", "text": "5"}],
        "isError": False,
        "structuredContent": {"sum": 5},
    }


def test_call_tool_error_exits_1(tmp_path: Path) -> None:
    config(tmp_path, EXAMPLE)
    done = run("--mcp-config", "servers.json", "call", "mcp/example/fail", cwd=tmp_path)
    assert done.returncode == 1
    assert done.stdout == "the tool failed on purpose\n"
    assert done.stderr == 'mcp-sync: flow "mcp/example/fail": the tool reported an error\n'


def test_call_failure_exits_4(tmp_path: Path) -> None:
    config(tmp_path, fake(requestTimeoutMs=200))
    done = run(
        "--mcp-config", "servers.json", "call", "mcp/example/sleep", "--args", '{"ms": 5000}',
        cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 4
    assert done.stdout == ""
    assert done.stderr.startswith('mcp-sync: flow "mcp/example/sleep" failed: ')
    assert done.stderr.endswith(" (timeout)\n")
    assert "request_timeout_ms=200" in done.stderr


def test_call_a_server_that_crashes(tmp_path: Path) -> None:
    config(tmp_path, fake("crashy", "--misbehave"))
    done = run(
        "--mcp-config", "servers.json", "call", "mcp/crashy/crash", "--args", '{"code": 7}',
        cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 4
    assert done.stderr == (
        'mcp-sync: flow "mcp/crashy/crash" failed: exited with code 7 (connection_closed)\n'
    )


def test_call_by_the_tools_short_name(tmp_path: Path) -> None:
    config(tmp_path, EXAMPLE)
    done = run("--mcp-config", "servers.json", "call", "echo", "--args", "message=hi", cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (0, "hi\n", "")
    config(tmp_path, fake("a"), fake("b"))
    usage_error(
        run("--mcp-config", "servers.json", "call", "echo", "--args", "message=hi", cwd=tmp_path),
        'several servers have a tool named "echo" ("mcp/a/echo", "mcp/b/echo"); '
        "give the flow name or pick one with --server",
    )
    picked = run("--mcp-config", "servers.json", "call", "echo", "--args", "message=hi", "--server", "b", cwd=tmp_path)
    assert (picked.returncode, picked.stdout) == (0, "hi\n"), picked.stderr
    full = run("--mcp-config", "servers.json", "call", "mcp/a/echo", "--args", "message=hi", cwd=tmp_path)
    assert (full.returncode, full.stdout) == (0, "hi\n"), full.stderr


def test_args_as_key_value_pairs_and_a_file(tmp_path: Path) -> None:
    config(tmp_path, EXAMPLE)
    # VALUE is JSON when it parses (numbers here), text otherwise.
    summed = run(
        "--mcp-config", "servers.json", "call", "add", "--args", "a=2", "--args", "b=0.5", "--json", cwd=tmp_path
    )  # fmt: skip
    assert json.loads(summed.stdout)["structuredContent"] == {"sum": 2.5}, summed.stderr
    for value, shown in (("007", "007"), ("hello world", "hello world"), ('"42"', "42"), ("a=b", "a=b")):
        done = run("--mcp-config", "servers.json", "call", "echo", "--args", f"message={value}", cwd=tmp_path)
        assert (done.returncode, done.stdout) == (0, shown + "\n"), done.stderr
    (tmp_path / "args.json").write_text('{"a": 1, "b": 2}')
    from_file = run("--mcp-config", "servers.json", "call", "add", "--args", "@args.json", cwd=tmp_path)
    assert (from_file.returncode, from_file.stdout) == (0, "3\n"), from_file.stderr


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--args", "@missing.json"], "--args @missing.json: file not found"),
        (["--args", "@."], "--args @.: is a directory, not a file"),
        (["--args", "@"], "--args @: the path is empty"),
        (["--args", "@list.json"], "--args @list.json: must be a JSON object, got an array"),
        (["--args", "@deep.json"], "--args @deep.json: nests objects and arrays deeper than 126 levels"),
        (["--args", "@latin1.json"], "--args @latin1.json: is not UTF-8 text"),
        (["--args", "a=1", "--args", '{"a": 2}'], '--args: the argument "a" is given twice'),
        (["--args", "=1"], '--args "=1": KEY=VALUE needs a key'),
    ],
)
def test_args_mistakes(tmp_path: Path, argv: list[str], message: str) -> None:
    # A server that cannot start proves --args is checked before anything is spawned.
    config(tmp_path, {"server": "x", "command": str(tmp_path / "missing"), "args": []})
    (tmp_path / "list.json").write_text("[1]")
    (tmp_path / "deep.json").write_text('{"a": ' + "[" * 130 + "]" * 130 + "}")
    (tmp_path / "latin1.json").write_bytes(b'{"a": "\xe9"}')
    usage_error(run("--mcp-config", "servers.json", "call", "mcp/x/y", *argv, cwd=tmp_path), message)


# --------------------------------------------------------------------------
# demo, example-config, the bundled example, the console script


def test_demo_needs_no_config() -> None:
    done = run("demo", config_env="/nonexistent.json")
    assert done.returncode == 0, done.stderr
    assert TABLE in done.stdout
    assert "\nhello from mcp-sync\n" in done.stdout


def test_example_config_round_trips(tmp_path: Path) -> None:
    done = run("example-config")
    assert done.returncode == 0
    (tmp_path / "servers.json").write_text(done.stdout)
    (entry,) = load_config(tmp_path / "servers.json")
    assert entry.server == "example"
    listed = run("--mcp-config", "servers.json", "tools", cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout == TABLE


def test_bundled_example_config(everything_bin: Path) -> None:
    # examples/servers.json uses paths relative to the repository root.
    done = run("--mcp-config", "examples/servers.json", "tools", cwd=REPO)
    assert done.returncode == 0, done.stderr
    names = [line.split()[0] for line in done.stdout.splitlines()[1:]]
    assert names[:5] == [
        "mcp/example/echo",
        "mcp/example/add",
        "mcp/example/fail",
        "mcp/example/sleep",
        "mcp/example/blob",
    ]
    assert "mcp/everything/echo" in names and "mcp/everything/get-sum" in names
    assert "mcp/everything/get-env" not in names  # excluded in the example
    done = run(
        "--mcp-config", "examples/servers.json", "call", "mcp/everything/echo",
        "--args", '{"message": "hi"}', cwd=REPO,
    )  # fmt: skip
    assert (done.returncode, done.stdout) == (0, "Echo: hi\n"), done.stderr


def test_console_script_is_the_same_program(tmp_path: Path) -> None:
    script = Path(sys.executable).with_name("mcp-sync")
    if not script.exists():
        pytest.skip("the mcp-sync console script is not installed in this environment")
    config(tmp_path, EXAMPLE)
    done = run("--mcp-config", "servers.json", "tools", cwd=tmp_path, program=[str(script)])
    assert done.returncode == 0, done.stderr
    assert done.stdout == TABLE


# --------------------------------------------------------------------------
# --version, and a reader that goes away


def test_version() -> None:
    done = run("--version")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"mcp-sync-client {mcp_sync.__version__}: module mcp_sync from ")
    assert done.stdout.count("\n") == 1
    assert done.stderr == ""


def test_version_warns_about_the_unrelated_project_of_the_same_module_name(tmp_path: Path) -> None:
    # What `pip install mcp-sync` leaves beside this project: a distribution
    # that also claims the top-level module mcp_sync.
    info = tmp_path / "mcp_sync-0.4.2.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: mcp-sync\nVersion: 0.4.2\n")
    (info / "top_level.txt").write_text("mcp_sync\n")
    done = run("--version", path=tmp_path)
    assert done.returncode == 0
    assert done.stdout.startswith("mcp-sync-client ")
    assert done.stderr.startswith("mcp-sync: warning: the installed mcp_sync package is not (only)"), done.stderr
    assert "mcp-sync also installs a package named mcp_sync" in done.stderr
    assert "pip uninstall mcp-sync mcp-sync-client" in done.stderr


def test_version_notices_a_module_that_is_not_this_project() -> None:
    stranger = types.ModuleType("mcp_sync")
    stranger.__file__ = "/elsewhere/mcp_sync/__init__.py"
    _, warnings = version_report(stranger)
    assert "the imported mcp_sync (/elsewhere/mcp_sync) is not this project's" in warnings[-1]
    assert version_report(mcp_sync)[1] == []


@pytest.mark.parametrize(
    ("command", "reader", "shown"),
    [
        # demo flushes its first line before it connects: head reads it and leaves.
        ("demo", "head -1", "connecting the bundled example server: "),
        # tools writes once, at the end, long after `true` has gone.
        ("--mcp-config servers.json tools", "true", ""),
    ],
)
def test_a_closed_pipe_ends_quietly(tmp_path: Path, command: str, reader: str, shown: str) -> None:
    config(tmp_path, EXAMPLE)
    done = subprocess.run(
        ["bash", "-c", f"{shlex.quote(sys.executable)} -m mcp_sync {command} 2>err.txt | {reader}; "
         'echo "status=${PIPESTATUS[0]}"'],
        capture_output=True, text=True, cwd=tmp_path, timeout=120, check=False,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )  # fmt: skip
    *lines, status = done.stdout.splitlines()
    assert "".join(lines).startswith(shown)
    assert status in ("status=0", "status=141")
    assert (tmp_path / "err.txt").read_text() == ""


# --------------------------------------------------------------------------
# escape() itself


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("plain", "plain"),
        ("a\x00b\x07c\x7f", "a\\x00b\\x07c\\x7f"),
        ("tab\there", "tab\\x09here"),
        ("c1\x9b", "c1\\x9b"),
        ("bidi\u202a\u202b\u202d\u202e\u2066\u2067\u2068\u2069", "bidi" + "".join(
            f"\\u{c:04x}" for c in (0x202A, 0x202B, 0x202D, 0x202E, 0x2066, 0x2067, 0x2068, 0x2069)
        )),
        ("zw\u200b\u200d\ufeff\u00ad", "zw\\u200b\\u200d\\ufeff\\xad"),
        ("sep\u2028\u2029", "sep\\u2028\\u2029"),
        ("lone\ud800", "lone\\ud800"),
        ("tag\U000e0041", "tag\\U000e0041"),
        ("ünïcødé 日本", "ünïcødé 日本"),
    ],
)
def test_escape(text: str, shown: str) -> None:
    assert escape(text) == shown


def test_escape_multiline_keeps_newlines_and_tabs() -> None:
    assert escape("a\nb\tc\rd", multiline=True) == "a\nb\tc\\x0dd"
    assert escape("ü\nb\u202e", multiline=True) == "ü\nb\\u202e"
