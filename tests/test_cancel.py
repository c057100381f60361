"""``cancel=``: a blocking call cancelled from another thread, against the fake server.

A ``CancelScope`` or a plain ``threading.Event`` fired from another thread ends the
call with ``Cancelled`` at once, and the server is told (``notifications/cancelled``
with the request's id, or a task's ``tasks/cancel``), in both eras. The hostile
moments: a cancel before the request is sent, during the send, after the reply
arrived (the result is returned), many threads cancelling at once. Nothing is left
behind: no entry in the request table, no library thread (the autouse
``thread_leak_check`` joins them).

The official SDK's handlers seeing the cancel, over each transport, are in
``tests/test_cancel_peers.py``.
"""

from __future__ import annotations

import concurrent.futures as cf
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from support import connect_fake, library_threads, logged, timed
from test_http_modern import fake_http

import mcp_sync
from mcp_sync.session import call_plan
from mcp_sync.session import cancel as _cancel

ERAS = {"legacy": (), "modern": ("--era", "modern")}
# A cancel is "at once"; this is the cap for a loaded 2-core machine.
AT_ONCE = 5.0
REASON = "cancelled by the client"


@pytest.fixture(params=sorted(ERAS))
def era(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def connect(era: str, *options: str, **kwargs: Any) -> mcp_sync.Session:
    session = connect_fake(*ERAS[era], *options, **kwargs)
    assert session.era == era
    return session


def cancelled_ids(log: Path) -> dict[int, str]:
    return {
        frame["params"]["requestId"]: frame["params"]["reason"]
        for frame in logged(log)
        if frame.get("method") == "notifications/cancelled"
    }


def sent_ids(log: Path, method: str) -> list[int]:
    return [frame["id"] for frame in logged(log) if frame.get("method") == method]


def eventually(check: Any, timeout: float = 10.0) -> None:
    """Poll ``check()`` until it holds (the server logs what it reads as it reads it)."""
    end = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < end, "not within the time allowed"
        time.sleep(0.01)


def fire_later(token: mcp_sync.CancelScope | threading.Event, after: float = 0.2) -> threading.Timer:
    timer = threading.Timer(after, token.cancel if isinstance(token, mcp_sync.CancelScope) else token.set)
    timer.start()
    return timer


# ------------------------------------------------------------------ the error and the scope


def test_cancelled_is_a_kind_and_a_futures_cancelled_error() -> None:
    error = mcp_sync.Cancelled("tool 'x' on server 's' was cancelled")
    assert error.kind == "cancelled"
    assert isinstance(error, mcp_sync.McpError)
    assert isinstance(error, cf.CancelledError)
    assert not isinstance(error, (ValueError, TimeoutError))
    assert type(error._copy()) is mcp_sync.Cancelled


def test_a_scope_is_idempotent_and_reports_its_state() -> None:
    scope = mcp_sync.CancelScope()
    assert not scope.cancelled and scope.deadline is None and scope.timeout_ms is None
    assert repr(scope) == "<CancelScope open>"
    scope.cancel()
    scope.cancel()
    assert scope.cancelled and repr(scope) == "<CancelScope cancelled>"
    timed_scope = mcp_sync.CancelScope(timeout_ms=50)
    assert repr(timed_scope) == "<CancelScope timeout_ms=50 open>"
    eventually(lambda: timed_scope.cancelled)
    with mcp_sync.CancelScope() as block:
        assert not block.cancelled
    assert block.cancelled  # leaving the block cancels it


@pytest.mark.parametrize("value", [0, -1, 1.5, True, "100"])
def test_a_scope_refuses_a_bad_timeout(value: object) -> None:
    with pytest.raises(mcp_sync.InvalidOption, match="option timeout_ms must be a positive integer"):
        mcp_sync.CancelScope(timeout_ms=value)  # type: ignore[arg-type]


def test_a_token_that_is_neither_a_scope_nor_an_event_is_refused_before_sending(tmp_path: Path) -> None:
    log = tmp_path / "log"
    with connect_fake("--log", str(log)) as session:
        for method in (lambda: session.call_tool("echo", {"message": "x"}, cancel=object()),  # type: ignore[arg-type]
                       lambda: session.ping(cancel=True)):  # type: ignore[arg-type]
            with pytest.raises(ValueError, match=r"option cancel must be a CancelScope or a threading\.Event"):
                method()
        session.call_tool("echo", {"message": "sync"})
    assert sent_ids(log, "tools/call") == sent_ids(log, "tools/call")[-1:]  # only the last call went out
    assert "ping" not in {frame.get("method") for frame in logged(log)}


# ------------------------------------------------------------------ a call cancelled from another thread


@pytest.mark.parametrize("token", ["scope", "event"])
def test_a_blocked_call_is_cancelled_at_once_and_the_server_told(era: str, token: str, tmp_path: Path) -> None:
    log = tmp_path / "log"
    with connect(era, "--log", str(log)) as session:
        fired: mcp_sync.CancelScope | threading.Event = (
            mcp_sync.CancelScope() if token == "scope" else threading.Event()
        )
        fire_later(fired)
        with timed(AT_ONCE), pytest.raises(mcp_sync.Cancelled, match=r"tool 'sleep' on server 'fake' .* was cancelled"):
            session.call_tool("sleep", {"ms": 30_000}, cancel=fired)
        assert session._core._pending == {}
        assert session.call_tool("echo", {"message": "after"}).content[0]["text"] == "after"
        # A later call under the fired token is refused before anything is sent.
        with pytest.raises(mcp_sync.Cancelled):
            session.call_tool("echo", {"message": "never"}, cancel=fired)
        session.ping()  # everything before it has been read by now
        [sleep] = sent_ids(log, "tools/call")[:1]
        assert cancelled_ids(log) == {sleep: REASON}
        assert "never" not in log.read_text()


def test_a_plain_events_watching_thread_leaves_after_the_calls(tmp_path: Path) -> None:
    stop = threading.Event()
    with connect_fake() as session:
        results: list[object] = []

        def call() -> None:
            try:
                results.append(session.call_tool("sleep", {"ms": 30_000}, cancel=stop))
            except mcp_sync.McpError as exc:
                results.append(exc)

        threads = [threading.Thread(target=call) for _ in range(4)]
        for thread in threads:
            thread.start()
        eventually(lambda: len(session._core._pending) == 4)
        watching = [t for t in library_threads() if t.name == "mcp_sync-cancel-event"]
        assert len(watching) == 1  # one thread per event, however many calls wait under it
        stop.set()
        for thread in threads:
            thread.join(AT_ONCE)
        assert [type(r) for r in results] == [mcp_sync.Cancelled] * 4
        watching[0].join(AT_ONCE)
        assert not watching[0].is_alive()
        # Unfired, the thread leaves one slice after the last call under the event ended.
        calm = threading.Event()
        assert session.call_tool("echo", {"message": "x"}, cancel=calm).content[0]["text"] == "x"
        for thread in [t for t in library_threads() if t.name == "mcp_sync-cancel-event"]:
            thread.join(_cancel.EVENT_LINGER * 10)
            assert not thread.is_alive()
        assert session._core._pending == {} and _cancel._EventWatch._REGISTRY == {}


REQUESTS = {
    "resources/list": lambda s, c: s.list_resources(cancel=c),
    "resources/templates/list": lambda s, c: s.list_resource_templates(cancel=c),
    "resources/read": lambda s, c: s.read_resource("fake://hello", cancel=c),
    "prompts/list": lambda s, c: s.list_prompts(cancel=c),
    "prompts/get": lambda s, c: s.get_prompt("greet", {"name": "x"}, cancel=c),
    "completion/complete": lambda s, c: s.complete({"type": "ref/prompt", "name": "greet"},
                                                   {"name": "name", "value": "a"}, cancel=c),
    "tools/list": lambda s, c: s.refresh_tools(cancel=c),
    "ping": lambda s, c: s.ping(cancel=c),
    "logging/setLevel": lambda s, c: s.set_log_level("info", cancel=c),
    "vendor/thing": lambda s, c: s.request("vendor/thing", {}, cancel=c),
}  # fmt: skip


@pytest.mark.parametrize("method", sorted(REQUESTS))
def test_every_request_method_takes_a_cancel(method: str, tmp_path: Path) -> None:
    log = tmp_path / "log"
    # (tools/list cannot hang: connect walks it. It is slow instead, each time.)
    stall = ("--delay", "tools/list=1500") if method == "tools/list" else ("--hang-on", method)
    with connect_fake("--features", "--log", str(log), *stall) as session:
        scope = mcp_sync.CancelScope()
        fire_later(scope)
        with timed(AT_ONCE), pytest.raises(mcp_sync.Cancelled, match="was cancelled"):
            REQUESTS[method](session, scope)
        assert session._core._pending == {}
        session.call_tool("echo", {"message": "sync"})
        hung = sent_ids(log, method)[-1]  # (connect's own tools/list came before)
        # A ping changes nothing on the server: it is never cancelled (as on a timeout).
        assert cancelled_ids(log) == ({} if method == "ping" else {hung: REASON})
        # Fired already: refused before anything is sent.
        with pytest.raises(mcp_sync.Cancelled):
            REQUESTS[method](session, scope)
        session.call_tool("echo", {"message": "sync"})
        assert sent_ids(log, method)[-1] == hung


def test_a_refresh_cancelled_keeps_the_catalog(tmp_path: Path) -> None:
    with connect_fake("--delay", "tools/list=1500") as session:
        before = session.tools
        scope = mcp_sync.CancelScope()
        fire_later(scope)
        with pytest.raises(mcp_sync.Cancelled, match="refreshing the catalog of server 'fake' failed"):
            session.refresh_tools(cancel=scope)
        assert session.tools == before
        assert isinstance(session.last_refresh_error, mcp_sync.Cancelled)


# ------------------------------------------------------------------ the hostile moments


def test_a_cancel_before_the_request_is_sent(era: str, tmp_path: Path) -> None:
    log = tmp_path / "log"
    with connect(era, "--log", str(log)) as session:
        scope = mcp_sync.CancelScope()
        scope.cancel()
        with pytest.raises(mcp_sync.Cancelled):
            session.call_tool("echo", {"message": "never"}, cancel=scope)
        session.ping()
        assert "never" not in log.read_text()
        assert cancelled_ids(log) == {}


@pytest.mark.parametrize("moment", ["before the write", "after the write"])
def test_a_cancel_during_the_send(era: str, moment: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log = tmp_path / "log"
    with connect(era, "--log", str(log)) as session:
        transport = session._core.transport
        assert transport is not None
        send = transport.send
        scope = mcp_sync.CancelScope()

        def cancelling_send(item: Any, timeout: float) -> bool:
            if moment == "before the write":
                scope.cancel()  # the frame is then skipped: claim() finds it withdrawn
                return send(item, timeout)
            sent = send(item, timeout)
            scope.cancel()
            return sent

        monkeypatch.setattr(transport, "send", cancelling_send)
        with timed(AT_ONCE), pytest.raises(mcp_sync.Cancelled):
            session.call_tool("sleep", {"ms": 30_000}, cancel=scope)
        monkeypatch.undo()
        assert session._core._pending == {}
        session.ping()
        told = cancelled_ids(log)
        if moment == "before the write":
            assert sent_ids(log, "tools/call") == [] and told == {}
        else:
            [written] = sent_ids(log, "tools/call")
            assert told == {written: REASON}


def test_a_cancel_after_the_reply_arrived_returns_the_result(
    era: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = tmp_path / "log"
    with connect(era, "--log", str(log)) as session:
        scope = mcp_sync.CancelScope()
        parse = call_plan.parse_call_result

        def cancel_then_parse(*args: Any, **kwargs: Any) -> Any:
            scope.cancel()  # the reply is in: nothing is withdrawn, nobody is told
            return parse(*args, **kwargs)

        monkeypatch.setattr(call_plan, "parse_call_result", cancel_then_parse)
        result = session.call_tool("echo", {"message": "kept"}, cancel=scope)
        monkeypatch.undo()
        assert result.content[0]["text"] == "kept"
        assert scope.cancelled
        session.ping()
        assert cancelled_ids(log) == {}
        assert session._core._pending == {}


def test_many_threads_cancelling_at_once(tmp_path: Path) -> None:
    log = tmp_path / "log"
    with connect_fake("--log", str(log)) as session:
        scope = mcp_sync.CancelScope()
        outcomes: list[BaseException | None] = []
        lock = threading.Lock()

        def call() -> None:
            try:
                session.call_tool("sleep", {"ms": 30_000}, cancel=scope)
            except BaseException as exc:  # recorded, asserted below
                with lock:
                    outcomes.append(exc)

        callers = [threading.Thread(target=call) for _ in range(16)]
        for thread in callers:
            thread.start()
        eventually(lambda: len(session._core._pending) == 16)
        eventually(lambda: len(sent_ids(log, "tools/call")) == 16)
        start = threading.Barrier(9)

        def cancel() -> None:
            start.wait(AT_ONCE)
            scope.cancel()

        cancellers = [threading.Thread(target=cancel) for _ in range(8)]
        for thread in cancellers:
            thread.start()
        with timed(AT_ONCE):
            start.wait(AT_ONCE)
            for thread in (*cancellers, *callers):
                thread.join(AT_ONCE)
        assert len(outcomes) == 16 and all(isinstance(e, mcp_sync.Cancelled) for e in outcomes), outcomes
        assert session._core._pending == {}
        session.ping()
        # Each request was told once, none twice.
        told = [f["params"]["requestId"] for f in logged(log) if f.get("method") == "notifications/cancelled"]
        assert sorted(told) == sorted(sent_ids(log, "tools/call"))


def test_calls_cancelled_at_random_moments_all_settle_and_leak_nothing() -> None:
    """Cancels landing anywhere in a call's life: each call returns its result or
    raises Cancelled, and the table ends empty."""
    import random

    rng = random.Random(41)
    with connect_fake() as session:
        kinds = {"result": 0, "cancelled": 0}
        for _ in range(300):
            scope = mcp_sync.CancelScope()
            timer = threading.Timer(rng.random() * 0.003, scope.cancel)
            timer.start()
            try:
                result = session.call_tool("echo", {"message": "r"}, cancel=scope)
            except mcp_sync.Cancelled:
                kinds["cancelled"] += 1
            else:
                assert result.content[0]["text"] == "r"
                kinds["result"] += 1
            timer.join()
        assert session._core._pending == {}
        assert session.call_tool("echo", {"message": "end"}).content[0]["text"] == "end"
    assert sum(kinds.values()) == 300


# ------------------------------------------------------------------ deadlines and blocks


def test_a_scopes_deadline_bounds_every_call_under_it(era: str, tmp_path: Path) -> None:
    log = tmp_path / "log"
    with connect(era, "--log", str(log)) as session:
        scope = mcp_sync.CancelScope(timeout_ms=400)
        assert session.call_tool("echo", {"message": "in time"}, cancel=scope).content[0]["text"] == "in time"
        with timed(AT_ONCE), pytest.raises(mcp_sync.Timeout, match=r"the deadline of its CancelScope, timeout_ms=400"):
            session.call_tool("sleep", {"ms": 30_000}, timeout_ms=60_000, cancel=scope)
        assert scope.cancelled
        with pytest.raises(mcp_sync.Timeout, match=r"missed the deadline of its CancelScope \(timeout_ms=400\)"):
            session.call_tool("echo", {"message": "never"}, cancel=scope)
        with pytest.raises(mcp_sync.Timeout, match="CancelScope"):
            session.ping(cancel=scope)
        session.ping()
        [sleep] = sent_ids(log, "tools/call")[1:]
        assert cancelled_ids(log) == {sleep: "timed out"}
        assert "never" not in log.read_text()


def test_a_scopes_deadline_bounds_a_call_with_progress_and_its_extension(tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    with connect_fake("--features") as session:
        scope = mcp_sync.CancelScope(timeout_ms=500)
        seen: list[float] = []
        with timed(AT_ONCE), pytest.raises(mcp_sync.Timeout, match="the deadline of its CancelScope"):
            session.call_tool(
                "progress", {"steps": 3, "gate": str(gate)}, on_progress=lambda p, t, m: seen.append(p),
                progress_extends_deadline=True, timeout_ms=60_000, cancel=scope,
            )  # fmt: skip
        gate.touch()
        assert seen == [1.0] and session._core._pending == {}


def test_leaving_a_scopes_block_cancels_the_calls_other_threads_make_under_it() -> None:
    with connect_fake() as session:
        errors: list[BaseException] = []

        def worker(scope: mcp_sync.CancelScope) -> None:
            try:
                session.call_tool("sleep", {"ms": 30_000}, cancel=scope)
            except mcp_sync.Cancelled as exc:
                errors.append(exc)

        with timed(AT_ONCE), mcp_sync.CancelScope() as scope:
            thread = threading.Thread(target=worker, args=(scope,))
            thread.start()
            eventually(lambda: len(session._core._pending) == 1)
        thread.join(AT_ONCE)
        assert len(errors) == 1 and session._core._pending == {}


def test_first_result_wins_and_the_rest_are_cancelled() -> None:
    """The guide's pattern: several calls on a pool under one scope; the first result
    cancels the others."""
    with connect_fake() as session, cf.ThreadPoolExecutor(4) as pool:
        with mcp_sync.CancelScope(timeout_ms=30_000) as scope:
            futures = [
                pool.submit(session.call_tool, "sleep", {"ms": ms}, cancel=scope) for ms in (30_000, 50, 30_000)
            ]
            first = next(cf.as_completed(futures)).result()
        assert first.content[0]["text"] == "slept"
        outcomes = [f.exception(AT_ONCE) for f in futures]
        assert sum(isinstance(e, mcp_sync.Cancelled) for e in outcomes) == 2
        assert session._core._pending == {}


# ------------------------------------------------------------------ progress and tasks


def test_a_call_with_progress_is_cancelled_between_reports(era: str, tmp_path: Path) -> None:
    log = tmp_path / "log"
    gate = tmp_path / "gate"
    with connect(era, "--features", "--log", str(log)) as session:
        scope = mcp_sync.CancelScope()
        seen: list[float] = []

        def report(progress: float, total: float | None, message: str | None) -> None:
            seen.append(progress)
            scope.cancel()  # from the callback: the call's own thread

        with timed(AT_ONCE), pytest.raises(mcp_sync.Cancelled):
            session.call_tool(
                "progress", {"steps": 3, "gate": str(gate)}, on_progress=report, cancel=scope, task=False
            )
        assert seen == [1.0]
        gate.touch()  # the fake finishes the tool, then reads the cancellation
        session.ping()
        [call] = sent_ids(log, "tools/call")
        eventually(lambda: cancelled_ids(log) == {call: REASON})
        assert session._core._pending == {}


def test_a_task_is_cancelled_with_tasks_cancel(era: str, tmp_path: Path) -> None:
    log = tmp_path / "log"
    with connect(era, "--features", "--log", str(log)) as session:
        scope = mcp_sync.CancelScope()
        fire_later(scope, 0.5)  # the task is created by then, and its follower pauses 20 s before polling
        with timed(AT_ONCE), pytest.raises(mcp_sync.Cancelled):
            session.call_tool("forever", {"poll": 20_000}, cancel=scope, timeout_ms=60_000)

        def task_cancelled() -> bool:
            return any(f.get("method") == "tasks/cancel" for f in logged(log))

        eventually(task_cancelled)
        [created] = [f for f in logged(log) if f.get("method") == "tools/call"]
        [cancel] = [f["params"]["taskId"] for f in logged(log) if f.get("method") == "tasks/cancel"]
        assert cancel == "task-1" and created["id"] not in cancelled_ids(log)
        assert not [f for f in logged(log) if f.get("method") == "tasks/get"]  # the pause was cut short
        assert session._core._pending == {}


# ------------------------------------------------------------------ Streamable HTTP and Servers


@pytest.mark.parametrize("protocol", ["legacy", "modern"])
def test_a_cancel_over_streamable_http(protocol: str, tmp_path: Path) -> None:
    log = tmp_path / "log"
    with fake_http("--era", "dual", "--log", str(log)) as url, mcp_sync.connect_http(
        server="web", url=url, protocol=protocol
    ) as session:
        assert session.era == protocol
        scope = mcp_sync.CancelScope()
        fire_later(scope)
        with timed(AT_ONCE), pytest.raises(mcp_sync.Cancelled):
            session.call_tool("sleep", {"ms": 30_000}, cancel=scope)
        assert session._core._pending == {}
        assert session.call_tool("echo", {"message": "after"}).content[0]["text"] == "after"
        if protocol == "legacy":  # 2026-07-28 closes the reply stream instead: nothing is POSTed
            [call] = sent_ids(log, "tools/call")[:1]
            eventually(lambda: cancelled_ids(log) == {call: REASON})
        else:
            assert cancelled_ids(log) == {}


def _servers(*options: str) -> mcp_sync.Servers:
    from mcp_sync.config import ConnectOptions
    from mcp_sync.testing import server_command

    command, *args = server_command(*options)
    return mcp_sync.Servers(ConnectOptions(server="fake", command=command, args=args))


def test_servers_call_tool_takes_a_cancel() -> None:
    with _servers() as servers:
        scope = mcp_sync.CancelScope()
        fire_later(scope)
        with timed(AT_ONCE), pytest.raises(mcp_sync.Cancelled):
            servers.call_tool("fake", "sleep", {"ms": 30_000}, cancel=scope)
        assert servers.call_tool("fake", "echo", {"message": "x"}).content[0]["text"] == "x"


def test_servers_wait_for_a_connect_ends_when_the_token_fires() -> None:
    with _servers("--start-delay", "3000") as servers:
        stop = threading.Event()
        fire_later(stop)
        with timed(2.5), pytest.raises(mcp_sync.Cancelled, match="the wait for a server's connect was cancelled"):
            servers.call_tool("fake", "echo", {"message": "x"}, cancel=stop)
        # The connect went on: the next call uses its session.
        assert servers.call_tool("fake", "echo", {"message": "y"}).content[0]["text"] == "y"
        scope = mcp_sync.CancelScope()
        scope.cancel()
        with pytest.raises(mcp_sync.Cancelled):
            servers.call_tool("fake", "echo", {"message": "z"}, cancel=scope)
