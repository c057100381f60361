"""connect() names and types every option, and checks keyword options
without pydantic: the plain checks accept exactly what the models accept,
and leave every other value to the models (which word the error)."""

from __future__ import annotations

import inspect
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

import mcp_sync
from mcp_sync.flows import connect_and_project
from mcp_sync.protocol.errors import InvalidOption
from mcp_sync.protocol.limits import LIMIT_NAMES, Limits
from mcp_sync.session.option_checks import plain_settings
from mcp_sync.session.options import resolve

_SWITCHES = {
    "limits": None, "auth": None, "handlers": None, "diagnostics": None,
    "auto_refresh": None, "validate_output": None,
}  # fmt: skip

STDIO: dict[str, Any] = {"server": "s", "command": "python"}
HTTP: dict[str, Any] = {"server": "s", "url": "https://example.com/mcp"}

CASES: list[dict[str, Any]] = [
    STDIO,
    {**STDIO, "args": ["-m", "x"]},
    {**STDIO, "args": ("a",), "cwd": Path("/tmp"), "env": {"A": "1"}, "inherit_env": True},
    {**STDIO, "secrets": {"b", "a"}, "protocol": "legacy", "protocol_version": "2025-06-18"},
    {**STDIO, "transport": "stdio", "max_tools": 3, "request_timeout_ms": 2**53 - 1},
    HTTP,
    {**HTTP, "transport": "sse"},
    {**HTTP, "transport": "http", "headers": {"X-A": "b"}, "bearer_token_env": "TOK"},
    {**HTTP, "url": "http://127.0.0.1:9/mcp", "headers": {"Authorization": "Bearer x"}},
    {**HTTP, "url": "http://example.com/mcp", "bearer_token_env": "T", "allow_insecure_http": True},
    {**HTTP, "queue_capacity": 5, "max_stderr_bytes": 7, "secrets": ["x"]},
    {**STDIO, "server": "@scope/name"},
    {**STDIO, "server": ".."},
    {**STDIO, "server": "100% a/b c"},
    # Each of these is refused by the models.
    {**STDIO, "server": ""},
    {**STDIO, "server": "a\u202eb"},
    {**STDIO, "server": "a\tb"},
    {**STDIO, "server": 3},
    {"command": "python"},
    {**STDIO, "command": ""},
    {**STDIO, "args": "abc"},
    {**STDIO, "args": [1]},
    {**STDIO, "cwd": ""},
    {**STDIO, "cwd": b"/tmp"},
    {**STDIO, "env": {"": "1"}},
    {**STDIO, "env": {"A=B": "1"}},
    {**STDIO, "env": {"A": "a\0b"}},
    {**STDIO, "env": {"A": 1}},
    {**STDIO, "env": []},
    {**STDIO, "inherit_env": 1},
    {**STDIO, "secrets": "abc"},
    {**STDIO, "secrets": [1]},
    {**STDIO, "protocol": "new"},
    {**STDIO, "protocol_version": "2020-01-01"},
    {**STDIO, "max_tools": 0},
    {**STDIO, "max_tools": True},
    {**STDIO, "max_tools": 1.0},
    {**STDIO, "max_tools": 2**53},
    {**STDIO, "transport": "http"},
    {**STDIO, "transport": "pipe"},
    {**STDIO, "url": "https://example.com/"},
    {**STDIO, "bearer_token_env": "T"},
    {**STDIO, "headers": {"A": "b"}},
    {**HTTP, "env": {"A": "1"}},
    {**HTTP, "args": ["x"]},
    {**HTTP, "transport": "stdio"},
    {**HTTP, "url": ""},
    {**HTTP, "url": "ftp://example.com/"},
    {**HTTP, "url": "https:///mcp"},
    {**HTTP, "url": "https://u:p@example.com/"},
    {**HTTP, "url": "https://example.com:99999/"},
    {**HTTP, "url": "https://exa mple.com/"},
    {**HTTP, "bearer_token_env": "1X"},
    {**HTTP, "bearer_token_env": ""},
    {**HTTP, "headers": {"Content-Type": "x"}},
    {**HTTP, "headers": {"A": ""}},
    {**HTTP, "headers": {"A": "b\nc"}},
    {**HTTP, "headers": {"A": 1}},
    {**HTTP, "headers": {"Authorization": "x"}, "bearer_token_env": "T"},
    {**HTTP, "url": "http://example.com/mcp", "bearer_token_env": "T"},
    {**HTTP, "url": "http://example.com/mcp", "headers": {"A": "b"}},
    {**HTTP, "allow_insecure_http": "yes"},
    {**HTTP, "http_client": object()},
]


def _given(case: dict[str, Any]) -> dict[str, Any]:
    keys = (
        "server", "command", "args", "url", "transport", "protocol", "protocol_version", "cwd",
        "env", "inherit_env", "bearer_token_env", "headers", "allow_insecure_http",
        "http_client", "secrets", *LIMIT_NAMES,
    )  # fmt: skip
    assert set(case) <= set(keys), set(case) - set(keys)
    return {key: case.get(key) for key in keys}


@pytest.mark.parametrize("case", CASES, ids=[f"case{index}" for index in range(len(CASES))])
def test_plain_checks_agree_with_the_models(case: dict[str, Any]) -> None:
    given = _given(case)
    plain = plain_settings(given, _SWITCHES)
    try:
        modelled = resolve(None, given, _SWITCHES)
    except InvalidOption:
        assert plain is None, "the plain checks passed a value the models refuse"
        return
    assert plain is not None, "the plain checks left a plainly right value to the models"
    assert plain == modelled


def test_the_session_keywords_raise_the_same_errors_on_the_plain_path() -> None:
    given = _given(STDIO)
    for switch, value, message in (
        ("limits", 3, "option limits must be an mcp_sync.Limits"),
        ("handlers", 3, "option handlers must be a mcp_sync.Handlers"),
        ("diagnostics", 3, "option diagnostics must be callable"),
        ("auto_refresh", 1, "option auto_refresh must be a bool"),
        ("validate_output", "yes", "option validate_output must be a bool"),
        ("auth", lambda: "t", "option auth applies to an HTTP server"),
    ):
        switches = {**_SWITCHES, switch: value}
        with pytest.raises(InvalidOption, match=message):
            plain_settings(given, switches)
        with pytest.raises(InvalidOption, match=message):
            resolve(None, given, switches)
    with pytest.raises(InvalidOption, match="option auth applies to Streamable HTTP"):
        plain_settings(_given({**HTTP, "transport": "sse"}), {**_SWITCHES, "auth": lambda: "t"})
    limits = Limits.create(max_tools=9, request_timeout_ms=5)
    settings = plain_settings(_given({**STDIO, "max_tools": 4}), {**_SWITCHES, "limits": limits})
    assert settings is not None
    assert (settings.limits.max_tools, settings.limits.request_timeout_ms) == (4, 5)


def test_connect_and_its_wrappers_name_every_option_with_a_type() -> None:
    for function in (mcp_sync.connect, mcp_sync.connect_http, connect_and_project):
        parameters = inspect.signature(function).parameters.values()
        kinds = {p.kind for p in parameters}
        assert inspect.Parameter.VAR_KEYWORD not in kinds, function
        for parameter in parameters:
            assert parameter.annotation is not inspect.Parameter.empty, parameter
            assert "Any" not in str(parameter.annotation), parameter
    connect_names = set(inspect.signature(mcp_sync.connect).parameters)
    assert set(LIMIT_NAMES) <= connect_names
    assert connect_names - {"options"} <= set(inspect.signature(connect_and_project).parameters)
    http_names = set(inspect.signature(mcp_sync.connect_http).parameters)
    assert set(LIMIT_NAMES) <= http_names
    assert not http_names & {"command", "args", "cwd", "env", "inherit_env"}


def test_a_keyword_connect_does_not_import_pydantic() -> None:
    # Validating keywords into pydantic models is what made the first
    # connect of a process slow; the plain checks need none of it.
    code = textwrap.dedent("""
        import sys
        import mcp_sync
        from mcp_sync.testing import server_command
        command, *args = server_command()
        with mcp_sync.connect(server="fake", command=command, args=args, max_tools=100,
                              request_timeout_ms=30_000, secrets={"x"}) as session:
            session.call_tool("echo", {"message": "hi"})
        print("pydantic" in sys.modules, "pydantic_core" in sys.modules)
        try:
            mcp_sync.connect(server="fake", command=command, args=args, max_tools=0)
        except mcp_sync.InvalidOption as exc:
            print(exc)
    """)
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    ).stdout.splitlines()
    assert out == [
        "False False",
        "option max_tools must be a positive integer no larger than 2**53-1, got 0",
    ]


def test_the_version_flag_does_not_import_pydantic() -> None:
    code = textwrap.dedent("""
        import sys
        from mcp_sync.cli import main
        try:
            main(["--version"])
        except SystemExit:
            pass
        print("pydantic" in sys.modules)
    """)
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    ).stdout.splitlines()
    assert out[-1] == "False"
