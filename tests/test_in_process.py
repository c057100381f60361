"""connect_in_process: a Session on an official-SDK server object, no subprocess.

The server is the real SDK (mcp 2.3.0, the dev dependency group's): its loop runs on one
library thread that close() stops and joins (the autouse leak check fails any
test that leaves it). The Django test case of docs/guides/test-a-python-server-in-process.md
runs here as Django runs it.
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from test_docs import fenced_blocks

import mcp_sync
from mcp_sync.testing import connect_in_process

mcpserver = pytest.importorskip("mcp.server.mcpserver")  # the dev dependency group pins mcp
pytest.importorskip("mcp.server.mcpserver.exceptions")
anyio = pytest.importorskip("anyio")

GUIDE = Path(__file__).resolve().parent.parent / "docs" / "guides" / "test-a-python-server-in-process.md"


def make_server() -> Any:
    server = mcpserver.MCPServer("calc", log_level="WARNING")

    @server.tool()
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @server.tool()
    def fail() -> str:
        """Always raises."""
        raise mcpserver.exceptions.ToolError("the tool's own failure")

    @server.tool()
    async def nap(ms: int) -> str:
        """Sleep without blocking the server's loop."""
        await anyio.sleep(ms / 1000)
        return "rested"

    return server


def in_process_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("mcp_sync-in-process-")]


@pytest.mark.parametrize(("protocol", "era"), [(None, "modern"), ("legacy", "legacy")])
def test_the_session_api_over_a_server_object(protocol: str | None, era: str) -> None:
    with connect_in_process(make_server(), server="calc", protocol=protocol) as session:
        assert session.era == era and session.server == "calc"
        assert [tool.name for tool in session.tools] == ["add", "fail", "nap"]
        assert session.call_tool("add", {"a": 2, "b": 3}).structured_content == {"result": 5}
        failed = session.call_tool("fail")
        assert failed.is_error and "own failure" in failed.content[0]["text"]
        with pytest.raises(mcp_sync.ToolNotFound):
            session.call_tool("nope")
        assert len(in_process_threads()) == 1
    assert session.closed


def test_many_threads_share_one_in_process_session() -> None:
    results: list[Any] = []
    with connect_in_process(make_server()) as session:
        def work(i: int) -> None:
            results.append(session.call_tool("add", {"a": i, "b": 1}).structured_content["result"])

        threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert sorted(results) == list(range(1, 9))


def test_a_deadline_holds_and_the_session_stays_open() -> None:
    with connect_in_process(make_server()) as session:
        started = time.monotonic()
        with pytest.raises(mcp_sync.Timeout):
            session.call_tool("nap", {"ms": 5_000}, timeout_ms=200)
        assert time.monotonic() - started < 2.0
        assert session.call_tool("nap", {"ms": 1}).content[0]["text"] == "rested"


def test_close_stops_the_loop_and_joins_the_thread() -> None:
    session = connect_in_process(make_server())
    (thread,) = in_process_threads()
    started = time.monotonic()
    session.close()
    assert not thread.is_alive() and time.monotonic() - started < 3.0
    session.close()  # idempotent
    with pytest.raises(mcp_sync.ConnectionClosed):
        session.call_tool("add", {"a": 1, "b": 1})


def test_a_server_that_fails_to_start_leaves_nothing_running() -> None:
    @asynccontextmanager
    async def broken(server: Any) -> AsyncIterator[None]:
        raise RuntimeError("no database")
        yield  # pragma: no cover

    server = mcpserver.MCPServer("broken", lifespan=broken, log_level="WARNING")
    with pytest.raises(mcp_sync.McpError) as caught:
        connect_in_process(server, handshake_timeout_ms=5_000)
    assert caught.value.kind in ("connection_closed", "timeout")
    assert "no database" not in str(caught.value)
    deadline = time.monotonic() + 5
    while in_process_threads() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not in_process_threads()


def test_only_a_server_object_is_taken() -> None:
    with pytest.raises(mcp_sync.InvalidOption, match="MCPServer"):
        connect_in_process(object())
    with pytest.raises(mcp_sync.InvalidOption, match="max_frame_bytes"):
        connect_in_process(make_server(), max_frame_bytes=0)
    assert not in_process_threads()


def test_the_sdk_is_imported_only_when_used_and_missing_is_a_missing_extra() -> None:
    code = (
        "import sys, mcp_sync, mcp_sync.testing\n"
        "print(any(m in sys.modules for m in ('mcp', 'anyio', 'mcp_sync.testing._in_process_sdk')))\n"
        "sys.modules['mcp'] = None\n"
        "try:\n"
        "    mcp_sync.testing.connect_in_process(object())\n"
        "except ImportError as exc:\n"
        "    print(type(exc).__name__, exc.kind, exc.extra)\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert run.stdout.split() == ["False", "MissingExtra", "missing_extra", "testing"]


def test_the_guide_s_django_test_case_passes_under_django() -> None:
    pytest.importorskip("django")
    (code,) = [b.code for b in fenced_blocks(GUIDE.read_text(encoding="utf-8")) if "class ForecastViewTests" in b.code]
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "Ran 2 tests" in run.stderr and "OK" in run.stderr


def test_the_server_s_requests_reach_the_handlers() -> None:
    from pydantic import BaseModel

    class Name(BaseModel):
        name: str

    server = mcpserver.MCPServer("ask", log_level="WARNING")

    @server.tool()
    async def greet(ctx: mcpserver.Context) -> str:  # type: ignore[type-arg]
        """Ask the client for a name."""
        answer = await ctx.elicit("Your name?", Name)
        return f"hello {answer.data.name}" if answer.action == "accept" else "declined"

    handlers = mcp_sync.Handlers(elicitation=lambda request: mcp_sync.ElicitationResult.accept({"name": "Ann"}))
    # The handshake era: the SDK sends elicitation/create on the stream while the call waits.
    with connect_in_process(server, handlers=handlers, protocol="legacy") as session:
        assert session.call_tool("greet", timeout_ms=10_000).content[0]["text"] == "hello Ann"
    with pytest.raises(mcp_sync.InvalidOption, match="handlers"):
        connect_in_process(server, handlers=object())  # type: ignore[arg-type]
