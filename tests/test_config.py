"""mcp_sync.config: the server models and the config file loader."""

from __future__ import annotations

import builtins
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

import mcp_sync
from mcp_sync import flows
from mcp_sync.config import (
    ConfigError,
    ConnectOptions,
    HttpConnectOptions,
    load_config,
    parse_config,
)

REPO = Path(__file__).resolve().parent.parent
LIMITS = {
    "handshakeTimeoutMs": "handshake_timeout_ms",
    "requestTimeoutMs": "request_timeout_ms",
    "queueCapacity": "queue_capacity",
    "maxFrameBytes": "max_frame_bytes",
    "maxOutboundFrameBytes": "max_outbound_frame_bytes",
    "maxTools": "max_tools",
    "maxToolNameBytes": "max_tool_name_bytes",
    "maxToolDocumentBytes": "max_tool_document_bytes",
    "maxCatalogPages": "max_catalog_pages",
    "maxStderrBytes": "max_stderr_bytes",
}
HTTP_LIMITS = {k: v for k, v in LIMITS.items() if v not in ("queue_capacity", "max_stderr_bytes")}
STDIO: dict[str, Any] = {
    "server": "example",
    "command": sys.executable,
    "args": ["-m", "mcp_sync.testing"],
}
HTTP: dict[str, Any] = {"server": "remote", "url": "https://mcp.example.test/mcp"}


def _write(tmp_path: Path, value: object, name: str = "servers.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(value))
    return path


def _error(value: object) -> ConfigError:
    with pytest.raises(ConfigError) as caught:
        parse_config(value, path="servers.json")
    return caught.value


# --------------------------------------------------------------------------
# The models


def test_camel_case_and_snake_case() -> None:
    camel = ConnectOptions.model_validate({**STDIO, "requestTimeoutMs": 5, "namePrefix": "ex"})
    snake = ConnectOptions(
        server="example",
        command=sys.executable,
        args=["-m", "mcp_sync.testing"],
        request_timeout_ms=5,
        name_prefix="ex",
    )
    assert camel == snake
    assert camel.request_timeout_ms == 5 and camel.name_prefix == "ex"
    assert camel.args == ("-m", "mcp_sync.testing")


def test_every_limit_has_its_camel_case_name() -> None:
    for camel, snake in LIMITS.items():
        entry = ConnectOptions.model_validate({**STDIO, camel: 7})
        assert getattr(entry, snake) == 7
    for camel, snake in HTTP_LIMITS.items():
        remote = HttpConnectOptions.model_validate({**HTTP, camel: 7})
        assert getattr(remote, snake) == 7


@pytest.mark.parametrize("field", ["queueCapacity", "maxStderrBytes", "command", "args", "env"])
def test_http_entries_refuse_stdio_only_fields(field: str) -> None:
    with pytest.raises(ValidationError):
        HttpConnectOptions.model_validate({**HTTP, field: 1})


@pytest.mark.parametrize("value", [0, -1, 2**53, True, False, 1.0, 1.5, "10", None])
def test_limits_are_strict_positive_integers(value: object) -> None:
    if value is None:
        # null is the same as leaving the field out.
        assert ConnectOptions.model_validate({**STDIO, "maxTools": None}).max_tools is None
        return
    with pytest.raises(ValidationError):
        ConnectOptions.model_validate({**STDIO, "maxTools": value})
    error = _error([{**STDIO, "maxTools": value}])
    assert (error.index, error.field) == (0, "maxTools")
    assert error.problem == "must be a positive integer no larger than 2**53-1"


def test_largest_limit() -> None:
    assert ConnectOptions.model_validate({**STDIO, "maxTools": 2**53 - 1}).max_tools == 2**53 - 1


def test_unknown_keys_are_errors() -> None:
    with pytest.raises(ValidationError):
        ConnectOptions.model_validate({**STDIO, "inheritEnv": True})
    with pytest.raises(ValidationError):
        ConnectOptions(**STDIO, colour="blue")  # type: ignore[call-arg]


def test_command_xor_url() -> None:
    with pytest.raises(ValidationError):
        ConnectOptions.model_validate({**STDIO, "url": HTTP["url"]})
    with pytest.raises(ValidationError):
        HttpConnectOptions.model_validate({**HTTP, "command": "x"})
    error = _error([{**STDIO, "url": HTTP["url"]}])
    assert (error.index, error.field) == (0, "url")
    assert "never both" in error.problem
    error = _error([{"server": "x", "args": []}])
    assert (error.index, error.field) == (0, "command")
    assert error.problem == "is required (or url, for an HTTP server)"


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("ftp://x/mcp", "must be an absolute http: or https: URL"),
        ("/mcp", "must be an absolute http: or https: URL"),
        ("https:///mcp", "must name a host"),
        ("https://user:pw@x/mcp", "must not carry a user or password"),
        ("https://token@x/mcp", "must not carry a user or password"),
        ("https://x/m cp", "must not contain whitespace or control characters"),
        ("https://x:99999/", "is not a valid URL"),
    ],
)
def test_url_rules(url: str, problem: str) -> None:
    error = _error([{**HTTP, "url": url}])
    assert error.field == "url"
    assert error.problem.startswith(problem)
    assert "pw" not in str(error)


def test_bearer_token_env_is_a_variable_name() -> None:
    entry = HttpConnectOptions.model_validate({**HTTP, "bearerTokenEnv": "TRACKER_TOKEN"})
    assert entry.bearer_token_env == "TRACKER_TOKEN"
    error = _error([{**HTTP, "bearerTokenEnv": "ghp_not a name"}])
    assert error.field == "bearerTokenEnv"


def test_connect_kwargs_only_set_fields_and_no_projection() -> None:
    entry = ConnectOptions.model_validate(
        {
            **STDIO,
            "env": {"A": "1"},
            "maxTools": 9,
            "include": ["echo"],
            "exclude": ["fail"],
            "namePrefix": "ex",
        }
    )
    assert entry.connect_kwargs() == {
        "server": "example",
        "command": sys.executable,
        "args": ["-m", "mcp_sync.testing"],
        "env": {"A": "1"},
        "max_tools": 9,
    }
    assert entry.projection_kwargs() == {
        "name_prefix": "ex",
        "include": ("echo",),
        "exclude": ("fail",),
    }
    http = HttpConnectOptions(server="r", url=HTTP["url"], bearer_token_env="T")
    assert http.connect_kwargs() == {"server": "r", "url": HTTP["url"], "bearer_token_env": "T"}


def test_models_are_frozen() -> None:
    entry = ConnectOptions.model_validate(STDIO)
    with pytest.raises(ValidationError):
        entry.server = "other"


def test_connect_takes_a_model_and_keywords_override_it() -> None:
    entry = ConnectOptions.model_validate({**STDIO, "include": ["echo"]})
    with mcp_sync.connect(entry) as session:
        assert session.server == "example"
        assert list(flows.project(session, **entry.projection_kwargs())) == ["mcp/example/echo"]
    with pytest.raises(mcp_sync.InvalidResponse, match="max_tools=1"):
        mcp_sync.connect(entry, max_tools=1)


# --------------------------------------------------------------------------
# Entries in a file


def test_mixed_stdio_and_http_config(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        [
            {**STDIO, "requestTimeoutMs": 30000, "exclude": ["fail"]},
            {**HTTP, "bearerTokenEnv": "REMOTE_TOKEN", "namePrefix": "remote", "maxTools": 64},
        ],
    )
    stdio, http = load_config(path)
    assert isinstance(stdio, ConnectOptions)
    assert isinstance(http, HttpConnectOptions)
    assert stdio.request_timeout_ms == 30000 and stdio.exclude == ("fail",)
    assert http.url == HTTP["url"] and http.bearer_token_env == "REMOTE_TOKEN"
    assert http.connect_kwargs() == {
        "server": "remote",
        "url": HTTP["url"],
        "bearer_token_env": "REMOTE_TOKEN",
        "max_tools": 64,
    }


def test_empty_array_is_no_servers(tmp_path: Path) -> None:
    assert load_config(_write(tmp_path, [])) == ()


def test_the_bundled_example_parses() -> None:
    entries = load_config(REPO / "examples" / "servers.json")
    assert [e.server for e in entries] == ["example", "everything"]
    assert all(isinstance(e, ConnectOptions) for e in entries)


@pytest.mark.parametrize(
    ("entry", "field", "problem"),
    [
        ({"command": "x", "args": []}, "server", "is required"),
        ({**STDIO, "server": ""}, "server", "must not be empty"),
        ({**STDIO, "server": "a\u202eb"}, "server", "must not contain control or format"),
        ({**STDIO, "server": "a\nb"}, "server", "must not contain control or format"),
        ({**STDIO, "command": ""}, "command", "must not be empty"),
        ({**STDIO, "command": 5}, "command", "must be a string"),
        ({"server": "s", "command": "x"}, "args", "is required"),
        ({**STDIO, "args": "-m x"}, "args", "must be an array"),
        ({**STDIO, "args": ["-m", 3]}, "args[1]", "must be a string"),
        ({**STDIO, "env": ["A=1"]}, "env", "must be an object"),
        ({**STDIO, "env": {"TOKEN": 5}}, "env.TOKEN", "must be a string"),
        ({**STDIO, "env": {"A=B": "x"}}, "env", "has a key that is not a valid"),
        ({**STDIO, "cwd": ""}, "cwd", "must not be empty"),
        ({**STDIO, "include": "echo"}, "include", "must be an array"),
        ({**STDIO, "exclude": [""]}, "exclude[0]", "must not be empty"),
        ({**STDIO, "namePrefix": ""}, "namePrefix", "must not be empty"),
        ({**STDIO, "namePrefix": "a//b"}, "namePrefix", "namePrefix 'a//b' has an empty segment"),
        (
            {**STDIO, "max_tools": 5},
            "max_tools",
            "unknown field (the file uses camelCase: maxTools)",
        ),
        ({**STDIO, "bearerTokenEnv": "T"}, "bearerTokenEnv", "unknown field (only an HTTP"),
        ({**STDIO, "colour": "blue"}, "colour", "unknown field"),
        ({**HTTP, "queueCapacity": 4}, "queueCapacity", "unknown field"),
    ],
)
def test_schema_failures_name_entry_and_field(
    entry: dict[str, Any], field: str, problem: str
) -> None:
    error = _error([STDIO | {"server": "first"}, entry])
    assert error.path == "servers.json"
    assert error.index == 1
    assert error.field == field
    assert error.problem.startswith(problem), error.problem
    assert str(error).startswith(f"servers.json: entry 1, field {field}: ")


def test_an_entry_must_be_an_object() -> None:
    error = _error([STDIO, ["x"]])
    assert str(error) == "servers.json: entry 1: must be an object, not an array"


def test_duplicate_server_names() -> None:
    error = _error([STDIO, STDIO])
    assert str(error) == (
        "servers.json: entry 1, field server: server name 'example' is already used by entry 0"
    )


def test_several_problems_are_counted() -> None:
    error = _error([{**STDIO, "maxTools": 0, "maxFrameBytes": 0, "queueCapacity": -1}])
    assert error.problem.endswith("(and 2 more problems in this entry)")


def test_messages_never_repeat_values_from_the_file() -> None:
    secret = "ghp_" + "a" * 36
    for entry in (
        {**STDIO, "env": {"GITHUB_TOKEN": secret}, "maxTools": 0},
        {**STDIO, "env": {"GITHUB_TOKEN": [secret]}},
        {**STDIO, "args": [secret, 1]},
        {**STDIO, "command": [secret]},
        {**HTTP, "url": f"https://{secret}@x/"},
    ):
        assert secret not in str(_error([entry]))


# --------------------------------------------------------------------------
# The file itself


def test_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "nope.json"
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert str(caught.value) == f"{path}: file not found"
    assert caught.value.index is None


def test_directory(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r": is a directory, not a file$"):
        load_config(tmp_path)


def test_unreadable_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _write(tmp_path, [STDIO])
    real_open = builtins.open

    def deny(file: Any, *args: Any, **kwargs: Any) -> Any:
        if os.fspath(file) == str(path):
            raise PermissionError(13, "Permission denied")
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", deny)
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert str(caught.value) == f"{path}: cannot be read: permission denied"


def test_path_through_a_file(tmp_path: Path) -> None:
    path = _write(tmp_path, []) / "x.json"
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert str(caught.value) == f"{path}: cannot be read: Not a directory"


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("", "is not valid JSON: Expecting value at line 1 column 1"),
        ("[{]", "is not valid JSON: Expecting property name enclosed in double quotes"),
        ('[{"server": "a", "server": "b"}]', "is not valid JSON: duplicate key 'server'"),
        ("{}", 'must be an object with "mcpServers" or "servers", or an array of server '
               "entries; it is an object with neither key"),
        ('"servers"', 'must be an object with "mcpServers" or "servers", or an array of '
                      "server entries; it is a string"),
        ("null", 'must be an object with "mcpServers" or "servers", or an array of server '
                 "entries; it is null"),
    ],
)
def test_bad_file_contents(tmp_path: Path, text: str, problem: str) -> None:
    path = tmp_path / "servers.json"
    path.write_text(text)
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert str(caught.value).startswith(f"{path}: {problem}")


def test_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "servers.json"
    path.write_bytes(b'[{"server": "\xff"}]')
    with pytest.raises(ConfigError, match=r": is not UTF-8 text$"):
        load_config(path)


def test_a_bom_is_fine(tmp_path: Path) -> None:
    path = tmp_path / "servers.json"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps([STDIO]).encode())
    assert load_config(path)[0].server == "example"


def test_importing_the_package_does_not_import_pydantic() -> None:
    code = (
        "import sys, mcp_sync\n"
        "assert 'pydantic' not in sys.modules\n"
        "assert 'mcp_sync.config' not in sys.modules and 'mcp_sync.cli' not in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


# --------------------------------------------------------------------------
# A mixed config against live servers (needs the HTTP transport and the peer)


@pytest.mark.peer
def test_check_a_mixed_config_over_stdio_and_http(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    pytest.importorskip("mcp_sync.transports.http", reason="the HTTP transport is not built yet")
    everything_http_server: str = request.getfixturevalue("everything_http_server")
    path = _write(
        tmp_path,
        [STDIO, {"server": "remote", "url": everything_http_server, "namePrefix": "remote"}],
    )
    env = {k: v for k, v in os.environ.items() if k != "MCP_SYNC_CONFIG"}
    done = subprocess.run(
        [sys.executable, "-m", "mcp_sync", "--mcp-config", str(path), "check"],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert any(line.startswith("ok") and "example" in line and "stdio" in line for line in lines)
    assert any(line.startswith("ok") and "remote" in line and "http" in line for line in lines)


# ------------------------------------------------------------------ protocol eras and transports


def test_protocol_fields_reach_connect() -> None:
    (http, stdio) = parse_config([
        {"server": "a", "url": "http://127.0.0.1:1/sse", "type": "sse", "protocol": "legacy",
         "protocolVersion": "2025-06-18"},
        {**STDIO, "server": "b", "type": "stdio", "protocol": "modern"},
    ])
    assert http.connect_kwargs() == {
        "server": "a", "url": "http://127.0.0.1:1/sse", "transport": "sse",
        "protocol": "legacy", "protocol_version": "2025-06-18",
    }
    assert stdio.connect_kwargs()["protocol"] == "modern"
    assert stdio.connect_kwargs()["transport"] == "stdio"


@pytest.mark.parametrize(
    ("extra", "field", "problem"),
    [
        ({"protocol": "new"}, "protocol", "Input should be 'auto', 'legacy' or 'modern'"),
        ({"protocolVersion": "2026-01-01"}, "protocolVersion", "must be one of 2026-07-28, "),
        ({"type": "ws"}, "type", "Input should be 'http' or 'sse'"),
    ],
)
def test_protocol_fields_are_checked(extra: dict[str, Any], field: str, problem: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config([{"server": "a", "url": "http://127.0.0.1:1/mcp", **extra}])
    assert caught.value.field == field
    assert problem in caught.value.problem


def test_a_stdio_entry_is_only_type_stdio() -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config([{**STDIO, "type": "sse"}])
    assert caught.value.field == "type"


def test_a_bad_entry_is_an_mcp_error_and_a_value_error() -> None:
    with pytest.raises(ValueError) as caught:
        parse_config([{**STDIO, "maxTools": 0}])
    assert isinstance(caught.value, ConfigError) and isinstance(caught.value, mcp_sync.McpError)
    assert caught.value.kind == "config_error"
    assert mcp_sync.ConfigError is ConfigError
    assert "0" not in caught.value.problem  # the file's values are never repeated


def test_python_only_fields_stay_out_of_files() -> None:
    for field in ("inheritEnv", "secrets", "httpClient"):
        with pytest.raises(ConfigError) as caught:
            parse_config([{**(STDIO if field != "httpClient" else HTTP), field: True}])
        assert caught.value.field == field and caught.value.problem.startswith("unknown field")
