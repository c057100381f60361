"""The command line forgives what a new user types first, and says what went wrong.

Run as a subprocess, like tests/test_cli.py: the global options on either
side of the command, several KEY=VALUE pairs after one --args, the lines of a
failing server's stderr that say why (npm's 404, a Python traceback with its
indentation), a missing command named as the user's file wrote it, and
example-config in the mcpServers shape every other client uses.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from test_cli import HINT, TABLE, run

import mcp_sync
from mcp_sync.config import parse_config

ENTRY = {"command": sys.executable, "args": ["-m", "mcp_sync.testing"]}


def servers(tmp_path: Path, **entries: dict[str, Any]) -> Path:
    """A config in the mcpServers shape (what a user copies from another client)."""
    path = tmp_path / "servers.json"
    path.write_text(json.dumps({"mcpServers": entries}))
    return path


def two_servers(tmp_path: Path) -> None:
    servers(
        tmp_path,
        example=ENTRY,
        weather={**ENTRY, "namePrefix": "weather", "include": ["add"]},
    )


WEATHER = "weather/add  weather  a*: number, b*: number  Add two numbers.\n"
HEADER = "FLOW         SERVER   PARAMETERS              DESCRIPTION\n"


# ---------------------------------------------------------------- 1. global options anywhere


def test_global_options_are_taken_before_the_command(tmp_path: Path) -> None:
    two_servers(tmp_path)
    done = run("--mcp-config", "servers.json", "--server", "weather", "tools", cwd=tmp_path)
    assert (done.returncode, done.stderr) == (0, ""), done.stderr
    assert done.stdout == HEADER + WEATHER


def test_global_options_are_taken_after_the_command_and_its_arguments(tmp_path: Path) -> None:
    two_servers(tmp_path)
    done = run("call", "add", "--args", "a=2", "b=3", "--server", "weather", "--mcp-config", "servers.json",
               cwd=tmp_path)  # fmt: skip
    assert (done.returncode, done.stdout) == (0, "5\n"), done.stderr


def test_server_names_from_both_sides_add_up(tmp_path: Path) -> None:
    two_servers(tmp_path)
    done = run("--server", "example", "tools", "--mcp-config", "servers.json", "--server", "weather",
               cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout == TABLE + "weather/add        weather  a*: number, b*: number  Add two numbers.\n"
    # Each side alone, and the config named after the command with --server before it.
    for argv in (
        ["--server", "weather", "--mcp-config", "servers.json", "tools"],
        ["--server", "weather", "tools", "--mcp-config", "servers.json"],
        ["tools", "--server", "weather", "--mcp-config", "servers.json"],
    ):
        alone = run(*argv, cwd=tmp_path)
        assert (alone.returncode, alone.stdout) == (0, HEADER + WEATHER), (argv, alone.stderr)


def test_trust_project_and_version_after_the_command(tmp_path: Path) -> None:
    two_servers(tmp_path)
    trusted = run("--mcp-config", "servers.json", "check", "--trust-project", cwd=tmp_path)
    assert trusted.returncode == 0, trusted.stdout + trusted.stderr
    version = run("tools", "--version")
    assert version.returncode == 0 and version.stdout.startswith("mcp-sync-client "), version.stderr


# ---------------------------------------------------------------- 2. --args


def test_one_args_takes_several_pairs_before_or_after_the_flow(tmp_path: Path) -> None:
    two_servers(tmp_path)
    for argv in (
        ["call", "add", "--args", "a=2", "b=3"],
        ["call", "--args", "a=2", "b=3", "add"],
        ["call", "add", "--args", "a=2", "--args", "b=3"],
        ["call", "add", "--args", "a=2", '{"b": 3}', "--json"],
    ):
        done = run("--mcp-config", "servers.json", "--server", "example", *argv, cwd=tmp_path)
        assert done.returncode == 0, (argv, done.stderr)
        if "--json" in argv:
            assert json.loads(done.stdout)["structuredContent"] == {"sum": 5}
        else:
            assert done.stdout == "5\n", argv


def test_a_bare_word_after_args_says_what_it_expects(tmp_path: Path) -> None:
    # A server that cannot start proves --args is checked before anything is spawned.
    servers(tmp_path, x={"command": str(tmp_path / "missing")})
    done = run("--mcp-config", "servers.json", "call", "echo", "--args", "message", cwd=tmp_path)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == 'mcp-sync: error: --args "message": expected KEY=VALUE, a JSON object or @FILE.json\n'
    # The flow is still required, and named so when only arguments were given.
    missing = run("--mcp-config", "servers.json", "call", "--args", "a=1", cwd=tmp_path)
    assert missing.returncode == 2
    assert missing.stderr.splitlines()[-1] == "mcp-sync call: error: the following arguments are required: FLOW"


# ---------------------------------------------------------------- 3. the stderr that says why

# What npm 10 (Node 20) writes for `npx -y @modelcontextprotocol/server-everythingg`,
# a package name with a typo: the 404 is the fifth line from the end.
NPM_404 = """\
npm error code E404
npm error 404 Not Found - GET https://registry.npmjs.org/@modelcontextprotocol%2fserver-everythingg - Not found
npm error 404
npm error 404  '@modelcontextprotocol/server-everythingg@*' is not in this registry.
npm error 404
npm error 404 Note that you can also install from a
npm error 404 tarball, folder, http url, or git url.
npm error A complete log of this run can be found in: /root/.npm/_logs/2026-12-07T05_58_07_168Z-debug-0.log
"""


def says(name: str, text: str, code: int = 1) -> dict[str, Any]:
    """An entry whose server writes ``text`` to stderr and exits."""
    script = f"import sys; sys.stderr.write({text!r}); sys.exit({code})"
    return {"command": sys.executable, "args": ["-c", script]}


def test_npms_404_for_a_mistyped_package_is_shown(tmp_path: Path) -> None:
    servers(tmp_path, everything=says("everything", NPM_404))
    done = run("--mcp-config", "servers.json", "tools", cwd=tmp_path)
    assert done.returncode == 3
    shown = done.stderr.splitlines()
    assert shown[1] == "  its stderr ended with:"
    assert "    npm error code E404" in shown
    assert "    npm error 404 '@modelcontextprotocol/server-everythingg@*' is not in this registry." in shown
    assert shown[-1] == HINT


TRACEBACK_SERVER = """\
import logging, sys
logging.basicConfig(stream=sys.stderr, format="%(levelname)s %(message)s", level=logging.INFO)
for n in range(3):
    logging.info("starting worker %d", n)
logging.info("token check: Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl)")

def load(path):
    raise FileNotFoundError(f"config file {path} not found")

def main():
    load("/etc/weather.toml")

try:
    main()
except Exception:
    logging.exception("the server could not start")
for n in range(6):
    logging.info("shutting down worker %d", n)
sys.exit(1)
"""


def test_the_last_traceback_keeps_its_indentation(tmp_path: Path) -> None:
    (tmp_path / "server.py").write_text(TRACEBACK_SERVER)
    servers(tmp_path, weather={"command": sys.executable, "args": [str(tmp_path / "server.py")]})
    done = run("--mcp-config", "servers.json", "tools", cwd=tmp_path)
    assert done.returncode == 3
    script = str(tmp_path / "server.py")
    # Twelve lines at most: the traceback whole, its frames indented as Python
    # wrote them, before the plain lines around it; a mark for those left out.
    assert done.stderr.replace(script, "server.py").splitlines()[1:] == [
        "  its stderr ended with:",
        "    [… 4 lines left out]",
        "    ERROR the server could not start",
        "    Traceback (most recent call last):",
        '      File "server.py", line 14, in <module>',
        "        main()",
        '      File "server.py", line 11, in main',
        '        load("/etc/weather.toml")',
        '      File "server.py", line 8, in load',
        '        raise FileNotFoundError(f"config file {path} not found")',
        "    FileNotFoundError: config file /etc/weather.toml not found",
        "    [… 3 lines left out]",
        "    INFO shutting down worker 3",
        "    INFO shutting down worker 4",
        "    INFO shutting down worker 5",
        HINT,
    ]


def test_redacting_a_bearer_token_keeps_the_bracket_after_it(tmp_path: Path) -> None:
    (tmp_path / "server.py").write_text(TRACEBACK_SERVER.replace("for n in range(6)", "for n in range(0)"))
    servers(tmp_path, weather={"command": sys.executable, "args": [str(tmp_path / "server.py")]})
    done = run("--mcp-config", "servers.json", "tools", cwd=tmp_path)
    assert "    INFO token check: Authorization: Bearer [REDACTED])" in done.stderr.splitlines()
    assert "eyJ" not in done.stderr


# ---------------------------------------------------------------- 4. a missing command


def test_a_missing_command_is_named_as_the_file_wrote_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GHOST_COMMAND", "/opt/private-customer/bin/ghost")
    servers(
        tmp_path,
        ghost={"command": "ghost-server", "args": ["--token", "tok-0123456789"]},
        relative={"command": "./bin/ghost"},
        hidden={"command": "${GHOST_COMMAND}"},
        nowhere={"command": sys.executable, "cwd": str(tmp_path / "no-such-dir")},
    )
    done = run("--mcp-config", "servers.json", "check", cwd=tmp_path)
    assert done.returncode == 3
    rows = {line.split()[1]: line.split("  ")[-1].strip() for line in done.stdout.splitlines()[2:6]}
    assert rows == {
        "ghost": "spawn_failed: server 'ghost' could not be started: command 'ghost-server' not found on PATH",
        "relative": "spawn_failed: server 'relative' could not be started: command './bin/ghost' not found",
        # What a variable expanded to is never shown: the reference is.
        "hidden": "spawn_failed: server 'hidden' could not be started: command '${GHOST_COMMAND}' not found",
        "nowhere": f"spawn_failed: server 'nowhere' could not be started: its working directory "
        f"'{tmp_path / 'no-such-dir'}': No such file or directory",
    }
    assert "tok-0123456789" not in done.stdout + done.stderr
    assert "private-customer" not in done.stdout + done.stderr


def test_the_library_names_the_command_but_never_a_variables_value() -> None:
    with pytest.raises(mcp_sync.SpawnFailed) as plain:
        mcp_sync.connect(server="ghost", command="ghost-server", args=["--key", "k-123456"])
    assert str(plain.value) == "server 'ghost' could not be started: command 'ghost-server' not found on PATH"
    environ = {"GHOST_PATH": "/opt/private-customer/bin/ghost"}
    (entry,) = parse_config({"mcpServers": {"ghost": {"command": "${GHOST_PATH}"}}}, environ=environ)
    with pytest.raises(mcp_sync.SpawnFailed) as hidden:
        mcp_sync.connect(entry)
    assert str(hidden.value) == "server 'ghost' could not be started: command '${GHOST_PATH}' not found"


# ---------------------------------------------------------------- 5. example-config


def test_example_config_is_the_mcp_servers_object_and_the_array_is_still_read(tmp_path: Path) -> None:
    done = run("example-config")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {
        "mcpServers": {
            "example": {"command": sys.executable, "args": ["-m", "mcp_sync.testing"], "requestTimeoutMs": 30000}
        }
    }
    (tmp_path / "servers.json").write_text(done.stdout)
    listed = run("--mcp-config", "servers.json", "tools", cwd=tmp_path)
    assert (listed.returncode, listed.stdout) == (0, TABLE), listed.stderr
    (tmp_path / "array.json").write_text(json.dumps([{"server": "example", **ENTRY}]))
    old = run("--mcp-config", "array.json", "tools", cwd=tmp_path)
    assert (old.returncode, old.stdout) == (0, TABLE), old.stderr
