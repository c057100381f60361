"""Resources, prompts, completion, tasks, catalog refresh, output validation."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from support import connect_fake, logged, methods

import mcp_sync

# ----------------------------------------------------------------------- resources and prompts


def test_resources_are_listed_read_and_frozen() -> None:
    with connect_fake("--features", "--page-size", "1", "--extra-resources", "3") as session:
        resources = session.list_resources()
        templates = session.list_resource_templates()
        text = session.read_resource("fake://text/world")
        blob = session.read_resource("fake://blob/bytes")
    assert [r.uri for r in resources] == [
        "fake://text/hello", "fake://blob/bytes", "fake://text/r0", "fake://text/r1", "fake://text/r2"
    ]  # fmt: skip
    assert resources[0].mime_type == "text/plain" and resources[0].description == "A greeting."
    assert templates[0].uri_template == "fake://text/{name}"
    assert text.contents[0].text == "Hello, world!" and text.contents[0].blob is None
    assert blob.contents[0].blob == bytes(range(256))
    assert blob.to_dict()["contents"][0]["blob"] == base64.b64encode(bytes(range(256))).decode()
    with pytest.raises(AttributeError):
        resources[0].uri = "changed"  # type: ignore[misc]


def test_prompts_and_completion() -> None:
    with connect_fake("--features") as session:
        prompts = session.list_prompts()
        got = session.get_prompt("greet", {"name": "Ann"})
        completion = session.complete(prompts[0], {"name": "name", "value": "b"})
        by_dict = session.complete({"type": "ref/prompt", "name": "greet"}, {"name": "name", "value": ""})
        with pytest.raises(mcp_sync.RemoteError) as refused:
            session.get_prompt("nope")
        with pytest.raises(mcp_sync.ProtocolError, match="strings to strings"):
            session.get_prompt("greet", {"name": 7})  # type: ignore[dict-item]
    assert [p.name for p in prompts] == ["greet", "plain"]
    assert prompts[0].arguments[0].required is True
    assert got.messages[0].role == "user" and got.messages[0].content["text"] == "Please greet Ann."
    assert completion.values == ("bob",) and completion.total == 1 and completion.has_more is False
    assert by_dict.values == ("alice", "bob", "carol", "dave")
    assert refused.value.code == -32602


def test_a_missing_capability_refuses_before_sending(tmp_path: Path) -> None:
    log = tmp_path / "log"
    with connect_fake("--features", "--log", str(log), "--capabilities", '{"tools": {}}') as session:
        calls = [
            session.list_resources, session.list_resource_templates,
            lambda: session.read_resource("fake://text/x"), session.list_prompts,
            lambda: session.get_prompt("greet"),
            lambda: session.complete({"type": "ref/prompt", "name": "greet"}, {"name": "n", "value": ""}),
        ]  # fmt: skip
        for call in calls:
            with pytest.raises(mcp_sync.NotSupported, match="capability"):
                call()
    sent = methods(log)
    assert "tools/list" in sent
    assert not [m for m in sent if m.split("/")[0] in ("resources", "prompts", "completion")]


@pytest.mark.parametrize(
    ("method", "result", "message"),
    [
        ("resources/list", {"resources": [{"uri": "a"}]}, "no name string"),
        ("resources/list", {"resources": [{"name": "a"}]}, "no uri string"),
        ("resources/list", {"resources": "x"}, "no resources array"),
        ("resources/list", {"resources": [], "nextCursor": ""}, "empty or non-string nextCursor"),
        ("resources/list", {"resources": [], "nextCursor": "again"}, "repeats an earlier cursor"),
        ("prompts/list", {"prompts": [{"name": "p", "arguments": [{}]}]}, "argument without a name"),
        ("resources/read", {"contents": [{"uri": "u", "blob": "***"}]}, "not valid base64"),
        ("resources/read", {"contents": [{"uri": "u", "text": "a", "blob": "YQ=="}]}, "neither or both"),
        ("resources/read", {"contents": [{"uri": "u"}]}, "neither or both"),
        ("prompts/get", {"messages": [{"role": "system", "content": {"type": "text"}}]}, "role"),
        ("completion/complete", {"completion": {"values": [1]}}, "values array of strings"),
        ("completion/complete", {"completion": {"values": ["v"] * 101}}, "more than 100 values"),
    ],
)  # fmt: skip
def test_malformed_results_are_invalid_responses_and_the_session_stays(
    method: str, result: dict[str, Any], message: str
) -> None:
    with connect_fake("--features", "--raw", method, json.dumps(result), max_catalog_pages=3) as session:
        call = {
            "resources/list": session.list_resources,
            "prompts/list": session.list_prompts,
            "resources/read": lambda: session.read_resource("fake://text/x"),
            "prompts/get": lambda: session.get_prompt("greet"),
            "completion/complete": lambda: session.complete(
                {"type": "ref/prompt", "name": "greet"}, {"name": "n", "value": ""}
            ),
        }[method]
        with pytest.raises(mcp_sync.InvalidResponse, match=message):
            call()
        assert not session.closed
        assert session.call_tool("echo", {"message": "ok"}).content[0]["text"] == "ok"


def test_listings_follow_the_catalogs_page_limit() -> None:
    with connect_fake("--page-size", "1", "--extra-resources", "5", max_catalog_pages=6) as session:
        with pytest.raises(mcp_sync.InvalidResponse, match="resources/list listing has more than max_catalog_pages=6"):
            session.list_resources()
        assert session.list_prompts()[0].name == "greet"  # 2 prompts, 2 pages
    with connect_fake("--extra-resources", "9999") as session, pytest.raises(
        mcp_sync.InvalidResponse, match="more than 10000 entries"
    ):
        session.list_resources()


def test_a_listing_has_one_deadline_for_all_its_pages() -> None:
    with connect_fake("--features", "--hang-on", "resources/list") as session:
        start = time.monotonic()
        with pytest.raises(mcp_sync.Timeout, match=r"resources/list from server 'fake' \(timeout_ms=200\)"):
            session.list_resources(timeout_ms=200)
        assert time.monotonic() - start < 5


# ----------------------------------------------------------------------- tasks


def test_a_required_task_tool_is_called_as_a_task_transparently(tmp_path: Path) -> None:
    log = tmp_path / "log"
    with connect_fake("--features", "--log", str(log)) as session:
        assert session.tool("research").task_support == "required"
        result = session.call_tool("research", {"ms": 100, "topic": "owls"})
    assert result.content[0]["text"] == "researched owls"
    sent = methods(log)
    assert "tasks/get" in sent and sent[-1] == "tasks/result"
    call = next(f for f in logged(log) if f.get("method") == "tools/call")
    assert call["params"]["task"]["ttl"] > 0


def test_optional_task_tools_stay_plain_unless_asked() -> None:
    with connect_fake("--features") as session:
        assert session.call_tool("maybe_task").content[0]["text"] == "plain answer"
        assert session.call_tool("maybe_task", task=True).content[0]["text"] == "researched nothing"
        with pytest.raises(mcp_sync.ProtocolError, match="must be called as a task"):
            session.call_tool("research", task=False)
        with pytest.raises(mcp_sync.ProtocolError, match="cannot be called as a task"):
            session.call_tool("echo", {"message": "x"}, task=True)


def test_a_task_that_never_finishes_is_cancelled_at_the_deadline(tmp_path: Path) -> None:
    log = tmp_path / "log"
    with connect_fake("--features", "--log", str(log)) as session:
        start = time.monotonic()
        with pytest.raises(mcp_sync.Timeout, match="tool 'forever'"):
            session.call_tool("forever", {"poll": 0}, timeout_ms=400)
        took = time.monotonic() - start
        assert session.call_tool("echo", {"message": "ok"}).content[0]["text"] == "ok"
    sent = methods(log)
    assert "tasks/cancel" in sent
    # pollInterval 0 is floored (MIN_POLL_INTERVAL): a bounded number of polls, not a spin.
    assert sent.count("tasks/get") <= took / 0.05 + 2


def test_an_interrupted_task_call_cancels_the_task(tmp_path: Path) -> None:
    log = tmp_path / "log"

    class Interrupt(Exception):
        pass

    def interrupt(progress: float, total: float | None, message: str | None) -> None:
        raise Interrupt  # like a KeyboardInterrupt landing while the caller waits

    with connect_fake("--features", "--log", str(log)) as session:
        with pytest.raises(Interrupt):
            session.call_tool("forever", on_progress=interrupt, timeout_ms=5000)
        # The cancellation is best effort (queued if there is room): a call
        # after it is written after it, so the log has it before we close.
        session.call_tool("echo", {"message": "after"})
    sent = methods(log)
    assert sent.index("tasks/cancel") > sent.index("tools/call")


def test_a_task_waiting_for_input_is_answered_by_the_handlers() -> None:
    handlers = mcp_sync.Handlers(elicitation=lambda request: mcp_sync.ElicitationResult.accept())
    with connect_fake("--features", handlers=handlers) as session:
        result = session.call_tool("research", {"ms": 50, "ask": True})
    assert result.content[0]["text"] == 'picked {"action": "accept", "content": {"pick": "a"}}'


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        ({"taskId": "", "status": "working"}, "taskId"),
        ({"taskId": "t", "status": "sleeping"}, "unknown task status"),
        ({"taskId": "other", "status": "working"}, "another task"),
    ],
)
def test_hostile_task_states_are_invalid_responses(answer: dict[str, Any], message: str) -> None:
    with connect_fake("--features", "--raw", "tasks/get", json.dumps(answer)) as session:
        with pytest.raises(mcp_sync.InvalidResponse, match=message):
            session.call_tool("research", {"ms": 10_000, "poll": 1})
        assert not session.closed


# ----------------------------------------------------------------------- refresh


def test_list_changed_sets_a_flag_and_refresh_swaps_the_snapshot() -> None:
    with connect_fake("--features") as session:
        before = session.tools
        assert not session.tools_changed
        session.call_tool("storm", {"add": 2, "count": 3})
        assert session.tools_changed and session.tools is before
        after = session.refresh_tools()
        assert not session.tools_changed
        assert session.tools is after and [t.name for t in after][-2:] == ["added_1", "added_2"]
        assert before[-1].name == "bad_structured"  # the old snapshot is untouched
        assert session.call_tool("added_1").is_error  # callable now (the fake knows no such tool)
        session.call_tool("storm", {"kind": "resources"})
        session.call_tool("storm", {"kind": "prompts"})
        assert session.resources_changed and session.prompts_changed
        session.list_resources()
        session.list_prompts()
        assert not session.resources_changed and not session.prompts_changed


def test_a_failed_refresh_keeps_the_old_snapshot_and_says_why() -> None:
    with connect_fake("--features") as session:
        before = session.tools
        session.call_tool("storm", {"bad": True})
        with pytest.raises(mcp_sync.InvalidResponse, match=r"previous catalog is kept.*forbidden character"):
            session.refresh_tools()
        assert session.tools is before and session.tools_changed and not session.closed
        assert isinstance(session.last_refresh_error, mcp_sync.InvalidResponse)
        with pytest.raises(mcp_sync.ToolNotFound):
            session.call_tool("bad/name")


def test_auto_refresh_follows_a_storm_with_few_walks(tmp_path: Path) -> None:
    log = tmp_path / "log"
    with connect_fake("--features", "--log", str(log), auto_refresh=True) as session:
        session.call_tool("storm", {"add": 1, "count": 500})
        deadline = time.monotonic() + 5
        while "added_1" not in {t.name for t in session.tools}:
            assert time.monotonic() < deadline, "no automatic refresh"
            time.sleep(0.01)
    # 500 notifications, a handful of walks (the first at connect).
    assert methods(log).count("tools/list") <= 4


def test_auto_refresh_runs_on_a_library_thread() -> None:
    names: list[str] = []
    real = mcp_sync.session.refresh.refresh_tools  # type: ignore[attr-defined]

    def spy(core: Any, timeout_ms: Any) -> Any:
        names.append(threading.current_thread().name)
        return real(core, timeout_ms)

    mcp_sync.session.refresh.refresh_tools = spy  # type: ignore[attr-defined]
    try:
        with connect_fake("--features", auto_refresh=True) as session:
            session.call_tool("storm", {"add": 1})
            deadline = time.monotonic() + 5
            while not names:
                assert time.monotonic() < deadline
                time.sleep(0.01)
    finally:
        mcp_sync.session.refresh.refresh_tools = real  # type: ignore[attr-defined]
    assert names[0].startswith("mcp_sync-fake-refresh")


# ----------------------------------------------------------------------- output validation


def test_structured_output_is_validated_unless_turned_off() -> None:
    for asked in (True, None):  # None: the default
        with connect_fake("--features", validate_output=asked) as session:
            assert session.call_tool("add", {"a": 1, "b": 2}).structured_content == {"sum": 3}
            with pytest.raises(mcp_sync.InvalidResponse, match=r"tool 'bad_structured' does not match.*'type'"):
                session.call_tool("bad_structured")
            assert not session.closed
    with connect_fake("--features", validate_output=False) as session:
        assert session.call_tool("bad_structured").structured_content == {"sum": "not a number"}


def test_plain_import_does_not_load_jsonschema() -> None:
    code = "import sys, mcp_sync; print('jsonschema' in sys.modules, 'httpx' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=30)
    assert out.stdout.split() == ["False", "False"]


def test_validate_output_without_jsonschema_is_refused_before_spawning(tmp_path: Path) -> None:
    marker = tmp_path / "spawned"
    code = (
        "import sys; sys.modules['jsonschema'] = None\n"
        "import importlib.util, mcp_sync\n"
        "importlib.util.find_spec = lambda name, *a: None\n"
        "from mcp_sync.testing import server_command\n"
        f"c, *a = server_command('--marker', {str(marker)!r})\n"
        "try:\n"
        "    mcp_sync.connect(server='v', command=c, args=a, validate_output=True)\n"
        "except mcp_sync.MissingExtra as e:\n"
        "    print(e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=30)
    assert "validation" in out.stdout and not marker.exists()
