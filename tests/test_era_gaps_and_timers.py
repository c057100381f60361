"""Promises kept on the paths a new capability opened beside the usual one:

- the handshake raced against the probe under ``protocol="auto"`` declares the
  same client capabilities (``tasks`` included) as the handshake alone;
- over Streamable HTTP in the 2026-07-28 era, ``ToolCall.cancel()`` reaches the
  server (its reply stream is closed, even on a pooled connection whose reply
  headers the server still holds back), as it does over stdio;
- the tasks a server asks the client to hold share one timer thread;
- ``close()`` of an in-process session whose server blocks its own event loop
  returns in bounded time and says so.
"""

from __future__ import annotations

import contextlib
import json
import logging
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import _serve, peer_bin, sdk_stdio_command
from support import captured_logs, connect_fake

import mcp_sync

# ------------------------------------------------------------------ the raced handshake

# Starts the real server late (a container starting, a proxy connecting) but
# reads its own stdin at once, so the client sees the probe read and
# unanswered; logs each line in both directions.
RELAY = r"""
import queue, subprocess, sys, threading, time

log = open(sys.argv[1], "ab", buffering=0)
lock = threading.Lock()
lines = queue.Queue()

def note(direction, line):
    with lock:
        log.write(direction + line.rstrip(b"\n") + b"\n")

def read():
    for line in sys.stdin.buffer:
        note(b"> ", line)
        lines.put(line)
    lines.put(None)

threading.Thread(target=read, daemon=True).start()
time.sleep(float(sys.argv[2]))
child = subprocess.Popen(sys.argv[3:], stdin=subprocess.PIPE, stdout=subprocess.PIPE)

def pump():
    for line in child.stdout:
        note(b"< ", line)
        sys.stdout.buffer.write(line)
        sys.stdout.buffer.flush()

threading.Thread(target=pump, daemon=True).start()
while (line := lines.get()) is not None:
    child.stdin.write(line)
    child.stdin.flush()
child.stdin.close()
sys.exit(child.wait())
"""


def _frames(log: Path) -> list[tuple[str, dict[str, Any]]]:
    out = []
    for line in log.read_bytes().splitlines():
        direction, _, body = line.partition(b" ")
        out.append((direction.decode(), json.loads(body)))
    return out


def test_the_raced_handshake_declares_tasks_like_the_handshake_alone(tmp_path: Path) -> None:
    everything = peer_bin("everything")
    relay = tmp_path / "relay.py"
    relay.write_text(RELAY)
    log = tmp_path / "frames.log"

    def sample(request: mcp_sync.SamplingRequest) -> mcp_sync.SamplingResult:
        return mcp_sync.SamplingResult(content={"type": "text", "text": "x"}, model="stand-in")

    def elicit(request: mcp_sync.ElicitationRequest) -> mcp_sync.ElicitationResult:
        return mcp_sync.ElicitationResult.decline()

    handlers = mcp_sync.Handlers(sampling=sample, elicitation=elicit)
    with mcp_sync.connect(
        server="wrapped", command=sys.executable, args=[str(relay), str(log), "1.5", str(everything), "stdio"],
        handlers=handlers, handshake_timeout_ms=60_000,
    ) as session:  # fmt: skip
        assert session.era == "legacy"
        names = {tool.name for tool in session.tools}
    frames = _frames(log)
    sent = [frame for direction, frame in frames if direction == ">"]
    methods = [frame.get("method") for frame in sent]
    assert methods[:2] == ["server/discover", "initialize"], methods
    # The race, not the sequence: initialize went out before the probe was answered.
    probe_id = sent[0]["id"]
    order = [(d, f.get("id"), f.get("method")) for d, f in frames]
    answered = [i for i, (d, fid, method) in enumerate(order) if d == "<" and fid == probe_id and method is None]
    asked = next(i for i, (d, _, method) in enumerate(order) if d == ">" and method == "initialize")
    assert not answered or asked < answered[0], order
    capabilities = sent[1]["params"]["capabilities"]
    assert capabilities["tasks"]["requests"] == {"sampling": {"createMessage": {}}, "elicitation": {"create": {}}}
    assert {"sampling", "elicitation"} <= capabilities.keys()
    # Registered by server-everything only for a client that declares tasks.
    assert {"trigger-sampling-request-async", "trigger-elicitation-request-async"} <= names


# ------------------------------------------------------------------ cancel in 2026-07-28

# An official-SDK server (mcp 2.3, which speaks 2026-07-28 over both
# transports) whose tool notes in a file whether it ran to its end or was
# cancelled. The file is the last argument.
CANCEL_PEER = r"""
import sys

import anyio
sys.path.insert(0, sys.argv[1])
from _serve import serve
from mcp.server.mcpserver import MCPServer

LOG = sys.argv[-1]
server = MCPServer(name="cancel-peer", version="1.0.0", log_level="WARNING")


def note(text):
    with open(LOG, "a") as handle:
        handle.write(text + "\n")


@server.tool(description="Wait ms milliseconds, noting whether it was cancelled.")
async def slow(ms: int) -> str:
    note("started")
    try:
        await anyio.sleep(ms / 1000)
    except anyio.get_cancelled_exc_class():
        note("cancelled")
        raise
    note("finished")
    return "done"


serve(server, sys.argv[2:-1])
"""


def _notes(log: Path, count: int, cap: float) -> list[str]:
    """The peer's notes once there are ``count`` of them (at most ``cap`` s)."""
    end = time.monotonic() + cap
    while True:
        notes = log.read_text().split() if log.exists() else []
        if len(notes) >= count or time.monotonic() > end:
            return notes
        time.sleep(0.02)


@contextlib.contextmanager
def _cancel_peer(transport: str, tmp_path: Path) -> Iterator[tuple[mcp_sync.Session, Path]]:
    python = sdk_stdio_command()[0]  # skips (or fails under CI) without the SDK
    script = tmp_path / "cancel_peer.py"
    script.write_text(CANCEL_PEER)
    log = tmp_path / "notes.log"
    peers = str(Path(__file__).resolve().parent / "peers")
    if transport == "stdio":
        with mcp_sync.connect(server="peer", command=python, args=[str(script), peers, str(log)]) as session:
            yield session, log
        return
    with (
        _serve(lambda port: [python, str(script), peers, "http", str(port), str(log)]) as url,
        mcp_sync.connect_http(server="peer", url=url) as session,
    ):
        yield session, log


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_cancel_reaches_the_server_in_2026_07_28(transport: str, tmp_path: Path) -> None:
    with _cancel_peer(transport, tmp_path) as (session, log):
        assert (session.era, session.protocol_version) == ("modern", "2026-07-28")
        # A first call leaves its connection in the pool: the next one reuses
        # it (over HTTP), and the SDK holds a silent reply's headers back.
        assert session.call_tool("slow", {"ms": 1}).structured_content == {"result": "done"}
        assert _notes(log, 2, 30) == ["started", "finished"]
        call = session.submit_tool("slow", {"ms": 15_000})
        assert _notes(log, 3, 30)[2:] == ["started"]
        assert call.cancel()
        assert _notes(log, 4, 30)[3:] == ["cancelled"]
        # The session goes on.
        assert session.call_tool("slow", {"ms": 1}).structured_content == {"result": "done"}


# ------------------------------------------------------------------ held tasks' timer

SAMPLE = {"messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}], "maxTokens": 10}


def _answer(request: mcp_sync.SamplingRequest) -> mcp_sync.SamplingResult:
    return mcp_sync.SamplingResult(content={"type": "text", "text": "an answer"}, model="stand-in")


def _ask_tasks(session: mcp_sync.Session, ttls: list[int]) -> list[dict[str, Any]]:
    """The fake server asks the client to run one sampling task per TTL."""
    steps = [{"method": "sampling/createMessage", "params": {**SAMPLE, "task": {"ttl": ttl}}} for ttl in ttls]
    result = session.call_tool("ask", {"requests": steps}, timeout_ms=60_000)
    assert result.structured_content is not None, result
    return mcp_sync.thaw(result.structured_content)["replies"]  # type: ignore[no-any-return]


def _timer_threads() -> list[threading.Thread]:
    return [thread for thread in threading.enumerate() if thread.name.endswith("-task-ttl")]


def test_held_tasks_share_one_timer_thread_that_still_expires_each_on_time() -> None:
    from mcp_sync.session import held_tasks as _client_tasks

    cap = _client_tasks.MAX_HELD_TASKS
    assert cap == 32
    with connect_fake("--features", handlers=mcp_sync.Handlers(sampling=_answer)) as session:
        store = session._core.inbound.requests._tasks
        assert store is not None and _timer_threads() == []
        # One short-lived task (the TTL floor, 1 s) among long-lived ones.
        asked = time.monotonic()
        replies = _ask_tasks(session, [_client_tasks.MIN_TTL_MS] + [3_600_000] * (cap - 1))
        assert all("task" in reply["result"] for reply in replies), replies
        timers = _timer_threads()
        assert len(timers) == 1, [thread.name for thread in timers]
        short = replies[0]["result"]["task"]["taskId"]
        # The short one is dropped at its TTL; the others stay.
        end = time.monotonic() + 30
        while short in store._held and time.monotonic() < end:
            time.sleep(0.01)
        expired_after = time.monotonic() - asked
        assert short not in store._held and len(store._held) == cap - 1
        assert _client_tasks.MIN_TTL_MS / 1000 - 0.05 <= expired_after < 10, expired_after
        assert _timer_threads() == timers
    # close() ends the timer before it returns.
    assert not timers[0].is_alive()
    assert _timer_threads() == []


def test_the_timer_thread_ends_when_no_task_is_held_and_comes_back_for_the_next() -> None:
    with connect_fake("--features", handlers=mcp_sync.Handlers(sampling=_answer)) as session:
        store = session._core.inbound.requests._tasks
        assert store is not None
        (created,) = _ask_tasks(session, [3_600_000])
        (timer,) = _timer_threads()
        # The result fetched, nothing is held: the thread goes.
        task_id = created["result"]["task"]["taskId"]
        result = session.call_tool(
            "ask", {"requests": [{"method": "tasks/result", "params": {"taskId": task_id}}]}, timeout_ms=60_000
        )
        assert result.structured_content is not None
        timer.join(10)
        assert not timer.is_alive() and store._held == {}
        _ask_tasks(session, [3_600_000])
        assert len(_timer_threads()) == 1


# ------------------------------------------------------------------ a blocked in-process loop


def test_close_is_bounded_and_says_so_when_a_tool_blocks_the_in_process_loop() -> None:
    mcpserver = pytest.importorskip("mcp.server.mcpserver")
    from mcp_sync.testing import _in_process, connect_in_process

    release = threading.Event()
    server = mcpserver.MCPServer("blocky", log_level="WARNING")

    @server.tool()
    async def block() -> str:
        """Blocking code in a coroutine: it holds the server's event loop."""
        release.wait(30)  # as time.sleep(30) would, but the test can end it
        return "done"

    try:
        session = connect_in_process(server, server="blocky")
        (thread,) = [t for t in threading.enumerate() if t.name == "mcp_sync-in-process-blocky"]
        with pytest.raises(mcp_sync.Timeout):
            session.call_tool("block", timeout_ms=300)
        with captured_logs("mcp_sync.session") as records:
            started = time.monotonic()
            session.close()
            took = time.monotonic() - started
        assert _in_process.STOP_GRACE == 2.0
        # The bound is STOP_GRACE + STOP_MARGIN (3 s), with headroom for a
        # loaded machine; it was 7 s.
        assert took < 5.0, took
        assert session.closed
        # What was promised: the thread, a daemon, is left to the blocking
        # call, and close() said so, naming the tool and where the loop is.
        assert thread.daemon and thread.is_alive()
        (stuck,) = [r for r in records if getattr(r, "mcp_event", None) == "in_process_stuck"]
        assert stuck.levelno == logging.WARNING
        message = stuck.getMessage()
        assert "tool 'block'" in message and "never took the stop" in message, message
        assert stuck.mcp_where.startswith("block (") and __file__ in stuck.mcp_where, stuck.mcp_where
    finally:
        release.set()
    # Once the blocking call returns, the thread ends by itself.
    thread.join(15)
    assert not thread.is_alive()


def test_close_of_an_in_process_session_with_a_slow_async_tool_reports_nothing() -> None:
    mcpserver = pytest.importorskip("mcp.server.mcpserver")
    anyio = pytest.importorskip("anyio")
    from mcp_sync.testing import connect_in_process

    server = mcpserver.MCPServer("patient", log_level="WARNING")

    @server.tool()
    async def wait() -> str:
        await anyio.sleep(30)  # cancellable: the loop is free
        return "done"

    session = connect_in_process(server, server="patient")
    (thread,) = [t for t in threading.enumerate() if t.name == "mcp_sync-in-process-patient"]
    with pytest.raises(mcp_sync.Timeout):
        session.call_tool("wait", timeout_ms=300)
    with captured_logs("mcp_sync.session") as records:
        session.close()
    assert not thread.is_alive()
    assert [r for r in records if getattr(r, "mcp_event", None) == "in_process_stuck"] == []
