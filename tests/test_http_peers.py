"""Streamable HTTP against real servers on 127.0.0.1.

- the official Python SDK's server (tests/peers/sdk_server.py, uvicorn) in all four
  modes: SSE or JSON replies, stateful or stateless;
- ``@modelcontextprotocol/server-everything`` in ``streamableHttp`` mode.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator

import httpx
import pytest
from support import library_threads, timed

import mcp_sync

SdkServer = Callable[..., contextlib.AbstractContextManager[str]]

MODES = [
    pytest.param((False, False), id="sse-stateful"),
    pytest.param((True, False), id="json-stateful"),
    pytest.param((False, True), id="sse-stateless"),
    pytest.param((True, True), id="json-stateless"),
]


@pytest.fixture(params=MODES)
def sdk_url(request: pytest.FixtureRequest, sdk_http_server: SdkServer) -> Iterator[str]:
    json_response, stateless = request.param
    with sdk_http_server(json_response=json_response, stateless=stateless) as url:
        yield url


def session_id(session: mcp_sync.Session) -> str | None:
    """The transport's session id (private: tests only)."""
    return session._core.transport._session.value  # type: ignore[union-attr, attr-defined, no-any-return]


@pytest.mark.parametrize(
    ("protocol", "era", "version"),
    [("auto", "modern", "2026-07-28"), ("legacy", "legacy", "2025-11-25")],
)
def test_sdk_server_over_http(sdk_url: str, protocol: str, era: str, version: str) -> None:
    with mcp_sync.connect_http(server="sdk", url=sdk_url, protocol=protocol) as session:
        assert (session.era, session.protocol_version) == (era, version)
        # The modern era has no protocol session; the handshake era has one
        # unless the server is stateless.
        if era == "modern":
            assert session_id(session) is None
        assert session.server_info.name == "sdk-peer"
        assert [tool.name for tool in session.tools] == [
            "echo",
            "add",
            "fail",
            "structured",
            "sleep",
            "forecast",
            "connect_account",
        ]
        assert session.call_tool("add", {"a": 2, "b": 40}).structured_content == {"result": 42}
        echo = session.call_tool("echo", {"message": "héllo ✓"})
        assert echo.content[0]["text"] == "héllo ✓"
        assert session.call_tool("fail").is_error is True
        structured = session.call_tool("structured").structured_content
        assert mcp_sync.thaw(structured) == {"answer": 42, "label": "forty-two", "tags": ["a", "b"]}
        with pytest.raises(mcp_sync.ToolNotFound):
            session.call_tool("missing")


def test_sdk_server_many_threads(sdk_url: str) -> None:
    with mcp_sync.connect_http(server="sdk", url=sdk_url) as session:
        results: list[int] = []
        errors: list[BaseException] = []

        def call(i: int) -> None:
            try:
                session.call_tool("sleep", {"ms": 300})
                result = session.call_tool("add", {"a": i, "b": 1}).structured_content
                assert result is not None
                results.append(result["result"])
            except BaseException as exc:
                errors.append(exc)

        threads = [threading.Thread(target=call, args=(i,)) for i in range(16)]
        start = time.monotonic()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
        assert errors == []
        assert sorted(results) == list(range(1, 17))
        # 16 sleeps of 300 ms in parallel, not in series.
        assert time.monotonic() - start < 3.0


def test_sdk_server_timeout_then_close_from_another_thread(sdk_url: str) -> None:
    session = mcp_sync.connect_http(server="sdk", url=sdk_url)
    with timed(3.0), pytest.raises(mcp_sync.Timeout):
        session.call_tool("sleep", {"ms": 5_000}, timeout_ms=300)
    assert session.call_tool("add", {"a": 1, "b": 1}).structured_content == {"result": 2}
    errors: list[BaseException] = []

    def pending() -> None:
        try:
            session.call_tool("sleep", {"ms": 30_000})
        except BaseException as exc:
            errors.append(exc)

    caller = threading.Thread(target=pending)
    caller.start()
    time.sleep(0.3)
    with timed(5.0):  # the pending call's sleep is 30 s
        session.close()
        caller.join(5)
    assert len(errors) == 1 and isinstance(errors[0], mcp_sync.ConnectionClosed)
    assert errors[0].message == "connection scope closed"
    deadline = time.monotonic() + 2
    while library_threads() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert library_threads() == []


@pytest.mark.parametrize("json_response", [False, True], ids=["sse", "json"])
def test_sdk_server_session_deleted_on_close_and_renewed_after_404(
    sdk_http_server: SdkServer, json_response: bool
) -> None:
    with sdk_http_server(json_response=json_response) as url:
        session = mcp_sync.connect_http(server="sdk", url=url, protocol="legacy")
        first = session_id(session)
        assert first
        # End the session behind the client's back: the next call gets 404, and
        # the client starts a new session once and sends the call again.
        headers = {"Mcp-Session-Id": first, "MCP-Protocol-Version": "2025-11-25"}
        assert httpx.delete(url, headers=headers).status_code == 200
        assert session.call_tool("add", {"a": 1, "b": 2}).structured_content == {"result": 3}
        second = session_id(session)
        assert second and second != first
        session.close()
        # close() deleted the new session: the server no longer knows it.
        probe = httpx.post(
            url,
            json={"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}},
            headers={
                **headers,
                "Mcp-Session-Id": second,
                "Accept": "application/json, text/event-stream",
            },
        )
        assert probe.status_code == 404


def test_sdk_server_with_bearer_token_and_own_client(
    sdk_http_server: SdkServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The SDK peer ignores the token; this checks the plumbing end to end.
    monkeypatch.setenv("SDK_PEER_TOKEN", "peer-token-123")
    seen: list[str] = []
    client = httpx.Client(
        event_hooks={"request": [lambda r: seen.append(r.headers.get("authorization", ""))]}
    )
    with (
        sdk_http_server() as url,
        mcp_sync.connect_http(
            server="sdk", url=url, bearer_token_env="SDK_PEER_TOKEN", http_client=client
        ) as session,
    ):
        session.call_tool("echo", {"message": "x"})
    assert seen and all(value == "Bearer peer-token-123" for value in seen)
    assert not client.is_closed
    client.close()


@pytest.mark.parametrize("version", ["2025-06-18", "2025-11-25", None])
def test_server_everything_over_http(everything_http_server: str, version: str | None) -> None:
    # None: protocol="auto", which probes this handshake-era server and falls back.
    with mcp_sync.connect_http(
        server="everything", url=everything_http_server, protocol_version=version
    ) as session:
        assert (session.era, session.protocol_version) == ("legacy", version or "2025-11-25")
        names = [tool.name for tool in session.tools]
        assert "echo" in names and "get-sum" in names
        assert session.call_tool("echo", {"message": "hi"}).content[0]["text"] == "Echo: hi"
        total = session.call_tool("get-sum", {"a": 2, "b": 3}).content[0]["text"]
        assert "5" in total
        assert session_id(session)

        results: list[str] = []

        def call(i: int) -> None:
            results.append(session.call_tool("echo", {"message": str(i)}).content[0]["text"])

        threads = [threading.Thread(target=call, args=(i,)) for i in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(20)
        assert sorted(results) == sorted(f"Echo: {i}" for i in range(8))
