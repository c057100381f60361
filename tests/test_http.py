"""The Streamable HTTP transport against a hostile local server (tests/hostile_http.py).

Every limit and failure path: each asserts the error kind, that messages carry
neither the bearer token nor response body text, and (via the autouse leak check
in conftest) that no ``mcp_sync-*`` thread outlives the test.
"""

from __future__ import annotations

import gc
import itertools
import json
import logging
import socket
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from hostile_http import SECRET_BODY, Hostile, hostile_server
from hypothesis import given, settings
from hypothesis import strategies as st
from support import library_threads, rss_bytes, timed

import mcp_sync
from mcp_sync.transports.http_options import check_http_options
from mcp_sync.transports.sse_parser import SseParser

TOKEN = "tok_SECRET_9f8e7d6c5b4a"
TOKEN_ENV = "MCP_SYNC_TEST_TOKEN"


@pytest.fixture
def token_env(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv(TOKEN_ENV, TOKEN)
    return TOKEN_ENV


@pytest.fixture
def hostile() -> Iterator[Hostile]:
    with hostile_server() as cfg:
        yield cfg


def connect(cfg: Hostile, **kwargs: Any) -> mcp_sync.Session:
    kwargs.setdefault("handshake_timeout_ms", 5_000)
    kwargs.setdefault("request_timeout_ms", 5_000)
    return mcp_sync.connect_http(server="hostile", url=cfg.url, **kwargs)


def assert_clean(error: BaseException) -> None:
    """No token, no body text, no URL in a public message."""
    text = str(error) + repr(error)
    assert TOKEN not in text
    assert SECRET_BODY not in text
    assert "127.0.0.1" not in text


def wait_threads_gone(timeout: float = 10.0) -> None:
    """Join the library's threads; ``timeout`` is a cap for a loaded machine."""
    deadline = time.monotonic() + timeout
    while threads := library_threads():
        for thread in threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        assert time.monotonic() < deadline or not library_threads(), [t.name for t in library_threads()]


# ---------------------------------------------------------------------- options


@pytest.mark.parametrize(
    "url",
    [
        "ftp://127.0.0.1/mcp",
        "/mcp",
        "127.0.0.1:8080/mcp",
        "http:///mcp",
        "http://user:pw@127.0.0.1/mcp",
        "https://user@127.0.0.1/mcp",
        "http://127.0.0.1:99999/mcp",
        "http://127.0.0.1/m cp",
        "http://127.0.0.1/\nmcp",
        "",
        42,
    ],
)
def test_bad_urls_are_refused_before_any_traffic(url: object) -> None:
    with pytest.raises(mcp_sync.ProtocolError) as info:
        mcp_sync.connect(server="x", url=url)  # type: ignore[arg-type]
    assert "option url" in str(info.value)
    assert "pw" not in str(info.value)


@pytest.mark.parametrize("name", ["", "1ABC", "A-B", "A B", "A=B", 7])
def test_bearer_token_env_must_be_a_variable_name(hostile: Hostile, name: object) -> None:
    with pytest.raises(mcp_sync.ProtocolError, match="bearer_token_env"):
        connect(hostile, bearer_token_env=name)
    assert hostile.requests == []


@pytest.mark.parametrize("value", [None, ""])
def test_unset_or_empty_token_names_server_and_variable(
    hostile: Hostile, monkeypatch: pytest.MonkeyPatch, value: str | None
) -> None:
    if value is None:
        monkeypatch.delenv(TOKEN_ENV, raising=False)
    else:
        monkeypatch.setenv(TOKEN_ENV, value)
    with pytest.raises(mcp_sync.ProtocolError) as info:
        connect(hostile, bearer_token_env=TOKEN_ENV)
    assert "'hostile'" in str(info.value)
    assert TOKEN_ENV in str(info.value)
    assert "unset or empty" in str(info.value)
    assert hostile.requests == []  # nothing was sent


def test_token_with_bad_characters_is_refused_without_echoing_it(
    hostile: Hostile, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(TOKEN_ENV, TOKEN + "\r\nX-Evil: 1")
    with pytest.raises(mcp_sync.ProtocolError) as info:
        connect(hostile, bearer_token_env=TOKEN_ENV)
    assert_clean(info.value)
    assert TOKEN_ENV in str(info.value)


def test_http_client_must_be_an_httpx_client(hostile: Hostile) -> None:
    with pytest.raises(mcp_sync.ProtocolError, match="http_client"):
        connect(hostile, http_client=object())
    async_client = httpx.AsyncClient()
    with pytest.raises(mcp_sync.ProtocolError, match="http_client"):
        connect(hostile, http_client=async_client)


def test_missing_httpx_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "httpx", None)
    with pytest.raises(mcp_sync.MissingExtra, match=r"mcp-sync-client\[http\]"):
        check_http_options("x", "http://127.0.0.1/mcp", None, None)


def test_command_and_url_are_exclusive() -> None:
    with pytest.raises(mcp_sync.ProtocolError, match="exactly one"):
        mcp_sync.connect(server="x", url="http://127.0.0.1/mcp", command="true")


# ---------------------------------------------------------------------- the wire


@pytest.mark.parametrize("mode", ["sse", "json"])
def test_session_over_http_and_its_headers(mode: str, token_env: str) -> None:
    with hostile_server(mode=mode) as cfg:
        with connect(cfg, bearer_token_env=token_env) as session:
            assert session.protocol_version == "2025-11-25"
            assert session.era == "legacy"
            assert session.server_info.name == "hostile"
            assert "echo" in [tool.name for tool in session.tools]
            result = session.call_tool("echo", {"message": "hi"})
            assert result.content[0]["text"] == "hi"
            assert TOKEN not in repr(session) and TOKEN not in repr(session._core.transport)
        posts = cfg.posts()
        probe, init, initialized, listing, call = posts[:5]
        assert [p.message.get("method") for p in (probe, init, initialized, listing, call)] == [
            "server/discover", "initialize", "notifications/initialized", "tools/list", "tools/call"
        ]  # fmt: skip
        for post in posts:
            assert post.headers["accept"] == "application/json, text/event-stream"
            assert post.headers["content-type"] == "application/json"
            assert post.headers["authorization"] == f"Bearer {TOKEN}"
        # The era probe is a modern request: its own headers, and the session id
        # the server handed out with its error is not taken.
        assert probe.headers["mcp-protocol-version"] == "2026-07-28"
        assert probe.headers["mcp-method"] == "server/discover"
        # No session id or version on initialize; both on everything after it.
        assert "mcp-session-id" not in init.headers
        assert "mcp-protocol-version" not in init.headers
        for post in posts[2:]:
            assert post.headers["mcp-session-id"] == "sess-1"
            assert post.headers["mcp-protocol-version"] == "2025-11-25"
            assert "mcp-method" not in post.headers
        # DELETE on close, with the session id.
        (delete,) = cfg.of("DELETE")
        assert delete.headers["mcp-session-id"] == "sess-1"


def test_a_2025_11_25_server_is_accepted(hostile: Hostile) -> None:
    hostile.protocol_version = "2025-11-25"
    with connect(hostile) as session:
        assert session.protocol_version == "2025-11-25"
        session.call_tool("echo", {"message": "x"})
    assert hostile.posts("tools/call")[0].headers["mcp-protocol-version"] == "2025-11-25"


def test_stateless_server_gets_no_session_id_and_no_delete() -> None:
    with hostile_server(stateless=True) as cfg:
        with connect(cfg) as session:
            session.call_tool("echo", {"message": "x"})
        assert all("mcp-session-id" not in p.headers for p in cfg.posts())
        assert cfg.of("DELETE") == []


def test_delete_405_is_tolerated(hostile: Hostile) -> None:
    hostile.delete_status = 405
    session = connect(hostile)
    with timed(3.0):
        session.close()
    assert len(hostile.of("DELETE")) == 1
    assert session.closed


def test_ping_on_the_stream_is_answered_with_its_exact_id(hostile: Hostile) -> None:
    with connect(hostile) as session:
        result = session.call_tool("ping")
    reply = json.loads(result.content[0]["text"])
    assert reply == {"jsonrpc": "2.0", "id": "srv-ping-7", "result": {}}


def test_unknown_server_request_gets_method_not_found(hostile: Hostile) -> None:
    with connect(hostile) as session:
        result = session.call_tool("unknown")
    reply = json.loads(result.content[0]["text"])
    assert reply["id"] == 99
    assert reply["error"]["code"] == -32601


def test_notifications_on_the_stream_are_dropped(hostile: Hostile) -> None:
    with connect(hostile) as session:
        assert session.call_tool("notify").content[0]["text"] == "after notes"
        assert not session.closed
        assert session.call_tool("echo", {"message": "still"}).content[0]["text"] == "still"


# ---------------------------------------------------------------------- inbound limits


@pytest.mark.parametrize("declare", [True, False], ids=["content-length", "streamed"])
def test_200mb_json_body_is_refused_with_memory_flat(hostile: Hostile, declare: bool) -> None:
    with connect(hostile, max_frame_bytes=1_048_576) as session:
        gc.collect()
        before = rss_bytes()
        with timed(10.0), pytest.raises(mcp_sync.ProtocolError) as info:
            session.call_tool("big", {"bytes": 200_000_000, "length": declare})
        grown = rss_bytes() - before
        assert "max_frame_bytes=1048576" in str(info.value)
        assert ("200000" if declare else "at least") in str(info.value)
        assert grown < 40_000_000, f"RSS grew by {grown} bytes"
        # The body answered one POST: only its request fails.
        assert not session.closed
        assert session.call_tool("echo", {"message": "x"}).content[0]["text"] == "x"


def test_oversize_sse_event_is_refused_with_memory_flat(hostile: Hostile) -> None:
    with connect(hostile, max_frame_bytes=1_048_576) as session:
        gc.collect()
        before = rss_bytes()
        with timed(10.0), pytest.raises(mcp_sync.ProtocolError) as info:
            session.call_tool("bigevent", {"bytes": 200_000_000})
        assert rss_bytes() - before < 40_000_000
        assert "SSE event" in str(info.value)
        assert "max_frame_bytes" in str(info.value)
        # The stream served one request: only that request fails.
        assert not session.closed
        assert session.call_tool("echo", {"message": "x"}).content[0]["text"] == "x"


def test_max_frame_bytes_applies_to_each_body(hostile: Hostile) -> None:
    with connect(hostile, max_frame_bytes=4096) as session:
        session.call_tool("echo", {"message": "x" * 3000})
        with pytest.raises(mcp_sync.ProtocolError, match="max_frame_bytes=4096"):
            session.call_tool("echo", {"message": "x" * 5000})


def test_deep_json_is_refused(hostile: Hostile) -> None:
    with connect(hostile) as session, pytest.raises(mcp_sync.ProtocolError, match="depth"):
        session.call_tool("deep", {"depth": 300})


def test_compressed_body_is_refused(hostile: Hostile) -> None:
    with connect(hostile) as session, pytest.raises(mcp_sync.ProtocolError, match="compressed"):
        session.call_tool("gzip")
    assert hostile.posts()[0].headers["accept-encoding"] == "identity"


def test_202_for_a_request_is_a_protocol_error(hostile: Hostile) -> None:
    with connect(hostile) as session, pytest.raises(mcp_sync.ProtocolError, match="202"):
        session.call_tool("accepted")


def test_unexpected_content_type_is_a_protocol_error(hostile: Hostile) -> None:
    with connect(hostile) as session, pytest.raises(mcp_sync.ProtocolError, match="content type"):
        session.call_tool("html")


def test_invalid_session_id_is_refused() -> None:
    with (
        hostile_server(session_id_override="bad id\x01") as cfg,
        pytest.raises(mcp_sync.ProtocolError, match="Mcp-Session-Id"),
    ):
        connect(cfg)


def test_catalog_limits_apply_over_http() -> None:
    many = [{"name": f"t{i}", "inputSchema": {"type": "object"}} for i in range(10)]
    with (
        hostile_server(tools=many) as cfg,
        pytest.raises(mcp_sync.InvalidResponse, match="max_tools"),
    ):
        connect(cfg, max_tools=5)
    bad = [{"name": "evil\u202ename", "inputSchema": {"type": "object"}}]
    with hostile_server(tools=bad) as cfg, pytest.raises(mcp_sync.InvalidResponse):
        connect(cfg)


# ---------------------------------------------------------------------- outbound limits


def test_outbound_limits_send_nothing_and_keep_the_session(hostile: Hostile) -> None:
    with connect(hostile, max_outbound_frame_bytes=2048) as session:
        sent = len(hostile.posts())
        with pytest.raises(mcp_sync.ProtocolError, match="max_outbound_frame_bytes"):
            session.call_tool("echo", {"message": "x" * 4096})
        deep: Any = {}
        for _ in range(200):
            deep = {"a": deep}
        with pytest.raises(mcp_sync.ProtocolError, match="depth"):
            session.call_tool("echo", deep)
        with pytest.raises(mcp_sync.ProtocolError, match="NaN"):
            session.call_tool("echo", {"x": float("nan")})
        assert len(hostile.posts()) == sent
        assert session.call_tool("echo", {"message": "ok"}).content[0]["text"] == "ok"


# ---------------------------------------------------------------------- HTTP failures


@pytest.mark.parametrize("status", [401, 403])
def test_token_refused_at_connect_is_auth_failed(status: int, token_env: str) -> None:
    events: list[mcp_sync.DiagnosticEvent] = []
    with hostile_server(force_status=status) as cfg:
        with pytest.raises(mcp_sync.AuthError) as info:
            connect(cfg, bearer_token_env=token_env, diagnostics=events.append)
        assert all(TOKEN not in repr(event.detail.reveal()) for event in events)
        assert info.value.kind == "auth_failed"
        assert f"HTTP {status}" in str(info.value)
        assert "refused the token from bearer_token_env" in str(info.value)
        assert_clean(info.value)
        assert cfg.of("DELETE") == []


@pytest.mark.parametrize("status", [401, 403])
def test_auth_refused_with_no_auth_configured_is_auth_failed(status: int) -> None:
    with hostile_server(force_status=status) as cfg:
        with pytest.raises(mcp_sync.AuthError) as info:
            connect(cfg)
        assert info.value.kind == "auth_failed"
        assert f"HTTP {status}" in str(info.value)
        assert "no auth is configured (give auth=" in str(info.value)
        assert cfg.of("DELETE") == []


@pytest.mark.parametrize("status", [401, 403])
def test_auth_refused_mid_session_ends_it(status: int, token_env: str, hostile: Hostile) -> None:
    session = connect(hostile, bearer_token_env=token_env)
    hostile.force_status = status
    with pytest.raises(mcp_sync.AuthError) as info:
        session.call_tool("echo", {"message": "x"})
    assert "refused the token from bearer_token_env" in str(info.value)
    assert_clean(info.value)
    assert session.closed
    with pytest.raises(mcp_sync.AuthError) as again:
        session.call_tool("echo", {"message": "x"})
    assert again.value.message == info.value.message
    session.close()


@pytest.mark.parametrize("status", [500, 502, 503, 400, 429])
def test_error_status_fails_that_call_only(status: int, token_env: str, hostile: Hostile) -> None:
    with connect(hostile, bearer_token_env=token_env) as session:
        with pytest.raises(mcp_sync.RemoteError) as info:
            session.call_tool("status", {"code": status})
        assert f"HTTP {status}" in str(info.value)
        assert info.value.code == (-32603 if status >= 500 else -32600)
        assert info.value.detail.reveal()["data"] == {"http_status": status}
        assert_clean(info.value)
        assert SECRET_BODY not in json.dumps(info.value.detail.reveal())
        assert not session.closed
        assert session.call_tool("echo", {"message": "ok"}).content[0]["text"] == "ok"


def test_error_status_at_connect_fails_connect(hostile: Hostile) -> None:
    hostile.force_status = 500
    with pytest.raises(mcp_sync.RemoteError, match="answered initialize with HTTP 500") as info:
        connect(hostile)
    assert_clean(info.value)
    # The era probe got a 500 too (no evidence of a modern server), then initialize.
    assert [p.headers.get("mcp-method") for p in hostile.posts()] == ["server/discover", None]


def test_connection_refused_is_connection_closed() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with timed(3.0), pytest.raises(mcp_sync.ConnectionClosed, match="could not be reached") as info:
        mcp_sync.connect_http(server="gone", url=f"http://127.0.0.1:{port}/mcp")
    assert "ConnectError" in str(info.value)
    assert_clean(info.value)


def test_404_for_a_known_session_starts_a_new_one_once(hostile: Hostile) -> None:
    with connect(hostile) as session:
        hostile.expire = 1
        assert session.call_tool("echo", {"message": "again"}).content[0]["text"] == "again"
        inits = hostile.posts("initialize")
        assert len(inits) == 2
        assert "mcp-session-id" not in inits[1].headers
        assert hostile.posts("notifications/initialized")[-1].headers["mcp-session-id"] == "sess-3"
        calls = hostile.posts("tools/call")
        assert [c.headers["mcp-session-id"] for c in calls] == ["sess-1", "sess-3"]
        # The new session is kept.
        session.call_tool("echo", {"message": "later"})
        assert hostile.posts("tools/call")[-1].headers["mcp-session-id"] == "sess-3"


def test_404_again_after_a_new_session_ends_it(hostile: Hostile) -> None:
    session = connect(hostile)
    hostile.expire = 2  # the retried request is forgotten too
    with pytest.raises(mcp_sync.ConnectionClosed, match="404") as info:
        session.call_tool("echo", {"message": "x"})
    assert_clean(info.value)
    assert len(hostile.posts("initialize")) == 2  # one new session, not a loop
    assert session.closed
    session.close()


def test_a_new_session_after_a_404_is_logged(hostile: Hostile, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="mcp_sync.transport"), connect(hostile) as session:
        hostile.expire = 1
        session.call_tool("echo", {"message": "again"})
    (record,) = [r for r in caplog.records if getattr(r, "mcp_event", None) == "renew"]
    assert record.name == "mcp_sync.transport" and record.levelno == logging.INFO
    assert record.getMessage() == "server 'hostile' no longer knows the session (HTTP 404): starting a new one"
    assert "sess-" not in record.getMessage()


def test_a_failed_renewal_is_logged(hostile: Hostile, caplog: pytest.LogCaptureFixture) -> None:
    session = connect(hostile)
    hostile.expire = 2  # the new session's first request is forgotten too
    with caplog.at_level(logging.INFO, logger="mcp_sync.transport"), pytest.raises(mcp_sync.ConnectionClosed):
        session.call_tool("echo", {"message": "x"})
    session.close()
    events = [getattr(r, "mcp_event", None) for r in caplog.records if r.name == "mcp_sync.transport"]
    assert events[:2] == ["renew", "renew_failed"], events


# ---------------------------------------------------------------------- resumption


def test_stream_ending_early_is_resumed_with_get_and_last_event_id(hostile: Hostile) -> None:
    hostile.retry_ms = 400
    with connect(hostile) as session:
        result = session.call_tool("drop")
        assert result.content[0]["text"] == "resumed"
        (get,) = hostile.of("GET")
        call_id = hostile.posts("tools/call")[0].message["id"]
        assert get.headers["last-event-id"] == f"ev-{call_id}"
        assert get.headers["accept"] == "text/event-stream"
        assert get.headers["mcp-session-id"] == "sess-1"
        delay = get.at - hostile.stream_closed_at
        assert 0.38 <= delay < 1.0, delay
        # The GET stream stays open on the server; the session is still fine.
        assert session.call_tool("echo", {"message": "x"}).content[0]["text"] == "x"


def test_a_resumed_stream_is_logged(hostile: Hostile, caplog: pytest.LogCaptureFixture) -> None:
    hostile.retry_ms = 50
    with caplog.at_level(logging.INFO, logger="mcp_sync.transport"), connect(hostile) as session:
        assert session.call_tool("drop").content[0]["text"] == "resumed"
    (record,) = [r for r in caplog.records if getattr(r, "mcp_event", None) == "resume"]
    assert record.levelno == logging.INFO and record.mcp_request == "tools/call"  # type: ignore[attr-defined]
    assert "ev-" not in record.getMessage()


def test_stream_ending_without_an_event_id_ends_the_session(hostile: Hostile) -> None:
    with connect(hostile) as session:
        with pytest.raises(mcp_sync.ConnectionClosed, match="without an event id"):
            session.call_tool("dropnoid")
        assert session.closed


def test_resume_refused_ends_the_session(hostile: Hostile) -> None:
    hostile.retry_ms = 50
    with connect(hostile) as session:
        hostile.resume.clear()
        original = hostile.resume.__class__.__setitem__

        class Forgetful(dict[str, bytes]):
            def __setitem__(self, key: str, value: bytes) -> None:
                original(self, key + "-lost", value)

        hostile.resume = Forgetful()
        with pytest.raises(mcp_sync.ConnectionClosed, match="refused to resume it"):
            session.call_tool("drop")


def test_resume_waits_no_longer_than_the_deadline(hostile: Hostile) -> None:
    hostile.retry_ms = 10_000
    with connect(hostile) as session, timed(2.0), pytest.raises(mcp_sync.Timeout):
        session.call_tool("drop", timeout_ms=500)
    assert hostile.of("GET") == []


# ---------------------------------------------------------------------- deadlines and closing


def test_timeout_sends_cancelled(hostile: Hostile) -> None:
    with connect(hostile) as session:
        with timed(2.0), pytest.raises(mcp_sync.Timeout) as info:
            session.call_tool("hang", timeout_ms=300)
        assert "timeout_ms=300" in str(info.value)
        call_id = hostile.posts("tools/call")[0].message["id"]
        cancelled = hostile.wait_for("notifications/cancelled")
        assert cancelled.message["params"]["requestId"] == call_id
        assert not session.closed
        assert session.call_tool("echo", {"message": "x"}).content[0]["text"] == "x"


def test_request_timeout_ms_is_the_default_budget(hostile: Hostile) -> None:
    with connect(hostile, request_timeout_ms=300) as session:
        with timed(2.0), pytest.raises(mcp_sync.Timeout, match="request_timeout_ms=300"):
            session.call_tool("hang")
        hostile.wait_for("notifications/cancelled")


def test_deadline_covers_the_whole_stream(hostile: Hostile) -> None:
    # Bytes keep arriving, so no single read ever times out: the call's
    # deadline still ends it, and the worker stops reading (no thread left).
    with connect(hostile) as session, timed(2.0), pytest.raises(mcp_sync.Timeout):
        session.call_tool("trickle", timeout_ms=400)


def test_a_body_of_escaped_quotes_is_scanned_in_linear_time(hostile: Hostile) -> None:
    # The audit's 32 KB body stalled every thread for seconds; 1 MiB for an hour.
    with connect(hostile) as session, timed(5.0), pytest.raises(
        mcp_sync.ProtocolError, match="JSON body that is not its reply"
    ):
        session.call_tool("quotes", {"bytes": 1_000_000}, timeout_ms=10_000)


def test_a_dribbled_body_is_abandoned_at_the_deadline(hostile: Hostile) -> None:
    # One byte every 0.4 s never trips a read timeout. Before the watchdog each
    # such call kept a worker for minutes: 40 of them took the whole pool, and
    # the next call waited behind them.
    outcomes: list[str] = []

    def call() -> None:
        try:
            session.call_tool("dribble", timeout_ms=500)
            outcomes.append("answered")
        except mcp_sync.Timeout:
            outcomes.append("timeout")

    with connect(hostile) as session:
        callers = [threading.Thread(target=call) for _ in range(40)]
        with timed(5.0):
            for caller in callers:
                caller.start()
            for caller in callers:
                caller.join()
        assert outcomes == ["timeout"] * 40
        with timed(3.0):
            assert session.call_tool("echo", {"message": "free"}, timeout_ms=2_000).content[0]["text"] == "free"
        assert not session.closed
    wait_threads_gone()


def test_largest_limits_work_over_http(hostile: Hostile) -> None:
    huge = mcp_sync.MAX_SAFE_INTEGER
    with connect(hostile, handshake_timeout_ms=huge, request_timeout_ms=huge) as session:
        assert (
            session.call_tool("echo", {"message": "x"}, timeout_ms=huge).content[0]["text"] == "x"
        )


def test_worker_threads_are_named_after_the_server(hostile: Hostile) -> None:
    with connect(hostile) as session:
        session.call_tool("echo", {"message": "x"})
        names = [t.name for t in library_threads()]
        assert names and all(n.startswith("mcp_sync-hostile-http-") for n in names)
    wait_threads_gone()


@pytest.mark.parametrize("json_hang", [False, True], ids=["sse-open", "no-headers-yet"])
def test_close_from_another_thread_fails_pending_calls_at_once(
    hostile: Hostile, json_hang: bool
) -> None:
    session = connect(hostile, request_timeout_ms=60_000)
    errors: list[BaseException] = []

    def call() -> None:
        try:
            session.call_tool("hang", {"json": json_hang})
        except BaseException as exc:
            errors.append(exc)

    callers = [threading.Thread(target=call) for _ in range(3)]
    for thread in callers:
        thread.start()
    deadline = time.monotonic() + 5
    while len(hostile.posts("tools/call")) < 3 and time.monotonic() < deadline:
        time.sleep(0.01)
    with timed(5.0):  # their own deadlines are 60 s away
        session.close()
        for thread in callers:
            thread.join(5.0)
    assert len(errors) == 3
    for error in errors:
        assert isinstance(error, mcp_sync.ConnectionClosed)
        assert error.message == "connection scope closed"
    # The workers were woken, not left to their 60 s timeouts.
    wait_threads_gone()


def test_many_threads_share_one_session(hostile: Hostile) -> None:
    with connect(hostile) as session:
        results: list[str] = []
        errors: list[BaseException] = []

        def call(i: int) -> None:
            try:
                if i % 4 == 0:
                    # Some callers give up early; their deadlines are their own.
                    with pytest.raises(mcp_sync.Timeout):
                        session.call_tool("hang", timeout_ms=200)
                    results.append("timeout")
                else:
                    results.append(session.call_tool("slow", {"ms": 600}).content[0]["text"])
            except BaseException as exc:
                errors.append(exc)

        callers = [threading.Thread(target=call, args=(i,)) for i in range(24)]
        start = time.monotonic()
        for thread in callers:
            thread.start()
        for thread in callers:
            thread.join(10)
        took = time.monotonic() - start
        assert errors == []
        assert sorted(results) == ["slept"] * 18 + ["timeout"] * 6
        # In series the 18 slow calls alone would take 10.8 s.
        assert took < 5.0, f"24 concurrent calls took {took:.2f}s: they were serialized"


def test_queue_capacity_bounds_waiting_callers(hostile: Hostile) -> None:
    with connect(hostile, queue_capacity=1) as session:
        results = []
        callers = [
            threading.Thread(target=lambda: results.append(session.call_tool("slow", {"ms": 50})))
            for _ in range(8)
        ]
        for thread in callers:
            thread.start()
        for thread in callers:
            thread.join(10)
        assert len(results) == 8


def test_garbage_collected_session_is_torn_down(hostile: Hostile) -> None:
    session = connect(hostile)
    session.call_tool("echo", {"message": "x"})
    del session
    gc.collect()
    wait_threads_gone()
    assert len(hostile.of("DELETE")) == 1


def test_connect_timeout_leaves_nothing_running(hostile: Hostile) -> None:
    # A server that accepts the connection but never answers initialize.
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        with timed(3.0), pytest.raises(mcp_sync.Timeout, match="initialize"):
            mcp_sync.connect_http(
                server="mute", url=f"http://127.0.0.1:{port}/mcp", handshake_timeout_ms=300
            )
    wait_threads_gone()


# ---------------------------------------------------------------------- bring your own client


def test_callers_own_httpx_client_is_used_and_not_closed(hostile: Hostile, token_env: str) -> None:
    seen: list[str] = []
    client = httpx.Client(
        headers={"X-Team": "blue"},
        event_hooks={"request": [lambda request: seen.append(request.method)]},
    )
    with connect(hostile, http_client=client, bearer_token_env=token_env) as session:
        session.call_tool("echo", {"message": "x"})
    assert seen[:2] == ["POST", "POST"] and seen[-1] == "DELETE"
    assert hostile.posts()[0].headers["x-team"] == "blue"
    assert hostile.posts()[0].headers["authorization"] == f"Bearer {TOKEN}"
    assert not client.is_closed
    client.close()


def test_proxy_environment_is_honoured(hostile: Hostile, monkeypatch: pytest.MonkeyPatch) -> None:
    # The hostile server plays the proxy: httpx sends it absolute-form requests.
    for name in ("NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HTTP_PROXY", hostile.url.rsplit("/", 1)[0])
    with mcp_sync.connect_http(server="proxied", url="http://mcp.example.invalid/mcp") as session:
        session.call_tool("echo", {"message": "via proxy"})
    assert hostile.posts()[0].path == "http://mcp.example.invalid/mcp"


# ---------------------------------------------------------------------- SSE parser


def parse(data: bytes, limit: int = 1 << 20) -> tuple[list[bytes], SseParser]:
    parser = SseParser(limit)
    return parser.feed(data), parser


def test_sse_basic_fields() -> None:
    events, parser = parse(b'event: message\nid: 7\nretry: 250\ndata: {"a":1}\n\n')
    assert events == [b'{"a":1}']
    assert parser.last_event_id == "7"
    assert parser.retry_ms == 250


def test_sse_line_endings_comments_and_multiline_data() -> None:
    events, _ = parse(b": hello\r\ndata: a\r\ndata:b\rdata:  c\n\r\n")
    assert events == [b"a\nb\n c"]


def test_sse_bom_only_at_start() -> None:
    events, _ = parse(b"\xef\xbb\xbfdata: x\n\n\xef\xbb\xbfdata: y\n\n")
    assert events == [b"x"]  # a second BOM makes an unknown field name


def test_sse_other_event_types_and_empty_data_are_skipped() -> None:
    events, parser = parse(b"event: ping\ndata: x\n\nid: p1\ndata:\n\ndata: y\n\n")
    assert events == [b"y"]
    assert parser.last_event_id == "p1"
    assert parser.events == 3


def test_sse_id_with_nul_and_bad_retry_are_ignored() -> None:
    _, parser = parse(b"id: a\0b\nretry: 12x\nretry: 99999999999999999999\ndata: z\n\n")
    assert parser.last_event_id is None
    assert parser.retry_ms == 10**9


def test_sse_incomplete_event_is_not_dispatched() -> None:
    events, _ = parse(b"data: partial\n")
    assert events == []


def test_sse_field_without_colon_and_unknown_fields() -> None:
    events, _ = parse(b"data\nfoo: bar\n\n")
    assert events == []  # data is "" (a field with no colon has an empty value)


def test_sse_limits() -> None:
    with pytest.raises(mcp_sync.ProtocolError, match="max_frame_bytes=100"):
        parse(b"data: " + b"x" * 200 + b"\n\n", 100)
    with pytest.raises(mcp_sync.ProtocolError):
        parse(b"data: " + b"x" * 60 + b"\ndata: " + b"x" * 60 + b"\n\n", 100)
    parser = SseParser(100)
    with pytest.raises(mcp_sync.ProtocolError):
        for _ in range(100):
            parser.feed(b": comment without end " * 10)
    assert parse(b"data: " + b"x" * 100 + b"\n\n", 100)[0] == [b"x" * 100]


STREAM = (
    b'\xef\xbb\xbf: c\r\nid: 1\r\nretry: 5\r\ndata: {"x": 1}\r\n\r\n'
    b"event: other\ndata: no\n\ndata: a\rdata: b\r\r"
    b"id: 2\ndata:\n\ndata: last\n\n"
)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=len(STREAM)), max_size=12))
def test_sse_chunking_never_changes_the_result(cuts: list[int]) -> None:
    expected, whole = parse(STREAM)
    assert expected == [b'{"x": 1}', b"a\nb", b"last"]
    parser = SseParser(1 << 20)
    got: list[bytes] = []
    bounds = [0, *sorted(cuts), len(STREAM)]
    for start, end in itertools.pairwise(bounds):
        got.extend(parser.feed(STREAM[start:end]))
    assert got == expected
    assert (parser.last_event_id, parser.retry_ms, parser.events) == (
        whole.last_event_id,
        whole.retry_ms,
        whole.events,
    )


def test_the_transports_import_nothing_above_them() -> None:
    # A transport talks to the session core only through transports.contract.Sink:
    # no import (module-level, local or type-only) of the session or any layer above.
    import ast
    from pathlib import Path

    above = {"session", "config", "auth", "cli", "testing", "flows", "model_tools", "_servers"}
    package = Path(mcp_sync.__file__).parent / "transports"
    for path in sorted(package.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level >= 2:
                first = (node.module or "").split(".")[0]
                names = {first} if first else {alias.name for alias in node.names}
                assert not names & above, (path.name, node.module)
