"""``connect(on_message=...)``: a hook shown every message the server sends,
past the inbound limits, as a frozen copy, without the power to change the
session; what it raises is counted and logged. Against the fake server, then
the official SDK and server-everything over stdio and Streamable HTTP."""

from __future__ import annotations

import logging
from types import MappingProxyType
from typing import Any

import pytest
from conftest import connect_sdk_peer
from support import connect_fake

import mcp_sync
import mcp_sync.session.message_tap
from mcp_sync.session.message_tap import MessageTap

TRANSPORTS = ["stdio", "http"]
ERAS = ["legacy", "modern"]


def test_the_hook_sees_every_reply_notification_and_server_request_in_order() -> None:
    seen: list[mcp_sync.InboundMessage] = []
    with connect_fake("--misbehave", on_message=seen.append, protocol="legacy") as session:
        session.call_tool("notify")
        session.call_tool("ping_client", {"id": "srv-1"})
        result = session.call_tool("echo", {"message": "hi"})
    kinds = [(m.method, m.id) for m in seen]
    # initialize, tools/list, then the calls: the notifications come before their call's reply,
    # and the server's ping (a request of its own) before the reply that reports its pong.
    assert kinds == [
        (None, 1), (None, 2),
        ("notifications/tools/list_changed", None), ("notifications/message", None), (None, 3),
        ("ping", "srv-1"), (None, 4),
        (None, 5),
    ]  # fmt: skip
    assert all(m.server == "fake" for m in seen)
    assert seen[-1].message["result"]["content"] == result.content
    assert seen[3].message["params"] == {"level": "info", "data": "hello"}


def test_the_hook_gets_a_frozen_copy_it_cannot_change_the_session_through() -> None:
    failures: list[BaseException] = []

    def meddle(seen: mcp_sync.InboundMessage) -> None:
        assert isinstance(seen.message, MappingProxyType)
        try:
            seen.message["result"]["content"][0]["text"] = "changed"  # type: ignore[index]
        except (TypeError, KeyError, IndexError) as exc:
            failures.append(exc)
        with pytest.raises(AttributeError):
            seen.message = {}  # type: ignore[misc]

    with connect_fake(on_message=meddle) as session:
        assert session.call_tool("echo", {"message": "mine"}).content[0]["text"] == "mine"
        assert session.message_hook_failures == 0
    assert any(isinstance(exc, TypeError) for exc in failures)


def test_a_hook_that_raises_is_counted_and_logged_and_the_session_goes_on(caplog: pytest.LogCaptureFixture) -> None:
    def broken(seen: mcp_sync.InboundMessage) -> None:
        raise RuntimeError("hook bug: " + str(seen.message))

    with (
        caplog.at_level(logging.DEBUG, logger="mcp_sync.session"),
        connect_fake(on_message=broken, protocol="legacy") as session,
    ):
        assert session.message_hook_failures == 2  # initialize and tools/list
        for _ in range(3):
            assert session.call_tool("echo", {"message": "on"}).content[0]["text"] == "on"
        assert session.message_hook_failures == 5
    records = [r for r in caplog.records if getattr(r, "mcp_event", None) == "message_hook_failed"]
    assert [r.levelno for r in records] == [logging.WARNING] + [logging.DEBUG] * 4
    assert [r.mcp_failures for r in records] == [1, 2, 3, 4, 5]  # type: ignore[attr-defined]
    assert "RuntimeError" in records[0].getMessage()
    assert all("hook bug" not in r.getMessage() and "jsonrpc" not in r.getMessage() for r in records)


def test_a_hook_may_close_the_session_from_inside() -> None:
    holder: list[mcp_sync.Session] = []

    def closer(seen: mcp_sync.InboundMessage) -> None:
        if seen.method == "notifications/message":
            holder[0].close()

    session = connect_fake("--misbehave", on_message=closer)
    holder.append(session)
    with pytest.raises(mcp_sync.ConnectionClosed):
        session.call_tool("notify", timeout_ms=30_000)
    assert session.closed


@pytest.mark.hostile
def test_frames_refused_by_the_limits_never_reach_the_hook() -> None:
    seen: list[mcp_sync.InboundMessage] = []
    with connect_fake("--misbehave", on_message=seen.append, max_frame_bytes=65_536) as session:
        before = len(seen)
        with pytest.raises(mcp_sync.ProtocolError, match="max_frame_bytes"):
            session.call_tool("huge_reply", {"bytes": 200_000})  # fails alone
        assert session.call_tool("echo", {"message": "after"}).content[0]["text"] == "after"
        assert len(seen) == before + 1  # only the echo's reply
        with pytest.raises(mcp_sync.ProtocolError, match="depth"):
            session.call_tool("deep", {"depth": 500})  # ends the session
        assert len(seen) == before + 1
    assert seen[-1].message["result"]["content"][0]["text"] == "after"


def test_without_a_hook_a_message_costs_one_attribute_check(monkeypatch: pytest.MonkeyPatch) -> None:
    def never(self: MessageTap, message: dict[str, Any]) -> None:
        raise AssertionError("shown without a hook")

    monkeypatch.setattr(MessageTap, "__call__", never)
    monkeypatch.setattr(mcp_sync.session.message_tap, "freeze", never)
    with connect_fake("--misbehave") as session:
        session.call_tool("notify")
        assert session.call_tool("echo", {"message": "x"}).content[0]["text"] == "x"


def test_on_message_must_be_callable() -> None:
    with pytest.raises(mcp_sync.InvalidOption, match="option on_message must be callable"):
        connect_fake(on_message="print")  # type: ignore[arg-type]


def test_the_repr_shows_no_server_text() -> None:
    seen = mcp_sync.InboundMessage("s", MappingProxyType({
        "jsonrpc": "2.0", "method": "notifications/\x1b[2Jx", "params": {"secret": "s3cr3t"},
    }))  # fmt: skip
    assert repr(seen) == "InboundMessage(server='s', method='notifications/\\x1b[2Jx', id=None)"
    reply = mcp_sync.InboundMessage("s", MappingProxyType({"jsonrpc": "2.0", "id": 7, "result": {"k": "s3cr3t"}}))
    assert repr(reply) == "InboundMessage(server='s', method=reply, id=7)" and reply.id == 7


# ----------------------------------------------------------------------- real peers


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize("transport", TRANSPORTS)
def test_the_hook_sees_the_official_sdk_s_frames(transport: str, era: str) -> None:
    seen: list[mcp_sync.InboundMessage] = []
    with connect_sdk_peer("sdk_meta_server.py", transport, protocol=era, on_message=seen.append) as session:
        opened = len(seen)
        result = session.call_tool("weather", {"city": "Oslo"})
        session.list_prompts()
    replies = [m for m in seen if m.method is None]
    assert len(replies) == len(seen) and len(seen) == opened + 2
    assert replies[-2].message["result"]["_meta"]["example.com/cost"] == {"units": 3}
    assert mcp_sync.thaw(replies[-2].message["result"]["_meta"]) == mcp_sync.thaw(result.meta)
    assert replies[-1].message["result"]["prompts"][0]["icons"][0]["theme"] == "dark"
    ids = [m.id for m in replies]
    assert ids == sorted(ids) and len(set(ids)) == len(ids)


def test_the_hook_sees_server_everything_s_early_notifications(everything_stdio_cmd: list[str]) -> None:
    seen: list[mcp_sync.InboundMessage] = []
    command, *args = everything_stdio_cmd
    with mcp_sync.connect(server="everything", command=command, args=args, on_message=seen.append) as session:
        session.call_tool("echo", {"message": "hi"})
    methods = [m.method for m in seen]
    assert "notifications/tools/list_changed" in methods
    assert seen[-1].message["result"]["content"][0]["text"] == "Echo: hi"


def test_the_hook_over_server_everything_s_http(everything_http_server: str) -> None:
    seen: list[mcp_sync.InboundMessage] = []
    with mcp_sync.connect_http(server="everything", url=everything_http_server, on_message=seen.append) as session:
        session.call_tool("echo", {"message": "hi"})
        assert session.message_hook_failures == 0
    assert seen[-1].method is None and seen[-1].message["result"]["content"][0]["text"] == "Echo: hi"


def test_servers_connect_and_project_and_in_process_take_the_hook() -> None:
    from mcp_sync.config import ConnectOptions
    from mcp_sync.flows import connect_and_project
    from mcp_sync.testing import connect_in_process, server_command

    seen: list[mcp_sync.InboundMessage] = []
    command, *args = server_command()
    entry = ConnectOptions(server="pooled", command=command, args=args)
    with mcp_sync.Servers(entry, on_message=seen.append) as servers:
        servers.call_tool("pooled", "echo", {"message": "a"})
    with connect_and_project(server="flows", command=command, args=args, on_message=seen.append) as flows:
        flows["mcp/flows/echo"].invoke({"message": "b"})
    pytest.importorskip("mcp")
    from mcp.server.mcpserver import MCPServer

    sdk: Any = MCPServer(name="in-process")

    @sdk.tool()
    def echo(message: str) -> str:
        return message

    with connect_in_process(sdk, server="inproc", on_message=seen.append) as session:
        session.call_tool("echo", {"message": "c"})
    texts = {
        m.server: m.message["result"]["content"][0]["text"]
        for m in seen
        if m.method is None and "content" in m.message.get("result", {})
    }
    assert texts == {"pooled": "a", "flows": "b", "inproc": "c"}
    with pytest.raises(mcp_sync.InvalidOption, match="option on_message must be callable"):
        mcp_sync.Servers(entry, on_message=3)  # type: ignore[arg-type]
