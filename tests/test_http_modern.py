"""Streamable HTTP in the modern era (2026-07-28), and the era probe over HTTP.

Two servers: the fake (``python -m mcp_sync.testing --http``), which checks every
header against the body the way the revision tells a server to (a mismatch is a
400 with ``-32020``), and the hostile one (tests/hostile_http.py) with
``modern=True``, which hands out session ids anyway and misbehaves on request.
"""

from __future__ import annotations

import base64
import json
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from hostile_http import SECRET_BODY, Hostile, hostile_server
from support import timed

import mcp_sync
from mcp_sync.transports.mcp_headers import InvalidHeaders, encode_value, header_bindings


@contextmanager
def fake_http(*options: str) -> Iterator[str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "mcp_sync.testing", "--http", *options],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
    )
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().decode().strip()
        assert url.startswith("http://127.0.0.1:"), url
        yield url
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def connect(url: str, **kwargs: Any) -> mcp_sync.Session:
    kwargs.setdefault("handshake_timeout_ms", 5_000)
    return mcp_sync.connect_http(server="web", url=url, **kwargs)


def header_log(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def lower(headers: dict[str, str]) -> dict[str, str]:
    return {k.lower(): v for k, v in headers.items()}


REGION_TOOL = {
    "name": "query",
    "inputSchema": {
        "type": "object",
        "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "priority": {"type": "integer", "x-mcp-header": "Priority"},
            "verbose": {"type": "boolean", "x-mcp-header": "Verbose"},
            "where": {"type": "object", "properties": {
                "zone": {"type": "string", "x-mcp-header": "Zone"}}},
            "sql": {"type": "string"},
            "score": {"type": "number"},
        },
    },
}


# ------------------------------------------------------------------ the wire


def test_modern_http_headers_on_every_post_and_no_session(tmp_path: Path) -> None:
    log = tmp_path / "headers"
    with fake_http("--era", "dual", "--header-log", str(log)) as url, connect(url) as session:
        assert (session.era, session.protocol_version) == ("modern", "2026-07-28")
        assert session.call_tool("add", {"a": 2, "b": 3}).structured_content == {"sum": 5}
        assert session.call_tool("echo", {"message": "hi"}).content[0]["text"] == "hi"
    posts = header_log(log)
    assert [p["method"] for p in posts] == ["server/discover", "tools/list", "tools/call", "tools/call"]
    for post in posts:
        headers = lower(post["headers"])
        assert headers["mcp-protocol-version"] == "2026-07-28"
        assert headers["mcp-method"] == post["method"]
        assert "mcp-session-id" not in headers
    assert [lower(p["headers"]).get("mcp-name") for p in posts] == [None, None, "add", "echo"]


def test_legacy_http_keeps_its_headers(tmp_path: Path) -> None:
    log = tmp_path / "headers"
    with fake_http("--era", "dual", "--header-log", str(log)) as url, connect(url, protocol="legacy") as session:
        session.call_tool("echo", {"message": "hi"})
    posts = header_log(log)
    assert [p["method"] for p in posts] == [
        "initialize", "notifications/initialized", "tools/list", "tools/call"
    ]
    assert "mcp-protocol-version" not in lower(posts[0]["headers"])
    for post in posts[1:]:
        headers = lower(post["headers"])
        assert headers["mcp-protocol-version"] == "2025-11-25"
        assert "mcp-method" not in headers and "mcp-name" not in headers


def test_the_session_id_of_a_modern_server_is_ignored(hostile: Hostile) -> None:
    hostile.modern = True
    with connect(hostile.url) as session:
        assert session.era == "modern"
        session.call_tool("echo", {"message": "x"})
    assert all("mcp-session-id" not in post.headers for post in hostile.posts())
    assert hostile.of("DELETE") == []  # nothing to end: the revision has no sessions
    assert hostile.of("GET") == []


@pytest.fixture
def hostile() -> Iterator[Hostile]:
    with hostile_server() as cfg:
        yield cfg


# ------------------------------------------------------------------ custom headers


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ({"region": "us-west1", "priority": 42, "verbose": False},
         {"mcp-param-region": "us-west1", "mcp-param-priority": "42", "mcp-param-verbose": "false"}),
        ({"region": "Hello, 世界", "priority": -7, "verbose": True},
         {"mcp-param-region": "=?base64?SGVsbG8sIOS4lueVjA==?=", "mcp-param-priority": "-7",
          "mcp-param-verbose": "true"}),
        ({"region": " padded ", "where": {"zone": "line1\nline2"}},
         {"mcp-param-region": "=?base64?IHBhZGRlZCA=?=", "mcp-param-zone": "=?base64?bGluZTEKbGluZTI=?="}),
        ({"region": "=?base64?literal?=", "priority": None},
         {"mcp-param-region": "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?="}),
        ({"region": "", "priority": 3.0, "sql": "SELECT 1", "score": 1.5}, {"mcp-param-region": "",
                                                                             "mcp-param-priority": "3"}),
        ({"sql": "nothing mirrored"}, {}),
    ],
)
def test_declared_arguments_are_mirrored_into_headers(
    tmp_path: Path, arguments: dict[str, Any], expected: dict[str, str]
) -> None:
    log = tmp_path / "headers"
    with fake_http("--era", "modern", "--tools", json.dumps([REGION_TOOL]),
                   "--header-log", str(log)) as url, connect(url) as session:
        # The fake refuses a call whose headers do not match its body (-32020).
        session.call_tool("query", arguments)
    call = lower(header_log(log)[-1]["headers"])
    assert {k: v for k, v in call.items() if k.startswith("mcp-param-")} == expected


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ({"nested": 1}, "is a dict; it must be a string, an integer or a boolean"),
        (1.5, "is a float; it must be a string, an integer or a boolean"),
        (2**53, "is an integer beyond 2**53-1"),
    ],
)
def test_an_argument_no_header_can_carry_sends_nothing(
    tmp_path: Path, value: Any, message: str
) -> None:
    log = tmp_path / "headers"
    with fake_http("--era", "modern", "--tools", json.dumps([REGION_TOOL]),
                   "--header-log", str(log)) as url, connect(url) as session:
        with pytest.raises(mcp_sync.ProtocolError) as caught:
            session.call_tool("query", {"priority": value})
        assert str(caught.value) == (
            f"the argument mirrored into header Mcp-Param-Priority {message}"
        )
        assert not session.closed
        session.call_tool("query", {"priority": 1})
    assert [p["method"] for p in header_log(log)].count("tools/call") == 1


INVALID_TOOLS = {
    "empty": {"value": {"type": "string", "x-mcp-header": ""}},
    "object": {"data": {"type": "object", "x-mcp-header": "Data"}},
    "array": {"items": {"type": "array", "items": {"type": "string"}, "x-mcp-header": "Items"}},
    "null": {"nil": {"type": "null", "x-mcp-header": "Nil"}},
    "number": {"score": {"type": "number", "x-mcp-header": "Score"}},
    "untyped": {"any": {"x-mcp-header": "Any"}},
    "same_case": {"a": {"type": "string", "x-mcp-header": "Region"},
                  "b": {"type": "string", "x-mcp-header": "Region"}},
    "other_case": {"a": {"type": "string", "x-mcp-header": "MyField"},
                   "b": {"type": "string", "x-mcp-header": "myfield"}},
    "space": {"v": {"type": "string", "x-mcp-header": "My Region"}},
    "colon": {"v": {"type": "string", "x-mcp-header": "Region:Primary"}},
    "non_ascii": {"v": {"type": "string", "x-mcp-header": "Région"}},
    "control": {"v": {"type": "string", "x-mcp-header": "Region\t1"}},
    "not_a_string": {"v": {"type": "string", "x-mcp-header": 7}},
}


def test_tools_with_invalid_header_declarations_are_dropped_with_a_diagnostic() -> None:
    tools = [{"name": "valid", "inputSchema": {"type": "object", "properties": {
        "region": {"type": "string", "x-mcp-header": "Region"}}}}]
    tools += [{"name": f"bad_{name}", "inputSchema": {"type": "object", "properties": props}}
              for name, props in INVALID_TOOLS.items()]
    tools += [
        {"name": "bad_in_items", "inputSchema": {"type": "object", "properties": {"list": {
            "type": "array", "items": {"type": "string", "x-mcp-header": "Item"}}}}},
        {"name": "bad_in_anyof", "inputSchema": {"type": "object", "anyOf": [
            {"properties": {"v": {"type": "string", "x-mcp-header": "V"}}}]}},
        {"name": "bad_in_defs", "inputSchema": {"type": "object", "$defs": {
            "v": {"type": "string", "x-mcp-header": "V"}}}},
        # Data, not declarations: a property named x-mcp-header, and the key in a default.
        {"name": "fine_data", "inputSchema": {"type": "object", "properties": {
            "x-mcp-header": {"type": "string"},
            "d": {"type": "object", "default": {"x-mcp-header": "Nope"}}}}},
    ]
    events: list[mcp_sync.DiagnosticEvent] = []
    with fake_http("--era", "dual", "--tools", json.dumps(tools)) as url:
        with connect(url, diagnostics=events.append) as session:
            assert [tool.name for tool in session.tools] == ["valid", "fine_data"]
            session.call_tool("valid", {"region": "eu"})
            with pytest.raises(mcp_sync.ToolNotFound):
                session.call_tool("bad_empty")
        with connect(url, protocol="legacy") as legacy:
            # The rules are the 2026-07-28 HTTP transport's: the legacy era keeps them all.
            assert len(legacy.tools) == len(tools)
    rejected = [e.detail.reveal() for e in events if e.kind == "tool-rejected"]
    assert sorted(r["tool"] for r in rejected) == sorted(
        t["name"] for t in tools if t["name"].startswith("bad_")
    )
    reasons = {r["tool"]: r["reason"] for r in rejected}
    assert reasons["bad_same_case"] == "x-mcp-header Region is declared twice (names ignore case)"
    assert reasons["bad_number"] == (
        "x-mcp-header Score is on a property whose type is not string, integer or boolean"
    )
    assert reasons["bad_in_items"] == (
        "x-mcp-header Item is not on a property reached through properties alone"
    )
    assert reasons["bad_non_ascii"] == "an x-mcp-header value is not an HTTP field-name token"
    assert all(repr(e.detail) == "Redacted(...)" for e in events)


def test_over_stdio_header_declarations_are_not_checked() -> None:
    from support import connect_fake

    tools = [{"name": "bad", "inputSchema": {"type": "object", "properties": {
        "v": {"type": "number", "x-mcp-header": "V"}}}}]
    with connect_fake("--era", "modern", "--tools", json.dumps(tools)) as session:
        assert [tool.name for tool in session.tools] == ["bad"]


@pytest.mark.parametrize(
    ("value", "encoded"),
    [("plain", "plain"), ("in side", "in side"), ("", ""), (" lead", "=?base64?IGxlYWQ=?="),
     ("tab\there", "=?base64?dGFiCWhlcmU=?="), ("é", "=?base64?w6k=?="),
     ("=?base64?x?=", "=?base64?PT9iYXNlNjQ/eD89?=")],
)
def test_value_encoding(value: str, encoded: str) -> None:
    assert encode_value(value) == encoded
    if encoded.startswith("=?base64?"):
        assert base64.b64decode(encoded[9:-2]).decode() == value


def test_header_bindings_walk_is_iterative() -> None:
    schema: dict[str, Any] = {"type": "object"}
    node = schema
    for _ in range(10_000):
        node["allOf"] = [{}]
        node = node["allOf"][0]
    node["x-mcp-header"] = "Deep"
    with pytest.raises(InvalidHeaders):
        header_bindings(schema)


# ------------------------------------------------------------------ modern errors over HTTP


def test_32022_in_a_400_body_is_retried_once(tmp_path: Path) -> None:
    log = tmp_path / "headers"
    with fake_http("--era", "modern", "--refuse-first", "--header-log", str(log)) as url, connect(url) as session:
        assert session.era == "modern"
    assert [p["method"] for p in header_log(log)] == ["server/discover", "server/discover", "tools/list"]


def test_a_header_mismatch_fails_that_call(tmp_path: Path) -> None:
    with fake_http("--era", "modern", "--header-mismatch") as url, connect(url) as session:
        with pytest.raises(mcp_sync.RemoteError) as caught:
            session.call_tool("echo", {"message": "x"})
        assert caught.value.code == -32020
        assert str(caught.value) == (
            "server 'web' answered tools/call with HTTP 400 and JSON-RPC error -32020"
        )
        assert not session.closed


@pytest.mark.parametrize(("status", "code"), [(404, -32601), (400, -32020)])
def test_a_json_rpc_error_in_an_error_status_body_is_the_reply(
    hostile: Hostile, status: int, code: int
) -> None:
    hostile.modern = True
    with connect(hostile.url) as session:
        hostile.modern_status = status
        with pytest.raises(mcp_sync.RemoteError) as caught:
            session.call_tool("echo", {"message": "x"})
        assert caught.value.code == code
        assert SECRET_BODY not in str(caught.value)
        assert caught.value.detail.reveal()["message"] == SECRET_BODY
        assert not session.closed


def test_modern_http_auto_against_a_modern_only_server_over_the_fake(tmp_path: Path) -> None:
    with fake_http("--era", "modern") as url:
        with connect(url) as session:
            assert session.era == "modern"
        with pytest.raises(mcp_sync.ProtocolError, match="no version in common"):
            connect(url, protocol="legacy")


def test_input_required_over_http() -> None:
    with fake_http("--era", "modern", "--input-tools") as url, connect(url) as session:
        with pytest.raises(mcp_sync.InputRequired):
            session.call_tool("ask_input")

        def answer(method: str, params: Any, deadline: float) -> dict[str, Any]:
            return {"action": "accept", "content": {}}

        session._core.answer_input_request = answer  # type: ignore[method-assign]
        assert session.call_tool("ask_input").content[0]["text"] == "input received"


# ------------------------------------------------------------------ cancellation and streams


def test_a_timed_out_modern_call_posts_no_cancellation(hostile: Hostile) -> None:
    hostile.modern = True
    with connect(hostile.url) as session:
        with timed(3.0), pytest.raises(mcp_sync.Timeout):
            session.call_tool("hang", timeout_ms=300)
        hostile.release.set()
        assert session.call_tool("echo", {"message": "after"}).content[0]["text"] == "after"
    assert hostile.posts("notifications/cancelled") == []


def test_a_modern_reply_stream_that_ends_early_is_not_resumed(hostile: Hostile) -> None:
    hostile.modern = True
    with connect(hostile.url) as session:
        with pytest.raises(mcp_sync.ConnectionClosed) as caught:
            session.call_tool("drop", timeout_ms=5_000)
        assert str(caught.value) == (
            "server 'web' ended the reply stream of tools/call before replying "
            "(streams are not resumable in the 2026-07-28 revision)"
        )
    assert hostile.of("GET") == []


# ------------------------------------------------------------------ the probe over HTTP


def test_the_probe_is_not_a_session(hostile: Hostile) -> None:
    with connect(hostile.url) as session:
        assert session.era == "legacy"
        session.call_tool("echo", {"message": "x"})
    probe, init = hostile.posts()[:2]
    assert probe.message["method"] == "server/discover"
    assert "mcp-session-id" not in init.headers  # the id the probe's answer carried was not kept
    assert hostile.sessions == 1


@pytest.mark.parametrize("status", [400, 404, 405, 500, 202])
def test_an_error_status_on_the_probe_falls_back(hostile: Hostile, status: int) -> None:
    # A handshake-era server that refuses unknown methods at the HTTP level, or
    # (202) acknowledges the probe like a notification, which breaks the
    # transport's rules: a fresh transport then gets the handshake alone.
    hostile.discover_status = status
    with connect(hostile.url) as session:
        assert session.era == "legacy"
        session.call_tool("echo", {"message": "x"})
    assert [p.message["method"] for p in hostile.posts()][:2] == ["server/discover", "initialize"]


def test_auth_refused_on_the_probe_is_not_an_era_verdict(hostile: Hostile) -> None:
    hostile.force_status = 401
    with pytest.raises(mcp_sync.AuthError, match="401 Unauthorized and no auth is configured"):
        connect(hostile.url)
    assert len(hostile.posts()) == 1  # no handshake after it: it would be refused too


def test_connection_refused_is_not_retried() -> None:
    with pytest.raises(mcp_sync.ConnectionClosed, match="could not be reached"):
        connect("http://127.0.0.1:9/mcp", handshake_timeout_ms=2_000)


def test_a_probe_ignored_over_http_costs_the_grace_not_the_budget(tmp_path: Path) -> None:
    # The handshake goes out HTTP_PROBE_GRACE_MS after the probe (which stays
    # open), not after a probe timeout of seconds.
    from mcp_sync.session.eras import negotiation as _eras

    log = tmp_path / "log"
    with fake_http("--hang-on", "server/discover", "--header-log", str(log)) as url:
        with timed(_eras.HTTP_PROBE_GRACE_MS / 1000 + 2.0), connect(url) as session:
            assert session.era == "legacy"
        with timed(_eras.HTTP_PROBE_GRACE_MS / 1000 + 2.0), connect(url) as session:
            assert session.call_tool("echo", {"message": "x"}).content[0]["text"] == "x"


def test_a_modern_answer_over_http_wins_even_after_the_handshake_went_out(tmp_path: Path) -> None:
    # A server slow to answer anything (a cold instance): the probe, sent first,
    # is answered first, and over HTTP the era is per request: the handshake sent
    # meanwhile pins nothing, and modern wins without waiting for it.
    slow = ("--delay", "server/discover=1200", "--delay", "initialize=1200")
    with fake_http("--era", "dual", *slow) as url, connect(url) as session:
        assert session.era == "modern"
        assert session.call_tool("echo", {"message": "x"}).content[0]["text"] == "x"
    # One that answers the handshake before the probe gets the handshake era.
    with fake_http("--era", "dual", "--delay", "server/discover=1200") as url, connect(url) as session:
        assert session.era == "legacy"
