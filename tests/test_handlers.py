"""Server-to-client requests: elicitation, sampling, roots, and what happens
without a handler, with a hostile request, a failing or slow handler."""

from __future__ import annotations

import json
import logging
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from support import connect_fake, library_threads, logged, timed

import mcp_sync

FORM = {
    "message": "Tell me",
    "requestedSchema": {
        "type": "object",
        "properties": {
            "name": {"type": "string", "default": "John Doe"},
            "age": {"type": "integer", "default": 30},
            "score": {"type": "number", "default": 95.5},
            "status": {"type": "string", "enum": ["active", "inactive"], "default": "active"},
            "verified": {"type": "boolean", "default": True},
            "tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b"]}, "default": ["a"]},
            "hero": {"type": "string", "oneOf": [{"const": "h1", "title": "One"}], "default": "h1"},
            "wrong": {"type": "integer", "default": "not an integer"},
            "email": {"type": "string", "format": "email"},
        },
        "required": ["name"],
    },
}


def _reply(result: mcp_sync.CallToolResult) -> dict[str, Any]:
    assert result.structured_content is not None, result
    return mcp_sync.thaw(result.structured_content)  # type: ignore[no-any-return]


def _initialize(log: Path) -> dict[str, Any]:
    frame = next(f for f in logged(log) if f.get("method") == "initialize")
    return frame["params"]  # type: ignore[no-any-return]


def _tasks_capability(group: str, name: str) -> dict[str, Any]:
    # Handlers may run sampling and elicitation as tasks (tests/test_client_tasks.py).
    return {"list": {}, "cancel": {}, "requests": {group: {name: {}}}}


def test_capabilities_are_declared_only_for_the_handlers_given(tmp_path: Path) -> None:
    cases: list[tuple[mcp_sync.Handlers | None, dict[str, Any]]] = [
        (None, {}),
        (mcp_sync.Handlers(), {}),
        (mcp_sync.Handlers(elicitation=lambda r: mcp_sync.ElicitationResult.decline()),
         {"elicitation": {"form": {}}, "tasks": _tasks_capability("elicitation", "create")}),
        (mcp_sync.Handlers(url_elicitation=lambda r: mcp_sync.ElicitationResult.decline(), tasks=False),
         {"elicitation": {"url": {}}}),
        (mcp_sync.Handlers(sampling=lambda r: {}, sampling_tools=True),
         {"sampling": {"tools": {}}, "tasks": _tasks_capability("sampling", "createMessage")}),
        (mcp_sync.Handlers(roots=[tmp_path]), {"roots": {"listChanged": True}}),
    ]  # fmt: skip
    for index, (handlers, expected) in enumerate(cases):
        log = tmp_path / f"log{index}"
        with connect_fake("--log", str(log), handlers=handlers):
            pass
        assert _initialize(log)["capabilities"] == expected


def test_form_elicitation_fills_the_schemas_defaults() -> None:
    seen: list[mcp_sync.ElicitationRequest] = []

    def elicit(request: mcp_sync.ElicitationRequest) -> mcp_sync.ElicitationResult:
        seen.append(request)
        return mcp_sync.ElicitationResult.accept({"name": "Ada"})

    with connect_fake("--features", handlers=mcp_sync.Handlers(elicitation=elicit)) as session:
        reply = _reply(session.call_tool("elicit", {"params": FORM}))
    assert reply["result"] == {
        "action": "accept",
        "content": {"name": "Ada", "age": 30, "score": 95.5, "status": "active", "verified": True,
                    "tags": ["a"], "hero": "h1"},
    }  # fmt: skip
    (request,) = seen
    assert request.mode == "form" and request.message == "Tell me" and request.server == "fake"
    assert "wrong" not in request.defaults  # a default of the wrong type is not applied


def test_decline_and_cancel_carry_no_content() -> None:
    answers = iter([mcp_sync.ElicitationResult.decline(), {"action": "cancel", "content": {"x": 1}}])
    handlers = mcp_sync.Handlers(elicitation=lambda request: next(answers))
    with connect_fake("--features", handlers=handlers) as session:
        assert _reply(session.call_tool("elicit", {"params": FORM}))["result"] == {"action": "decline"}
        assert _reply(session.call_tool("elicit", {"params": FORM}))["result"] == {"action": "cancel"}


def test_url_elicitation_goes_to_its_own_handler() -> None:
    seen: list[mcp_sync.ElicitationRequest] = []

    def consent(request: mcp_sync.ElicitationRequest) -> mcp_sync.ElicitationResult:
        seen.append(request)
        return mcp_sync.ElicitationResult.accept({"ignored": "in url mode"})

    params = {"mode": "url", "message": "Sign in", "url": "https://example.test/connect?x=1", "elicitationId": "e-1"}
    with connect_fake("--features", handlers=mcp_sync.Handlers(url_elicitation=consent)) as session:
        assert _reply(session.call_tool("elicit", {"params": params}))["result"] == {"action": "accept"}
        # Form mode was not declared: refused as invalid params, the handler never called.
        refused = _reply(session.call_tool("elicit", {"params": FORM}))
    assert refused["error"]["code"] == -32602
    assert [(r.mode, r.url, r.elicitation_id) for r in seen] == [
        ("url", "https://example.test/connect?x=1", "e-1")
    ]


@pytest.mark.parametrize(
    "params",
    [
        {"message": "x", "requestedSchema": {"type": "object", "properties": {"deep": {"type": "object"}}}},
        {"message": "x", "requestedSchema": {"type": "array"}},
        {"message": "x", "requestedSchema": "not a schema"},
        {"message": "x", "requestedSchema": {"type": "object", "properties": {
            f"f{i}": {"type": "string"} for i in range(101)}}},
        {"message": "x", "requestedSchema": {"type": "object", "properties": {
            "pick": {"type": "array", "items": {"type": "object"}}}}},
        {"message": "x", "requestedSchema": {"type": "object", "properties": {
            "pick": {"type": "string", "enum": [1, 2]}}}},
        {"message": 42, "requestedSchema": {"type": "object"}},
        {"mode": "carrier-pigeon", "message": "x"},
        {"mode": "url", "message": "x", "url": "javascript:alert(1)"},
        {"mode": "url", "message": "x", "url": "https://ok.test/\u0000"},
    ],
)  # fmt: skip
def test_a_hostile_elicitation_is_refused_without_calling_the_handler(params: dict[str, Any]) -> None:
    called: list[object] = []
    handlers = mcp_sync.Handlers(
        elicitation=lambda r: called.append(r) or mcp_sync.ElicitationResult.accept(),  # type: ignore[func-returns-value]
        url_elicitation=lambda r: called.append(r) or mcp_sync.ElicitationResult.accept(),  # type: ignore[func-returns-value]
    )
    with connect_fake("--features", handlers=handlers) as session:
        reply = _reply(session.call_tool("elicit", {"params": params}))
        assert session.call_tool("echo", {"message": "still open"}).content[0]["text"] == "still open"
    assert reply["error"]["code"] == -32602
    assert called == []


def test_without_a_handler_server_requests_get_method_not_found() -> None:
    with connect_fake("--features") as session:
        for tool, args in (("elicit", {"params": FORM}), ("sample", {"params": {}}), ("roots", {})):
            reply = _reply(session.call_tool(tool, args))
            assert reply == {"error": {"code": -32601, "message": "Method not found"}}


def test_a_handler_that_raises_becomes_an_error_reply(caplog: pytest.LogCaptureFixture) -> None:
    def broken(request: mcp_sync.ElicitationRequest) -> mcp_sync.ElicitationResult:
        raise RuntimeError("sk-handlersecret1234567890 leaked?")

    def refuses(request: mcp_sync.SamplingRequest) -> mcp_sync.SamplingResult:
        raise mcp_sync.HandlerError("User rejected sampling request", code=-1)

    handlers = mcp_sync.Handlers(elicitation=broken, sampling=refuses)
    with caplog.at_level(logging.ERROR, logger="mcp_sync.handlers"), connect_fake(
        "--features", handlers=handlers
    ) as session:
        failed = _reply(session.call_tool("elicit", {"params": FORM}))
        rejected = _reply(session.call_tool("sample", {"params": {"messages": [], "maxTokens": 5}}))
        assert session.call_tool("echo", {"message": "alive"}).content[0]["text"] == "alive"
    assert failed["error"] == {"code": -32603, "message": "the client's handler failed"}
    assert "sk-handler" not in json.dumps(failed)
    assert rejected["error"] == {"code": -1, "message": "User rejected sampling request"}
    assert any("elicitation/create handler" in record.getMessage() for record in caplog.records)


def test_a_handler_returning_nonsense_becomes_an_error_reply() -> None:
    handlers = mcp_sync.Handlers(
        elicitation=lambda r: "yes please",  # type: ignore[arg-type, return-value]
        sampling=lambda r: {"role": "robot"},
    )
    with connect_fake("--features", handlers=handlers) as session:
        assert _reply(session.call_tool("elicit", {"params": FORM}))["error"]["code"] == -32603
        sample = {"params": {"messages": [], "maxTokens": 5}}
        assert _reply(session.call_tool("sample", sample))["error"]["code"] == -32603


def test_a_handler_that_outlives_its_timeout_becomes_an_error_reply() -> None:
    release = threading.Event()

    def stuck(request: mcp_sync.ElicitationRequest) -> mcp_sync.ElicitationResult:
        release.wait(10)
        return mcp_sync.ElicitationResult.accept()

    handlers = mcp_sync.Handlers(elicitation=stuck, timeout_ms=200)
    try:
        with connect_fake("--features", handlers=handlers) as session:
            reply = _reply(session.call_tool("elicit", {"params": FORM}))
            assert reply["error"]["code"] == -32001
            release.set()
            assert session.call_tool("echo", {"message": "ok"}).content[0]["text"] == "ok"
    finally:
        release.set()


def test_a_slow_handler_does_not_hold_up_another_threads_calls() -> None:
    """The Bar: a 2 s elicitation handler on one thread, echo calls on another;
    every echo comes back before the handler returns (ordering, not timing)."""
    order: list[str] = []
    lock = threading.Lock()
    started = threading.Event()
    latencies: list[float] = []

    def slow(request: mcp_sync.ElicitationRequest) -> mcp_sync.ElicitationResult:
        started.set()
        time.sleep(2.0)  # the slow human the Bar describes
        with lock:
            order.append("handler returned")
        return mcp_sync.ElicitationResult.accept({"name": "late"})

    with connect_fake("--features", handlers=mcp_sync.Handlers(elicitation=slow)) as session:
        for _ in range(20):  # a baseline, before anything is slow
            start = time.perf_counter()
            session.call_tool("echo", {"message": "warm"})
            latencies.append(time.perf_counter() - start)
        baseline = sorted(latencies)[len(latencies) // 2]
        latencies.clear()
        elicited: list[mcp_sync.CallToolResult] = []
        asker = threading.Thread(
            target=lambda: elicited.append(session.call_tool("elicit", {"params": FORM}))
        )
        asker.start()
        assert started.wait(10)
        for index in range(50):
            start = time.perf_counter()
            result = session.call_tool("echo", {"message": f"m{index}"})
            latencies.append(time.perf_counter() - start)
            assert result.content[0]["text"] == f"m{index}"
        with lock:
            order.append("echo calls done")
        asker.join(10)
    assert order == ["echo calls done", "handler returned"]
    assert _reply(elicited[0])["result"]["content"]["name"] == "late"
    during = sorted(latencies)[len(latencies) // 2]
    print(f"\necho p50 {baseline * 1e3:.3f} ms before, {during * 1e3:.3f} ms during a 2 s handler; "
          f"max during {max(latencies) * 1e3:.3f} ms")  # fmt: skip


def test_sampling_handler_gets_the_request_and_answers() -> None:
    seen: list[mcp_sync.SamplingRequest] = []

    def sample(request: mcp_sync.SamplingRequest) -> mcp_sync.SamplingResult:
        seen.append(request)
        return mcp_sync.SamplingResult(content={"type": "text", "text": "Paris"}, model="m", stop_reason="endTurn")

    params = {
        "messages": [{"role": "user", "content": {"type": "text", "text": "Capital of France?"}}],
        "maxTokens": 20,
        "systemPrompt": "Be brief.",
        "temperature": 0.5,
    }
    with connect_fake("--features", handlers=mcp_sync.Handlers(sampling=sample)) as session:
        reply = _reply(session.call_tool("sample", {"params": params}))
        bad = _reply(session.call_tool("sample", {"params": {"messages": "nope", "maxTokens": 1}}))
    assert reply["result"] == {
        "role": "assistant", "content": {"type": "text", "text": "Paris"}, "model": "m", "stopReason": "endTurn"
    }  # fmt: skip
    assert bad["error"]["code"] == -32602
    (request,) = seen
    assert request.max_tokens == 20 and request.system_prompt == "Be brief." and request.temperature == 0.5
    assert request.messages[0]["content"]["text"] == "Capital of France?"
    with pytest.raises(TypeError):
        request.messages[0]["role"] = "assistant"  # type: ignore[index]


def test_roots_from_a_list_a_callable_and_set_roots(tmp_path: Path) -> None:
    log = tmp_path / "log"
    with connect_fake("--features", "--log", str(log), handlers=mcp_sync.Handlers(roots=[tmp_path])) as session:
        assert _reply(session.call_tool("roots"))["result"] == {"roots": [{"uri": tmp_path.as_uri()}]}
        session.set_roots([mcp_sync.Root("file:///srv/data", "data")])
        assert _reply(session.call_tool("roots"))["result"] == {
            "roots": [{"uri": "file:///srv/data", "name": "data"}]
        }
        current = [mcp_sync.Root("file:///one")]
        session.set_roots(lambda: current)
        current.append(mcp_sync.Root("file:///two"))
        session.roots_changed()
        assert [root["uri"] for root in _reply(session.call_tool("roots"))["result"]["roots"]] == [
            "file:///one",
            "file:///two",
        ]
    sent = [f.get("method") for f in logged(log)]
    assert sent.count("notifications/roots/list_changed") == 3


@pytest.mark.parametrize("roots", [["relative/path"], ["http://not-a-file/"], "file:///a-string", [{"uri": 5}]])
def test_unusable_roots_are_refused_at_connect(roots: Any) -> None:
    with pytest.raises(mcp_sync.ProtocolError, match="root"):
        mcp_sync.Handlers(roots=roots)


def test_set_roots_needs_a_roots_handler() -> None:
    with connect_fake() as session, pytest.raises(mcp_sync.ProtocolError, match="Handlers"):
        session.set_roots(["/tmp"])


def test_handler_options_are_checked() -> None:
    with pytest.raises(mcp_sync.ProtocolError, match="callable"):
        mcp_sync.Handlers(elicitation="yes")  # type: ignore[arg-type]
    with pytest.raises(mcp_sync.ProtocolError, match="timeout_ms"):
        mcp_sync.Handlers(timeout_ms=0)
    with pytest.raises(mcp_sync.ProtocolError, match="handlers"):
        connect_fake(handlers={"elicitation": print})


def test_a_callable_roots_provider_that_fails_is_an_error_reply() -> None:
    handlers = mcp_sync.Handlers(roots=lambda: ["relative"])
    with connect_fake("--features", handlers=handlers) as session:
        assert _reply(session.call_tool("roots"))["error"]["code"] == -32603


def test_handlers_run_on_library_threads_and_leave_none_behind() -> None:
    names: list[str] = []

    def elicit(request: mcp_sync.ElicitationRequest) -> mcp_sync.ElicitationResult:
        names.append(threading.current_thread().name)
        return mcp_sync.ElicitationResult.accept()

    with connect_fake("--features", handlers=mcp_sync.Handlers(elicitation=elicit)) as session:
        for _ in range(3):
            session.call_tool("elicit", {"params": FORM})
    assert names and all(name.startswith("mcp_sync-fake-handler") for name in names)
    # The thread-leak fixture checks that they are gone after close.


def test_close_does_not_wait_for_a_handler_stuck_in_user_code() -> None:
    release = threading.Event()
    entered = threading.Event()

    def stuck(request: mcp_sync.ElicitationRequest) -> mcp_sync.ElicitationResult:
        entered.set()
        release.wait(20)
        return mcp_sync.ElicitationResult.accept()

    session = connect_fake("--features", handlers=mcp_sync.Handlers(elicitation=stuck))
    errors: list[BaseException] = []

    def ask() -> None:
        try:
            session.call_tool("elicit", {"params": FORM})
        except mcp_sync.McpError as exc:
            errors.append(exc)

    caller = threading.Thread(target=ask)
    caller.start()
    try:
        assert entered.wait(10)
        with timed(3.5):  # the server's grace after stdin closes, plus CLOSE_JOIN
            session.close()
        caller.join(5)
        assert [type(e) for e in errors] == [mcp_sync.ConnectionClosed]
    finally:
        release.set()  # the handler returns; its answer is dropped, its thread ends


def test_the_modern_eras_seam_uses_the_same_handlers() -> None:
    """``answer_input_request`` (what an ``input_required`` retry asks) goes
    through the same routing, checks and defaults as a server request."""
    handlers = mcp_sync.Handlers(
        elicitation=lambda request: mcp_sync.ElicitationResult.accept({"name": "Ada"}),
        roots=[mcp_sync.Root("file:///srv")],
    )
    with connect_fake(handlers=handlers) as session:
        requests = session._core.inbound.requests
        deadline = time.monotonic() + 5
        answer = requests.answer_input_request("elicitation/create", FORM, deadline)
        assert answer["content"]["age"] == 30 and answer["content"]["name"] == "Ada"
        assert requests.answer_input_request("roots/list", {}, deadline) == {"roots": [{"uri": "file:///srv"}]}
        with pytest.raises(mcp_sync.InputRequired, match="no handler"):
            requests.answer_input_request("sampling/createMessage", {}, deadline)
        with pytest.raises(mcp_sync.McpError, match="unusable params"):
            requests.answer_input_request("elicitation/create", {"message": 1}, deadline)


def test_input_required_in_the_modern_era_is_answered_by_the_handlers() -> None:
    seen: list[mcp_sync.ElicitationRequest] = []

    def elicit(request: mcp_sync.ElicitationRequest) -> mcp_sync.ElicitationResult:
        seen.append(request)
        return mcp_sync.ElicitationResult.accept({"answer": request.message})

    handlers = mcp_sync.Handlers(elicitation=elicit)
    with connect_fake("--era", "modern", "--input-tools", handlers=handlers) as session:
        assert session.era == "modern"
        result = session.call_tool("ask_input", {"count": 2})
    assert result.content[0]["text"] == "input received"
    responses = mcp_sync.thaw(result.structured_content)["inputResponses"]
    assert responses == {
        "q0": {"action": "accept", "content": {"answer": "question 0"}},
        "q1": {"action": "accept", "content": {"answer": "question 1"}},
    }
    assert [request.message for request in seen] == ["question 0", "question 1"]


# ------------------------------------------------------------------ the same way in both eras


MODERN_INPUT = ("--era", "modern", "--input-tools")


def _wait_for_no_library_threads(limit: float = 15.0) -> None:
    until = time.monotonic() + limit
    while library_threads() and time.monotonic() < until:
        time.sleep(0.02)
    assert not library_threads(), library_threads()


def test_a_slow_input_handler_does_not_hold_the_caller_past_its_deadline() -> None:
    """The 2026-07-28 era: a 4 s elicitation handler during a call with
    timeout_ms=1000 runs on a library thread, and the caller is back at ~1 s
    with a Timeout, as in the handshake era."""
    release = threading.Event()
    finished = threading.Event()
    threads: list[str] = []
    cancelled: list[bool] = []

    def slow(request: mcp_sync.ElicitationRequest) -> mcp_sync.ElicitationResult:
        threads.append(threading.current_thread().name)
        release.wait(4.0)
        cancelled.append(request.cancelled.is_set())
        finished.set()
        return mcp_sync.ElicitationResult.accept()

    caller = threading.current_thread().name
    with connect_fake(*MODERN_INPUT, handlers=mcp_sync.Handlers(elicitation=slow)) as session:
        start = time.monotonic()
        with pytest.raises(mcp_sync.Timeout, match="caller's deadline"):
            session.call_tool("ask_input", timeout_ms=1000)
        took = time.monotonic() - start
        assert 0.9 <= took < 1.0 + 0.5, took
        assert not session.closed
        release.set()
        assert finished.wait(5)
        assert cancelled == [True]  # the handler was told its answer is no longer wanted
        assert session.call_tool("echo", {"message": "after"}).content[0]["text"] == "after"
    assert threads and threads[0] != caller and threads[0].startswith("mcp_sync-fake-handler")
    _wait_for_no_library_threads()


def test_handlers_timeout_ms_is_honoured_for_input_requests() -> None:
    release = threading.Event()

    def slow(request: mcp_sync.ElicitationRequest) -> mcp_sync.ElicitationResult:
        release.wait(4.0)
        return mcp_sync.ElicitationResult.accept()

    handlers = mcp_sync.Handlers(elicitation=slow, timeout_ms=500)
    try:
        with connect_fake(*MODERN_INPUT, handlers=handlers) as session:
            start = time.monotonic()
            with pytest.raises(mcp_sync.Timeout, match=r"within 500 ms \(Handlers.timeout_ms\)"):
                session.call_tool("ask_input", timeout_ms=10_000)
            took = time.monotonic() - start
            assert 0.4 <= took < 0.5 + 0.5, took
            release.set()
            assert session.call_tool("echo", {"message": "ok"}).content[0]["text"] == "ok"
    finally:
        release.set()
    _wait_for_no_library_threads()


def test_a_raising_input_handler_fails_like_in_the_handshake_era(caplog: pytest.LogCaptureFixture) -> None:
    """The handshake era answers the server -32603 "the client's handler
    failed", logs the exception and keeps the session open (see
    test_a_handler_that_raises_becomes_an_error_reply). The 2026-07-28 era
    has no error answer to an input request: the call ends with an McpError
    carrying that same error, never the handler's raw exception."""

    def broken(request: mcp_sync.ElicitationRequest) -> mcp_sync.ElicitationResult:
        raise ValueError("sk-handlersecret1234567890 leaked?")

    def refuses(request: mcp_sync.ElicitationRequest) -> mcp_sync.ElicitationResult:
        raise mcp_sync.HandlerError("User rejected", code=-1)

    with caplog.at_level(logging.ERROR, logger="mcp_sync.handlers"):
        with connect_fake("--features", handlers=mcp_sync.Handlers(elicitation=broken)) as legacy:
            assert legacy.era == "legacy"
            replied = _reply(legacy.call_tool("elicit", {"params": FORM}))["error"]
        with connect_fake(*MODERN_INPUT, handlers=mcp_sync.Handlers(elicitation=broken)) as modern:
            with pytest.raises(mcp_sync.McpError) as raised:
                modern.call_tool("ask_input", timeout_ms=5000)
            assert not isinstance(raised.value, ValueError)
            assert f"(error {replied['code']}: {replied['message']})" in raised.value.message
            assert "sk-handler" not in str(raised.value)
            assert not modern.closed
            assert modern.call_tool("echo", {"message": "alive"}).content[0]["text"] == "alive"
    failures = [r for r in caplog.records if "elicitation/create handler" in r.getMessage()]
    assert len(failures) == 2  # logged the same way in both eras
    assert replied == {"code": -32603, "message": "the client's handler failed"}
    refused = r"refused the request of server 'fake' \(error -1\)"
    with (
        connect_fake(*MODERN_INPUT, handlers=mcp_sync.Handlers(elicitation=refuses)) as modern,
        pytest.raises(mcp_sync.McpError, match=refused),
    ):
        modern.call_tool("ask_input", timeout_ms=5000)


def test_close_fails_a_caller_waiting_for_an_input_handler_at_once() -> None:
    """The 2026-07-28 era: close() from another thread while a caller waits for
    a handler stuck in user code: the caller gets ConnectionClosed now, not at
    its deadline (as test_close_does_not_wait_for_a_handler_stuck_in_user_code
    in the handshake era)."""
    release = threading.Event()
    entered = threading.Event()

    def stuck(request: mcp_sync.ElicitationRequest) -> mcp_sync.ElicitationResult:
        entered.set()
        release.wait(20)
        return mcp_sync.ElicitationResult.accept()

    session = connect_fake(*MODERN_INPUT, handlers=mcp_sync.Handlers(elicitation=stuck))
    errors: list[BaseException] = []
    returned = threading.Event()

    def ask() -> None:
        try:
            session.call_tool("ask_input", timeout_ms=30_000)
        except mcp_sync.McpError as exc:
            errors.append(exc)
        returned.set()

    caller = threading.Thread(target=ask)
    caller.start()
    try:
        assert entered.wait(10)
        with timed(3.5):
            session.close()
            assert returned.wait(3)
        assert [type(e) for e in errors] == [mcp_sync.ConnectionClosed]
    finally:
        release.set()
        caller.join(5)
    _wait_for_no_library_threads()
