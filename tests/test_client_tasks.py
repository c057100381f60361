"""Tasks the server asks the client to run (2025-11-25): sampling and
elicitation sent with a ``task`` param, served through ``tasks/get``,
``tasks/result``, ``tasks/list`` and ``tasks/cancel``. End to end against
server-everything's two task-based tools, and hostile with the fake server."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest
from support import connect_fake, logged

import mcp_sync
from mcp_sync.session import held_tasks as _client_tasks

SAMPLE = {
    "messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}],
    "maxTokens": 10,
}
ANSWER = mcp_sync.SamplingResult(content={"type": "text", "text": "an answer"}, model="stand-in")


def _sampler(gate: threading.Event | None = None, seen: list[mcp_sync.SamplingRequest] | None = None) -> Any:
    def sample(request: mcp_sync.SamplingRequest) -> mcp_sync.SamplingResult:
        if seen is not None:
            seen.append(request)
        if gate is not None:
            gate.wait(30)
        return ANSWER

    return sample


def _ask(session: mcp_sync.Session, *steps: dict[str, Any]) -> list[dict[str, Any]]:
    """The fake server sends ``steps`` to the client in turn; the client's replies."""
    result = session.call_tool("ask", {"requests": list(steps)}, timeout_ms=60_000)
    assert result.structured_content is not None, result
    return mcp_sync.thaw(result.structured_content)["replies"]  # type: ignore[no-any-return]


def _task(ttl: int | None = 60_000, method: str = "sampling/createMessage", params: Any = None) -> dict[str, Any]:
    body = dict(params if params is not None else SAMPLE)
    body["task"] = {} if ttl is None else {"ttl": ttl}
    return {"method": method, "params": body}


def _get(wait_ms: int = 0) -> dict[str, Any]:
    return {"method": "tasks/get", "params": {"taskId": "$task"}, "wait_ms": wait_ms}


def _result() -> dict[str, Any]:
    return {"method": "tasks/result", "params": {"taskId": "$task"}}


# ------------------------------------------------------------------ the real peer


def _everything_handlers(seen: list[Any]) -> mcp_sync.Handlers:
    def sample(request: mcp_sync.SamplingRequest) -> mcp_sync.SamplingResult:
        seen.append(request)
        time.sleep(1.2)  # long enough that the server polls a working task first
        return mcp_sync.SamplingResult(content={"type": "text", "text": "a stand-in answer"}, model="stand-in")

    def elicit(request: mcp_sync.ElicitationRequest) -> mcp_sync.ElicitationResult:
        seen.append(request)
        return mcp_sync.ElicitationResult.accept({"name": "Ada", "favoriteColor": "Blue", "agreeToTerms": True})

    return mcp_sync.Handlers(sampling=sample, elicitation=elicit)


def _check_everything(session: mcp_sync.Session, seen: list[Any]) -> None:
    names = {tool.name for tool in session.tools}
    # Registered only for a client that declares tasks.requests.{sampling,elicitation}.
    assert {"trigger-sampling-request-async", "trigger-elicitation-request-async"} <= names
    sampled = session.call_tool(
        "trigger-sampling-request-async", {"prompt": "owls", "maxTokens": 20}, timeout_ms=60_000
    )
    text = sampled.content[0]["text"]
    assert not sampled.is_error and text.startswith("[COMPLETED] Async sampling completed!"), text
    assert "Poll 1: working" in text and "a stand-in answer" in text
    assert "io.modelcontextprotocol/related-task" in text
    elicited = session.call_tool("trigger-elicitation-request-async", {}, timeout_ms=60_000)
    texts = [block["text"] for block in elicited.content]
    assert texts[0] == "[COMPLETED] User provided the requested information!", texts
    assert "- Name: Ada" in texts[1] and "- Favorite Color: Blue" in texts[1]
    sampling, elicitation = seen
    assert isinstance(sampling, mcp_sync.SamplingRequest) and "owls" in str(sampling.messages[0]["content"])
    assert "task" not in sampling.params  # the handler sees the plain request
    assert isinstance(elicitation, mcp_sync.ElicitationRequest) and elicitation.mode == "form"


def test_server_everythings_task_tools_over_stdio(everything_stdio_cmd: list[str]) -> None:
    seen: list[Any] = []
    command, *args = everything_stdio_cmd
    with mcp_sync.connect(server="everything", command=command, args=args, handlers=_everything_handlers(seen)) as s:
        _check_everything(s, seen)


def test_server_everythings_task_tools_over_http(everything_http_server: str) -> None:
    seen: list[Any] = []
    with mcp_sync.connect_http(
        server="everything", url=everything_http_server, handlers=_everything_handlers(seen)
    ) as s:
        _check_everything(s, seen)


def test_without_tasks_server_everything_keeps_its_plain_tools(everything_stdio_cmd: list[str]) -> None:
    command, *args = everything_stdio_cmd
    handlers = mcp_sync.Handlers(sampling=_sampler(), tasks=False)
    with mcp_sync.connect(server="everything", command=command, args=args, handlers=handlers) as session:
        names = {tool.name for tool in session.tools}
    assert "trigger-sampling-request" in names and "trigger-sampling-request-async" not in names


# ------------------------------------------------------------------ the capability


def test_the_tasks_capability_names_only_the_handlers_given(tmp_path: Path) -> None:
    decline = lambda request: mcp_sync.ElicitationResult.decline()  # noqa: E731
    cases: list[tuple[mcp_sync.Handlers, Any]] = [
        (mcp_sync.Handlers(sampling=_sampler()), {"sampling": {"createMessage": {}}}),
        (mcp_sync.Handlers(elicitation=decline), {"elicitation": {"create": {}}}),
        (mcp_sync.Handlers(url_elicitation=decline, sampling=_sampler()),
         {"elicitation": {"create": {}}, "sampling": {"createMessage": {}}}),
        (mcp_sync.Handlers(roots=[tmp_path]), None),
        (mcp_sync.Handlers(sampling=_sampler(), tasks=False), None),
    ]  # fmt: skip
    for index, (handlers, requests) in enumerate(cases):
        log = tmp_path / f"log{index}"
        with connect_fake("--log", str(log), handlers=handlers):
            pass
        (initialize,) = [frame for frame in logged(log) if frame.get("method") == "initialize"]
        declared = initialize["params"]["capabilities"].get("tasks")
        if requests is None:
            assert declared is None, declared
        else:
            assert declared == {"list": {}, "cancel": {}, "requests": requests}


def test_tasks_option_must_be_a_bool() -> None:
    with pytest.raises(mcp_sync.InvalidOption, match="option tasks must be a bool"):
        mcp_sync.Handlers(sampling=_sampler(), tasks="yes")  # type: ignore[arg-type]


# ------------------------------------------------------------------ the protocol, with the fake server


def test_a_sampling_task_is_created_polled_fetched_then_dropped() -> None:
    gate = threading.Event()
    seen: list[mcp_sync.SamplingRequest] = []
    with connect_fake("--features", handlers=mcp_sync.Handlers(sampling=_sampler(gate, seen))) as session:
        threading.Timer(0.5, gate.set).start()
        created, working, done, fetched, gone = _ask(
            session, _task(), _get(), _get(wait_ms=1500), _result(), _get()
        )
    task = created["result"]["task"]
    assert task["status"] == "working" and task["ttl"] == 60_000 and task["pollInterval"] > 0
    assert isinstance(task["taskId"], str) and len(task["taskId"]) >= 16
    assert task["createdAt"].endswith("Z") and "lastUpdatedAt" in task
    assert working["result"]["status"] == "working" and working["result"]["taskId"] == task["taskId"]
    assert done["result"]["status"] == "completed"
    assert fetched["result"]["content"] == {"type": "text", "text": "an answer"}
    assert fetched["result"]["_meta"] == {"io.modelcontextprotocol/related-task": {"taskId": task["taskId"]}}
    assert gone["error"]["code"] == -32602  # a result is dropped once delivered
    (request,) = seen
    assert "task" not in request.params


def test_tasks_result_is_answered_when_the_task_ends() -> None:
    gate = threading.Event()
    with connect_fake("--features", handlers=mcp_sync.Handlers(sampling=_sampler(gate))) as session:
        threading.Timer(0.8, gate.set).start()
        started = time.monotonic()
        _, fetched = _ask(session, _task(), _result())
        waited = time.monotonic() - started
    assert fetched["result"]["model"] == "stand-in"
    assert waited >= 0.7  # the reply waited for the handler, holding no thread


def test_an_elicitation_task_fills_defaults_like_a_plain_one() -> None:
    form = {"message": "Name?", "requestedSchema": {"type": "object", "properties": {
        "name": {"type": "string"}, "age": {"type": "integer", "default": 7}}}}  # fmt: skip
    handlers = mcp_sync.Handlers(elicitation=lambda request: mcp_sync.ElicitationResult.accept({"name": "Ada"}))
    with connect_fake("--features", handlers=handlers) as session:
        _, fetched = _ask(session, _task(method="elicitation/create", params=form), _result())
    assert fetched["result"]["action"] == "accept"
    assert fetched["result"]["content"] == {"name": "Ada", "age": 7}


def test_a_failing_handler_fails_the_task_with_its_error() -> None:
    def refuse(request: mcp_sync.SamplingRequest) -> mcp_sync.SamplingResult:
        raise mcp_sync.HandlerError("User rejected sampling request", code=-1)

    with connect_fake("--features", handlers=mcp_sync.Handlers(sampling=refuse)) as session:
        _, polled, fetched = _ask(session, _task(), _get(wait_ms=300), _result())
    assert polled["result"]["status"] == "failed"
    assert polled["result"]["statusMessage"] == "User rejected sampling request"
    assert fetched["error"] == {"code": -1, "message": "User rejected sampling request"}


def test_unusable_params_fail_the_task_not_the_session() -> None:
    with connect_fake("--features", handlers=mcp_sync.Handlers(sampling=_sampler())) as session:
        _, fetched = _ask(session, _task(params={"messages": "nope", "maxTokens": 1}), _result())
        assert fetched["error"]["code"] == -32602
        assert session.call_tool("sample", {"params": SAMPLE}).structured_content is not None


def test_cancel_marks_the_task_cancelled_and_tells_the_handler() -> None:
    gate = threading.Event()
    seen: list[mcp_sync.SamplingRequest] = []
    with connect_fake("--features", handlers=mcp_sync.Handlers(sampling=_sampler(gate, seen))) as session:
        cancel = {"method": "tasks/cancel", "params": {"taskId": "$task"}, "wait_ms": 200}
        _, cancelled, again, polled, fetched = _ask(session, _task(), cancel, cancel, _get(), _result())
        gate.set()
    assert cancelled["result"]["status"] == "cancelled"
    assert seen[0].cancelled.is_set()
    assert again["error"]["code"] == -32602  # already terminal
    assert polled["result"]["status"] == "cancelled"
    assert fetched["error"]["code"] == -32603


def test_the_ttl_is_honoured_then_the_task_is_dropped() -> None:
    gate = threading.Event()
    seen: list[mcp_sync.SamplingRequest] = []
    with connect_fake("--features", handlers=mcp_sync.Handlers(sampling=_sampler(gate, seen))) as session:
        created, listed, after = _ask(
            session, _task(ttl=1), {"method": "tasks/list", "params": {}}, _get(wait_ms=1500)
        )
        gate.set()
    assert created["result"]["task"]["ttl"] == _client_tasks.MIN_TTL_MS  # clamped up
    assert [task["taskId"] for task in listed["result"]["tasks"]] == [created["result"]["task"]["taskId"]]
    assert after["error"]["code"] == -32602
    assert seen[0].cancelled.is_set()  # the handler was told when the ttl passed


def test_a_huge_or_absent_ttl_is_clamped() -> None:
    with connect_fake("--features", handlers=mcp_sync.Handlers(sampling=_sampler())) as session:
        huge, absent = _ask(session, _task(ttl=10**12), _task(ttl=None))
    assert huge["result"]["task"]["ttl"] == _client_tasks.MAX_TTL_MS
    assert absent["result"]["task"]["ttl"] == _client_tasks.DEFAULT_TTL_MS


@pytest.mark.parametrize("task", [{"ttl": "soon"}, {"ttl": -5}, {"ttl": True}])
def test_a_bad_ttl_is_refused(task: dict[str, Any]) -> None:
    with connect_fake("--features", handlers=mcp_sync.Handlers(sampling=_sampler())) as session:
        (refused,) = _ask(session, {"method": "sampling/createMessage", "params": {**SAMPLE, "task": task}})
    assert refused["error"]["code"] == -32602


def test_the_number_of_held_tasks_is_capped() -> None:
    gate = threading.Event()
    cap = _client_tasks.MAX_HELD_TASKS
    with connect_fake("--features", handlers=mcp_sync.Handlers(sampling=_sampler(gate))) as session:
        replies = _ask(session, *[_task() for _ in range(cap + 1)])
        gate.set()
        # Fetched results free their places.
        again = _ask(session, _task(), _result())
    assert all("task" in reply["result"] for reply in replies[:cap])
    assert replies[cap]["error"]["code"] == -32603
    assert "holds" in replies[cap]["error"]["message"]
    assert again[0]["error"]["code"] == -32603  # the first 32 still wait to be fetched


def test_unknown_and_malformed_task_ids_are_refused() -> None:
    with connect_fake("--features", handlers=mcp_sync.Handlers(sampling=_sampler())) as session:
        replies = _ask(
            session,
            {"method": "tasks/get", "params": {"taskId": "no-such-task"}},
            {"method": "tasks/result", "params": {"taskId": 7}},
            {"method": "tasks/cancel", "params": None},
            {"method": "tasks/get", "params": ["not", "an", "object"]},
        )
    assert [reply["error"]["code"] for reply in replies] == [-32602] * 4


def test_without_tasks_the_task_methods_are_not_found_and_the_task_param_is_ignored() -> None:
    handlers = mcp_sync.Handlers(sampling=_sampler(), tasks=False)
    with connect_fake("--features", handlers=handlers) as session:
        plain, missing = _ask(session, _task(), {"method": "tasks/get", "params": {"taskId": "x"}})
    assert plain["result"]["model"] == "stand-in"  # run as a plain request
    assert missing["error"]["code"] == -32601


def test_a_task_param_on_roots_list_is_ignored(tmp_path: Path) -> None:
    handlers = mcp_sync.Handlers(sampling=_sampler(), roots=[tmp_path])
    with connect_fake("--features", handlers=handlers) as session:
        (roots,) = _ask(session, {"method": "roots/list", "params": {"task": {"ttl": 1000}}})
    assert roots["result"]["roots"][0]["uri"] == tmp_path.as_uri()


def test_too_many_waiters_on_one_task_are_refused() -> None:
    gate = threading.Event()
    with connect_fake("--features", handlers=mcp_sync.Handlers(sampling=_sampler(gate))) as session:
        created = _ask(session, _task())[0]
        task_id = created["result"]["task"]["taskId"]
        core = session._core
        tasks = core.inbound.requests._tasks
        assert tasks is not None
        sent: list[tuple[object, Any, Any]] = []
        tasks._reply = lambda request_id, result, error: sent.append((request_id, result, error))
        for n in range(_client_tasks.MAX_WAITERS + 1):
            tasks.serve(f"w{n}", "tasks/result", {"taskId": task_id})
        assert [entry[0] for entry in sent] == [f"w{_client_tasks.MAX_WAITERS}"]
        gate.set()
        deadline = time.monotonic() + 10
        while len(sent) < _client_tasks.MAX_WAITERS + 1 and time.monotonic() < deadline:
            time.sleep(0.02)
    assert sorted(str(entry[0]) for entry in sent[1:]) == [f"w{n}" for n in range(_client_tasks.MAX_WAITERS)]
    assert all(entry[1]["model"] == "stand-in" for entry in sent[1:])


def test_closing_the_session_tells_a_running_task_handler() -> None:
    gate = threading.Event()
    seen: list[mcp_sync.SamplingRequest] = []
    session = connect_fake("--features", handlers=mcp_sync.Handlers(sampling=_sampler(gate, seen)))
    try:
        _ask(session, _task())
    finally:
        session.close()
    assert seen[0].cancelled.is_set()
    gate.set()
