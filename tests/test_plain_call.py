"""The plain call (``session.call_plan.plain_call``): a ``call_tool`` with no
progress and no task is the same call on the wire, with the same result, as
the general driver makes it, in both eras, and keeps the tracing hook, its
deadline and its checks."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from support import connect_fake

import mcp_sync
from mcp_sync import _log
from mcp_sync.protocol.catalog import parse_call_result
from mcp_sync.session.call_plan import drive

TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
ERAS = {
    "legacy": (),  # the handshake era (2025-11-25)
    "modern": ("--era", "modern", "--capabilities", '{"tools": {}}'),  # no tasks extension: plain calls
}


def _connect(era: str, log: Path) -> mcp_sync.Session:
    options = {} if era == "legacy" else {"protocol_version": "2026-07-28"}
    return connect_fake(*ERAS[era], "--log", str(log), **options)


def _tool_calls(log: Path) -> list[dict[str, Any]]:
    frames = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    return [frame for frame in frames if frame.get("method") == "tools/call"]


@pytest.mark.parametrize("era", sorted(ERAS))
def test_the_plain_path_and_the_general_driver_send_the_same_frame(era: str, tmp_path: Path) -> None:
    log = tmp_path / "log"
    with _connect(era, log) as session:
        assert session.era == era
        core = session._core
        arguments = {"message": "same \u00e9 call"}
        plain = session.call_tool("echo", arguments, traceparent=TRACEPARENT, meta={"x.example/k": 1})
        params = {
            "name": "echo",
            "arguments": arguments,
            "_meta": {"x.example/k": 1, "traceparent": TRACEPARENT},
        }
        general = parse_call_result(
            drive(core, "tools/call", params, time.monotonic() + 10, lambda: "the general driver"),
            "echo",
            any_structured=core.era.any_structured,
        )
    assert plain == general
    first, second = _tool_calls(log)
    assert first.pop("id") != second.pop("id")
    assert first == second
    assert first["params"]["_meta"]["traceparent"] == TRACEPARENT
    # The 2026-07-28 era puts its _meta on every request, the plain one included.
    assert ("io.modelcontextprotocol/protocolVersion" in first["params"]["_meta"]) == (era == "modern")


@pytest.mark.parametrize("era", sorted(ERAS))
def test_a_plain_call_goes_through_the_tracing_hook(era: str, tmp_path: Path) -> None:
    seen: list[tuple[str, Any]] = []

    def hook(core: Any, method: str, params: Any, timeout: float, *rest: Any) -> Any:
        seen.append((method, params.get("_meta", {}).get("traceparent")))
        _log.TRACING.set_inside(True)
        try:
            describe, cancellable, watch, headers = rest
            return core.request(
                method, params, timeout, describe, cancellable=cancellable, watch=watch, headers=headers
            )
        finally:
            _log.TRACING.set_inside(False)

    with _connect(era, tmp_path / "log") as session:
        _log.TRACING.hook = hook
        try:
            result = session.call_tool("echo", {"message": "traced"}, traceparent=TRACEPARENT)
        finally:
            _log.TRACING.hook = None
    assert result.content[0]["text"] == "traced"
    assert seen == [("tools/call", TRACEPARENT)]


def test_a_plain_call_keeps_its_deadline_and_its_checks(tmp_path: Path) -> None:
    with _connect("legacy", tmp_path / "log") as session:
        with pytest.raises(mcp_sync.ToolNotFound):
            session.call_tool("no-such-tool", {})
        with pytest.raises(mcp_sync.InvalidOption):
            session.call_tool("echo", {"message": float("nan")})
        with pytest.raises(mcp_sync.Timeout, match=r"tool 'sleep' on server 'fake' \(timeout_ms=50\) missed"):
            session.call_tool("sleep", {"ms": 5000}, timeout_ms=50)
        session.close()
        with pytest.raises(mcp_sync.ConnectionClosed):
            session.call_tool("echo", {"message": "after"})
