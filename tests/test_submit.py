"""Calls that don't block a thread: ``Session.submit_tool`` and ``Session.map_tool``."""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import gc
import itertools
import os
import random
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support import captured_logs, connect_fake, library_threads, logged, timed
from test_http_modern import fake_http
from test_modern import answer_with

import mcp_sync
from mcp_sync.session import submit as _submit

ERAS = {"legacy": (), "modern": ("--era", "modern")}


@pytest.fixture(params=sorted(ERAS))
def era(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def connect(era: str, *options: str, **kwargs: Any) -> mcp_sync.Session:
    session = connect_fake(*ERAS[era], *options, **kwargs)
    assert session.era == era
    return session


def _fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def _cancelled(frames: list[dict[str, Any]]) -> dict[int, str]:
    return {
        f["params"]["requestId"]: f["params"]["reason"]
        for f in frames
        if f.get("method") == "notifications/cancelled"
    }


# ------------------------------------------------------------------ the handle


def test_a_handle_settles_as_call_tool_would(era: str) -> None:
    with connect(era) as session:
        call = session.submit_tool("echo", {"message": "héllo"})
        assert isinstance(call, cf.Future)
        assert isinstance(call, mcp_sync.ToolCall)
        assert call.tool == "echo" and call.request_id > 0
        assert call.result(10) == session.call_tool("echo", {"message": "héllo"})
        assert call.done() and call.exception() is None and not call.cancel()
        # A tool's own failure is a result, as with call_tool.
        failed = session.submit_tool("fail").result(10)
        assert failed.is_error is True and failed == session.call_tool("fail")
        # What call_tool refuses before sending, submit_tool raises at once.
        with pytest.raises(mcp_sync.ToolNotFound):
            session.submit_tool("nope")
        with pytest.raises(mcp_sync.ProtocolError):
            session.submit_tool("echo", ["not", "a", "dict"])  # type: ignore[arg-type]
        with pytest.raises(mcp_sync.ProtocolError):
            session.submit_tool("echo", {"message": "x"}, traceparent="nonsense")
    with pytest.raises(mcp_sync.ConnectionClosed):
        session.submit_tool("echo", {"message": "after"})


def test_structured_output_is_validated_as_call_tool_does() -> None:
    bad = (
        '[{"name": "add", "inputSchema": {"type": "object"}, "outputSchema": {"type": "object",'
        ' "properties": {"sum": {"type": "string"}}, "required": ["sum"]}}]'
    )
    with connect_fake("--tools", bad, validate_output=True) as session:
        call = session.submit_tool("add", {"a": 1, "b": 2})
        with pytest.raises(mcp_sync.InvalidResponse):
            call.result(10)
        assert type(call.exception()) is type(_raised(lambda: session.call_tool("add", {"a": 1, "b": 2})))


def test_a_bug_while_settling_fails_the_handle_not_the_reading_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*_: Any) -> None:
        raise RuntimeError("a bug")

    monkeypatch.setattr(_submit, "check_structured_output", broken)
    with connect_fake(validate_output=True) as session:
        assert isinstance(session.submit_tool("add", {"a": 1, "b": 2}).exception(10), RuntimeError)
        assert session.call_tool("echo", {"message": "alive"}).content[0]["text"] == "alive"
        assert not session.closed


def _raised(action: Any) -> BaseException:
    try:
        action()
    except BaseException as exc:
        return exc
    raise AssertionError("nothing raised")


def test_a_tool_that_must_run_as_a_task_is_refused() -> None:
    tools = '[{"name": "slow", "inputSchema": {"type": "object"}, "execution": {"taskSupport": "required"}}]'
    caps = '{"tools": {}, "tasks": {"requests": {"tools": {"call": {}}}}}'
    with connect_fake("--tools", tools, "--capabilities", caps) as session:
        with pytest.raises(mcp_sync.ProtocolError, match="must be called as a task"):
            session.submit_tool("slow")
        assert session._core._pending == {}


# ------------------------------------------------------------------ deadlines


def test_the_deadline_holds_with_no_thread_blocked_per_call(era: str, tmp_path: Path) -> None:
    log = tmp_path / "log"
    with connect(era, "--log", str(log)) as session:
        before = threading.active_count()
        start = time.monotonic()
        calls = [session.submit_tool("sleep", {"ms": 30_000}, timeout_ms=300) for _ in range(40)]
        # One deadline thread for all of them, not a thread each.
        assert threading.active_count() <= before + 1
        with timed(5.0):  # 0.3 s deadlines; the rest is headroom for a loaded machine
            done, _ = cf.wait(calls, timeout=10)
        assert len(done) == 40
        for call in calls:
            error = call.exception()
            assert isinstance(error, mcp_sync.Timeout)
            assert "missed its deadline" in str(error) and "timeout_ms=300" in str(error)
        assert time.monotonic() - start >= 0.3  # never early
        fast = session.submit_tool("echo", {"message": "still here"}, timeout_ms=5_000)
        assert fast.result(10).content[0]["text"] == "still here"
        assert session._core._pending == {}
    # Each abandoned request was cancelled the way a timed-out call_tool is.
    cancelled = _cancelled(logged(log))
    assert {c.request_id for c in calls} <= set(cancelled)
    assert {cancelled[c.request_id] for c in calls} == {"timed out"}


def test_result_with_a_timeout_is_not_the_calls_deadline() -> None:
    with connect_fake() as session:
        call = session.submit_tool("sleep", {"ms": 400})
        with timed(5.0), pytest.raises(TimeoutError) as caught:
            call.result(timeout=0.05)
        assert not isinstance(caught.value, mcp_sync.Timeout)  # the call goes on
        assert not call.done()
        assert call.result(10).content[0]["text"]


# ------------------------------------------------------------------ cancelling


def test_cancel_withdraws_the_call_and_tells_the_server(era: str, tmp_path: Path) -> None:
    log = tmp_path / "log"
    with connect(era, "--log", str(log)) as session:
        call = session.submit_tool("sleep", {"ms": 30_000})
        assert call.cancel() is True
        assert call.cancelled() and call.done() and call.cancel() is True
        with pytest.raises(cf.CancelledError):
            call.result(1)
        # From another thread: the same cancel().
        other = session.submit_tool("sleep", {"ms": 30_000})
        outcome: list[bool] = []
        thread = threading.Thread(target=lambda: outcome.append(other.cancel()))
        thread.start()
        thread.join(10)
        assert outcome == [True] and other.cancelled()
        finished = session.submit_tool("echo", {"message": "x"})
        finished.result(10)
        assert finished.cancel() is False
        assert session._core._pending == {}
        session.call_tool("echo", {"message": "sync"})  # the cancellations are written by now
    frames = logged(log)
    cancelled = _cancelled(frames)
    sent = {f["id"] for f in frames if f.get("method") == "tools/call"}
    for withdrawn in (call, other):
        # Told, unless it was withdrawn before its frame was written (then never sent).
        if withdrawn.request_id in sent:
            assert cancelled.get(withdrawn.request_id) == "cancelled by the client"
        else:
            assert withdrawn.request_id not in cancelled
    assert call.request_id in sent  # written by submit_tool itself (stdin was idle)
    assert finished.request_id not in cancelled


def _submit_randomly(session: mcp_sync.Session, count: int, settled: threading.Semaphore,
                     calls: list[mcp_sync.ToolCall]) -> None:  # fmt: skip
    """``count`` calls (some slow, some with deadlines that pass), some cancelled at once
    from this thread; now and then wait for an older one (so this thread reads too)."""
    rng = random.Random(22)
    for n in range(count):
        if rng.random() < 0.05:
            timeout_ms = rng.choice((1, 10, 60_000))
            call = session.submit_tool("sleep", {"ms": rng.randrange(1, 30)}, timeout_ms=timeout_ms)
        else:
            call = session.submit_tool("echo", {"message": str(n)}, timeout_ms=60_000)
        call.add_done_callback(lambda _: settled.release())
        calls.append(call)
        if rng.random() < 0.1:
            rng.choice(calls[-50:]).cancel()
        if n % 64 == 63:
            cf.wait([calls[-32]], timeout=60)


def _outcomes(calls: list[mcp_sync.ToolCall]) -> dict[str, int]:
    kinds = {"result": 0, "timeout": 0, "cancelled": 0}
    for n, call in enumerate(calls):
        assert call.done()
        if call.cancelled():
            kinds["cancelled"] += 1
            continue
        error = call.exception(0)
        if error is None:
            if call.tool == "echo":
                assert call.result(0).content[0]["text"] == str(n)
            kinds["result"] += 1
        else:
            assert isinstance(error, mcp_sync.Timeout), repr(error)
            kinds["timeout"] += 1
    return kinds


def test_a_cancel_from_another_thread_wakes_a_thread_waiting_in_result(era: str) -> None:
    with connect(era) as session:
        call = session.submit_tool("sleep", {"ms": 30_000})  # a 30 s deadline
        threading.Timer(0.2, call.cancel).start()
        with timed(5.0), pytest.raises(cf.CancelledError):
            call.result()  # this thread reads the server's output meanwhile (stdio)
        assert session.call_tool("echo", {"message": "after"}).content[0]["text"] == "after"


def test_ten_thousand_calls_with_random_cancellations_all_settle_and_leak_nothing() -> None:
    gc.collect()
    fds, threads = _fds(), len(library_threads())
    settled = threading.Semaphore(0)
    calls: list[mcp_sync.ToolCall] = []
    stop = threading.Event()

    def cancel_some() -> None:  # from other threads, at any moment
        local = random.Random(threading.get_ident())
        while not stop.is_set():
            if calls:
                calls[local.randrange(len(calls))].cancel()
            stop.wait(0.0005)

    with connect_fake() as session:
        cancellers = [threading.Thread(target=cancel_some, daemon=True) for _ in range(2)]
        for thread in cancellers:
            thread.start()
        _submit_randomly(session, 10_000, settled, calls)
        _, not_done = cf.wait(calls, timeout=120)
        stop.set()
        for thread in cancellers:
            thread.join(10)
        assert not not_done
        kinds = _outcomes(calls)
        assert all(kinds.values()), kinds
        for _ in calls:  # every done callback ran, once each
            assert settled.acquire(timeout=30)
        assert not settled.acquire(timeout=0)
        assert session._core._pending == {}
        assert not session.closed
    calls.clear()
    gc.collect()
    deadline = time.monotonic() + 10
    while (len(library_threads()) > threads or _fds() > fds) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert len(library_threads()) <= threads, library_threads()
    assert _fds() <= fds


def test_closing_the_session_settles_every_handle_and_runs_its_callbacks(era: str) -> None:
    seen: list[str] = []
    lock = threading.Lock()

    def record(call: cf.Future[Any]) -> None:
        with lock:
            seen.append(type(call.exception()).__name__)

    session = connect(era)
    calls = [session.submit_tool("sleep", {"ms": 30_000}) for _ in range(20)]
    for call in calls:
        call.add_done_callback(record)
    session.close()
    for call in calls:
        assert isinstance(call.exception(5), mcp_sync.ConnectionClosed)
    assert seen == ["ConnectionClosed"] * 20  # run by close's drain, before it returned
    assert not [t for t in library_threads() if "-callbacks" in t.name or "-deadlines" in t.name]


# ------------------------------------------------------------------ callbacks, wait, as_completed


def test_done_callbacks_run_in_order_off_the_reader_thread(era: str) -> None:
    ran: list[tuple[str, str]] = []
    finished = threading.Event()
    with connect(era) as session, captured_logs("mcp_sync.calls") as records:
        call = session.submit_tool("sleep", {"ms": 50})

        def boom(_: Any) -> None:
            ran.append(("boom", threading.current_thread().name))
            raise RuntimeError("a bug in a callback")

        call.add_done_callback(lambda _: ran.append(("first", threading.current_thread().name)))
        call.add_done_callback(boom)
        call.add_done_callback(lambda _: (ran.append(("last", threading.current_thread().name)), finished.set()))
        assert finished.wait(10)
        assert [name for name, _ in ran] == ["first", "boom", "last"]
        assert {thread for _, thread in ran} == {"mcp_sync-fake-callbacks-1"}
        failures = [r for r in records if getattr(r, "mcp_event", None) == "callback_failed"]
        assert len(failures) == 1 and failures[0].exc_info is not None
        # Added to a done handle: runs at once, in the adding thread.
        here: list[str] = []
        call.add_done_callback(lambda _: here.append(threading.current_thread().name))
        assert here == [threading.current_thread().name]
        assert session.call_tool("echo", {"message": "alive"}).content[0]["text"] == "alive"


def test_as_completed_and_wait(era: str) -> None:
    with connect(era) as session:
        delays = [300, 10, 150, 60, 0]
        calls = {session.submit_tool("sleep", {"ms": ms}): ms for ms in delays}
        order = [calls[call] for call in cf.as_completed(calls, timeout=20)]
        assert sorted(order) == sorted(delays) and order[0] <= 60
        hang = session.submit_tool("sleep", {"ms": 30_000})
        quick = session.submit_tool("echo", {"message": "q"})
        done, pending = cf.wait([hang, quick], timeout=20, return_when=cf.FIRST_COMPLETED)
        assert done == {quick} and pending == {hang}
        # A cancellation wakes wait() and as_completed too.
        threading.Timer(0.1, hang.cancel).start()
        done, pending = cf.wait([hang], timeout=20)
        assert done == {hang} and hang.cancelled()
        failing = session.submit_tool("sleep", {"ms": 30_000}, timeout_ms=100)
        done, _ = cf.wait([failing, session.submit_tool("sleep", {"ms": 30_000})], timeout=20,
                          return_when=cf.FIRST_EXCEPTION)  # fmt: skip
        assert done == {failing}


def test_waiters_that_arrive_before_or_as_the_reply_does_are_never_missed() -> None:
    # A handle makes its condition only when someone first waits on it, adds
    # a callback or cancels it; a reply settling it before, after or at that
    # very moment must wake them. The replies come spread over half a second
    # while three threads wait on the handles in turn, each kind of waiter
    # on every third handle: every wait must return long before its timeout.
    count = 600
    with connect_fake() as session:
        calls = [session.submit_tool("sleep", {"ms": 300 + n}) for n in range(count)]
        called = threading.Semaphore(0)
        late: list[int] = []

        def watch(start: int) -> None:
            for n in range(start, count, 3):
                call, began = calls[n], time.monotonic()
                kind = n // 3 % 3
                if kind == 0:
                    cf.wait([call], timeout=10)
                elif kind == 1:
                    with contextlib.suppress(cf.TimeoutError):
                        next(cf.as_completed([call], timeout=10))
                else:
                    call.add_done_callback(lambda _: called.release())
                if time.monotonic() - began > 5:
                    late.append(n)

        watchers = [threading.Thread(target=watch, args=(start,)) for start in range(3)]
        for thread in watchers:
            thread.start()
        for thread in watchers:
            thread.join(120)
        assert not any(thread.is_alive() for thread in watchers)
        assert late == []
        assert [call.result(0).content[0]["text"] for call in calls] == ["slept"] * count
        callbacks = sum(1 for n in range(count) if n // 3 % 3 == 2)
        assert all(called.acquire(timeout=10) for _ in range(callbacks))


@pytest.mark.parametrize("kind", ["wait", "as_completed", "callback"])
def test_a_waiter_that_comes_while_the_handle_settles_is_told(kind: str) -> None:
    # The race the test above can only hope to meet, made to happen: the
    # settler found no condition (no waiter yet), then a waiter made one and
    # began to wait, and only then did the settler store the outcome. Its
    # second look at the condition must tell that waiter, once.
    with connect_fake() as session:
        call = session.submit_tool("sleep", {"ms": 60_000})
        assert session._core.withdraw(call.request_id, "test") is not None  # no reply will settle it
        outcome = mcp_sync.CallToolResult(content=(), structured_content=None, is_error=False)
        told: list[object] = []
        returned = threading.Event()

        def wait() -> None:
            if kind == "wait":
                told.append(len(cf.wait([call], timeout=10).done))
            elif kind == "as_completed":
                told.extend(cf.as_completed([call], timeout=10))
            else:
                call.add_done_callback(told.append)
            returned.set()

        waiter = threading.Thread(target=wait)
        waiter.start()
        end = time.monotonic() + 10
        while not (call._cond is not None and (call._waiters or call._done_callbacks)):
            assert time.monotonic() < end, "the waiter did not start waiting"
            time.sleep(0.001)
        call._finished_unwatched(outcome, None)
        waiter.join(10)
        assert returned.is_set()
        end = time.monotonic() + 10
        while not told and time.monotonic() < end:  # a callback runs on the callback thread
            time.sleep(0.001)
        assert told == ([1] if kind == "wait" else [call])
        assert call.result(0) is outcome


# ------------------------------------------------------------------ map_tool


def test_map_tool_yields_in_order_holding_at_most_max_in_flight(era: str, tmp_path: Path) -> None:
    log = tmp_path / "log"
    rng = random.Random(7)
    delays = [rng.randrange(0, 40) for _ in range(60)]
    with connect(era, "--log", str(log)) as session:
        consumed = itertools.count()

        def arguments() -> Iterator[dict[str, Any]]:
            for ms in delays:
                next(consumed)
                yield {"ms": ms}

        sent_before = _tool_calls(log)
        results = []
        for index, result in enumerate(session.map_tool("sleep", arguments(), max_in_flight=4)):
            results.append(result)
            # At the server: at most max_in_flight calls beyond those already answered.
            assert _tool_calls(log) - sent_before <= index + 1 + 4
        assert len(results) == len(delays) == next(consumed)
        assert session._core._pending == {}
    frames = [f for f in logged(log) if f.get("method") == "tools/call" and f["params"]["name"] == "sleep"]
    assert [f["params"]["arguments"]["ms"] for f in frames] == delays  # sent in order


def _tool_calls(log: Path) -> int:
    return sum(1 for f in logged(log) if f.get("method") == "tools/call")


def test_map_tool_keeps_the_order_whatever_the_order_of_completion() -> None:
    rng = random.Random(3)
    made: list[cf.Future[Any]] = []
    finish = threading.Semaphore(0)

    def submit(args: Any) -> Any:
        future: cf.Future[Any] = cf.Future()
        made.append(future)
        finish.release()
        return future

    def completer() -> None:
        while len(made) < 100 or any(not f.done() for f in made):
            finish.acquire(timeout=0.01)
            open_ = [(n, f) for n, f in enumerate(made) if not f.done()]
            if open_:
                n, future = rng.choice(open_)
                future.set_result(n)

    thread = threading.Thread(target=completer, daemon=True)
    thread.start()
    assert list(_submit.map_tool(submit, range(100), 7)) == list(range(100))  # type: ignore[arg-type]
    thread.join(10)


def test_map_tool_results_are_in_order() -> None:
    with connect_fake() as session:
        messages = [str(n) for n in range(200)]
        results = session.map_tool("echo", ({"message": m} for m in messages), max_in_flight=16)
        assert [r.content[0]["text"] for r in results] == messages
        with pytest.raises(ValueError, match="max_in_flight"):
            session.map_tool("echo", [], max_in_flight=0)


def test_map_tool_raises_the_first_error_at_its_place_and_cancels_the_rest(era: str, tmp_path: Path) -> None:
    log = tmp_path / "log"
    answer: dict[str, Any] = {"lines": []}
    refuse = {"lines": ['{"jsonrpc":"2.0","id":{id},"error":{"code":-32000,"message":"no"}}'], "reply": False}
    silent = {"lines": [], "reply": False}  # never answered
    arguments = [answer, answer, refuse, silent, silent, silent, answer, answer]
    got = []
    with connect(era, "--misbehave", "--log", str(log)) as session:
        with timed(10.0), pytest.raises(mcp_sync.RemoteError):
            for result in session.map_tool("raw", arguments, max_in_flight=4):
                got.append(result)
        assert len(got) == 2
        assert session._core._pending == {}
        # An argument refused before sending is raised at its place too.
        bad = session.map_tool("echo", [{"message": "a"}, "not a dict"], max_in_flight=4)  # type: ignore[list-item]
        assert next(bad).content[0]["text"] == "a"
        with pytest.raises(mcp_sync.ProtocolError):
            next(bad)
        session.call_tool("echo", {"message": "sync"})
    frames = logged(log)
    raws = [f for f in frames if f.get("method") == "tools/call" and f["params"]["name"] == "raw"]
    assert len(raws) == 6  # nothing was sent after the error
    cancelled = _cancelled(frames)
    assert sorted(cancelled.get(f["id"], "") for f in raws[3:]) == ["cancelled by the client"] * 3


def test_closing_a_map_early_cancels_its_calls() -> None:
    with connect_fake() as session:
        mapped = session.map_tool("sleep", [{"ms": 0}] + [{"ms": 30_000}] * 10, max_in_flight=3)
        assert next(mapped).content[0]["text"]
        mapped.close()  # type: ignore[attr-defined]
        assert session._core._pending == {}


# ------------------------------------------------------------------ rounds, eras, transports


def test_input_required_is_answered_on_a_library_thread() -> None:
    with connect("modern", "--input-tools") as session:
        answers: list[tuple[str, Any]] = []
        answer_with(session, answers)
        result = session.submit_tool("ask_input").result(10)
        assert answers and answers[0][0] == "elicitation/create"
        assert not result.is_error and result.structured_content is not None
        assert mcp_sync.thaw(result.structured_content)["inputResponses"]["q0"]["action"] == "accept"
        call = session.submit_tool("ask_input")
        call.result(10)
        assert call.cancel() is False
        # No handler at all: the same error as call_tool's.
        del session._core.answer_input_request
        with pytest.raises(mcp_sync.InputRequired):
            session.submit_tool("ask_input").result(10)


def test_a_version_refusal_is_sent_again_at_a_mutual_version(tmp_path: Path) -> None:
    log = tmp_path / "log"
    with connect("modern", "--refuse-first", "--modern-versions", "2026-07-28", "--log", str(log)) as session:
        assert session.submit_tool("echo", {"message": "again"}).result(10).content[0]["text"] == "again"


def test_over_http_in_both_eras(era: str) -> None:
    with (
        fake_http(*ERAS[era]) as url,
        mcp_sync.connect_http(server="web", url=url, handshake_timeout_ms=5_000) as session,
    ):
        assert session.era == era
        calls = [session.submit_tool("echo", {"message": str(n)}) for n in range(50)]
        assert [c.result(20).content[0]["text"] for c in calls] == [str(n) for n in range(50)]
        slow = session.submit_tool("sleep", {"ms": 30_000}, timeout_ms=300)
        cancelled = session.submit_tool("sleep", {"ms": 30_000})
        assert cancelled.cancel()
        with timed(10.0):
            assert isinstance(slow.exception(20), mcp_sync.Timeout)
        results = session.map_tool("echo", ({"message": str(n)} for n in range(40)), max_in_flight=8)
        assert [r.content[0]["text"] for r in results] == [str(n) for n in range(40)]
        assert session._core._pending == {}


def test_against_the_official_sdk_server(sdk_stdio_cmd: list[str]) -> None:
    command, *args = sdk_stdio_cmd
    for protocol in ("auto", "legacy"):
        with mcp_sync.connect(server="sdk", command=command, args=args, protocol=protocol) as session:
            calls = [session.submit_tool("add", {"a": n, "b": 1}) for n in range(32)]
            assert [c.result(30).content[0]["text"] for c in cf.as_completed(calls, timeout=30)]
            assert [c.result().content[0]["text"] for c in calls] == [str(n + 1) for n in range(32)]
            mapped = session.map_tool("echo", ({"message": str(n)} for n in range(20)), max_in_flight=5)
            assert [r.content[0]["text"] for r in mapped] == [str(n) for n in range(20)]
            assert session.submit_tool("fail").result(30).is_error is True


def test_servers_forward_submit_and_map() -> None:
    from mcp_sync.testing import server_command

    command, *args = server_command()
    with mcp_sync.Servers({"mcpServers": {"fake": {"command": command, "args": args}}}) as servers:
        assert servers.submit_tool("fake", "echo", {"message": "s"}).result(10).content[0]["text"] == "s"
        mapped = servers.map_tool("fake", "echo", ({"message": str(n)} for n in range(5)), max_in_flight=2)
        assert [r.content[0]["text"] for r in mapped] == [str(n) for n in range(5)]


# ------------------------------------------------------------------ the deadline heap


def test_settled_calls_do_not_pile_up_in_the_deadline_heap() -> None:
    with connect_fake() as session:
        for _ in range(3 * _submit._COMPACT_MIN):
            session.submit_tool("echo", {"message": "x"}).result(10)
        calls = session._calls[0]
        assert calls is not None
        assert len(calls._heap) <= _submit._COMPACT_MIN + 1


def test_replies_nobody_leads_for_reach_the_reader_thread_after_the_lease(era: str) -> None:
    # result() reads the server's output in the calling thread and keeps it
    # from the reader thread for a moment after (the thread is usually back
    # for its next handle). A thread that does not come back must not strand
    # the other replies: concurrent.futures.wait() never reads.
    with connect(era) as session:
        transport: Any = session._core.transport
        calls = [session.submit_tool("sleep", {"ms": 100 if n else 0}) for n in range(8)]
        assert calls[0].result(timeout=10).is_error is False
        done, pending = cf.wait(calls, timeout=10)
        assert not pending and all(not call.exception() for call in done)
        deadline = time.monotonic() + 10
        while transport._token.leased or not transport._token.armed:  # the lease ran out: stdout is armed again
            assert time.monotonic() < deadline, "stdout was never handed back to the reader thread"
            time.sleep(0.01)


def test_a_server_that_dies_during_a_lease_fails_the_handles_at_once(era: str) -> None:
    # After result() the reading thread keeps stdout for a moment; the
    # server's end must still reach every handle through the reader thread
    # (a disarmed stdout still reports the hang-up), not at their deadlines.
    with connect(era, "--misbehave") as session:
        slow = [session.submit_tool("sleep", {"ms": 30_000}, timeout_ms=60_000) for _ in range(4)]
        assert session.submit_tool("echo", {"message": "x"}).result(timeout=10).is_error is False
        started = time.monotonic()
        crash = session.submit_tool("crash", {})
        done, pending = cf.wait([*slow, crash], timeout=20)
        assert not pending
        assert time.monotonic() - started < 10
        assert all(isinstance(call.exception(), mcp_sync.ConnectionClosed) for call in done)
