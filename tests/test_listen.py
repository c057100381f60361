"""Change notifications a session asks for: the 2026-07-28 ``subscriptions/listen``
stream (auto_refresh, resource subscriptions), ``resources/subscribe`` in the
handshake era, the server's instructions, ``meta=`` and custom requests.

Against the official SDK 2.3.0 (tests/peers/sdk_listen_server.py), server-everything
and the fake server's hostile behaviours.
"""

from __future__ import annotations

import json
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
    from conftest import connect_sdk_peer

    with connect_sdk_peer("sdk_listen_server.py", transport, **kwargs) as session:
        yield session


def _until(check: Any, timeout: float = 20.0) -> float:
    """Seconds until ``check()`` held (polling), or fail. The default is wide: it
    bounds "eventually" on a loaded machine (a stream reopened after two drops
    took over 5 s there); tests that promise a speed assert the time returned."""
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


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_meta_and_custom_requests_against_the_sdk_server(transport: str) -> None:
    mine = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    with sdk_listen(transport) as session:
        answer = session.call_tool(
            "meta_seen", meta={"com.example/run": "r1", "traceparent": "not mine"}, traceparent=mine
        ).content[0]["text"]
        seen = json.loads(answer)
        # The caller's key reaches the server; where the library sets a key, its value wins.
        assert seen["com.example/run"] == "r1"
        assert seen["traceparent"] == mine
        # A method the server does not know: its own JSON-RPC error, typed, in time.
        started = time.monotonic()
        with pytest.raises(mcp_sync.RemoteError) as raised:
            session.request("com.example/unknown", {"x": 1}, timeout_ms=10_000)
        assert raised.value.code == -32601 and time.monotonic() - started < 10
        assert session.call_tool("meta_seen").content[0]["text"]  # the session goes on


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
    command, *args = everything_stdio_cmd
    with mcp_sync.connect(server="everything", command=command, args=args) as session:
        assert session.era == "legacy"
        _subscribe_and_toggle(session)


def test_server_everything_resource_updates_over_http(everything_http_server: str) -> None:
    with mcp_sync.connect_http(server="everything", url=everything_http_server) as session:
        _subscribe_and_toggle(session)


# ----------------------------------------------------------------------- the fake server, both eras


@contextmanager
def fake(transport: str, era: str, *options: str, **kwargs: Any) -> Iterator[mcp_sync.Session]:
    """The fake server with ``--listen`` in ``era`` over ``transport``, connected."""
    from support import connect_fake
    from test_http_modern import fake_http

    if transport == "stdio":
        with connect_fake("--era", era, "--listen", *options, **kwargs) as session:
            yield session
        return
    with fake_http("--era", era, "--listen", *options) as url:
        kwargs.setdefault("handshake_timeout_ms", 5_000)
        with mcp_sync.connect_http(server="fake", url=url, **kwargs) as session:
            yield session


ERAS = [(transport, era) for era in ("legacy", "modern") for transport in TRANSPORTS]


def _names(session: mcp_sync.Session) -> list[str]:
    return [tool.name for tool in session.tools]


@pytest.mark.parametrize(("transport", "era"), ERAS)
def test_list_changes_reach_the_catalog_in_both_eras(transport: str, era: str) -> None:
    with fake(transport, era, auto_refresh=True) as session:
        assert session.era == era
        count = len(session.tools)
        session.call_tool("publish", {"add": 1, "kind": "tools"})
        _until(lambda: len(session.tools) == count + 1)
        assert session.call_tool(_names(session)[-1]).content[0]["text"]
        session.call_tool("publish", {"kind": "prompts"})
        _until(lambda: session.prompts_changed)


@pytest.mark.parametrize(("transport", "era"), ERAS)
def test_subscriptions_in_both_eras(transport: str, era: str) -> None:
    seen: list[str] = []
    with fake(transport, era) as session:
        session.subscribe_resource("fake://text/hello", seen.append)
        session.subscribe_resource("fake://dir/", seen.append)
        session.call_tool("publish", {"uri": "fake://text/hello"})
        session.call_tool("publish", {"uri": "fake://text/other"})  # not subscribed
        _until(lambda: seen == ["fake://text/hello"])
        session.unsubscribe_resource("fake://text/hello")
        session.unsubscribe_resource("fake://never/subscribed")  # nothing to do
        session.call_tool("publish", {"uri": "fake://text/hello"})
        session.call_tool("publish", {"uri": "fake://dir/"})
        _until(lambda: seen == ["fake://text/hello", "fake://dir/"])


def test_a_sub_resource_update_reaches_the_subscription_it_lies_under() -> None:
    seen: list[str] = []
    with fake("stdio", "legacy") as session:
        session.subscribe_resource("fake://dir", seen.append)
        session.call_tool("publish", {"uri": "fake://dir/file.txt"})
        session.call_tool("publish", {"uri": "fake://directory"})  # a longer name, not under it
        _until(lambda: seen == ["fake://dir/file.txt"])
        time.sleep(0.1)
        assert seen == ["fake://dir/file.txt"]


@pytest.mark.parametrize("era", ["legacy", "modern"])
def test_a_raising_callback_is_logged_and_the_session_goes_on(era: str, caplog: pytest.LogCaptureFixture) -> None:
    calls: list[str] = []

    def broken(uri: str) -> None:
        calls.append(uri)
        raise RuntimeError("callback bug")

    with fake("stdio", era) as session:
        session.subscribe_resource("fake://text/hello", broken)
        session.call_tool("publish", {"uri": "fake://text/hello"})
        _until(lambda: len(calls) == 1)
        session.call_tool("publish", {"uri": "fake://text/hello"})
        _until(lambda: len(calls) == 2)
        assert session.call_tool("echo", {"message": "still here"}).content[0]["text"] == "still here"
    failures = [r for r in caplog.records if getattr(r, "mcp_event", None) == "subscription_callback_failed"]
    assert failures and failures[0].exc_info is not None


def test_subscribing_needs_the_servers_resources_subscribe() -> None:
    from support import connect_fake

    with connect_fake("--era", "modern") as session, pytest.raises(mcp_sync.NotSupported, match="subscribe"):
        session.subscribe_resource("fake://text/hello", print)
    with fake("stdio", "legacy") as session:
        with pytest.raises(mcp_sync.InvalidOption):
            session.subscribe_resource("", print)
        with pytest.raises(mcp_sync.InvalidOption):
            session.subscribe_resource("fake://x", "not callable")  # type: ignore[arg-type]


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_flood_on_the_listen_stream_costs_bounded_work(transport: str) -> None:
    calls: list[str] = []
    release = threading.Event()

    def slow(uri: str) -> None:
        calls.append(uri)
        release.wait(5)

    with fake(transport, "modern", "--listen-flood", "2000", auto_refresh=True) as session:
        session.subscribe_resource("fake://text/hello", slow)
        time.sleep(0.5)
        release.set()
        assert session.call_tool("echo", {"message": "ok"}).content[0]["text"] == "ok"
        # 2000 updates of one URI: one call while any is queued (a few, not thousands).
        assert 1 <= len(calls) < 200
        assert session.last_refresh_error is None


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_an_over_long_update_uri_is_dropped(transport: str) -> None:
    seen: list[str] = []
    with fake(transport, "modern", "--listen-long-uri") as session:
        session.subscribe_resource("fake://", seen.append)
        session.call_tool("publish", {"uri": "fake://text/hello"})
        time.sleep(0.3)
        assert not session.closed
    assert all(len(uri) < 100 for uri in seen)


# Two drops; or one drop, then two reopens refused with no acknowledgment (a
# transient failure, or a server whose error overtakes its acknowledgment):
# listening must not stop at a failed reopen. The stream that stays is the
# third or the fourth (or later, when the fake's error overtakes its
# acknowledgment under load), and the refresh after a drop follows either way.
_DROPS = {
    "dropped twice": (("--listen-drop", "2"), 3),
    "reopen refused twice": (("--listen-drop", "1", "--listen-refuse-reopen", "2"), 4),
}


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("case", list(_DROPS))
def test_a_dropped_stream_is_opened_again_and_the_catalog_refreshed(transport: str, case: str) -> None:
    options, streams = _DROPS[case]
    with fake(transport, "modern", *options, auto_refresh=True) as session:
        stream = session._core.inbound.stream
        assert stream is not None
        _until(lambda: stream.opened >= streams)
        count = len(session.tools)
        session.call_tool("publish", {"add": 1, "kind": "tools"})
        _until(lambda: len(session.tools) == count + 1)
        assert not session.closed


def test_a_server_without_subscriptions_listen_costs_nothing_but_a_log_line(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from support import connect_fake

    started = time.monotonic()
    with connect_fake("--era", "modern", "--features", auto_refresh=True) as session:
        assert time.monotonic() - started < 5
        assert session.call_tool("echo", {"message": "ok"}).content[0]["text"] == "ok"
        session.call_tool("storm", {"add": 1})  # refresh by hand still works
        assert len(session.refresh_tools()) == len(session.tools)
    assert any(getattr(r, "mcp_event", None) == "listen_failed" for r in caplog.records)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_the_stream_closes_with_the_session(transport: str) -> None:
    with fake(transport, "modern", auto_refresh=True) as session:
        stream = session._core.inbound.stream
        assert stream is not None
    assert not [t.name for t in threading.enumerate() if t.name == "mcp_sync-fake-listen"]


# ----------------------------------------------------------------------- instructions


@pytest.mark.parametrize(("transport", "era"), ERAS)
def test_instructions_in_both_eras(transport: str, era: str) -> None:
    with fake(transport, era, "--instructions", "Call echo first.\nThen add.") as session:
        assert session.instructions == "Call echo first.\nThen add."
        assert session.server_info.instructions == session.instructions


def test_instructions_are_cut_at_max_tool_document_bytes(caplog: pytest.LogCaptureFixture) -> None:
    limits = mcp_sync.Limits(max_tool_document_bytes=1000)
    with fake("stdio", "legacy", "--instructions", "@5000", limits=limits) as session:
        assert session.instructions is not None
        assert len(session.instructions.encode()) == 1000
        assert session.instructions.startswith("Use the tools with care.")
    assert any(getattr(r, "mcp_event", None) == "instructions_cut" for r in caplog.records)


def test_no_instructions_is_none() -> None:
    with fake("stdio", "modern") as session:
        assert session.instructions is None


def test_instructions_are_logged_redacted(caplog: pytest.LogCaptureFixture) -> None:
    import logging

    secret = "ghp_" + "a" * 36
    with (
        caplog.at_level(logging.DEBUG, logger="mcp_sync.session"),
        fake("stdio", "legacy", "--instructions", f"token {secret} here") as session,
    ):
        assert secret in (session.instructions or "")  # the caller gets what was sent
    logged = [r.getMessage() for r in caplog.records if getattr(r, "mcp_event", None) == "instructions"]
    assert logged and secret not in logged[0]


def test_model_tools_offers_the_instructions_for_a_system_prompt() -> None:
    from mcp_sync import model_tools

    with fake("stdio", "legacy", "--instructions", "Call echo first.") as session:
        text = model_tools.instructions(session)
        assert text.startswith('## Instructions from MCP server "fake"')
        assert "\nCall echo first.\n</server-instructions-" in text
        assert model_tools.instructions([session, session]).count("Call echo first.") == 2
    with fake("stdio", "legacy") as session:
        assert model_tools.instructions(session) == ""


# ----------------------------------------------------------------------- meta=, custom requests


def _sent(log: Any, method: str) -> list[dict[str, Any]]:
    import json

    frames = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    return [frame for frame in frames if frame.get("method") == method]


@pytest.mark.parametrize("era", ["legacy", "modern"])
def test_meta_is_merged_and_the_librarys_keys_win(era: str, tmp_path: Any) -> None:
    log = tmp_path / "frames"
    trace = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    with fake("stdio", era, "--log", str(log)) as session:
        session.call_tool(
            "echo", {"message": "x"}, meta={"acme.dev/tenant": "t1", "traceparent": "mine"}, traceparent=trace
        )
        session.call_tool("echo", {"message": "x"}, meta={"progressToken": "mine"}, on_progress=lambda *a: None)
        session.read_resource("fake://text/hello", meta={"acme.dev/tenant": "t2"})
        session.get_prompt("plain", meta={"acme.dev/tenant": "t3", "io.modelcontextprotocol/protocolVersion": "x"})
    calls = _sent(log, "tools/call")
    assert calls[0]["params"]["_meta"]["acme.dev/tenant"] == "t1"
    assert calls[0]["params"]["_meta"]["traceparent"] == trace
    assert calls[1]["params"]["_meta"]["progressToken"] != "mine"
    assert _sent(log, "resources/read")[0]["params"]["_meta"]["acme.dev/tenant"] == "t2"
    prompt_meta = _sent(log, "prompts/get")[0]["params"]["_meta"]
    assert prompt_meta["acme.dev/tenant"] == "t3"
    if era == "modern":
        assert prompt_meta["io.modelcontextprotocol/protocolVersion"] == "2026-07-28"


def test_meta_is_checked_like_arguments() -> None:
    with fake("stdio", "legacy") as session:
        with pytest.raises(mcp_sync.InvalidOption, match="meta"):
            session.call_tool("echo", {"message": "x"}, meta=["not", "a", "dict"])  # type: ignore[arg-type]
        with pytest.raises(mcp_sync.ProtocolError):
            session.read_resource("fake://text/hello", meta={"big": "x" * 2_000_000})
        assert session.call_tool("echo", {"message": "ok"}).content[0]["text"] == "ok"


@pytest.mark.parametrize(("transport", "era"), ERAS)
def test_a_custom_request_goes_the_eras_way(transport: str, era: str) -> None:
    with fake(transport, era, "--raw", "acme/stats", '{"calls": 7}') as session:
        assert session.request("acme/stats", {"window": 5}) == {"calls": 7}
        with pytest.raises(mcp_sync.RemoteError) as refused:
            session.request("acme/unknown")
        assert refused.value.code == -32601
        assert session.call_tool("echo", {"message": "ok"}).content[0]["text"] == "ok"


def test_a_custom_request_carries_the_protocol_meta_in_2026_07_28(tmp_path: Any) -> None:
    log = tmp_path / "frames"
    with fake("stdio", "modern", "--raw", "acme/stats", '{"calls": 7}', "--log", str(log)) as session:
        session.request("acme/stats", {"_meta": {"acme.dev/tenant": "t1"}})
        session.notify("notifications/acme/hello", {"n": 1})
    meta = _sent(log, "acme/stats")[0]["params"]["_meta"]
    assert meta["io.modelcontextprotocol/protocolVersion"] == "2026-07-28"
    assert meta["acme.dev/tenant"] == "t1"
    note = _sent(log, "notifications/acme/hello")[0]
    assert note["params"]["n"] == 1 and "io.modelcontextprotocol/protocolVersion" in note["params"]["_meta"]


def test_a_custom_request_has_the_same_deadline_and_bounds() -> None:
    with fake("stdio", "legacy", "--hang-on", "acme/slow") as session:
        started = time.monotonic()
        with pytest.raises(mcp_sync.Timeout, match="timeout_ms=300"):
            session.request("acme/slow", timeout_ms=300)
        assert time.monotonic() - started < 3
        with pytest.raises(mcp_sync.ProtocolError, match="max_outbound_frame_bytes"):
            session.request("acme/big", {"blob": "x" * 2_000_000})
        with pytest.raises(mcp_sync.InvalidOption):
            session.request("acme/x", ["not", "a", "dict"])  # type: ignore[arg-type]
        assert not session.closed


@pytest.mark.parametrize(
    ("method", "call"),
    [
        ("tools/call", "call_tool"),
        ("resources/subscribe", "subscribe_resource"),
        ("tools/list", "refresh_tools"),
        ("subscriptions/listen", "auto_refresh"),
        ("initialize", "connect"),
    ],
)
def test_a_known_method_is_refused_with_a_pointer(method: str, call: str) -> None:
    with fake("stdio", "legacy") as session:
        with pytest.raises(mcp_sync.InvalidOption, match=call) as refused:
            session.request(method, {})
        assert isinstance(refused.value, ValueError)
        with pytest.raises(mcp_sync.InvalidOption, match="roots_changed"):
            session.notify("notifications/roots/list_changed")
        with pytest.raises(mcp_sync.InvalidOption, match="notify"):
            session.request("notifications/acme/x")
        with pytest.raises(mcp_sync.InvalidOption, match="request"):
            session.notify("acme/x")


def test_notify_in_the_handshake_era_and_over_2026_07_28_http(tmp_path: Any) -> None:
    log = tmp_path / "frames"
    with fake("stdio", "legacy", "--log", str(log)) as session:
        session.notify("notifications/acme/hello", {"n": 1})
        session.ping()
    assert _sent(log, "notifications/acme/hello")[0]["params"] == {"n": 1}
    with fake("http", "modern") as session, pytest.raises(mcp_sync.NotSupported, match="Streamable HTTP"):
        session.notify("notifications/acme/hello")


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_server_that_drops_every_stream_cannot_make_the_session_spin(transport: str) -> None:
    with fake(transport, "modern", "--listen-drop", "100000", auto_refresh=True) as session:
        stream = session._core.inbound.stream
        assert stream is not None
        time.sleep(1.5)
        # Backing off from 50 ms, doubling: a handful of streams, not hundreds.
        assert stream.opened <= 10
        assert session.call_tool("echo", {"message": "ok"}).content[0]["text"] == "ok"


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_reopen_that_fails_between_quick_drops_does_not_reset_the_backoff(transport: str) -> None:
    # Every stream drops at once and every other request is refused: the
    # success after a refusal must not start the pause over (it did, and the
    # session reopened every 0.05-0.1 s for ever; the drops under load that
    # an error overtaking its acknowledgment turns into failures did the same).
    with fake(
        transport, "modern", "--listen-drop", "100000", "--listen-refuse-every", "2", auto_refresh=True
    ) as session:
        stream = session._core.inbound.stream
        assert stream is not None
        time.sleep(1.5)
        # Pauses of 0.05, 0.1, 0.2, 0.4, 0.8 s: six requests at most in 1.5 s.
        assert stream.opened <= 8
        assert session.call_tool("echo", {"message": "ok"}).content[0]["text"] == "ok"


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_stream_is_replaced_before_its_lifetime_is_up(transport: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from mcp_sync.session import listen as _listen

    monkeypatch.setattr(_listen, "LISTEN_LIFETIME", 0.4)
    with fake(transport, "modern", auto_refresh=True) as session:
        stream = session._core.inbound.stream
        assert stream is not None
        _until(lambda: stream.opened >= 4)
        # The replaced streams were closed: at most the current one and the one opening wait.
        assert len(session._core._pending) <= 2
        count = len(session.tools)
        session.call_tool("publish", {"add": 1, "kind": "tools"})
        _until(lambda: len(session.tools) == count + 1)


def test_model_tools_reads_the_instructions_of_a_servers_set() -> None:
    from support import server_command

    from mcp_sync import model_tools
    from mcp_sync.config import ConnectOptions

    command, *args = server_command("--instructions", "Ask me first.")
    plain, *plain_args = server_command()
    servers = mcp_sync.Servers([
        ConnectOptions(server="a", command=command, args=args),
        ConnectOptions(server="b", command=plain, args=plain_args),
    ])  # fmt: skip
    try:
        text = model_tools.instructions(servers)
    finally:
        servers.close()
    assert text.startswith('## Instructions from MCP server "a"') and "\nAsk me first.\n</server-instr" in text
    assert '"b"' not in text
    with pytest.raises(TypeError):
        model_tools.instructions(42)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_the_last_unsubscription_closes_the_stream(transport: str) -> None:
    with fake(transport, "modern") as session:
        session.subscribe_resource("fake://text/hello", print)
        assert len(session._core._pending) == 1  # the listen stream
        session.unsubscribe_resource("fake://text/hello")
        assert len(session._core._pending) == 0
        seen: list[str] = []
        session.subscribe_resource("fake://text/hello", seen.append)  # and a new one opens
        session.call_tool("publish", {"uri": "fake://text/hello"})
        _until(lambda: seen == ["fake://text/hello"])
