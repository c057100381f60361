"""Change notifications a session asks for: the 2026-07-28 ``subscriptions/listen``
stream (auto_refresh, resource subscriptions), ``resources/subscribe`` in the
handshake era, the server's instructions, ``meta=`` and custom requests.

Against the official SDK 2.3.0 (tests/peers/sdk_listen_server.py), server-everything
and the fake server's hostile behaviours.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

import mcp_sync

TRANSPORTS = ["stdio", "http"]
SDK_LISTEN_INSTRUCTIONS = "Use grow to add a tool and touch to update a resource. " * 8


@contextmanager
def sdk_listen(transport: str, **kwargs: Any) -> Iterator[mcp_sync.Session]:
    """tests/peers/sdk_listen_server.py, connected under the default ``protocol="auto"``."""
    from conftest import PEERS_SRC, _serve, sdk_stdio_command

    sdk_stdio_command()  # skips (or fails under CI) when the SDK is missing
    script = str(PEERS_SRC / "sdk_listen_server.py")
    if transport == "stdio":
        with mcp_sync.connect(server="sdk", command=sys.executable, args=[script], **kwargs) as session:
            yield session
        return
    with (
        _serve(lambda port: [sys.executable, script, "http", str(port)]) as url,
        mcp_sync.connect_http(server="sdk", url=url, **kwargs) as session,
    ):
        yield session


def _until(check: Any, timeout: float = 5.0) -> float:
    """Seconds until ``check()`` held (polling), or fail."""
    start = time.monotonic()
    while not check():
        if time.monotonic() - start > timeout:
            raise AssertionError("not within the time allowed")
        time.sleep(0.005)
    return time.monotonic() - start


# ----------------------------------------------------------------------- the official SDK


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_tool_added_at_run_time_reaches_the_catalog_and_answers(transport: str) -> None:
    with sdk_listen(transport, auto_refresh=True) as session:
        assert (session.era, session.protocol_version) == ("modern", "2026-07-28")
        assert "fresh" not in [tool.name for tool in session.tools]
        assert session.call_tool("grow", {"name": "fresh"}).content[0]["text"] == "added fresh"
        took = _until(lambda: "fresh" in [tool.name for tool in session.tools])
        assert took < 1.0
        assert session.call_tool("fresh").content[0]["text"] == "grown fresh"
        assert not session.tools_changed


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_without_auto_refresh_no_stream_is_opened(transport: str) -> None:
    with sdk_listen(transport) as session:
        assert session._core.inbound.stream is None
        session.call_tool("grow", {"name": "later"})
        assert "later" not in [tool.name for tool in session.tools]
        assert "later" in [tool.name for tool in session.refresh_tools()]


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_resource_updates_reach_the_callback_off_the_reader_thread(transport: str) -> None:
    seen: list[tuple[str, str]] = []
    arrived = threading.Event()

    def on_update(uri: str) -> None:
        seen.append((uri, threading.current_thread().name))
        arrived.set()

    with sdk_listen(transport) as session:
        session.subscribe_resource("note://board", on_update)
        session.call_tool("touch", {"uri": "note://board"})
        assert arrived.wait(5)
        session.call_tool("touch", {"uri": "note://elsewhere"})  # not subscribed: nothing
        session.unsubscribe_resource("note://board")
        session.call_tool("touch", {"uri": "note://board"})
        time.sleep(0.2)
    assert seen == [("note://board", "mcp_sync-sdk-updates-1")]


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_the_sdk_servers_instructions(transport: str) -> None:
    with sdk_listen(transport) as session:
        assert session.instructions == SDK_LISTEN_INSTRUCTIONS
        assert session.server_info.instructions == SDK_LISTEN_INSTRUCTIONS


# ----------------------------------------------------------------------- server-everything (handshake era)


def _everything_instructions() -> str:
    from conftest import peer_package_dir

    return (peer_package_dir("everything") / "dist" / "docs" / "instructions.md").read_text(encoding="utf-8")


def _subscribe_and_toggle(session: mcp_sync.Session) -> None:
    assert session.server_capabilities["resources"]["subscribe"] is True
    assert session.instructions == _everything_instructions()
    assert len(session.instructions.encode()) > 1500
    updates: list[str] = []
    arrived = threading.Event()

    def on_update(uri: str) -> None:
        updates.append(uri)
        arrived.set()

    uri = "demo://resource/static/document/architecture.md"
    session.subscribe_resource(uri, on_update)
    # The server sends an update of every subscribed URI at once, then every 5 s.
    session.call_tool("toggle-subscriber-updates")
    assert arrived.wait(10)
    session.unsubscribe_resource(uri)
    session.call_tool("toggle-subscriber-updates")
    assert updates[0] == uri


def test_server_everything_resource_updates_over_stdio(everything_stdio_cmd: list[str]) -> None:
    with mcp_sync.connect(server="everything", command=everything_stdio_cmd[0], args=everything_stdio_cmd[1:]) as session:
        assert session.era == "legacy"
        _subscribe_and_toggle(session)


def test_server_everything_resource_updates_over_http(everything_http_server: str) -> None:
    with mcp_sync.connect_http(server="everything", url=everything_http_server) as session:
        _subscribe_and_toggle(session)
