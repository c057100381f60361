"""Any printable session label: "@scope/name" end to end, and the escape that
keeps flow names unambiguous (flows.escape_label / unescape_label)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import unicodedata
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

import mcp_sync
from mcp_sync import flows
from mcp_sync.config import load_config
from mcp_sync.model_tools import export, provider_names

REPO = Path(__file__).resolve().parent.parent
EXAMPLE = [sys.executable, "-m", "mcp_sync.testing"]
TRICKY = ["@playwright/mcp", "/", "%", "%2F", "%252F", "a/b/c", ".", "..", "...", "./..", "100% sure", "é/ü", "@"]


def _printable(ch: str) -> bool:
    cp = ord(ch)
    return not (
        unicodedata.category(ch) in ("Cc", "Cf") or cp in (0x2028, 0x2029) or 0xD800 <= cp <= 0xDFFF
    )


@pytest.mark.parametrize("label", TRICKY)
def test_the_escape_round_trips_and_is_one_segment(label: str) -> None:
    segment = flows.escape_label(label)
    assert "/" not in segment and segment not in ("", ".", "..")
    assert flows.unescape_label(segment) == label
    name = flows.check_flow_name(f"mcp/{segment}/echo")
    assert name.split("/") == ["mcp", segment, "echo"]


def test_the_escape_writes_what_the_docs_say() -> None:
    assert flows.escape_label("@playwright/mcp") == "@playwright%2Fmcp"
    assert flows.escape_label("a%2Fb") == "a%252Fb"  # a label holding the escape itself
    assert flows.escape_label("/") == "%2F"
    assert (flows.escape_label("."), flows.escape_label("..")) == ("%2E", "%2E%2E")
    assert flows.escape_label("plain-name_1.x") == "plain-name_1.x"


@pytest.mark.parametrize("segment", ["a/b", "%", "a%2", "a%2f", "%41", "%2E.", "a%2Eb", "%2E%2E%2E"])
def test_a_segment_the_escape_never_writes_is_refused(segment: str) -> None:
    with pytest.raises(flows.ProjectionError, match="is not an escaped label"):
        flows.unescape_label(segment)


@given(st.text(alphabet=st.characters(codec=None, min_codepoint=0, max_codepoint=0x10FFFF), min_size=1, max_size=30))
def test_every_printable_label_round_trips_and_nothing_else_is_accepted(label: str) -> None:
    if not all(_printable(ch) for ch in label):
        with pytest.raises(flows.ProjectionError):
            flows.check_label(label)
        return
    assert flows.check_label(label) == label
    segment = flows.escape_label(label)
    assert flows.unescape_label(segment) == label
    assert flows.check_flow_name(f"mcp/{segment}/t").split("/") == ["mcp", segment, "t"]


@given(st.lists(st.text(alphabet="/%.2F5Ea", min_size=1, max_size=8), min_size=2, max_size=6, unique=True))
def test_different_labels_never_share_a_flow_name(labels: list[str]) -> None:
    assert len({flows.escape_label(label) for label in labels}) == len(labels)


@pytest.mark.parametrize("label", ["a\nb", "a\tb", "\x1b[31m", "a\u202eb", "zero\u200bwidth", "a\u2028b", ""])
def test_control_and_format_characters_stay_refused(label: str) -> None:
    with pytest.raises(mcp_sync.InvalidOption, match="option server"):
        mcp_sync.connect(server=label, command=sys.executable, args=["-c", "pass"])


def test_a_scoped_label_connects_and_projects_a_real_server(everything_stdio_cmd: list[str]) -> None:
    label = "@modelcontextprotocol/server-everything"
    command, *args = everything_stdio_cmd
    with flows.connect_and_project(server=label, command=command, args=args) as source:
        assert source.session.server == label
        echo = source["mcp/@modelcontextprotocol%2Fserver-everything/echo"]
        assert echo.server == label
        assert echo.description.startswith(f'MCP tool "echo" on server "{label}"')
        assert echo.invoke({"message": "hi"}).text == "Echo: hi"
        tools = export(source, "openai")
        assert tools.names["mcp___modelcontextprotocol_server-everything__echo"] == echo.name


def test_scoped_keys_of_a_claude_style_config_reach_servers_and_flows(tmp_path: Path) -> None:
    path = tmp_path / "claude.json"
    path.write_text(json.dumps({"mcpServers": {
        "@acme/echo": {"command": EXAMPLE[0], "args": EXAMPLE[1:]},
        "acme/echo%": {"command": EXAMPLE[0], "args": EXAMPLE[1:]},
    }}))  # fmt: skip
    entries = load_config(path)
    assert [entry.server for entry in entries] == ["@acme/echo", "acme/echo%"]
    with mcp_sync.Servers(entries) as servers:
        assert servers.call_tool("@acme/echo", "echo", {"message": "x"}).content[0]["text"] == "x"
        tools = export(servers, "anthropic")
        assert {"mcp/@acme%2Fecho/echo", "mcp/acme%2Fecho%25/echo"} <= set(tools.names.values())
        assert tools.name_of("mcp/@acme%2Fecho/echo") == "mcp___acme_echo__echo"
        result = tools.call({"type": "tool_use", "id": "1", "name": "mcp___acme_echo__echo",
                             "input": {"message": "y"}})  # fmt: skip
        assert "y" in json.dumps(result)


def test_the_cli_lists_and_calls_a_scoped_server(tmp_path: Path) -> None:
    path = tmp_path / "claude.json"
    path.write_text(json.dumps({"mcpServers": {"@acme/echo": {"command": EXAMPLE[0], "args": EXAMPLE[1:]}}}))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}

    def cli(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "mcp_sync", "--mcp-config", str(path), *argv],
                              capture_output=True, text=True, env=env, timeout=120, check=False)  # fmt: skip

    listed = cli("tools", "--json")
    assert listed.returncode == 0, listed.stderr
    assert {(flow["name"], flow["server"]) for flow in json.loads(listed.stdout)} >= {
        ("mcp/@acme%2Fecho/echo", "@acme/echo")
    }
    called = cli("call", "mcp/@acme%2Fecho/echo", "--args", '{"message": "by name"}')
    assert (called.returncode, called.stdout) == (0, "by name\n"), called.stderr
    picked = cli("call", "--server", "@acme/echo", "echo", "--args", '{"message": "picked"}')
    assert (picked.returncode, picked.stdout) == (0, "picked\n"), picked.stderr


def test_provider_names_read_an_escaped_label_as_one_character() -> None:
    names = provider_names(["mcp/@a%2Fb/t", "mcp/a%25b/t"])
    assert names == {"mcp/@a%2Fb/t": "mcp___a_b__t", "mcp/a%25b/t": "mcp__a_b__t"}
