"""The mcp_sync logger hierarchy: which events, which fields, which levels."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
from support import Records, connect_fake, mcp_records

import mcp_sync
from mcp_sync.config import ConnectOptions
from mcp_sync.testing import server_command

TRACE = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


@pytest.fixture
def collect() -> Iterator[Records]:
    with mcp_records() as handler:
        yield handler


def fields(record: logging.LogRecord) -> dict[str, object]:
    return {k: v for k, v in vars(record).items() if k.startswith("mcp_")}


def test_the_hierarchy_has_a_null_handler_and_three_children() -> None:
    root = logging.getLogger("mcp_sync")
    assert any(isinstance(h, logging.NullHandler) for h in root.handlers)
    for name in ("session", "calls", "servers"):
        assert logging.getLogger(f"mcp_sync.{name}").parent is root


def test_connect_era_calls_and_teardown(collect: Records) -> None:
    with connect_fake() as session:
        session.call_tool("echo", {"message": "secret-argument"}, traceparent=TRACE)
        session.call_tool("fail")
    (connect,) = collect.events("connect")
    assert connect.name == "mcp_sync.session" and connect.levelno == logging.INFO
    got = fields(connect)
    handshake_ms = got.pop("mcp_handshake_ms")
    assert isinstance(handshake_ms, float) and handshake_ms > 0
    assert got == {
        "mcp_event": "connect", "mcp_server": "fake", "mcp_transport": "stdio",
        "mcp_protocol_version": "2025-11-25", "mcp_era": "legacy", "mcp_tools": 5,
    }  # fmt: skip
    assert connect.getMessage().startswith("connected to server 'fake' over stdio in ")
    (era,) = collect.events("era")
    assert era.levelno == logging.DEBUG and fields(era)["mcp_era"] == "legacy"

    starts, ends = collect.events("call_start"), collect.events("call_end")
    assert [r.name for r in starts + ends] == ["mcp_sync.calls"] * 4
    assert {r.levelno for r in starts + ends} == {logging.DEBUG}
    assert fields(starts[0]) == {
        "mcp_event": "call_start", "mcp_server": "fake", "mcp_tool": "'echo'",
        "mcp_timeout_ms": None, "mcp_traceparent": TRACE,
    }  # fmt: skip
    assert [r.mcp_outcome for r in ends] == ["ok", "tool_error"]
    assert all(isinstance(r.mcp_latency_ms, float) for r in ends)
    assert "mcp_traceparent" not in fields(ends[1])
    assert ends[0].getMessage().startswith("call 'echo' on server 'fake': ok in ")

    (teardown,) = collect.events("teardown")
    assert teardown.levelno == logging.INFO
    assert (teardown.mcp_exit_code, teardown.mcp_failed) == (0, False)
    assert not collect.events("end")  # closed by its owner: not a warning
    assert not [r for r in collect.records if "secret-argument" in str(vars(r))]


def test_an_ending_a_cancel_and_a_failed_connect(collect: Records, tmp_path: Path) -> None:
    with connect_fake("--misbehave") as session:
        with pytest.raises(mcp_sync.Timeout):
            session.call_tool("hang", timeout_ms=50)
        with pytest.raises(mcp_sync.ConnectionClosed):
            session.call_tool("crash", {"code": 9})
    (cancel,) = collect.events("cancel")
    assert cancel.levelno == logging.INFO and cancel.mcp_queued is True
    assert isinstance(cancel.mcp_request_id, int)
    assert collect.events("call_end")[0].mcp_outcome == "timeout"
    (end,) = collect.events("end")
    assert end.levelno == logging.WARNING
    assert (end.mcp_error_kind, end.mcp_error) == ("connection_closed", "exited with code 9")
    assert collect.events("teardown")[0].mcp_failed is True

    with pytest.raises(mcp_sync.SpawnFailed):
        mcp_sync.connect(server="gone", command=str(tmp_path / "missing"))
    (failed,) = collect.events("connect_failed")
    assert failed.levelno == logging.WARNING and failed.mcp_error_kind == "spawn_failed"
    with pytest.raises(mcp_sync.ProtocolError):
        mcp_sync.connect(server=7, command="x")  # type: ignore[arg-type]
    assert collect.events("connect_failed")[1].mcp_server == ""


def test_servers_records_respawn_and_back_off(collect: Records) -> None:
    command, *args = server_command("--misbehave")
    with mcp_sync.Servers(
        ConnectOptions(server="fake", command=command, args=args),
        respawn=mcp_sync.RespawnPolicy(immediate=1, first_delay_ms=600_000),
    ) as servers:
        for _ in range(2):
            with pytest.raises(mcp_sync.ConnectionClosed):
                servers.call_tool("fake", "crash")
        with pytest.raises(mcp_sync.ServerUnavailable):
            servers.session("fake")
    (respawn,) = collect.events("respawn")
    assert respawn.name == "mcp_sync.servers" and respawn.levelno == logging.INFO
    assert fields(respawn) == {
        "mcp_event": "respawn", "mcp_server": "fake", "mcp_attempt": 2, "mcp_failures": 1,
        "mcp_error_kind": "connection_closed", "mcp_error": "exited with code 3",
    }  # fmt: skip
    (backoff,) = collect.events("backoff")
    assert backoff.levelno == logging.WARNING and backoff.mcp_failures == 2
    assert 59.0 < backoff.mcp_retry_in_s <= 60.0


def test_no_call_records_and_no_cost_path_when_debug_is_off(
    collect: Records, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mcp_sync import _log

    logging.getLogger("mcp_sync").setLevel(logging.INFO)
    used: list[str] = []
    monkeypatch.setattr(_log, "logged_call", lambda *a: used.append("logged") or None)
    with connect_fake() as session:
        session.call_tool("echo", {"message": "x"})
    assert used == [] and not collect.events("call_start")
    assert collect.events("connect")


def test_a_failing_log_filter_does_not_break_a_session(collect: Records) -> None:
    def explode(record: logging.LogRecord) -> bool:
        raise RuntimeError("a broken filter")

    logger = logging.getLogger("mcp_sync.session")
    logger.addFilter(explode)
    calls = logging.getLogger("mcp_sync.calls")
    calls.addFilter(explode)
    try:
        with connect_fake("--misbehave") as session:
            assert session.call_tool("echo", {"message": "x"}).content[0]["text"] == "x"
            with pytest.raises(mcp_sync.ConnectionClosed):
                session.call_tool("crash")
    finally:
        logger.removeFilter(explode)
        calls.removeFilter(explode)
