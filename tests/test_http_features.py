"""Over Streamable HTTP: the standalone GET stream a session with handlers
opens, and what arrives on it (a hostile server's)."""

from __future__ import annotations

import json
import threading
import time

import pytest
from hostile_http import hostile_server

import mcp_sync

HANDLERS = mcp_sync.Handlers(elicitation=lambda request: mcp_sync.ElicitationResult.accept({"x": "y"}))


def _session(url: str, **kwargs: object) -> mcp_sync.Session:
    return mcp_sync.connect_http(
        server="hostile", url=url, handshake_timeout_ms=5_000, request_timeout_ms=5_000, **kwargs
    )


def test_no_handlers_no_get_stream() -> None:
    with hostile_server() as cfg, _session(cfg.url) as session:
        session.call_tool("echo", {"message": "x"})
        assert cfg.of("GET") == []


def test_a_server_without_a_standalone_stream_is_left_alone() -> None:
    with hostile_server() as cfg:  # answers the GET with 405
        with _session(cfg.url, handlers=HANDLERS) as session:
            assert session.call_tool("echo", {"message": "x"}).content[0]["text"] == "x"
            deadline = time.monotonic() + 5
            while not cfg.of("GET"):
                assert time.monotonic() < deadline
                time.sleep(0.01)
            time.sleep(0.2)  # a refused stream is not retried
        assert len(cfg.of("GET")) == 1
    assert not [t for t in threading.enumerate() if t.name.startswith("mcp_sync-hostile")]


def test_connect_returns_once_the_standalone_stream_is_answered() -> None:
    # A server may send a request on that stream during the first call (an
    # elicitation from a tool): the stream must be open before that call can
    # be made, not a moment after.
    for standalone in (None, []):  # refused (405), and held open
        with hostile_server() as cfg:
            cfg.standalone = standalone
            cfg.get_delay = 0.3  # recorded as it is answered, 0.3 s after it came
            with _session(cfg.url, handlers=HANDLERS):
                assert len(cfg.of("GET")) == 1
            cfg.release.set()


def test_requests_on_the_standalone_stream_are_answered() -> None:
    frames = [
        json.dumps({"jsonrpc": "2.0", "id": "g-ping", "method": "ping"}).encode(),
        json.dumps({"jsonrpc": "2.0", "id": "g-ask", "method": "elicitation/create", "params": {
            "message": "m", "requestedSchema": {"type": "object", "properties": {
                "x": {"type": "string"}, "n": {"type": "integer", "default": 7}}}}}).encode(),
        json.dumps({"jsonrpc": "2.0", "id": "g-nope", "method": "roots/list"}).encode(),
    ]  # fmt: skip
    with hostile_server(standalone=frames) as cfg, _session(cfg.url, handlers=HANDLERS):
        with cfg.replies_changed:
            assert cfg.replies_changed.wait_for(lambda: len(cfg.replies) >= 3, timeout=10)
        replies = dict(cfg.replies)
    assert replies["g-ping"]["result"] == {}
    assert replies["g-ask"]["result"] == {"action": "accept", "content": {"x": "y", "n": 7}}
    assert replies["g-nope"]["error"]["code"] == -32601


def test_an_oversized_event_on_the_standalone_stream_ends_the_session() -> None:
    big = json.dumps({"jsonrpc": "2.0", "method": "notifications/message",
                      "params": {"level": "info", "data": "x" * 5000}}).encode()  # fmt: skip
    with hostile_server(standalone=[big]) as cfg, pytest.raises(
        mcp_sync.ProtocolError, match="max_frame_bytes=4096"
    ):
        # The stream opens right after initialized: the event may end the
        # session while connect() still walks the catalog, or just after.
        session = _session(cfg.url, handlers=HANDLERS, max_frame_bytes=4096)
        try:
            deadline = time.monotonic() + 5
            while not session.closed:
                assert time.monotonic() < deadline
                time.sleep(0.01)
            session.call_tool("echo", {"message": "x"})
        finally:
            session.close()
