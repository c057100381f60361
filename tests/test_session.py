"""The stdio Session against the fake server: handshake, calls, threads, ending."""

from __future__ import annotations

import atexit
import gc
import json
import os
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from support import (
    alive,
    connect_fake,
    fake_pid,
    library_threads,
    logged,
    methods,
    timed,
    wait_gone,
)

import mcp_sync
from mcp_sync.session import core as _session
from mcp_sync.testing import server_command
from mcp_sync.transports.contract import Outbound

REPO = Path(__file__).resolve().parent.parent


def test_handshake_snapshot_and_calls(tmp_path: Path) -> None:
    log = tmp_path / "log"
    with connect_fake("--log", str(log)) as session:
        assert session.server == "fake"
        assert session.protocol_version == "2025-11-25"
        assert session.era == "legacy"
        assert session.server_info == mcp_sync.ServerInfo("mcp-sync-fake", "1.0")
        assert [t.name for t in session.tools] == ["echo", "add", "fail", "sleep", "blob"]
        echo = session.call_tool("echo", {"message": "hi"})
        assert echo.content[0]["text"] == "hi" and echo.is_error is False
        added = session.call_tool("add", {"a": 2, "b": 3})
        assert added.structured_content == {"sum": 5}
        failed = session.call_tool("fail")
        assert failed.is_error is True
    frames = logged(log)
    # protocol="auto": the era probe first (the fake speaks only the handshake
    # era by default and answers it -32601), then the handshake.
    assert frames[0]["method"] == "server/discover"
    init = frames[1]
    assert init["method"] == "initialize"
    assert init["params"] == {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "mcp-sync", "version": mcp_sync.__version__},
    }
    assert frames[2] == {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert frames[3]["method"] == "tools/list"
    assert frames[-1]["params"] == {"name": "fail", "arguments": {}}


def test_client_info_is_frozen() -> None:
    assert dict(mcp_sync.CLIENT_INFO) == {"name": "mcp-sync", "version": mcp_sync.__version__}
    with pytest.raises(TypeError):
        mcp_sync.CLIENT_INFO["name"] = "x"  # type: ignore[index]


def test_protocol_version_override_and_server_choice(tmp_path: Path) -> None:
    with connect_fake(protocol_version="2025-03-26") as session:
        assert session.protocol_version == "2025-03-26"
    with connect_fake("--protocol-version", "2025-11-25") as session:
        assert session.protocol_version == "2025-11-25"


def test_catalog_is_deep_frozen_and_thaws() -> None:
    with connect_fake() as session:
        tool = session.tool("add")
        with pytest.raises(TypeError):
            tool.input_schema["type"] = "array"  # type: ignore[index]
        with pytest.raises(TypeError):
            tool.input_schema["properties"]["a"]["type"] = "string"  # type: ignore[index]
        with pytest.raises(AttributeError):
            tool.name = "x"  # type: ignore[misc]
        assert isinstance(tool.input_schema["required"], tuple)
        plain = tool.to_dict()
        plain["inputSchema"]["properties"]["a"]["type"] = "string"
        assert tool.input_schema["properties"]["a"]["type"] == "number"
        thawed = mcp_sync.thaw(tool.input_schema)
        assert isinstance(thawed, dict) and isinstance(thawed["required"], list)


def test_a_call_result_is_deep_frozen_as_the_catalog_is() -> None:
    # Results are frozen in place (the decoded JSON is the call's alone): the
    # same value, as deeply read-only, as a copying freeze() gives.
    from mcp_sync.protocol.catalog import freeze, parse_call_result

    text = (
        '{"content":[{"type":"text","text":"x","annotations":{"audience":["user",{"k":[1,[2]]}]}}],'
        '"isError":false,"structuredContent":{"rows":[{"a":[1,2]},[3,{"b":null}]],"n":1.5}}'
    )
    result = parse_call_result(json.loads(text), "t")
    assert result.content == freeze(json.loads(text)["content"])
    assert result.structured_content == freeze(json.loads(text)["structuredContent"])
    audience = result.content[0]["annotations"]["audience"]
    assert isinstance(audience, tuple) and isinstance(audience[1]["k"][1], tuple)
    rows = result.structured_content["rows"]
    assert isinstance(rows, tuple) and isinstance(rows[0]["a"], tuple) and isinstance(rows[1], tuple)
    with pytest.raises(TypeError):
        rows[1][1]["b"] = 1
    with pytest.raises(TypeError):
        result.content[0]["annotations"]["audience"][1]["k"] = []
    assert mcp_sync.thaw(result.structured_content) == json.loads(text)["structuredContent"]


def test_many_threads_share_one_session() -> None:
    with connect_fake() as session, ThreadPoolExecutor(max_workers=16) as pool:
        # 16 calls that each sleep 500 ms finish together: they multiplex. In series
        # they would take 8 s; half of that leaves seconds for a loaded machine.
        start = time.monotonic()
        slept = list(pool.map(lambda _: session.call_tool("sleep", {"ms": 500}), range(16)))
        assert time.monotonic() - start < 16 * 0.5 / 2
        assert all(r.content[0]["text"] == "slept" for r in slept)
        sums = list(pool.map(lambda n: session.call_tool("add", {"a": n, "b": 1}), range(500)))
        assert [r.structured_content["sum"] for r in sums] == [n + 1 for n in range(500)]  # type: ignore[index]


def test_unknown_tool_sends_nothing(tmp_path: Path) -> None:
    log = tmp_path / "log"
    with connect_fake("--log", str(log)) as session:
        before = len(logged(log))
        with pytest.raises(mcp_sync.ToolNotFound) as caught:
            session.call_tool("no\u202esuch")
        assert caught.value.kind == "tool_not_found"
        assert "\u202e" not in str(caught.value) and "\\u202e" in str(caught.value)
        session.call_tool("echo", {"message": "after"})
    frames = logged(log)
    assert [f["params"]["name"] for f in frames[before:] if f.get("method") == "tools/call"] == ["echo"]


def test_close_is_idempotent_and_fails_pending_calls_at_once() -> None:
    session = connect_fake("--misbehave")
    pid = fake_pid(session)
    errors: list[BaseException] = []

    def call() -> None:
        try:
            session.call_tool("hang")
        except mcp_sync.McpError as exc:
            errors.append(exc)

    callers = [threading.Thread(target=call) for _ in range(4)]
    for caller in callers:
        caller.start()
    deadline = time.monotonic() + 5
    while len(session._core._pending) < 4:  # all four are waiting
        assert time.monotonic() < deadline
        time.sleep(0.005)
    with timed(3.0):
        closer = threading.Thread(target=session.close)
        closer.start()
        for caller in callers:
            caller.join(5)
    closer.join(5)
    session.close()
    assert len(errors) == 4
    assert {(e.kind, str(e)) for e in errors} == {("connection_closed", "connection scope closed")}
    with timed(3.0), pytest.raises(mcp_sync.ConnectionClosed, match=r"^connection scope closed$"):
        session.call_tool("echo", {"message": "late"})
    assert session.closed
    wait_gone(pid)
    assert not library_threads()


def test_context_manager_closes() -> None:
    with connect_fake() as session:
        pid = fake_pid(session)
    assert session.closed
    wait_gone(pid)


@pytest.mark.parametrize(
    ("tool", "args", "options", "kind", "message"),
    [
        ("crash", {"code": 3}, (), "connection_closed", "exited with code 3"),
        ("close_stdout", {}, (), "connection_closed", "stdout closed"),
        (
            "raw",
            {"lines": ['{"jsonrpc":"2.0","id":{id},"result":{},"error":{"code":1,"message":"m"}}'],
             "reply": False},
            (),
            "protocol_error",
            "a reply must carry exactly one of result and error",
        ),
    ],
)
def test_terminal_events(
    tool: str, args: dict[str, object], options: tuple[str, ...], kind: str, message: str
) -> None:
    session = connect_fake("--misbehave", *options)
    pid = fake_pid(session)
    with pytest.raises(mcp_sync.McpError) as first:
        session.call_tool(tool, args, timeout_ms=10_000)
    assert (first.value.kind, str(first.value)) == (kind, message)
    with pytest.raises(mcp_sync.McpError) as later:
        session.call_tool("echo", {"message": "x"})
    assert (later.value.kind, str(later.value)) == (kind, message)
    session.close()
    wait_gone(pid)


def test_stdin_closed_is_terminal() -> None:
    session = connect_fake("--misbehave", "--ignore-stdin-eof")
    session.call_tool("close_stdin")
    with pytest.raises(mcp_sync.ConnectionClosed) as caught:
        for _ in range(50):  # the write that finds the pipe closed
            session.call_tool("echo", {"message": "x" * 1000}, timeout_ms=2000)
    assert str(caught.value) == "stdin closed"
    session.close()


def test_reply_written_before_exit_is_delivered() -> None:
    with connect_fake("--misbehave") as session:
        result = session.call_tool("exit_after_reply", {"code": 0})
        assert result.content[0]["text"] == "bye"
        with pytest.raises(mcp_sync.ConnectionClosed, match="exited with code 0"):
            session.call_tool("echo", {"message": "x"})


def test_grandchild_is_killed_on_close() -> None:
    session = connect_fake("--misbehave")
    grandchild = int(session.call_tool("grandchild").content[0]["text"])
    assert alive(grandchild)
    session.close()
    wait_gone(grandchild)


def test_grandchild_is_killed_when_the_child_dies(tmp_path: Path) -> None:
    pidfile = tmp_path / "gc.pid"
    session = connect_fake("--misbehave", "--grandchild-pidfile", str(pidfile))
    grandchild = int(pidfile.read_text())
    with pytest.raises(mcp_sync.ConnectionClosed, match="exited with code 3"):
        session.call_tool("crash", {"code": 3})
    wait_gone(grandchild)
    session.close()


def test_forgotten_session_is_torn_down() -> None:
    session = connect_fake()
    pid = fake_pid(session)
    del session
    gc.collect()
    wait_gone(pid)
    deadline = time.monotonic() + 5
    while library_threads():
        assert time.monotonic() < deadline
        time.sleep(0.01)


def test_close_kills_a_server_that_ignores_sigterm() -> None:
    session = connect_fake("--ignore-sigterm", "--ignore-stdin-eof")
    pid = fake_pid(session)
    with timed(4.0):
        session.close()
    wait_gone(pid)


def test_ping_answered_with_exact_id_during_a_call() -> None:
    with connect_fake("--misbehave") as session:
        for request_id in (7, "seven", 0, ""):
            result = session.call_tool("ping_client", {"id": request_id})
            assert result.content[0]["text"] == "pong ok", result


def test_unknown_server_request_gets_method_not_found() -> None:
    with connect_fake("--misbehave") as session:
        answer = session.call_tool("ask_client", {"method": "sampling/createMessage", "id": 5})
        assert answer.structured_content == {
            "jsonrpc": "2.0",
            "id": 5,
            "error": {"code": -32601, "message": "Method not found"},
        }


def test_null_id_error_goes_to_the_observer_only() -> None:
    events: list[mcp_sync.DiagnosticEvent] = []
    with connect_fake("--misbehave", diagnostics=events.append) as session:
        result = session.call_tool(
            "null_error", {"error": {"code": -32000, "message": "sk-secretsecretsecret12", "data": [1]}}
        )
        assert result.content[0]["text"] == "after null error"
        assert not session.closed
    assert [(e.kind, e.server) for e in events] == [("remote-error", "fake")]
    assert events[0].detail.reveal() == {
        "code": -32000, "message": "sk-secretsecretsecret12", "data": (1,)
    } or events[0].detail.reveal()["code"] == -32000
    assert "secret" not in repr(events[0]) and "secret" not in str(events[0].detail)


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('{"jsonrpc":"2.0","result":{},"id":null}', "a result reply has a null id"),
        ('{"jsonrpc":"2.0","error":{"code":"x"},"id":null}', "a reply has a malformed error object"),
        ('{"jsonrpc":"2.0","error":null,"id":{id}}', "a reply has a malformed error object"),
        ('{"jsonrpc":"1.0","result":{},"id":{id}}', 'a protocol frame has a jsonrpc version other than "2.0"'),
        ('{"jsonrpc":"2.0","result":{}}', "a reply has no id"),
        ('{"jsonrpc":"2.0","result":{},"id":true}', "a reply has an id that is not a string or integer"),
        ('{"jsonrpc":"2.0","result":{},"id":1.5}', "a reply has an id that is not a string or integer"),
        ('{"jsonrpc":"2.0","id":{id}}', "a reply must carry exactly one of result and error"),
        ('{"jsonrpc":"2.0","method":"ping","id":[1]}', "a server request has an id that is not a string or integer"),
        ('{"jsonrpc":"2.0","method":5,"id":1}', "a protocol frame has a method that is not a string"),
    ],
)
def test_malformed_protocol_frames_close_the_session(line: str, message: str) -> None:
    with connect_fake("--misbehave") as session:
        with pytest.raises(mcp_sync.ProtocolError) as caught:
            session.call_tool("raw", {"lines": [line], "reply": False}, timeout_ms=10_000)
        assert str(caught.value) == message
        assert session.closed


def test_unknown_id_replies_notifications_and_noise_are_dropped() -> None:
    with connect_fake("--misbehave", "--noise", "--list-changed", "3") as session:
        assert [t.name for t in session.tools][:2] == ["echo", "add"]
        session.call_tool(
            "raw",
            {"lines": ['{"jsonrpc":"2.0","result":{"content":[]},"id":99999}',
                       '{"jsonrpc":"2.0","result":{"content":[]},"id":"1"}',
                       {"hex": "ff fe 7b 22 6a 73 6f 6e 72 70 63 22 7d".replace(" ", "")}]},
        )
        assert session.call_tool("notify").content[0]["text"] == "notified"
        assert session.call_tool("echo", {"message": "still fine"}).content[0]["text"] == "still fine"


def test_timed_out_call_sends_one_cancellation(tmp_path: Path) -> None:
    log = tmp_path / "log"
    with connect_fake("--misbehave", "--log", str(log)) as session:
        with timed(2.0), pytest.raises(mcp_sync.Timeout) as caught:
            session.call_tool("hang", timeout_ms=200)
        assert isinstance(caught.value, TimeoutError)
        assert "timeout_ms=200" in str(caught.value)
        session.call_tool("echo", {"message": "sync point"})
        session.call_tool("echo", {"message": "answered calls are never cancelled"})
    frames = logged(log)
    hang_id = next(f["id"] for f in frames if f.get("params", {}).get("name") == "hang")
    cancels = [f for f in frames if f.get("method") == "notifications/cancelled"]
    assert [c["params"]["requestId"] for c in cancels] == [hang_id]


class _GivenUpAsMarked(_session._Pending):
    """An entry whose caller gives up just as the transport marks it written
    (``before``: just before the mark lands, else just after): the race that
    claim() settles without a lock on its common path."""

    __slots__ = ("before", "core", "request_id")

    def __setattr__(self, name: str, value: object) -> None:
        racing = name == "_written" and value and hasattr(self, "core")
        if racing and self.before:
            assert self.core._abandon(self.request_id, True)
        object.__setattr__(self, name, value)
        if racing and not self.before:
            assert self.core._abandon(self.request_id, True)


def test_claim_writes_a_frame_exactly_when_its_abandon_tells_the_server(tmp_path: Path) -> None:
    log = tmp_path / "log"
    with connect_fake("--log", str(log)) as session:
        core = session._core
        entry = _session._Pending()
        core._pending[1_000_001] = entry
        assert core.claim(1_000_001) and entry._written
        assert core._abandon(1_000_001, True) and entry._told  # written: the server is told
        assert not core.claim(1_000_001)  # given up before: the frame is skipped
        # Given up between the look and the mark: the abandon saw no mark and
        # told nobody, so the frame is skipped.
        early = _GivenUpAsMarked()
        early.before, early.core, early.request_id = True, core, 1_000_002
        core._pending[1_000_002] = early
        assert not core.claim(1_000_002) and not early._told
        # Given up between the mark and the second look: the abandon saw the
        # mark and told the server, so the frame goes too (the notice after it).
        late = _GivenUpAsMarked()
        late.before, late.core, late.request_id = False, core, 1_000_003
        core._pending[1_000_003] = late
        assert core.claim(1_000_003) and late._told
        assert not core._pending.keys() & {1_000_001, 1_000_002, 1_000_003}
        session.call_tool("echo", {"message": "sync point"})
    told = {f["params"]["requestId"] for f in logged(log) if f.get("method") == "notifications/cancelled"}
    assert told == {1_000_001, 1_000_003}


def test_a_request_entered_as_the_session_ends_is_refused_and_not_kept() -> None:
    # _enter puts the entry in, then looks at the session's end: an entry
    # that came after the sweep is taken out again and the end is raised.
    with connect_fake() as session:
        core = session._core
    assert core.terminal is not None
    with pytest.raises(mcp_sync.ConnectionClosed):
        core._enter(1_000_003, "tools/call", {"name": "echo", "arguments": {}}, _session._Pending())
    assert core._pending == {}


def test_initialize_is_never_cancelled(tmp_path: Path) -> None:
    log = tmp_path / "log"
    # The budget leaves room for the era race to send initialize on a busy machine:
    # the handshake goes out only once the server has read the probe.
    with timed(8.0), pytest.raises(mcp_sync.Timeout) as caught:
        connect_fake("--hang-on", "initialize", "--log", str(log), handshake_timeout_ms=2000)
    assert "handshake_timeout_ms=2000" in str(caught.value)
    assert methods(log) == ["server/discover", "initialize"]  # neither is cancelled


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (("--protocol-version", "1999-01-01"), "answered initialize with an unsupported protocolVersion"),
        (("--initialize-result", '{"protocolVersion": 5, "capabilities": {"tools": {}}}'),
         "answered initialize with an unsupported protocolVersion"),
        (("--capabilities", "{}"), "does not offer the tools capability"),
        (("--capabilities", '{"tools": true}'), "does not offer the tools capability"),
        (("--initialize-result", '{"protocolVersion": "2025-06-18", "capabilities": []}'),
         "answered initialize without a capabilities object"),
        (("--initialize-result", "[]"), "answered initialize with a result that is not an object"),
    ],
)
def test_initialize_refusals_are_protocol_errors(
    tmp_path: Path, options: tuple[str, ...], message: str
) -> None:
    marker = tmp_path / "pid"
    with pytest.raises(mcp_sync.ProtocolError, match=message):
        connect_fake(*options, "--marker", str(marker))
    wait_gone(int(marker.read_text()))
    assert not library_threads()


def test_handshake_failures_leave_nothing_running(tmp_path: Path) -> None:
    marker = tmp_path / "pid"
    with pytest.raises(mcp_sync.ConnectionClosed, match="exited with code 4"):
        connect_fake("--exit-on", "tools/list", "--exit-code", "4", "--marker", str(marker))
    wait_gone(int(marker.read_text()))
    with pytest.raises(mcp_sync.Timeout):
        connect_fake("--hang-on", "tools/list", "--marker", str(marker), handshake_timeout_ms=200)
    wait_gone(int(marker.read_text()))
    assert not library_threads()


def test_spawn_failed_names_the_command_and_none_of_its_arguments(tmp_path: Path) -> None:
    missing = str(tmp_path / "no-such-server")
    with pytest.raises(mcp_sync.SpawnFailed) as caught:
        mcp_sync.connect(server="ghost", command=missing, args=["--token", "abc"])
    assert caught.value.kind == "spawn_failed"
    assert str(caught.value) == f"server 'ghost' could not be started: command {missing!r} not found"
    assert "abc" not in str(caught.value)


def test_child_environment_is_an_allowlist(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("MCP_SYNC_TEST_SECRET", "hunter2")
    script = tmp_path / "envdump.py"
    script.write_text(
        "import os, runpy, sys\n"
        "open(sys.argv[1], 'w').write(repr(sorted(os.environ)))\n"
        "sys.argv = [sys.argv[0]]\n"
        "runpy.run_module('mcp_sync.testing', run_name='__main__')\n"
    )
    out = tmp_path / "env.txt"
    command = server_command()[0]
    pythonpath = {"PYTHONPATH": str(Path(mcp_sync.__file__).parent.parent)}
    with mcp_sync.connect(server="env", command=command, args=[str(script), str(out)],
                          env={"EXTRA": "1", **pythonpath}):
        pass
    names = eval(out.read_text())
    assert "MCP_SYNC_TEST_SECRET" not in names and "EXTRA" in names and "PATH" in names
    with mcp_sync.connect(server="env", command=command, args=[str(script), str(out)],
                          env=pythonpath, inherit_env=True):
        pass
    assert "MCP_SYNC_TEST_SECRET" in eval(out.read_text())


# A caller waiting for its reply reads stdout itself (it "leads"); these pin
# down that a leader never outlives the session's end or its own deadline.


def test_a_caller_reading_for_its_reply_fails_at_once_when_another_thread_closes() -> None:
    # The server ignores stdin's end, so nothing arrives on stdout to wake the
    # leader: only the session's end can.
    session = connect_fake("--misbehave", "--ignore-stdin-eof")
    pid = fake_pid(session)
    failed = threading.Event()
    errors: list[BaseException] = []

    def call() -> None:
        try:
            session.call_tool("hang", timeout_ms=60_000)
        except mcp_sync.McpError as exc:
            errors.append(exc)
        failed.set()

    caller = threading.Thread(target=call)
    caller.start()
    assert _eventually(lambda: _token_taken(session))
    closer = threading.Thread(target=session.close)
    # Under the 1 s the teardown waits for a server that ignores EOF on stdin.
    with timed(0.9):
        closer.start()
        assert failed.wait(5)
    assert [(e.kind, str(e)) for e in errors] == [("connection_closed", "connection scope closed")]
    closer.join(10)
    caller.join(5)
    wait_gone(pid)
    assert not library_threads()


def test_a_leader_that_meets_a_malformed_reply_returns_at_once_and_nothing_leaks() -> None:
    session = connect_fake("--misbehave", "--ignore-stdin-eof")
    pid = fake_pid(session)
    bad = '{"jsonrpc":"2.0","id":{id},"result":{},"error":{"code":1,"message":"m"}}'
    # The teardown (grace periods included) runs in a helper thread, not in
    # the caller that found the fault.
    # Under the 1 s the teardown waits for a server that ignores EOF on stdin.
    with timed(0.9), pytest.raises(mcp_sync.ProtocolError, match="exactly one of result and error"):
        session.call_tool("raw", {"lines": [bad], "reply": False}, timeout_ms=10_000)
    session.close()
    wait_gone(pid)
    assert not library_threads()


def test_a_leader_gives_the_read_side_back_at_its_deadline() -> None:
    with connect_fake("--misbehave") as session:
        with pytest.raises(mcp_sync.Timeout):
            session.call_tool("hang", timeout_ms=100)
        assert not _token_taken(session)
        assert session.call_tool("echo", {"message": "again"}).content[0]["text"] == "again"


def test_a_ping_while_nobody_calls_is_answered_by_the_reader_thread() -> None:
    with connect_fake("--misbehave") as session:
        session.call_tool("ping_later", {"ms": 50, "id": "idle-ping"})
        # No caller is waiting while the ping arrives: nobody leads.
        time.sleep(0.5)
        assert session.call_tool("late_pong").content[0]["text"] == "pong ok"


def _token_taken(session: mcp_sync.Session) -> bool:
    """Whether some thread holds the stdio transport's read token (private: tests only)."""
    rlock = session._core.transport._token.lock  # type: ignore[union-attr]
    if not rlock.acquire(False):
        return True
    rlock.release()
    return False


def _eventually(check: Callable[[], bool], within: float = 5.0) -> bool:
    deadline = time.monotonic() + within
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.005)
    return True


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_forked_child_disowns_the_session_and_spares_the_parents_server() -> None:
    with connect_fake() as session:
        pid = fake_pid(session)
        read_end, write_end = os.pipe()
        child = os.fork()
        if child == 0:  # pragma: no cover - runs in the child
            try:
                try:
                    session.call_tool("echo", {"message": "from the child"})
                    report = "the call went through"
                except mcp_sync.McpError as exc:
                    report = f"{exc.kind}|{exc}"
                session.close()
                # What a worker's exit runs: the session finalizer among others.
                atexit._run_exitfuncs()
                os.write(write_end, report.encode())
            finally:
                os._exit(0)
        os.close(write_end)
        with os.fdopen(read_end, "rb") as pipe:
            report = pipe.read().decode()
        os.waitpid(child, 0)
        assert report == f"connection_closed|{_session.FORKED}"
        assert alive(pid)
        assert session.call_tool("echo", {"message": "parent"}).content[0]["text"] == "parent"


def test_a_failure_after_spawn_leaves_no_server(monkeypatch: pytest.MonkeyPatch) -> None:
    # Out of threads after the child started: connect() fails, and the child
    # and the threads that did start are gone.
    from mcp_sync.transports import stdio as _stdio

    pids: list[int] = []
    real_start = threading.Thread.start
    real_abandon = _stdio.StdioTransport._abandon_child

    def start(thread: threading.Thread) -> None:
        if thread.name.endswith("-waiter"):
            raise RuntimeError("can't start new thread")
        real_start(thread)

    def abandon(transport: _stdio.StdioTransport) -> None:
        pids.append(transport.pid)
        real_abandon(transport)

    monkeypatch.setattr(threading.Thread, "start", start)
    monkeypatch.setattr(_stdio.StdioTransport, "_abandon_child", abandon)
    with timed(5.0), pytest.raises(mcp_sync.SpawnFailed, match=r"^server 'fake' could not be started: RuntimeError$"):
        connect_fake()
    monkeypatch.undo()
    assert len(pids) == 1
    wait_gone(pids[0])
    deadline = time.monotonic() + 5
    while library_threads():
        assert time.monotonic() < deadline, library_threads()
        time.sleep(0.01)


def test_the_server_starts_before_the_session_is_built(monkeypatch: pytest.MonkeyPatch) -> None:
    # A server takes tens of ms to seconds to start: the core, the transport
    # and a first connect's imports are built while it does, not before.
    from mcp_sync.session import connect as _connect
    from mcp_sync.transports import process as _process

    order: list[str] = []
    real_spawn, real_core = _process.ServerProcess.__init__, _connect._core

    def spawn(child: Any, *args: Any) -> None:
        order.append("spawn")
        real_spawn(child, *args)

    def core(settings: Any) -> Any:
        order.append("core")
        return real_core(settings)

    monkeypatch.setattr(_process.ServerProcess, "__init__", spawn)
    monkeypatch.setattr(_connect, "_core", core)
    with connect_fake() as session:
        assert session.tools
    assert order == ["spawn", "core"]


def test_a_first_stdio_connect_imports_little_before_the_spawn() -> None:
    # What a first connect imports before the server starts is on its
    # critical path; the rest is built while the server starts.
    code = textwrap.dedent("""
        import sys
        import mcp_sync
        from mcp_sync.transports import process

        seen = []
        real = process.ServerProcess.__init__

        def spawn(child, *args):
            seen.extend(sorted(sys.modules))
            real(child, *args)

        process.ServerProcess.__init__ = spawn
        with mcp_sync.connect(server="s", command=sys.executable, args=["-m", "mcp_sync.testing"]) as session:
            assert session.tools
        late = ["hmac", "pydantic", "orjson", "ctypes", "mcp_sync.session.inbound",
                "mcp_sync.session.handlers", "mcp_sync.transports.stdio",
                "mcp_sync.transports.header_rules", "mcp_sync.protocol.flow_declarations"]
        print([name for name in late if name in seen])
    """)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_a_failure_between_spawn_and_transport_leaves_no_server(monkeypatch: pytest.MonkeyPatch) -> None:
    from mcp_sync.session import connect as _connect
    from mcp_sync.transports import process as _process

    pids: list[int] = []
    real_spawn = _process.ServerProcess.__init__

    def spawn(child: Any, *args: Any) -> None:
        real_spawn(child, *args)
        pids.append(child.pid)

    def core(settings: Any) -> Any:
        raise RuntimeError("no core")

    monkeypatch.setattr(_process.ServerProcess, "__init__", spawn)
    monkeypatch.setattr(_connect, "_core", core)
    with timed(5.0), pytest.raises(RuntimeError, match="no core"):
        connect_fake()
    monkeypatch.undo()
    assert len(pids) == 1
    wait_gone(pids[0])
    assert not _process._live.procs


def test_a_completion_lost_half_way_still_ends_in_a_timeout() -> None:
    # The main thread, reading for everyone, is interrupted (KeyboardInterrupt)
    # after taking another caller's entry off the table but before completing
    # it. That caller must still get its Timeout, not wait forever.
    core = _session._Core("lost", mcp_sync.Limits.create(), None)

    class Transport:
        def __init__(self) -> None:
            self.leader = self

        def exchange(self, frame: bytes, request_id: int, timeout: float, done: object, deadline: float) -> bool:
            with core._lock:
                core._pending.pop(request_id)  # taken, never completed
            return True

        def send(self, item: Outbound, timeout: float) -> bool:
            return True

        def send_nowait(self, item: Outbound) -> bool:
            return True

        def shutdown(self, wait: bool) -> None:
            pass

    core.transport = Transport()
    with timed(3.0), pytest.raises(mcp_sync.Timeout, match="missed its deadline"):
        core.request("tools/call", {}, 0.1, lambda: "tool 'x'")


def test_an_interrupted_reader_loses_one_line_at_most() -> None:
    # A KeyboardInterrupt reaches the main thread while it reads stdout for
    # everyone. The rest of what it had read is still dispatched (by the
    # reader thread), though nothing more ever arrives on stdout.
    from mcp_sync.transports import stdio as _stdio
    from mcp_sync.transports.process import ServerProcess

    received: list[bytes] = []
    interrupted = False

    class Sink:
        def receive(self, line: bytes) -> None:
            nonlocal interrupted
            if line == b"first" and not interrupted:
                interrupted = True
                raise KeyboardInterrupt
            received.append(line)

        def terminate(self, error: object, *, wait: bool = False) -> None:
            transport.shutdown(wait)

        def claim(self, request_id: int) -> bool:
            return True

        @property
        def table_size(self) -> Callable[[], int]:
            return lambda: 0

        def failed(self) -> bool:
            return False

        def transport_closed(self, stderr_tail: str) -> None:
            pass

    script = (
        "import sys, time; sys.stdin.readline(); "
        "sys.stdout.write('first\\nsecond\\nthird\\n'); sys.stdout.flush(); time.sleep(60)"
    )
    child = ServerProcess("lines", sys.executable, ["-c", script], None, dict(os.environ))
    transport = _stdio.StdioTransport(Sink(), server="lines", child=child, limits=mcp_sync.Limits.create())
    try:
        with pytest.raises(KeyboardInterrupt):
            # Takes the read token before writing, so this thread reads the lines.
            transport.exchange(b"go\n", 1, 5.0, lambda: len(received) >= 2, time.monotonic() + 10)
        assert _eventually(lambda: received == [b"second", b"third"])
    finally:
        transport.shutdown(True)
    wait_gone(transport.pid)


def test_an_interrupt_just_after_the_direct_write_still_cancels(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The caller writes its own small frame; a KeyboardInterrupt lands the
    # moment write(2) returns, before anything else runs. The server has the
    # request, so abandoning it must still send notifications/cancelled.
    log = tmp_path / "server.log"
    armed = True

    with connect_fake("--log", str(log)) as session:
        stdin = session._core.transport._stdin  # type: ignore[union-attr]
        real_write = stdin._write

        def write(fd: int, data: bytes, size: int) -> int:
            nonlocal armed
            written = real_write(fd, data, size)
            if armed and b'"tools/call"' in data:
                armed = False
                raise KeyboardInterrupt
            return written

        monkeypatch.setattr(stdin, "_write", write)
        with pytest.raises(KeyboardInterrupt):
            session.call_tool("sleep", {"ms": 30_000}, timeout_ms=20_000)
        monkeypatch.undo()
        assert not armed, "the request did not go through the direct write"
        assert _eventually(lambda: "notifications/cancelled" in methods(log)), methods(log)
        assert session.call_tool("echo", {"message": "after"}).content[0]["text"] == "after"
