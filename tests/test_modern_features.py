"""The modern era (2026-07-28), second pass: live progress, the tasks
extension, and ``input_required`` on prompts and resources -- each through
the mechanism the handshake era uses, over stdio and Streamable HTTP.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from support import connect_fake, logged
from test_http_modern import fake_http

import mcp_sync

TRANSPORTS = ["stdio", "http"]


@contextmanager
def fake(transport: str, *options: str, era: str = "modern", **kwargs: Any) -> Iterator[mcp_sync.Session]:
    """The fake server in ``era`` over ``transport``, connected."""
    if transport == "stdio":
        with connect_fake("--era", era, *options, **kwargs) as session:
            yield session
        return
    with fake_http("--era", era, *options) as url:
        kwargs.setdefault("handshake_timeout_ms", 5_000)
        with mcp_sync.connect_http(server="fake", url=url, **kwargs) as session:
            yield session


# ----------------------------------------------------------------------- progress


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_progress_reaches_the_callback_while_the_call_is_in_flight(transport: str, tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    events: list[tuple[str, float, float | None, str | None]] = []

    def callback(progress: float, total: float | None, message: str | None) -> None:
        events.append((threading.current_thread().name, progress, total, message))
        gate.touch()  # the server goes on past step 1 only once this ran

    with fake(transport, "--features") as session:
        assert session.era == "modern"
        # foreign: progress for tokens it was not given; repeat: each value twice.
        result = session.call_tool(
            "progress", {"steps": 3, "gate": str(gate), "foreign": True, "repeat": True},
            on_progress=callback, timeout_ms=20_000,
        )  # fmt: skip
    assert result.content[0]["text"] == "done after 3 steps"
    me = threading.current_thread().name
    assert events == [(me, float(step), 3.0, f"step {step}") for step in (1, 2, 3)]


@pytest.mark.parametrize(("transport", "era"), [("stdio", "modern"), ("http", "modern"), ("http", "legacy")])
def test_progress_can_extend_the_deadline_up_to_a_hard_maximum(transport: str, era: str) -> None:
    seen: list[float] = []
    with fake(transport, "--features", era=era) as session:
        assert session.era == era
        # 12 steps 100 ms apart: 1.2 s in all, past a 600 ms timeout unless
        # progress extends it.
        result = session.call_tool(
            "progress", {"steps": 12, "ms": 100}, timeout_ms=600,
            on_progress=lambda p, t, m: seen.append(p), progress_extends_deadline=True,
        )  # fmt: skip
        assert result.content[0]["text"] == "done after 12 steps"
        assert seen == [float(step) for step in range(1, 13)]
        with pytest.raises(mcp_sync.Timeout, match="timeout_ms=600"):
            session.call_tool("progress", {"steps": 12, "ms": 100}, timeout_ms=600, on_progress=lambda p, t, m: None)
        # However much progress comes, the hard maximum holds.
        with pytest.raises(mcp_sync.Timeout, match="up to 900 ms"):
            session.call_tool(
                "progress", {"steps": 40, "ms": 50}, timeout_ms=600, max_timeout_ms=900,
                on_progress=lambda p, t, m: None, progress_extends_deadline=True,
            )  # fmt: skip
        # The session is still usable.
        assert session.call_tool("echo", {"message": "after"}).content[0]["text"] == "after"


def test_a_raising_callback_ends_its_modern_call_and_only_its_call(tmp_path: Path) -> None:
    class Stop(Exception):
        pass

    def stop(progress: float, total: float | None, message: str | None) -> None:
        raise Stop

    log = tmp_path / "log"
    with fake("stdio", "--features", "--log", str(log)) as session:
        with pytest.raises(Stop):
            session.call_tool("progress", {"steps": 3, "ms": 20}, on_progress=stop)
        assert session.call_tool("echo", {"message": "fine"}).content[0]["text"] == "fine"
    call = next(f for f in logged(log) if f.get("method") == "tools/call")
    cancelled = [f for f in logged(log) if f.get("method") == "notifications/cancelled"]
    assert [f["params"]["requestId"] for f in cancelled] == [call["id"]]
