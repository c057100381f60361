"""ping() and Servers against real servers: server-everything (stdio), the SDK (stdio, HTTP)."""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Callable

from support import fake_pid, wait_gone

import mcp_sync
from mcp_sync.config import ConnectOptions, HttpConnectOptions


def test_ping_and_a_killed_server_replaced_with_server_everything(everything_stdio_cmd: list[str]) -> None:
    command, *args = everything_stdio_cmd
    with mcp_sync.Servers(ConnectOptions(server="everything", command=command, args=args)) as servers:
        servers.session("everything").ping(timeout_ms=10_000)
        first = fake_pid(servers.session("everything"))
        assert servers.call_tool("everything", "echo", {"message": "one"}).content[0]["text"] == "Echo: one"
        os.kill(first, signal.SIGKILL)
        wait_gone(first)
        # The session ends when its server's exit is seen; the next use replaces it.
        session = servers.session("everything")
        with contextlib.suppress(mcp_sync.ConnectionClosed):
            session.call_tool("echo", {"message": "raced the exit"})
        assert servers.call_tool("everything", "echo", {"message": "two"}).content[0]["text"] == "Echo: two"
        assert fake_pid(servers.session("everything")) != first
        servers.session("everything").ping(timeout_ms=10_000)


def test_ping_the_official_sdk_over_stdio_and_http(
    sdk_stdio_cmd: list[str], sdk_http_server: Callable[..., contextlib.AbstractContextManager[str]]
) -> None:
    command, *args = sdk_stdio_cmd
    with sdk_http_server() as url, mcp_sync.Servers(
        [ConnectOptions(server="local", command=command, args=args), HttpConnectOptions(server="remote", url=url)]
    ) as servers:
        for name in servers:
            servers.session(name).ping(timeout_ms=10_000)
            assert servers.call_tool(name, "add", {"a": 1, "b": 2}).structured_content == {"result": 3}
