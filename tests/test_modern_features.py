"""The modern era (2026-07-28), second pass: live progress, the tasks
extension, and ``input_required`` on prompts and resources -- each through
the mechanism the handshake era uses, over stdio and Streamable HTTP.
"""

from __future__ import annotations

import json
import signal
import threading
import time
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


# ----------------------------------------------------------------------- input_required on reads


def _elicit_name(seen: list[mcp_sync.ElicitationRequest]) -> mcp_sync.Handlers:
    def elicit(request: mcp_sync.ElicitationRequest) -> mcp_sync.ElicitationResult:
        seen.append(request)
        return mcp_sync.ElicitationResult.accept({"name": "Ada"})

    return mcp_sync.Handlers(elicitation=elicit)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_prompts_and_resources_answer_input_required_through_the_same_loop(transport: str) -> None:
    seen: list[mcp_sync.ElicitationRequest] = []
    with fake(transport, "--input-tools", handlers=_elicit_name(seen)) as session:
        prompt = session.get_prompt("ask_prompt")
        resource = session.read_resource("fake://input/ask")
        # The fake refuses a requestState that comes back changed: these
        # results mean it came back exactly.
        assert prompt.messages[0].content["text"] == "Hello, Ada."
        assert resource.contents[0].text == "for Ada"
    assert [request.message for request in seen] == ["Who is asking?", "Who is asking?"]


def test_a_read_retry_carries_the_answers_and_the_state_on_a_new_request(tmp_path: Path) -> None:
    from mcp_sync.testing._eras import REQUEST_STATE

    log = tmp_path / "log"
    with fake("stdio", "--input-tools", "--log", str(log), handlers=_elicit_name([])) as session:
        session.get_prompt("ask_prompt", {"topic": "x"})
    first, retry = [f for f in logged(log) if f.get("method") == "prompts/get"]
    assert first["id"] != retry["id"]
    assert "requestState" not in first["params"] and "inputResponses" not in first["params"]
    assert retry["params"]["requestState"] == REQUEST_STATE
    assert retry["params"]["inputResponses"] == {"who": {"action": "accept", "content": {"name": "Ada"}}}
    assert retry["params"]["arguments"] == {"topic": "x"}


def test_without_a_handler_a_read_names_what_the_server_asked_for() -> None:
    with fake("stdio", "--input-tools") as session:
        with pytest.raises(mcp_sync.InputRequired) as caught:
            session.get_prompt("ask_prompt")
        assert str(caught.value) == (
            "prompt 'ask_prompt' on server 'fake' needs input this client cannot give: "
            "elicitation/create (no handler answers it)"
        )
        with pytest.raises(mcp_sync.InputRequired, match=r"^resource 'fake://input/ask' on server 'fake' needs"):
            session.read_resource("fake://input/ask")
        assert not session.closed
        assert session.get_prompt("plain").messages[0].content["text"] == "A plain prompt."


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        ({"resultType": "input_required"}, "answered input_required with neither inputRequests nor requestState"),
        ({"resultType": "input_required", "requestState": 7}, "sent a requestState that is not a string"),
        ({"resultType": "input_required", "requestState": "again"}, "asked for input more than 10 times in a row"),
    ],
)
def test_hostile_input_required_on_a_read_fails_that_read_only(answer: dict[str, Any], message: str) -> None:
    with fake("stdio", "--raw", "prompts/get", json.dumps(answer)) as session:
        with pytest.raises(mcp_sync.McpError, match=message) as caught:
            session.get_prompt("plain")
        assert str(caught.value).startswith("prompt 'plain' on server 'fake' ")
        assert not session.closed
        assert session.call_tool("echo", {"message": "ok"}).content[0]["text"] == "ok"


def test_input_required_is_still_refused_where_the_revision_does_not_allow_it() -> None:
    answer = json.dumps({"resultType": "input_required"})
    with (
        fake("stdio", "--raw", "completion/complete", answer) as session,
        pytest.raises(mcp_sync.InvalidResponse, match="which only tools/call, prompts/get and resources/read"),
    ):
        session.complete({"type": "ref/prompt", "name": "greet"}, {"name": "name", "value": "a"})


# ----------------------------------------------------------------------- the tasks extension

CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"
TASKS = "io.modelcontextprotocol/tasks"


def declared(frame: dict[str, Any]) -> bool:
    """Whether a logged request declared the tasks extension."""
    capabilities = frame["params"]["_meta"][CAPABILITIES]
    return TASKS in (capabilities.get("extensions") or {})


def sent_methods(log: Path) -> list[str]:
    return [f.get("method", "<reply>") for f in logged(log)]


def wait_for(log: Path, method: str, timeout: float = 15.0) -> None:
    """Until the fake has logged ``method`` (sent from a library thread)."""
    until = time.monotonic() + timeout
    while method not in sent_methods(log):
        assert time.monotonic() < until, f"{method} never reached the server"
        time.sleep(0.01)


def test_a_task_tool_runs_as_a_task_through_plain_call_tool(tmp_path: Path) -> None:
    log = tmp_path / "log"
    with fake("stdio", "--features", "--log", str(log)) as session:
        assert TASKS in session.server_capabilities["extensions"]
        assert "tasks" not in session.server_capabilities  # the old slot is the handshake era's
        result = session.call_tool("research", {"ms": 100, "topic": "owls"})
        assert result.content[0]["text"] == "researched owls"
        # Any call may be answered with a task; a plain answer is a plain answer.
        assert session.call_tool("echo", {"message": "hi"}).content[0]["text"] == "hi"
    frames = [f for f in logged(log) if f.get("method", "").startswith(("tools/call", "tasks/"))]
    methods = [f["method"] for f in frames]
    assert methods[0] == "tools/call" and "tasks/get" in methods
    assert "tasks/result" not in methods  # the extension has none: the result comes with tasks/get
    assert all(declared(f) for f in frames)
    assert "task" not in frames[0]["params"]  # the server decides: no per-call ask


def test_a_task_over_http_is_routed_by_its_id(tmp_path: Path) -> None:
    headers = tmp_path / "headers"
    with fake("http", "--features", "--header-log", str(headers)) as session:
        # The fake refuses a tasks/* POST whose Mcp-Name is not the task's id.
        assert session.call_tool("research", {"ms": 50, "topic": "owls"}).content[0]["text"] == "researched owls"
    posts = [json.loads(line) for line in headers.read_text().splitlines()]
    polls = [p["headers"] for p in posts if p["method"] == "tasks/get"]
    assert polls and {p.get("Mcp-Name") for p in polls} == {"task-1"}


def test_poll_interval_is_honoured_within_the_deadline(tmp_path: Path) -> None:
    log = tmp_path / "log"
    with fake("stdio", "--features", "--log", str(log)) as session:
        start = time.monotonic()
        with pytest.raises(mcp_sync.Timeout, match="tool 'forever'"):
            session.call_tool("forever", {"poll": 0}, timeout_ms=400)
        took = time.monotonic() - start
        # pollIntervalMs 0 is floored: a bounded number of polls, not a spin.
        assert sent_methods(log).count("tasks/get") <= took / 0.05 + 2
        # A huge interval is cut to the deadline: the caller is not kept waiting.
        with pytest.raises(mcp_sync.Timeout):
            session.call_tool("forever", {"poll": 3_600_000}, timeout_ms=300)
        assert time.monotonic() - start < 10


def test_a_task_that_never_finishes_is_cancelled_at_the_deadline(tmp_path: Path) -> None:
    log = tmp_path / "log"
    with fake("stdio", "--features", "--log", str(log)) as session:
        with pytest.raises(mcp_sync.Timeout):
            session.call_tool("forever", {"poll": 20}, timeout_ms=300)
        wait_for(log, "tasks/cancel")
        assert session.call_tool("echo", {"message": "ok"}).content[0]["text"] == "ok"
    cancel = next(f for f in logged(log) if f.get("method") == "tasks/cancel")
    assert cancel["params"]["taskId"] == "task-1" and declared(cancel)


def test_a_task_cancelled_over_http_by_a_timeout(tmp_path: Path) -> None:
    headers = tmp_path / "headers"
    with fake("http", "--features", "--header-log", str(headers)) as session:
        with pytest.raises(mcp_sync.Timeout):
            session.call_tool("forever", {"poll": 20}, timeout_ms=300)
        until = time.monotonic() + 5
        while '"tasks/cancel"' not in headers.read_text():
            assert time.monotonic() < until, "tasks/cancel never reached the server"
            time.sleep(0.01)


def test_an_interrupted_task_call_cancels_the_task(tmp_path: Path) -> None:
    # The task asks a question; while the handler (on a library thread)
    # thinks it over, a KeyboardInterrupt lands in the waiting caller.
    release = threading.Event()

    def interrupt(request: mcp_sync.ElicitationRequest) -> mcp_sync.ElicitationResult:
        # A real SIGINT, as Ctrl-C sends: it also breaks the main thread out
        # of a blocking wait (``_thread.interrupt_main`` only sets a flag,
        # seen whenever the main thread next runs bytecode).
        signal.pthread_kill(threading.main_thread().ident or 0, signal.SIGINT)
        release.wait(5)
        return mcp_sync.ElicitationResult.accept()

    log = tmp_path / "log"
    assert threading.current_thread() is threading.main_thread()
    # Whatever an earlier test in this worker left, SIGINT raises KeyboardInterrupt here.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        handlers = mcp_sync.Handlers(elicitation=interrupt)
        with fake("stdio", "--features", "--log", str(log), handlers=handlers) as session:
            with pytest.raises(KeyboardInterrupt):
                session.call_tool("research", {"ms": 10, "ask": True})
            release.set()
            wait_for(log, "tasks/cancel")
    finally:
        release.set()
        signal.signal(signal.SIGINT, previous)
    assert "tasks/update" not in sent_methods(log)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_task_waiting_for_input_is_answered_by_the_handlers(transport: str) -> None:
    seen: list[mcp_sync.ElicitationRequest] = []

    def elicit(request: mcp_sync.ElicitationRequest) -> mcp_sync.ElicitationResult:
        seen.append(request)
        return mcp_sync.ElicitationResult.accept()  # the schema's default: "a"

    with fake(transport, "--features", handlers=mcp_sync.Handlers(elicitation=elicit)) as session:
        result = session.call_tool("research", {"ms": 20, "ask": True})
    assert result.content[0]["text"] == 'picked "a"'
    assert [request.message for request in seen] == ["Which one?"]


def test_each_question_of_a_task_is_answered_once(tmp_path: Path) -> None:
    log = tmp_path / "log"
    asked: list[str] = []
    handlers = mcp_sync.Handlers(elicitation=lambda r: asked.append(r.message) or mcp_sync.ElicitationResult.accept())
    with fake("stdio", "--features", "--log", str(log), handlers=handlers) as session:
        # lag: the answered question is still listed on the next poll.
        assert session.call_tool("research", {"ms": 20, "ask": True, "lag": True}).content[0]["text"] == 'picked "a"'
    updates = [f for f in logged(log) if f.get("method") == "tasks/update"]
    assert len(updates) == 1 and len(asked) == 1
    assert updates[0]["params"]["inputResponses"] == {"pick-1": {"action": "accept", "content": {"pick": "a"}}}
    assert declared(updates[0])


def test_a_task_that_keeps_asking_is_cut_off_and_cancelled(tmp_path: Path) -> None:
    log = tmp_path / "log"
    handlers = mcp_sync.Handlers(elicitation=lambda r: mcp_sync.ElicitationResult.accept())
    with fake("stdio", "--features", "--log", str(log), handlers=handlers) as session:
        with pytest.raises(mcp_sync.ProtocolError) as caught:
            session.call_tool("research", {"ms": 10, "ask": "always"})
        assert str(caught.value) == "the task of tool 'research' on server 'fake' asked for input more than 10 times"
        wait_for(log, "tasks/cancel")
        assert not session.closed
    assert sent_methods(log).count("tasks/update") == 10


def test_without_a_handler_a_task_question_names_what_it_asked_for(tmp_path: Path) -> None:
    log = tmp_path / "log"
    with fake("stdio", "--features", "--log", str(log)) as session:
        with pytest.raises(mcp_sync.InputRequired, match=r"^tool 'research' on server 'fake' needs input"):
            session.call_tool("research", {"ms": 10, "ask": True})
        wait_for(log, "tasks/cancel")


def test_a_failed_task_raises_its_error_and_a_cancelled_one_says_so() -> None:
    with fake("stdio", "--features") as session:
        with pytest.raises(mcp_sync.RemoteError) as failed:
            session.call_tool("research", {"ms": 10, "fail": True})
        assert failed.value.code == -32050
        assert str(failed.value) == "server 'fake' failed the task of tool 'research' with JSON-RPC error -32050"
        assert "on purpose" not in str(failed.value)  # the server's text stays in .detail
        with pytest.raises(mcp_sync.RemoteError) as cancelled:
            session.call_tool("research", {"ms": 10, "cancel": True})
        assert cancelled.value.code == -32603
        assert str(cancelled.value) == "server 'fake' cancelled the task of tool 'research' before it finished"
        assert not session.closed


def test_task_choices_in_the_modern_era(tmp_path: Path) -> None:
    log = tmp_path / "log"
    with fake("stdio", "--features", "--log", str(log)) as session:
        # optional: the server decides (this one runs it plainly unless told otherwise).
        assert session.call_tool("maybe_task").content[0]["text"] == "plain answer"
        assert session.call_tool("maybe_task", {"as_task": True}).content[0]["text"] == "researched nothing"
        assert session.call_tool("maybe_task", task=False).content[0]["text"] == "plain answer"
        with pytest.raises(mcp_sync.ProtocolError, match="must be called as a task"):
            session.call_tool("research", task=False)
        with pytest.raises(mcp_sync.ProtocolError, match="cannot be called as a task"):
            session.call_tool("echo", {"message": "x"}, task=True)
    calls = [f for f in logged(log) if f.get("method") == "tools/call"]
    assert [declared(f) for f in calls] == [True, True, False]


def test_a_server_without_the_extension_gets_no_declaration(tmp_path: Path) -> None:
    log = tmp_path / "log"
    capabilities = json.dumps({"tools": {}, "resources": {}, "prompts": {}})
    with fake("stdio", "--features", "--capabilities", capabilities, "--log", str(log)) as session:
        assert session.call_tool("echo", {"message": "x"}).content[0]["text"] == "x"
        # The server needs the extension for this tool and says so.
        with pytest.raises(mcp_sync.RemoteError) as caught:
            session.call_tool("research")
        assert caught.value.code == -32021
        with pytest.raises(mcp_sync.ProtocolError, match="cannot be called as a task"):
            session.call_tool("maybe_task", task=True)
    assert not any(declared(f) for f in logged(log) if f.get("method") == "tools/call")


TASK = {"resultType": "task", "taskId": "t-1", "status": "working", "createdAt": "2026-01-01T00:00:00Z",
        "lastUpdatedAt": "2026-01-01T00:00:00Z", "ttlMs": None, "pollIntervalMs": 10}  # fmt: skip


@pytest.mark.parametrize(
    ("method", "answer", "message"),
    [
        ("tools/call", {**TASK, "taskId": ""}, "has no taskId of 1 to 1024 characters"),
        ("tools/call", {**TASK, "status": "sleeping"}, "has an unknown task status"),
        ("tools/call", {**TASK, "status": "completed"}, "completed the task of tool 'echo' without a result object"),
        ("tools/call", {**TASK, "status": "failed", "error": "bad"}, "failed the task of tool 'echo' without a JSON"),
        ("tools/call", {**TASK, "status": "input_required"}, "neither inputRequests nor requestState"),
        ("tools/call", {**TASK, "status": "input_required", "inputRequests": []},
         "inputRequests that is not an object"),
        ("tasks/get", {**TASK, "resultType": "complete", "taskId": "other"}, "answered tasks/get about another task"),
        ("tasks/get", TASK, 'answered tasks/get with a task \\(resultType "task"\\)'),
        ("tasks/get", {**TASK, "resultType": "complete", "status": "completed", "result": {"content": 1}},
         "the result of tool .echo. has no content array"),
    ],
)  # fmt: skip
def test_hostile_task_handles_are_invalid_responses(method: str, answer: dict[str, Any], message: str) -> None:
    options = ["--raw", method, json.dumps(answer)]
    if method == "tasks/get":
        options += ["--raw", "tools/call", json.dumps(TASK)]
    with fake("stdio", "--features", *options) as session:
        with pytest.raises(mcp_sync.InvalidResponse, match=message):
            session.call_tool("echo", {"message": "x"}, timeout_ms=5_000)
        assert not session.closed


def test_a_task_handle_that_was_not_asked_for_is_refused() -> None:
    capabilities = json.dumps({"tools": {}, "prompts": {}})
    with (
        fake("stdio", "--capabilities", capabilities, "--raw", "tools/call", json.dumps(TASK)) as session,
        pytest.raises(mcp_sync.InvalidResponse, match="which this client did not ask for"),
    ):
        session.call_tool("echo", {"message": "x"})
    with (
        fake("stdio", "--features", "--raw", "prompts/get", json.dumps(TASK)) as session,
        pytest.raises(mcp_sync.InvalidResponse, match="answered prompts/get with a task"),
    ):
        session.get_prompt("plain")


def test_input_required_then_a_task_in_one_call(tmp_path: Path) -> None:
    log = tmp_path / "log"
    asked: list[str] = []
    handlers = mcp_sync.Handlers(elicitation=lambda r: asked.append(r.message) or mcp_sync.ElicitationResult.accept())
    with fake("stdio", "--features", "--log", str(log), handlers=handlers) as session:
        result = session.call_tool("research", {"ms": 20, "ask": True, "confirm": True})
    # The confirmation (a multi round-trip question), then the task's own question.
    assert asked == ["Start the research?", "Which one?"]
    assert result.content[0]["text"] == 'picked "a"'
    calls = [f for f in logged(log) if f.get("method") == "tools/call"]
    assert [c["params"].get("requestState") for c in calls] == [None, "confirming"]


def test_each_round_of_a_call_reports_its_own_progress() -> None:
    seen: list[tuple[float, str | None]] = []
    handlers = mcp_sync.Handlers(elicitation=lambda r: mcp_sync.ElicitationResult.decline())
    with fake("stdio", "--input-tools", handlers=handlers) as session:
        result = session.call_tool("ask_input", on_progress=lambda p, t, m: seen.append((p, m)))
    assert result.content[0]["text"] == "input received"
    # The retry is a new request: its progress starts again, and still arrives.
    assert seen == [(1.0, "round"), (1.0, "round")]


# ----------------------------------------------------------------------- the official SDK (2.3.0)


@contextmanager
def sdk_features(transport: str, **kwargs: Any) -> Iterator[mcp_sync.Session]:
    """tests/peers/sdk_features_server.py, connected under ``protocol="auto"``."""
    from conftest import connect_sdk_peer

    with connect_sdk_peer("sdk_features_server.py", transport, **kwargs) as session:
        yield session


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_the_official_sdk_in_the_modern_era(transport: str, tmp_path: Path) -> None:
    seen: list[mcp_sync.ElicitationRequest] = []
    with sdk_features(transport, handlers=_elicit_name(seen)) as session:
        assert (session.era, session.protocol_version) == ("modern", "2026-07-28")
        # Progress while the call is in flight: the tool goes past step 1
        # only once the callback has run.
        gate = tmp_path / "gate"
        steps: list[float] = []

        def opened(progress: float, total: float | None, message: str | None) -> None:
            steps.append(progress)
            gate.touch()

        result = session.call_tool("gated", {"gate": str(gate)}, on_progress=opened, timeout_ms=20_000)
        assert result.content[0]["text"] == "counted 3"
        assert steps == [1.0, 2.0, 3.0]
        # input_required on prompts/get and resources/read, answered by the handler.
        assert session.get_prompt("ask_prompt").messages[0].content["text"] == "Hello, Ada."
        assert session.read_resource("ask://owls").contents[0].text == "owls for Ada"
    assert [request.message for request in seen] == ["Who is asking?", "Who is asking?"]


def test_tasks_on_the_official_sdks_extension_machinery() -> None:
    import sys

    from conftest import PEERS_SRC, sdk_stdio_command

    sdk_stdio_command()
    asked: list[str] = []

    def elicit(request: mcp_sync.ElicitationRequest) -> mcp_sync.ElicitationResult:
        asked.append(request.message)
        return mcp_sync.ElicitationResult.accept({"source": "library"})

    script = str(PEERS_SRC / "sdk_tasks_server.py")
    with mcp_sync.connect(
        server="sdk", command=sys.executable, args=[script], handlers=mcp_sync.Handlers(elicitation=elicit)
    ) as session:
        assert session.era == "modern"
        assert TASKS in session.server_capabilities["extensions"]
        # Created, polled, asked (tasks/update), completed: through plain call_tool.
        assert session.call_tool("research", {"topic": "owls"}).content[0]["text"] == "owls from library"
        assert asked == ["Which source?"]
        with pytest.raises(mcp_sync.Timeout):
            session.call_tool("forever", timeout_ms=300)
        # The cancellation goes out from a library thread: ask until it has landed.
        until = time.monotonic() + 5
        while session.call_tool("cancelled").structured_content["result"] != ("sdk-task-2",):
            assert time.monotonic() < until, "the task was never cancelled"
            time.sleep(0.02)
        # Not declaring the extension (task=False), the server refuses the tool.
        with pytest.raises(mcp_sync.RemoteError) as caught:
            session.call_tool("research", {"topic": "owls"}, task=False)
        assert caught.value.code == -32021
