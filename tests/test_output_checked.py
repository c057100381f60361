"""Structured output is checked against the tool's ``outputSchema`` by
default: a result that breaks it is an :class:`OutputMismatch` naming the
tool and the first failing path, never the server's value;
``validate_output=False`` checks nothing. Without the validation extra the
default lets results through and says so once (a WARNING); ``True`` then
refuses to connect.

Against the official SDK (tests/peers/sdk_cache_server.py: ``good``, ``bad``,
``evil`` with an exponential pattern) in both eras over stdio and Streamable
HTTP, server-everything, and the fake server."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from typing import Any

import pytest
from conftest import connect_sdk_peer, start_everything_http_server
from support import connect_fake, heartbeat

import mcp_sync

pytest.importorskip("jsonschema")
pytest.importorskip("re2")

BACK_WITHIN = 4.0  # the check of 41 characters against ^(a+)+$ on RE2: microseconds; headroom for CI
STALL = 0.5


def test_a_result_that_breaks_its_schema_names_the_tool_and_the_path_but_not_the_value() -> None:
    with connect_fake("--features") as session:
        assert session.call_tool("add", {"a": 1, "b": 2}).structured_content == {"sum": 3}
        with pytest.raises(mcp_sync.OutputMismatch) as caught:
            session.call_tool("bad_structured")
        assert not session.closed
    error = caught.value
    assert isinstance(error, mcp_sync.InvalidResponse) and error.kind == "invalid_response"
    assert (error.tool, error.reason, error.path, error.keyword) == ("bad_structured", "invalid", "/sum", "type")
    assert str(error) == (
        "the structuredContent of tool 'bad_structured' does not match its outputSchema (keyword 'type' at '/sum')"
    )
    assert "not a number" not in str(error) and "not a number" not in repr(error)
    assert error.result.structured_content == {"sum": "not a number"}  # there, for a caller who asks
    copy = error._copy()
    assert isinstance(copy, mcp_sync.OutputMismatch) and copy.path == "/sum"


def test_validate_output_false_checks_nothing() -> None:
    with connect_fake("--features", validate_output=False) as session:
        assert session.call_tool("bad_structured").structured_content == {"sum": "not a number"}


def test_a_missing_structured_content_and_a_nested_path() -> None:
    schema = (
        '[{"name": "raw", "inputSchema": {"type": "object"}, "outputSchema": {"type": "object", "properties": '
        '{"days": {"type": "array", "items": {"type": "object", "properties": {"high": {"type": "number"}}}}}}}]'
    )
    with connect_fake("--tools", schema) as session:
        reply = '{"jsonrpc":"2.0","id":{id},"result":{"content":[],"structuredContent":%s}}'
        bad = reply % '{"days": [{"high": 1}, {"high": "hot"}]}'
        with pytest.raises(mcp_sync.OutputMismatch) as nested:
            session.call_tool("raw", {"lines": [bad], "reply": False})
        none = '{"jsonrpc":"2.0","id":{id},"result":{"content":[]}}'
        with pytest.raises(mcp_sync.OutputMismatch) as missing:
            session.call_tool("raw", {"lines": [none], "reply": False})
    assert (nested.value.path, nested.value.keyword) == ("/days/1/high", "type")
    assert (missing.value.reason, missing.value.path, missing.value.keyword) == ("missing", "", None)
    assert str(missing.value) == "tool 'raw' has an outputSchema but its result has no structuredContent"


def test_a_submitted_call_is_checked_by_default_too() -> None:
    with connect_fake("--features") as session:
        with pytest.raises(mcp_sync.OutputMismatch):
            session.submit_tool("bad_structured").result(timeout=30)
        assert session.submit_tool("add", {"a": 2, "b": 2}).result(timeout=30).structured_content == {"sum": 4}


def test_without_the_extra_results_pass_unchecked_and_a_warning_says_so_once() -> None:
    code = textwrap.dedent(
        """
        import importlib.util, logging, sys
        real = importlib.util.find_spec
        importlib.util.find_spec = lambda name, *a: None if name in ("jsonschema", "re2") else real(name, *a)
        sys.modules["jsonschema"] = None
        logging.basicConfig(stream=sys.stdout, format="%(levelname)s %(name)s %(mcp_event)s: %(message)s")
        import mcp_sync
        from mcp_sync.testing import server_command
        command, *args = server_command("--features")
        for _ in range(2):
            with mcp_sync.connect(server="plain", command=command, args=args) as session:
                print(session.call_tool("bad_structured").structured_content["sum"])
                print(session.call_tool("add", {"a": 1, "b": 2}).structured_content["sum"])
        with mcp_sync.connect(server="plain", command=command, args=args, validate_output=False) as session:
            print(session.call_tool("bad_structured").structured_content["sum"])
        try:
            mcp_sync.connect(server="plain", command=command, args=args, validate_output=True)
        except mcp_sync.MissingExtra as error:
            print(error)
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.splitlines() == [
        "WARNING mcp_sync.session output_unchecked: the result of tool 'bad_structured' was not checked against "
        "its outputSchema: results are checked by default only with the validation extra "
        "(pip install 'mcp-sync-client[validation]'); connect(validate_output=False) checks none and says nothing",
        "not a number",
        "3",
        "not a number",
        "3",
        "not a number",
        "WARNING mcp_sync.session connect_failed: could not connect to server 'plain': option validate_output "
        "needs jsonschema: pip install 'mcp-sync-client[validation]' (missing_extra)",
        "option validate_output needs jsonschema: pip install 'mcp-sync-client[validation]'",
    ], out.stderr


# ------------------------------------------------------------------ the official SDK, both eras, both transports

COMBINATIONS = [(t, e) for t in ("stdio", "http") for e in ("legacy", "modern")]


@pytest.mark.hostile
@pytest.mark.parametrize(("transport", "era"), COMBINATIONS)
def test_sdk_results_are_checked_by_default(transport: str, era: str) -> None:
    with connect_sdk_peer("sdk_cache_server.py", transport, protocol=era) as session:
        assert session.era == era
        assert session.call_tool("good").structured_content == {"n": 7}
        with pytest.raises(mcp_sync.OutputMismatch) as bad:
            session.call_tool("bad")
        with heartbeat() as gaps:
            start = time.monotonic()
            with pytest.raises(mcp_sync.OutputMismatch) as evil:
                session.call_tool("evil")  # ^(a+)+$ against 40 a's and a !: hours for `re`
            took = time.monotonic() - start
        assert not session.closed
    assert (bad.value.tool, bad.value.path, bad.value.keyword) == ("bad", "/n", "type")
    assert "seven" not in str(bad.value)
    assert (evil.value.path, evil.value.keyword) == ("/s", "pattern")
    assert took < BACK_WITHIN, took
    assert gaps[0] < STALL, gaps[0]


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_sdk_results_are_not_checked_when_turned_off(transport: str) -> None:
    with connect_sdk_peer("sdk_cache_server.py", transport, validate_output=False) as session:
        assert session.call_tool("bad").structured_content == {"n": "seven"}
        assert session.call_tool("evil").structured_content["s"].endswith("!")


def _everything_checks(session: mcp_sync.Session) -> Any:
    return session.call_tool("get-structured-content", {"location": "Chicago"}).structured_content


def test_server_everything_passes_its_own_schema_over_stdio(everything_stdio_cmd: list[str]) -> None:
    command, *args = everything_stdio_cmd
    with mcp_sync.connect(server="everything", command=command, args=args) as session:
        assert set(_everything_checks(session)) == {"temperature", "conditions", "humidity"}


def test_server_everything_passes_its_own_schema_over_http() -> None:
    with start_everything_http_server() as url, mcp_sync.connect_http(server="everything", url=url) as session:
        assert set(_everything_checks(session)) == {"temperature", "conditions", "humidity"}
