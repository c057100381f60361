"""The config files other MCP clients write, and variables in config values."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import mcp_sync
from mcp_sync.config import (
    ConfigError,
    ConnectOptions,
    HttpConnectOptions,
    load_config,
    parse_config,
)
from mcp_sync.config.variables import VariableError, expand
from mcp_sync.protocol.secret import Secret
from mcp_sync.transports.process import spawn_of

REPO = Path(__file__).resolve().parent.parent
PY = sys.executable
FAKE = ["-m", "mcp_sync.testing"]
SECRET = "sk-cfgsecret-0123456789abcdef"
ENV = {"API_KEY": SECRET, "EMPTY": "", "REGION": "eu-west"}


def _revealed(value: Any) -> Any:
    """What an entry's values expanded to (a ${VAR} is held as a Secret)."""
    if isinstance(value, Secret):
        return value.reveal()
    if isinstance(value, tuple):
        return tuple(_revealed(item) for item in value)
    if isinstance(value, dict):
        return {key: _revealed(item) for key, item in value.items()}
    return value


def _parse(document: object, environ: dict[str, str] | None = None) -> tuple[Any, ...]:
    return parse_config(document, path="c.json", environ=ENV if environ is None else environ)


def _error(document: object, environ: dict[str, str] | None = None) -> ConfigError:
    with pytest.raises(ConfigError) as caught:
        _parse(document, environ)
    assert SECRET not in str(caught.value)
    return caught.value


# --------------------------------------------------------------------------
# Recognising the document


def test_claude_desktop_file() -> None:
    document = {
        "globalShortcut": "Ctrl+Space",  # Claude Desktop keeps settings beside the servers
        "mcpServers": {
            "files": {"command": "npx", "args": ["-y", "server-filesystem", "/tmp"]},
            "example": {"command": PY, "args": FAKE, "env": {"API_KEY": "${API_KEY}"}},
        },
    }
    files, example = _parse(document)
    assert isinstance(files, ConnectOptions) and isinstance(example, ConnectOptions)
    assert (files.server, files.command, files.args) == ("files", "npx", ("-y", "server-filesystem", "/tmp"))
    assert _revealed(example.env) == {"API_KEY": SECRET}


def test_claude_code_mcp_json_with_types_and_defaults() -> None:
    document = {
        "mcpServers": {
            "local": {
                "type": "stdio",
                "command": PY,
                "args": [*FAKE, "--region=${REGION}", "${MISSING:-fallback}", "${EMPTY:-}"],
                "env": {"KEY": "${API_KEY}"},
            },
            "remote": {
                "type": "http",
                "url": "https://${REGION}.mcp.example.invalid/mcp",
                "headers": {"Authorization": "Bearer ${API_KEY}"},
            },
        }
    }
    local, remote = _parse(document)
    assert _revealed(local.args) == (*FAKE, "--region=eu-west", "fallback", "")
    assert local.args[-3:] == (Secret("--region=${REGION}", "--region=eu-west"), "fallback", "")
    assert isinstance(remote, HttpConnectOptions)
    assert _revealed(remote.url) == "https://eu-west.mcp.example.invalid/mcp"
    assert _revealed(remote.headers) == {"Authorization": f"Bearer {SECRET}"}
    spawn = spawn_of(local.command, local.args, local.cwd, local.env, False)
    assert {SECRET, "eu-west"} <= set(spawn.masked)


def test_vscode_servers_with_type_and_env_variables() -> None:
    document = {
        "inputs": [{"type": "promptString", "id": "key", "password": True}],
        "servers": {
            "example": {"type": "stdio", "command": PY, "args": FAKE, "env": {"K": "${env:API_KEY}"}},
            "remote": {"type": "http", "url": "https://mcp.example.invalid/mcp"},
        },
    }
    example, remote = _parse(document)
    assert _revealed(example.env) == {"K": SECRET}
    assert isinstance(remote, HttpConnectOptions)


def test_cursor_and_windsurf_remote_entries() -> None:
    cursor, windsurf, streamable = _parse(
        {
            "mcpServers": {
                "cursor": {"url": "https://a.invalid/mcp", "headers": {"X-Key": "${env:API_KEY}"}},
                "windsurf": {"serverUrl": "https://b.invalid/mcp"},
                "fastmcp": {"transport": "streamable-http", "url": "https://c.invalid/mcp"},
            }
        }
    )
    assert _revealed(cursor.headers) == {"X-Key": SECRET}
    assert windsurf.url == "https://b.invalid/mcp"
    assert streamable.url == "https://c.invalid/mcp"


def test_our_own_options_are_extra_keys_of_an_entry() -> None:
    (entry,) = _parse(
        {
            "mcpServers": {
                "example": {
                    "command": PY,
                    "args": FAKE,
                    "requestTimeoutMs": 5000,
                    "namePrefix": "ex",
                    "include": ["echo", "add"],
                    "exclude": ["add"],
                    "disabledTools": ["fail"],
                    "alwaysAllow": ["echo"],
                    "autoApprove": [],
                    "timeout": 60,
                    "disabled": False,
                }
            }
        }
    )
    assert entry.request_timeout_ms == 5000 and entry.name_prefix == "ex"
    assert entry.exclude == ("add", "fail")


def test_disabled_entries_are_skipped_and_args_may_be_left_out() -> None:
    entries = _parse(
        {"mcpServers": {"off": {"command": "x", "disabled": True}, "on": {"command": "y"}}}
    )
    assert [(e.server, e.args) for e in entries] == [("on", ())]


def test_the_seed_array_is_unchanged() -> None:
    (entry,) = _parse([{"server": "s", "command": "c", "args": ["${REGION}"]}])
    assert _revealed(entry.args) == ("eu-west",)
    error = _error([{"server": "s", "command": "c"}])
    assert (error.index, error.entry, error.field) == (0, None, "args")
    # Only our own keys ("type" is one since the HTTP+SSE transport: stdio, http, sse).
    error = _error([{"server": "s", "command": "c", "args": [], "transport": "stdio"}])
    assert (error.field, error.problem) == ("transport", "unknown field (the file uses camelCase: type)")
    error = _error([{"server": "s", "command": "c", "args": [], "disabled": True}])
    assert (error.field, error.problem) == ("disabled", "unknown field")


def test_an_empty_object_of_servers() -> None:
    assert _parse({"mcpServers": {}}) == ()
    assert _parse({"servers": {}}) == ()


# --------------------------------------------------------------------------
# Broken entries: each error names the entry and the field


@pytest.mark.parametrize(
    ("entry", "field", "problem"),
    [
        ({"command": PY, "args": "-m x"}, "args", "must be an array"),
        ({"command": PY, "args": ["-m", 3]}, "args[1]", "must be a string"),
        ({"command": PY, "env": {"K": 5}}, "env.K", "must be a string"),
        ({"command": ""}, "command", "must not be empty"),
        ({"args": []}, "command", "is required (or url, for an HTTP server)"),
        ({"type": "stdio", "url": "https://x.invalid/"}, "url", "is for an HTTP server"),
        ({"type": "http", "command": "x"}, "command", "is for a stdio server"),
        ({"type": "http"}, "url", "is required for an http server"),
        ({"type": "websocket", "command": "x"}, "type", "must be stdio, http or sse, not 'websocket'"),
        ({"type": 3, "command": "x"}, "type", "must be a string: stdio, http or sse"),
        ({"type": "sse", "command": "x"}, "command", "is for a stdio server, but this entry is sse"),
        ({"type": "stdio", "transport": "stdio", "command": "x"}, "transport", "and type"),
        ({"command": "x", "url": "https://x.invalid/"}, "url", "has both command and url"),
        ({"url": "https://x.invalid/", "serverUrl": "https://y.invalid/"}, "serverUrl", "and url"),
        ({"command": "x", "server": "other"}, "server", "is not used here"),
        ({"command": "x", "envFile": ".env"}, "envFile", "is not supported"),
        ({"command": "x", "disabled": "yes"}, "disabled", "must be true or false"),
        ({"command": "x", "disabledTools": "echo"}, "disabledTools", "must be an array"),
        ({"command": "x", "colour": "blue"}, "colour", "unknown field"),
        ({"command": "x", "oauth": {}}, "oauth", "unknown field"),
        ({"command": "x", "maxTools": 0}, "maxTools", "must be a positive integer"),
        ({"command": "x", "args": ["${NOPE}"]}, "args[0]", "uses the variable NOPE"),
        ({"command": "x", "env": {"K": "${input:api-key}"}}, "env.K", "uses ${input:api-key}"),
        ({"command": "${NOPE}"}, "command", "uses the variable NOPE, which is not set"),
        ({"url": "${NOPE}"}, "url", "uses the variable NOPE"),
        ({"command": "x", "cwd": "${EMPTY}"}, "cwd", "uses the variable EMPTY"),
        ({"command": "x", "args": ["${API_KEY"]}, "args[0]", "has an unterminated ${API_KEY"),
        ({"command": "x", "args": ["${config:x}"]}, "args[0]", "has ${config:x}, which is not"),
        ({"url": "https://x.invalid/", "headers": {"X": "${NOPE}"}}, "headers.X", "uses the var"),
        ("not an object", None, "must be an object, not a string"),
    ],
)
def test_broken_entries_name_entry_and_field(entry: Any, field: str | None, problem: str) -> None:
    for key in ("mcpServers", "servers"):
        error = _error({key: {"good": {"command": "x"}, "my server": entry}})
        assert error.path == "c.json"
        assert (error.index, error.entry, error.field) == (1, "my server", field)
        assert error.problem.startswith(problem), error.problem
        where = 'c.json: entry "my server"' + (f", field {field}" if field else "")
        assert str(error) == f"{where}: {error.problem}"


def test_servers_must_map_names_to_entries() -> None:
    assert str(_error({"mcpServers": []})) == (
        "c.json: mcpServers must be an object mapping server names to entries"
    )
    assert str(_error({"servers": "x"})).endswith("servers must be an object mapping server names to entries")


def test_a_name_that_cannot_be_a_server_name() -> None:
    # Any printable name is a label ("@scope/name" too); a control character is not.
    error = _error({"mcpServers": {"a\x07b": {"command": "x"}}})
    assert (error.entry, error.field) == ("a\x07b", "server")


def test_an_entry_name_is_escaped_in_the_message() -> None:
    error = _error({"mcpServers": {"evil\x1b[2J\u202e": {"command": 5}}})
    assert 'entry "evil\\x1b[2J\\u202e"' in str(error)


# --------------------------------------------------------------------------
# Variables


@pytest.mark.parametrize(
    ("text", "expanded"),
    [
        ("plain", "plain"),
        ("$API_KEY stays", "$API_KEY stays"),
        ("${REGION}", "eu-west"),
        ("${env:REGION}-1", "eu-west-1"),
        ("a${REGION}b${REGION}c", "aeu-westbeu-westc"),
        ("${NOPE:-x y}", "x y"),
        ("${EMPTY:-d}", "d"),
        ("${REGION:-d}", "eu-west"),
        ("${env:NOPE:-d}", "d"),
        ("${NOPE:-}", ""),
        ("${NOPE:-a:-b}", "a:-b"),
        ("$${REGION}", "$eu-west"),
    ],
)
def test_expand(text: str, expanded: str) -> None:
    found: set[str] = set()
    assert expand(text, ENV, found) == expanded
    assert found <= {"eu-west"}


def test_predefined_variables() -> None:
    assert expand("${userHome}/x", {}) == os.path.expanduser("~") + "/x"
    assert expand("${workspaceFolder}", {}) == os.getcwd()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("${NOPE}", "uses the variable NOPE, which is not set (or is empty); export it, or write ${NOPE:-default}"),
        ("${EMPTY}", "uses the variable EMPTY, which is not set"),
        ("${input:token}", "uses ${input:token}, a VS Code prompt for a value; mcp-sync cannot ask"),
        ("${}", "has ${}, which is not a variable mcp-sync expands"),
        ("${1X}", "has ${1X}, which is not a variable"),
        ("${a b}", "has ${a b}, which is not a variable"),
        ("x ${REGION", "has an unterminated ${REGION (no closing })"),
    ],
)
def test_expand_errors(text: str, message: str) -> None:
    with pytest.raises(VariableError) as caught:
        expand(text, ENV)
    assert str(caught.value).startswith(message)


def test_expansion_is_linear_on_hostile_text() -> None:
    # Many openings without a close, and many references: one pass each.
    with pytest.raises(VariableError):
        expand("${" * 200_000, ENV)
    assert expand("${REGION}" * 100_000, ENV) == "eu-west" * 100_000


# --------------------------------------------------------------------------
# Expanded values stay private


def test_expanded_values_stay_out_of_reprs_and_messages() -> None:
    document = {
        "mcpServers": {
            "s": {"command": PY, "args": [*FAKE, "--key=${API_KEY}"], "env": {"A": "${API_KEY}", "B": "lit"}},
        }
    }
    (entry,) = _parse(document)
    assert _revealed(entry.args[-1]) == f"--key={SECRET}"
    for text in (repr(entry), str(entry)):
        assert SECRET not in text and "lit" not in text
        assert "--key=${API_KEY}" in text
    # A broken entry after an expansion: the message names the field only.
    document["mcpServers"]["s"]["maxTools"] = 0
    error = _error(document)
    assert error.field == "maxTools"


def test_the_stderr_tail_masks_expanded_values_and_env_values() -> None:
    events: list[mcp_sync.DiagnosticEvent] = []
    (entry,) = _parse(
        {
            "mcpServers": {
                "s": {
                    "command": PY,
                    "args": [*FAKE, "--stderr", "argv has ${API_KEY} and literal-env-value",
                             "--exit-on", "initialize"],
                    "env": {"LITERAL": "literal-env-value"},
                }
            }
        }
    )
    with pytest.raises(mcp_sync.ConnectionClosed) as caught:
        mcp_sync.connect(entry, diagnostics=events.append)
    assert SECRET not in str(caught.value)
    tails = [e.detail.reveal() for e in events if e.kind == "stderr"]
    assert tails and all(SECRET not in tail for tail in tails)
    assert all("literal-env-value" not in tail for tail in tails)
    assert "argv has [REDACTED] and [REDACTED]" in tails[-1]


# --------------------------------------------------------------------------
# Files and the CLI


def _run(*argv: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if k != "MCP_SYNC_CONFIG"}
    base["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), base.get("PYTHONPATH")]))
    base.update(env or {})
    return subprocess.run(
        [PY, "-m", "mcp_sync", *argv], capture_output=True, text=True, cwd=cwd, env=base,
        timeout=120, check=False,
    )  # fmt: skip


FILES: dict[str, dict[str, Any]] = {
    "claude_desktop_config.json": {
        "mcpServers": {"example": {"command": PY, "args": FAKE}},
        "preferences": {"menuBarEnabled": False},
    },
    ".mcp.json": {
        "mcpServers": {
            "example": {"type": "stdio", "command": PY, "args": FAKE, "env": {"K": "${API_KEY}"}}
        }
    },
    "mcp.json": {
        "inputs": [],
        "servers": {
            "example": {"type": "stdio", "command": "${env:MCP_TEST_PY}", "args": FAKE,
                        "env": {"K": "${env:API_KEY}"}},
        },
    },
}  # fmt: skip


@pytest.mark.parametrize("name", list(FILES))
def test_the_cli_lists_the_tools_of_each_format(tmp_path: Path, name: str) -> None:
    (tmp_path / name).write_text(json.dumps(FILES[name]))
    done = _run("--mcp-config", name, "tools", cwd=tmp_path,
                env={"API_KEY": SECRET, "MCP_TEST_PY": PY})  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[1].startswith("mcp/example/echo ")
    assert SECRET not in done.stdout + done.stderr


@pytest.mark.parametrize(
    ("document", "message"),
    [
        (
            {"mcpServers": {"example": {"command": PY, "args": "x"}}},
            'entry "example", field args: must be an array',
        ),
        (
            {"servers": {"example": {"type": "stdio", "command": PY, "env": {"K": "${env:NOPE_X}"}}}},
            'entry "example", field env.K: uses the variable NOPE_X, which is not set',
        ),
        (
            {"servers": {"example": {"type": "http", "command": PY}}},
            'entry "example", field command: is for a stdio server, but this entry is http',
        ),
        (
            {"mcpServers": {"example": {"command": PY, "args": [], "colour": 1}}},
            'entry "example", field colour: unknown field',
        ),
    ],
)
def test_the_cli_refuses_broken_files_with_exit_2(
    tmp_path: Path, document: dict[str, Any], message: str
) -> None:
    (tmp_path / "broken.json").write_text(json.dumps(document))
    done = _run("--mcp-config", "broken.json", "tools", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.startswith(f"mcp-sync: error: --mcp-config broken.json: {message}")
    assert done.stderr.count("\n") == 1


def test_load_config_reads_every_format(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("API_KEY", SECRET)
    monkeypatch.setenv("MCP_TEST_PY", PY)
    for name, document in FILES.items():
        path = tmp_path / name
        path.write_text(json.dumps(document))
        (entry,) = load_config(path)
        assert entry.server == "example"


def test_type_sse_chooses_the_http_sse_transport() -> None:
    (entry,) = _parse({"mcpServers": {"old": {"type": "sse", "url": "https://x.invalid/sse"}}})
    assert entry.connect_kwargs()["transport"] == "sse"
