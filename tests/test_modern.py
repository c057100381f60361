"""The modern era (2026-07-28) over stdio: per-request _meta, result types,
input_required retries, cancellation, limits, and nothing the revision removed.

The fake server runs with ``--era modern``. Answers to input requests come from
``_Core.answer_input_request`` (the seam the handlers of issue 13 fill in); the
tests that need answers replace it on the session's core.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest
from support import connect_fake, logged, methods, timed

import mcp_sync
from mcp_sync.session.eras.modern import MAX_INPUT_REQUESTS, MAX_INPUT_ROUNDS
from mcp_sync.testing._eras import REQUEST_STATE

MODERN = ("--era", "modern")


def modern(*options: str, **kwargs: Any) -> mcp_sync.Session:
    session = connect_fake(*MODERN, *options, **kwargs)
    assert session.era == "modern"
    return session


def answer_with(session: mcp_sync.Session, answers: list[tuple[str, Any]]) -> None:
    """Answer every input request with {"action": "accept", ...}; record what was asked."""

    def answer(method: str, params: Any, deadline: float) -> dict[str, Any]:
        answers.append((method, params))
        return {"action": "accept", "content": {"n": len(answers)}}

    session._core.answer_input_request = answer  # type: ignore[method-assign]


# ------------------------------------------------------------------ _meta


def test_every_request_carries_meta_and_nothing_removed_is_sent(tmp_path: Path) -> None:
    log = tmp_path / "log"
    with modern("--misbehave", "--input-tools", "--log", str(log)) as session:
        session.call_tool("echo", {"message": "a"})
        answer_with(session, [])
        session.call_tool("ask_input")
        with pytest.raises(mcp_sync.Timeout):
            session.call_tool("hang", timeout_ms=200)
        session.call_tool("echo", {"message": "after"})
    frames = logged(log)
    requests = [f for f in frames if "id" in f]
    assert all(f["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] == "2026-07-28"
               for f in requests)
    sent = set(methods(log))
    assert sent <= {"server/discover", "tools/list", "tools/call", "notifications/cancelled"}
    assert not {"initialize", "notifications/initialized", "ping"} & sent
    # stdio cancellation is notifications/cancelled naming the abandoned request.
    hang = next(f for f in requests if f["params"].get("name") == "hang")
    (cancel,) = [f for f in frames if f.get("method") == "notifications/cancelled"]
    assert cancel["params"]["requestId"] == hang["id"]


def test_server_requests_get_no_reply_in_the_modern_era(tmp_path: Path) -> None:
    log = tmp_path / "log"
    with modern("--misbehave", "--log", str(log)) as session:
        session.call_tool("raw", {"lines": ['{"jsonrpc":"2.0","id":"s1","method":"ping"}',
                                            '{"jsonrpc":"2.0","id":"s2","method":"roots/list"}']})
        session.call_tool("echo", {"message": "sync"})
        assert not session.closed
    assert all("method" in frame for frame in logged(log))  # no reply ever written


# ------------------------------------------------------------------ result types


@pytest.mark.parametrize("value", ["weird", "", 7, ["complete"]])
def test_an_unknown_result_type_fails_that_call(value: Any) -> None:
    with modern("--result-type", json.dumps(value) if not isinstance(value, str) else value) as session:
        with pytest.raises(mcp_sync.InvalidResponse) as caught:
            session.call_tool("echo", {"message": "x"})
        assert str(caught.value) == (
            "server 'fake' answered tools/call with a resultType this client does not know"
        )
        assert not session.closed


def test_an_absent_result_type_means_complete() -> None:
    with modern("--misbehave") as session:
        line = '{"jsonrpc":"2.0","id":{id},"result":{"content":[{"type":"text","text":"plain"}]}}'
        result = session.call_tool("raw", {"lines": [line], "reply": False})
        assert result.content[0]["text"] == "plain"


def test_input_required_is_refused_on_tools_list() -> None:
    page = 'tools/list={"jsonrpc":"2.0","id":{id},"result":{"resultType":"input_required","requestState":"s"}}'
    with pytest.raises(mcp_sync.InvalidResponse) as caught:
        connect_fake(*MODERN, "--answer", page)
    assert "answered tools/list with resultType \"input_required\"" in str(caught.value)


@pytest.mark.parametrize(
    "value", [[1, 2, {"a": [3]}], "text", 4.5, True, {"deep": {"x": [1]}}]
)
def test_structured_content_may_be_any_json_value(value: Any) -> None:
    line = json.dumps({"jsonrpc": "2.0", "id": 0, "result": {
        "resultType": "complete", "content": [], "structuredContent": value}})
    line = line.replace('"id": 0', '"id": {id}')
    with modern("--misbehave") as session:
        result = session.call_tool("raw", {"lines": [line], "reply": False})
        assert mcp_sync.thaw(result.structured_content) == value
        if isinstance(value, (list, dict)):
            with pytest.raises((TypeError, AttributeError)):
                result.structured_content[0 if isinstance(value, list) else "deep"] = 1
    with connect_fake("--misbehave") as legacy, pytest.raises(mcp_sync.InvalidResponse):
        if not isinstance(value, dict):
            legacy.call_tool("raw", {"lines": [line], "reply": False})
        else:
            raise mcp_sync.InvalidResponse("an object is fine in both eras")


# ------------------------------------------------------------------ input_required


def test_without_a_handler_the_call_names_what_the_server_asked_for() -> None:
    with modern("--input-tools") as session:
        with pytest.raises(mcp_sync.InputRequired) as caught:
            session.call_tool("ask_input", {"count": 2})
        assert caught.value.kind == "input_required"
        assert caught.value.methods == ("elicitation/create", "elicitation/create")
        assert str(caught.value) == (
            "tool 'ask_input' on server 'fake' needs input this client cannot give: "
            "elicitation/create, elicitation/create (no handler answers it)"
        )
        assert not session.closed
        assert session.call_tool("echo", {"message": "still"}).content[0]["text"] == "still"


def test_an_unknown_input_method_is_not_named_in_the_message() -> None:
    with modern("--input-tools") as session, pytest.raises(mcp_sync.InputRequired) as caught:
        session.call_tool("ask_input", {"method": "evil/\u202e\x1bname"})
    assert str(caught.value) == (
        "tool 'ask_input' on server 'fake' needs input this client cannot give: "
        "a request this client does not know (no handler answers it)"
    )
    assert caught.value.methods == ("evil/\u202e\x1bname",)


def test_answers_and_request_state_go_back_on_a_new_request(tmp_path: Path) -> None:
    log = tmp_path / "log"
    asked: list[tuple[str, Any]] = []
    with modern("--input-tools", "--log", str(log)) as session:
        answer_with(session, asked)
        result = session.call_tool("ask_input", {"count": 2})
        assert result.content[0]["text"] == "input received"  # the fake found the state intact
        echoed = mcp_sync.thaw(result.structured_content)
        assert echoed["requestState"] == REQUEST_STATE
        assert echoed["inputResponses"] == {
            "q0": {"action": "accept", "content": {"n": 1}},
            "q1": {"action": "accept", "content": {"n": 2}},
        }
    assert [method for method, _ in asked] == ["elicitation/create"] * 2
    assert asked[0][1]["message"] == "question 0"
    calls = [f for f in logged(log) if f.get("method") == "tools/call"]
    first, retry = calls
    assert first["id"] != retry["id"]
    assert "inputResponses" not in first["params"] and "requestState" not in first["params"]
    assert retry["params"]["requestState"] == REQUEST_STATE
    assert retry["params"]["arguments"] == first["params"]["arguments"]
    raw = log.read_bytes().splitlines()[-1].decode()
    assert json.loads(raw)["params"]["requestState"] == REQUEST_STATE


def test_no_request_state_is_invented(tmp_path: Path) -> None:
    log = tmp_path / "log"
    with modern("--input-tools", "--log", str(log)) as session:
        answer_with(session, [])
        assert session.call_tool("ask_input", {"state": False}).content[0]["text"] == "input received"
    retry = [f for f in logged(log) if f.get("method") == "tools/call"][-1]
    assert "requestState" not in retry["params"]
    assert "inputResponses" in retry["params"]


def test_state_only_rounds_are_retried_at_once(tmp_path: Path) -> None:
    log = tmp_path / "log"
    with modern("--input-tools", "--log", str(log)) as session:
        result = session.call_tool("state_only", {"rounds": 3})
        assert result.content[0]["text"] == "done after 3 rounds"
    calls = [f for f in logged(log) if f.get("method") == "tools/call"]
    assert [c["params"].get("requestState") for c in calls] == [None, "round-1", "round-2", "round-3"]
    assert all("inputResponses" not in c["params"] for c in calls)
    assert len({c["id"] for c in calls}) == 4


def test_a_server_that_keeps_asking_is_cut_off(tmp_path: Path) -> None:
    log = tmp_path / "log"
    with modern("--input-tools", "--log", str(log)) as session:
        with pytest.raises(mcp_sync.ProtocolError) as caught:
            session.call_tool("input_loop")
        assert str(caught.value) == (
            f"tool 'input_loop' on server 'fake' asked for input more than {MAX_INPUT_ROUNDS} "
            "times in a row"
        )
        assert not session.closed
    calls = [f for f in logged(log) if f.get("method") == "tools/call"]
    assert len(calls) == MAX_INPUT_ROUNDS + 1


def test_malformed_input_required_results_fail_the_call() -> None:
    with modern("--input-tools") as session:
        with pytest.raises(mcp_sync.InvalidResponse, match="neither inputRequests nor requestState"):
            session.call_tool("bad_input")
        answer_with(session, [])
        with pytest.raises(mcp_sync.InvalidResponse, match=f"more than {MAX_INPUT_REQUESTS} input"):
            session.call_tool("ask_input", {"count": MAX_INPUT_REQUESTS + 1})
        assert not session.closed


def test_input_state_is_never_shared_with_another_call(tmp_path: Path) -> None:
    log = tmp_path / "log"
    release = threading.Event()
    with modern("--input-tools", "--log", str(log)) as session:

        def slow_answer(method: str, params: Any, deadline: float) -> dict[str, Any]:
            # While this caller holds its answers, another thread calls.
            release.wait(5)
            return {"action": "decline"}

        session._core.answer_input_request = slow_answer  # type: ignore[method-assign]
        asker = threading.Thread(target=session.call_tool, args=("ask_input",))
        asker.start()
        session.call_tool("echo", {"message": "meanwhile"})
        release.set()
        asker.join(10)
    plain = [f for f in logged(log) if f.get("params", {}).get("name") == "echo"]
    assert plain and all("requestState" not in f["params"] and "inputResponses" not in f["params"]
                         for f in plain)


def test_the_deadline_covers_every_round() -> None:
    with modern("--input-tools") as session:

        def never(method: str, params: Any, deadline: float) -> dict[str, Any]:
            raise mcp_sync.Timeout("the answer missed the deadline")

        session._core.answer_input_request = never  # type: ignore[method-assign]
        with timed(3.0), pytest.raises(mcp_sync.Timeout):
            session.call_tool("ask_input", timeout_ms=300)


# ------------------------------------------------------------------ limits, in this era too


def test_limits_apply_in_the_modern_era(tmp_path: Path) -> None:
    with pytest.raises(mcp_sync.InvalidResponse, match="more than max_tools=3"):
        connect_fake(*MODERN, max_tools=3)
    with modern("--misbehave", max_frame_bytes=10_000) as session:
        with pytest.raises(mcp_sync.ProtocolError, match="max_frame_bytes=10000"):
            session.call_tool("blob", {"bytes": 20_000})
        # The reply's id names its request: only that call fails.
        assert not session.closed
        assert session.call_tool("echo", {"message": "on"}).content[0]["text"] == "on"
    with modern("--misbehave") as session, pytest.raises(mcp_sync.ProtocolError, match="JSON depth limit"):
        session.call_tool("deep", {"depth": 200})
    # The outbound limit counts the _meta every request now carries.
    with modern(max_outbound_frame_bytes=600) as session:
        with pytest.raises(mcp_sync.ProtocolError, match="max_outbound_frame_bytes=600"):
            session.call_tool("echo", {"message": "x" * 420})
        assert not session.closed
        assert session.call_tool("echo", {"message": "short"}).content[0]["text"] == "short"


def test_the_modern_catalog_is_deep_frozen() -> None:
    with modern() as session:
        tool = session.tool("add")
        with pytest.raises(TypeError):
            tool.input_schema["properties"]["a"]["type"] = "string"  # type: ignore[index]
        assert isinstance(session.tools, tuple)


def test_traceparent_and_ping_in_the_modern_era(tmp_path: Path) -> None:
    log = tmp_path / "log"
    trace = "00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01"
    with modern("--log", str(log)) as session:
        session.call_tool("echo", {"message": "x"}, traceparent=trace)
        session.ping()  # the revision has no ping: server/discover is the probe
    frames = logged(log)
    call = next(f for f in frames if f.get("method") == "tools/call")
    assert call["params"]["_meta"]["traceparent"] == trace
    assert call["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] == "2026-07-28"
    assert methods(log) == ["server/discover", "tools/list", "tools/call", "server/discover"]
