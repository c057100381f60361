"""``cancel=`` against servers nobody here wrote: the cancel reaches the handler.

The official SDK's server (``tests/peers/sdk_cancel_server.py``, ``mcp==2.3.0``)
runs each handler until it is cancelled, and then writes ``MARKER.cancelled``: the
proof that the cancel reached it. Both eras (``protocol="auto"`` settles on
2026-07-28 with it, ``"legacy"`` on the handshake) over stdio and Streamable HTTP on
127.0.0.1 (in 2026-07-28 the request's reply stream is closed: the SDK treats the
disconnect as the cancellation), and HTTP+SSE (2024-11-05); tools, progress,
resources and prompts; a 2026-07-28 task (``tests/peers/sdk_tasks_server.py``)
cancelled with ``tasks/cancel``. Then server-everything: a long operation with
progress, and a handshake-era task.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from support import timed

import mcp_sync

pytestmark = pytest.mark.peer

AT_ONCE = 5.0  # the caller's wait for its Cancelled, on a loaded 2-core machine
REACHED = 20.0  # the server's handler seeing it (a cold SDK server is slow)
ERAS = {"auto": "modern", "legacy": "legacy"}


def _until(check: Callable[[], bool], timeout: float = REACHED) -> None:
    end = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < end, "not within the time allowed"
        time.sleep(0.01)


@contextmanager
def cancel_peer(transport: str, protocol: str, markers: Path) -> Iterator[mcp_sync.Session]:
    from conftest import PEERS_SRC, _serve, sdk_stdio_command

    sdk_stdio_command()  # skips (or fails under CI) without the SDK
    script = str(PEERS_SRC / "sdk_cancel_server.py")
    env = {"CANCEL_MARKERS": str(markers)}
    if transport == "stdio":
        with mcp_sync.connect(
            server="sdk", command=sys.executable, args=[script], env=env, protocol=protocol
        ) as session:
            yield session
        return
    kind, path = ("sse", "/sse") if transport == "sse" else ("http", "/mcp")

    def argv(port: int) -> list[str]:
        return ["env", f"CANCEL_MARKERS={markers}", sys.executable, script, kind, str(port)]

    options: dict[str, Any] = {"transport": "sse"} if transport == "sse" else {"protocol": protocol}
    with _serve(argv, path) as url, mcp_sync.connect(server="sdk", url=url, **options) as session:
        yield session


def cancel_when_started(marker: Path, token: mcp_sync.CancelScope | threading.Event) -> threading.Thread:
    """Fire ``token`` from another thread once the handler has begun."""

    def fire() -> None:
        _until(Path(f"{marker}.started").exists)
        if isinstance(token, mcp_sync.CancelScope):
            token.cancel()
        else:
            token.set()

    thread = threading.Thread(target=fire, daemon=True)
    thread.start()
    return thread


def reached(marker: Path) -> None:
    """The handler recorded its cancellation, soon after the caller got its
    ``Cancelled`` (measured: within 10 ms on every transport; without the cancel
    the 2026-07-28 HTTP handler learns of it only when the SDK sends its held
    headers, 15 s on, and a stdio handler never)."""
    _until(Path(f"{marker}.cancelled").exists, AT_ONCE)
    assert Path(f"{marker}.cancelled").read_text() == "cancelled"


TRANSPORT_ERAS = [
    pytest.param("stdio", "auto", id="stdio-2026-07-28"),
    pytest.param("stdio", "legacy", id="stdio-handshake"),
    pytest.param("http", "auto", id="http-2026-07-28"),
    pytest.param("http", "legacy", id="http-handshake"),
]


@pytest.mark.parametrize(("transport", "protocol"), TRANSPORT_ERAS)
def test_a_cancel_reaches_the_sdk_tools_handler(transport: str, protocol: str, tmp_path: Path) -> None:
    with cancel_peer(transport, protocol, tmp_path) as session:
        assert session.era == ERAS[protocol]
        marker = tmp_path / "tool"
        scope = mcp_sync.CancelScope()
        firing = cancel_when_started(marker, scope)
        with pytest.raises(mcp_sync.Cancelled, match=r"tool 'hold' on server 'sdk' .*was cancelled"):
            session.call_tool("hold", {"marker": str(marker)}, cancel=scope)
        firing.join(AT_ONCE)
        reached(marker)
        assert session._core._pending == {}
        # The session goes on: a plain event this time, and the handler sees it too.
        again = tmp_path / "again"
        stop = threading.Event()
        cancel_when_started(again, stop)
        with pytest.raises(mcp_sync.Cancelled):
            session.call_tool("hold", {"marker": str(again)}, cancel=stop)
        reached(again)


@pytest.mark.parametrize(("transport", "protocol"), TRANSPORT_ERAS)
def test_a_cancel_reaches_a_handler_that_reported_progress(transport: str, protocol: str, tmp_path: Path) -> None:
    with cancel_peer(transport, protocol, tmp_path) as session:
        marker = tmp_path / "progress"
        scope = mcp_sync.CancelScope()
        seen: list[tuple[float, float | None, str | None]] = []

        def report(progress: float, total: float | None, message: str | None) -> None:
            seen.append((progress, total, message))
            scope.cancel()  # from the callback, on the call's own thread

        with timed(REACHED), pytest.raises(mcp_sync.Cancelled):
            session.call_tool("hold_progress", {"marker": str(marker)}, on_progress=report, cancel=scope)
        assert seen == [(1.0, 2.0, "holding")]
        reached(marker)


@pytest.mark.parametrize(("transport", "protocol"), TRANSPORT_ERAS)
def test_a_cancel_reaches_resource_and_prompt_handlers(transport: str, protocol: str, tmp_path: Path) -> None:
    with cancel_peer(transport, protocol, tmp_path) as session:
        resource = tmp_path / "resource"
        scope = mcp_sync.CancelScope()
        cancel_when_started(resource, scope)
        with pytest.raises(mcp_sync.Cancelled, match="resources/read of 'hold://resource' on server 'sdk'"):
            session.read_resource("hold://resource", cancel=scope)
        reached(resource)
        prompt = tmp_path / "prompt"
        scope = mcp_sync.CancelScope()
        cancel_when_started(prompt, scope)
        with pytest.raises(mcp_sync.Cancelled, match=r"'hold_prompt' on server 'sdk'.* was cancelled"):
            session.get_prompt("hold_prompt", {"marker": str(prompt)}, cancel=scope)
        reached(prompt)


def test_a_cancel_reaches_the_sdk_over_http_sse(tmp_path: Path) -> None:
    with cancel_peer("sse", "legacy", tmp_path) as session:
        assert session.era == "legacy"
        marker = tmp_path / "sse"
        scope = mcp_sync.CancelScope()
        cancel_when_started(marker, scope)
        with pytest.raises(mcp_sync.Cancelled):
            session.call_tool("hold", {"marker": str(marker)}, cancel=scope)
        reached(marker)


def test_a_scope_deadline_reaches_the_handler_too(tmp_path: Path) -> None:
    with cancel_peer("http", "auto", tmp_path) as session:
        marker = tmp_path / "deadline"
        with timed(AT_ONCE), pytest.raises(mcp_sync.Timeout, match="CancelScope"):
            session.call_tool("hold", {"marker": str(marker)}, cancel=mcp_sync.CancelScope(timeout_ms=1500))
        reached(marker)


def test_a_2026_task_is_cancelled_with_tasks_cancel() -> None:
    from conftest import PEERS_SRC, sdk_stdio_command

    sdk_stdio_command()
    script = str(PEERS_SRC / "sdk_tasks_server.py")
    with mcp_sync.connect(server="sdk", command=sys.executable, args=[script]) as session:
        assert session.era == "modern"
        scope = mcp_sync.CancelScope()
        threading.Timer(0.5, scope.cancel).start()  # the task is created and polled by then
        with timed(AT_ONCE), pytest.raises(mcp_sync.Cancelled):
            session.call_tool("forever", cancel=scope, timeout_ms=60_000)
        # tasks/cancel goes out from a library thread: ask until it has landed.
        _until(lambda: session.call_tool("cancelled").structured_content["result"] == ("sdk-task-1",))


# ------------------------------------------------------------------ server-everything


def test_server_everything_long_operation_and_task_cancelled(everything_stdio_cmd: list[str]) -> None:
    command, *args = everything_stdio_cmd
    with mcp_sync.connect(server="everything", command=command, args=args, protocol="legacy") as session:
        scope = mcp_sync.CancelScope()
        steps: list[float] = []

        def report(progress: float, total: float | None, message: str | None) -> None:
            steps.append(progress)
            scope.cancel()

        with timed(AT_ONCE), pytest.raises(mcp_sync.Cancelled):
            session.call_tool(
                "trigger-long-running-operation", {"duration": 30, "steps": 30}, on_progress=report, cancel=scope
            )
        assert steps == [1.0]
        assert session.call_tool("echo", {"message": "after"}).content[0]["text"] == "Echo: after"
        # A handshake-era task (2025-11-25): cancelled with tasks/cancel once it exists.
        task_scope = mcp_sync.CancelScope()
        threading.Timer(1.0, task_scope.cancel).start()
        with timed(AT_ONCE + 1), pytest.raises(mcp_sync.Cancelled):
            session.call_tool("simulate-research-query", {"topic": "owls"}, cancel=task_scope, timeout_ms=60_000)

        def statuses() -> list[str]:
            listed = session._core.request("tasks/list", {}, 5.0, lambda: "tasks/list")
            return [task["status"] for task in listed["tasks"]]

        _until(lambda: statuses() == ["cancelled"])
        assert session._core._pending == {}


def test_server_everything_over_streamable_http(everything_http_server: str) -> None:
    with mcp_sync.connect(server="everything", url=everything_http_server) as session:
        scope = mcp_sync.CancelScope()

        def report(progress: float, total: float | None, message: str | None) -> None:
            scope.cancel()

        with timed(AT_ONCE), pytest.raises(mcp_sync.Cancelled):
            session.call_tool(
                "trigger-long-running-operation", {"duration": 30, "steps": 30}, on_progress=report, cancel=scope
            )
        assert session._core._pending == {}
        assert session.call_tool("echo", {"message": "after"}).content[0]["text"] == "Echo: after"
