"""SPEC §4: every limit and rule, each driven by a misbehaving fake server."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from support import connect_fake, cpu_bounded, fake_pid, library_threads, logged, rss_bytes, timed, wait_gone

import mcp_sync
from mcp_sync.protocol import frames as _jsonrpc
from mcp_sync.protocol.frames import decode_line

LIMITS = {
    "handshake_timeout_ms": mcp_sync.DEFAULT_HANDSHAKE_TIMEOUT_MS,
    "request_timeout_ms": mcp_sync.DEFAULT_REQUEST_TIMEOUT_MS,
    "queue_capacity": mcp_sync.DEFAULT_QUEUE_CAPACITY,
    "max_frame_bytes": mcp_sync.DEFAULT_MAX_FRAME_BYTES,
    "max_outbound_frame_bytes": mcp_sync.DEFAULT_MAX_OUTBOUND_FRAME_BYTES,
    "max_tools": mcp_sync.DEFAULT_MAX_TOOLS,
    "max_tool_name_bytes": mcp_sync.DEFAULT_MAX_TOOL_NAME_BYTES,
    "max_tool_document_bytes": mcp_sync.DEFAULT_MAX_TOOL_DOCUMENT_BYTES,
    "max_catalog_pages": mcp_sync.DEFAULT_MAX_CATALOG_PAGES,
    "max_stderr_bytes": mcp_sync.DEFAULT_MAX_STDERR_BYTES,
}


def test_defaults_are_the_documented_ones() -> None:
    assert LIMITS == {
        "handshake_timeout_ms": 60_000,
        "request_timeout_ms": 120_000,
        "queue_capacity": 64,
        "max_frame_bytes": 67_108_864,
        "max_outbound_frame_bytes": 1_048_576,
        "max_tools": 4096,
        "max_tool_name_bytes": 128,
        "max_tool_document_bytes": 65_536,
        "max_catalog_pages": 32,
        "max_stderr_bytes": 2048,
    }
    assert mcp_sync.MAX_JSON_DEPTH == 128
    assert mcp_sync.Limits() == mcp_sync.Limits(**LIMITS)


# ---------------------------------------------------------------- 1. options


@pytest.mark.parametrize("option", sorted(LIMITS))
@pytest.mark.parametrize("value", [0, -1, 1.5, True, 2**53, "5", None.__class__])
def test_invalid_option_fails_before_spawn(tmp_path: Path, option: str, value: object) -> None:
    marker = tmp_path / "spawned"
    with pytest.raises(mcp_sync.ProtocolError) as caught:
        connect_fake("--marker", str(marker), **{option: value})
    assert option in str(caught.value)
    assert not marker.exists()


def test_largest_safe_integer_is_accepted() -> None:
    with connect_fake(request_timeout_ms=2**53 - 1, max_frame_bytes=2**53 - 1) as session:
        assert session.call_tool("echo", {"message": "ok"}).content[0]["text"] == "ok"


def test_per_call_timeout_is_validated() -> None:
    with connect_fake() as session:
        for bad in (0, -5, 2.5, True, 2**53):
            with pytest.raises(mcp_sync.ProtocolError, match="timeout_ms"):
                session.call_tool("echo", {"message": "x"}, timeout_ms=bad)
        assert not session.closed


# ---------------------------------------------------------------- 2. inbound frames


def _notification_of(size: int) -> str:
    head = '{"jsonrpc":"2.0","method":"notifications/message","params":{"pad":"'
    tail = '"}}'
    return head + "p" * (size - len(head) - len(tail)) + tail


def test_inbound_frame_limit_is_exact() -> None:
    with connect_fake("--misbehave", max_frame_bytes=4096) as session:
        line = _notification_of(4096)
        assert len(line.encode()) == 4096
        session.call_tool("raw", {"lines": [line]})
        with pytest.raises(mcp_sync.ProtocolError, match=r"^an inbound frame is longer than max_frame_bytes=4096$"):
            session.call_tool("raw", {"lines": [_notification_of(4097)]}, timeout_ms=10_000)


def test_a_200_mb_line_fails_at_the_limit_with_memory_flat(tmp_path: Path) -> None:
    marker = tmp_path / "pid"
    before = rss_bytes()
    with timed(10.0), pytest.raises(mcp_sync.ProtocolError, match="max_frame_bytes=1048576"):
        connect_fake("--stdout-flood", str(200_000_000), "--marker", str(marker), max_frame_bytes=1_048_576)
    growth = rss_bytes() - before
    print(f"RSS growth under a 200 MB flood: {growth / 2**20:.1f} MiB")
    assert growth < 64 * 2**20
    wait_gone(int(marker.read_text()))


def test_a_reply_split_across_many_reads_is_reassembled() -> None:
    with connect_fake(max_frame_bytes=8 * 2**20) as session:
        result = session.call_tool("blob", {"bytes": 3 * 2**20})
        assert len(result.content[0]["text"]) == 3 * 2**20


# ---------------------------------------------------------------- 3. outbound


def _frame_size(request_id: int, message: str) -> int:
    frame = {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": "echo", "arguments": {"message": message}},
    }
    return len(json.dumps(frame, ensure_ascii=False, separators=(",", ":")).encode())


def test_outbound_frame_limit_is_exact_utf8_with_escapes(tmp_path: Path) -> None:
    log = tmp_path / "log"
    # Request ids: initialize 1, tools/list 2, then 3, 4...
    base = _frame_size(3, "")
    tricky = 'é"\n\u2028'  # 2 + 2 + 2 + 3 bytes once encoded
    limit = base + 9 + 300  # room for the handshake's own frames
    with connect_fake("--log", str(log), max_outbound_frame_bytes=limit) as session:
        fits = tricky + "a" * 300
        assert _frame_size(3, fits) == limit
        assert session.call_tool("echo", {"message": fits}).content[0]["text"] == fits
        with pytest.raises(mcp_sync.ProtocolError, match=f"over max_outbound_frame_bytes={limit}"):
            session.call_tool("echo", {"message": fits + "a"})
        assert not session.closed
        session.call_tool("echo", {"message": "after"})
    sent = [f["params"]["arguments"]["message"] for f in logged(log) if f.get("method") == "tools/call"]
    assert sent == [fits, "after"]


def test_full_queue_makes_callers_wait_until_their_deadline(tmp_path: Path) -> None:
    log = tmp_path / "log"
    with connect_fake("--misbehave", "--log", str(log), queue_capacity=2) as session:
        session.call_tool("stall", {"ms": 3000})
        big = "z" * 60_000
        outcomes: list[str] = []

        def call() -> None:
            start = time.monotonic()
            try:
                session.call_tool("echo", {"message": big}, timeout_ms=500)
                outcomes.append("ok")
            except mcp_sync.Timeout:
                assert time.monotonic() - start < 2.5
                outcomes.append("timeout")

        callers = [threading.Thread(target=call) for _ in range(8)]
        for caller in callers:
            caller.start()
        for caller in callers:
            caller.join(10)
        assert outcomes.count("timeout") == 8
        # The server reads again; the session is still usable.
        assert session.call_tool("echo", {"message": "back"}, timeout_ms=10_000).content[0]["text"] == "back"
    frames = logged(log)
    sent = [f["id"] for f in frames if f.get("method") == "tools/call" and f["params"]["name"] == "echo"]
    cancelled = {f["params"]["requestId"] for f in frames if f.get("method") == "notifications/cancelled"}
    # Frames never started were skipped; each one written got one cancellation.
    assert len(sent) < 9
    assert cancelled <= set(sent)


# ---------------------------------------------------------------- 4. JSON depth and numbers


def test_json_depth_limit_counts_the_envelope() -> None:
    with connect_fake("--misbehave") as session:
        # envelope 1 + result 2 + the list: depth 126 is 128 in all.
        assert session.call_tool("deep", {"depth": 126}).content == ()
        with pytest.raises(mcp_sync.ProtocolError, match="JSON depth limit of 128"):
            session.call_tool("deep", {"depth": 127}, timeout_ms=10_000)


def test_a_reply_nested_100000_deep_is_refused_without_recursion() -> None:
    crashed: list[BaseException] = []
    old_hook = threading.excepthook
    threading.excepthook = lambda args: crashed.append(args.exc_value)  # type: ignore[assignment, return-value]
    try:
        with connect_fake("--misbehave", max_frame_bytes=4 * 2**20) as session, \
                pytest.raises(mcp_sync.ProtocolError, match="JSON depth"):
            session.call_tool("deep", {"depth": 100_000}, timeout_ms=10_000)
    finally:
        threading.excepthook = old_hook
    assert crashed == []


def test_depth_check_ignores_brackets_in_strings() -> None:
    text = json.dumps({"jsonrpc": "2.0", "s": "[" * 500 + '\\"{' * 300}).encode()
    assert _jsonrpc.json_depth(text) == 1
    assert _jsonrpc.decode_line(text) is not None


def _cycle() -> list[object]:
    loop: list[object] = []
    loop.append(loop)
    return loop


@pytest.mark.parametrize(
    "line",
    [
        b'{"jsonrpc":"2.0","method":"x"}',
        b'  {"jsonrpc":"2.0","method":"x"}',
        b'{"jsonrpc":"2.0","method":"x"}\r',
        b'\t{"jsonrpc":"2.0","method":"x"}  ',
    ],
)
def test_frames_with_surrounding_whitespace_are_still_frames(line: bytes) -> None:
    assert decode_line(line) == {"jsonrpc": "2.0", "method": "x"}


@pytest.mark.parametrize(
    "line", [b'{"jsonrpc":"2.0"} {"jsonrpc":"2.0"}', b'{"jsonrpc":"2.0"}x', b"", b"   ", b"]"]
)
def test_trailing_data_or_nothing_is_noise(line: bytes) -> None:
    assert decode_line(line) is None


@pytest.mark.parametrize(
    ("literal", "message"),
    [
        ("NaN", "non-JSON number NaN"),
        ("Infinity", "non-JSON number Infinity"),
        ("-Infinity", "non-JSON number -Infinity"),
        ("1e999", "overflows to infinity"),
        ("-1e400", "overflows to infinity"),
        # SPEC 9.15: an integer literal past a double's range overflows too,
        # however many digits it has.
        ("9" * 309, "overflows to infinity"),
        ("-" + "9" * 400, "overflows to infinity"),
        ("1" * 5000, "overflows to infinity"),
        (str(2**1024 - 2**970), "overflows to infinity"),
    ],
)
def test_bad_numbers_are_protocol_errors(literal: str, message: str) -> None:
    line = '{"jsonrpc":"2.0","result":{"content":[],"n":' + literal + '},"id":{id}}'
    with connect_fake("--misbehave") as session:
        with pytest.raises(mcp_sync.ProtocolError, match=message):
            session.call_tool("raw", {"lines": [line], "reply": False}, timeout_ms=10_000)
        assert session.closed


def test_bad_numbers_in_noise_are_just_noise() -> None:
    with connect_fake("--misbehave") as session:
        session.call_tool("raw", {"lines": ["[NaN, 1e999]", '{"log": NaN}', "[" * 1000]})
        assert not session.closed


# ---------------------------------------------------------------- 5. outgoing arguments


def _nested_list(levels: int) -> Any:
    value: Any = []
    for _ in range(levels - 1):
        value = [value]
    return value


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ([1, 2], "must be a dict with str keys, got list"),
        ("text", "must be a dict with str keys, got str"),
        ({1: "x"}, "have a key of type int"),
        ({"a": {"b": {2: 1}}}, "have a key of type int"),
        ({"a": float("nan")}, "NaN or an infinite number"),
        ({"a": [float("inf")]}, "NaN or an infinite number"),
        ({"a": object()}, "value of type object"),
        ({"a": b"bytes"}, "value of type bytes"),
        ({"a": "\ud800"}, "lone surrogate"),
        ({"a": _nested_list(126)}, "JSON depth limit of 128"),
        ({"a": _cycle()}, "JSON depth limit of 128"),
        ({f"k{n}": 1 for n in range(17)} | {"z": float("nan")}, "NaN or an infinite number"),
        ({"\ud800": 1}, "lone surrogate"),
    ],
)
def test_unusable_arguments_send_nothing_and_keep_the_session(
    tmp_path: Path, arguments: Any, message: str
) -> None:
    log = tmp_path / "log"
    with connect_fake("--log", str(log)) as session:
        with pytest.raises(mcp_sync.ProtocolError, match=message):
            session.call_tool("echo", arguments)
        assert session.call_tool("echo", {"message": "open"}).content[0]["text"] == "open"
    calls = [f for f in logged(log) if f.get("method") == "tools/call"]
    assert len(calls) == 1


def test_arguments_at_the_depth_limit_are_sent() -> None:
    with connect_fake() as session:
        # root 3, list levels 4..128
        session.call_tool("echo", {"message": "deep", "nest": _nested_list(125)})


def test_shared_subgraph_expansion_stops_early() -> None:
    value: Any = [0] * 40
    for _ in range(40):
        value = [value] * 40  # 40**40 leaves once encoded
    with connect_fake() as session:
        # CPU time, not wall-clock time: two CPU hogs beside the suite stretched this
        # to 4.75 s of wall time. Encoding up to the 1 MiB limit takes ~0.5 s of CPU; the
        # expansion it guards against (40**40 leaves) would never end.
        with cpu_bounded(3.0), pytest.raises(mcp_sync.ProtocolError, match="max_outbound_frame_bytes"):
            session.call_tool("echo", {"message": "x", "graph": value})
        assert not session.closed


# ---------------------------------------------------------------- 6. catalog


def _tools(*names: str, **extra: Any) -> str:
    return json.dumps([{"name": n, "inputSchema": {"type": "object"}, **extra} for n in names])


def test_max_tools_refuses_and_never_truncates() -> None:
    with connect_fake("--extra-tools", "5", "--tools", "[]", max_tools=5) as session:
        assert len(session.tools) == 5
    with pytest.raises(mcp_sync.InvalidResponse, match="more than max_tools=5"):
        connect_fake("--extra-tools", "6", "--tools", "[]", max_tools=5)
    with pytest.raises(mcp_sync.InvalidResponse, match="more than max_tools=5"):
        connect_fake("--extra-tools", "6", "--tools", "[]", "--page-size", "2", max_tools=5)


def test_tool_name_bytes_limit() -> None:
    with connect_fake("--tools", _tools("é" * 8), max_tool_name_bytes=16) as session:
        assert session.tools[0].name == "é" * 8
    with pytest.raises(mcp_sync.InvalidResponse, match="over max_tool_name_bytes=15"):
        connect_fake("--tools", _tools("é" * 8), max_tool_name_bytes=15)


def test_tool_document_bytes_counts_description_and_schema() -> None:
    schema = {"type": "object"}
    size = len(json.dumps(schema, separators=(",", ":")))
    tools = json.dumps([{"name": "t", "description": "ü" * 10, "inputSchema": schema}])
    with connect_fake("--tools", tools, max_tool_document_bytes=size + 20):
        pass
    with pytest.raises(mcp_sync.InvalidResponse, match=f"over max_tool_document_bytes={size + 19}"):
        connect_fake("--tools", tools, max_tool_document_bytes=size + 19)


def test_catalog_pages_limit(tmp_path: Path) -> None:
    log = tmp_path / "log"
    with connect_fake("--extra-tools", "6", "--tools", "[]", "--page-size", "2",
                      max_catalog_pages=3) as session:
        assert [t.name for t in session.tools] == [f"tool_{i}" for i in range(6)]
    with pytest.raises(mcp_sync.InvalidResponse, match="more than max_catalog_pages=3"):
        connect_fake("--extra-tools", "7", "--tools", "[]", "--page-size", "2", "--log", str(log),
                     max_catalog_pages=3)
    assert [f.get("method") for f in logged(log)].count("tools/list") == 3


@pytest.mark.parametrize(
    ("mode", "message"),
    [("repeat", "repeats an earlier cursor"), ("empty", "empty or non-string nextCursor"),
     ("endless", "more than max_catalog_pages=32")],
)
def test_cursor_walk_ends(mode: str, message: str) -> None:
    with pytest.raises(mcp_sync.InvalidResponse, match=message):
        connect_fake("--page-size", "1", "--cursor-mode", mode)


@pytest.mark.parametrize(
    ("tools_list", "message"),
    [
        ({"tools": {}}, "no tools array"),
        ({}, "no tools array"),
        ({"tools": ["echo"]}, "a catalog entry is not an object"),
        ({"tools": [{"name": "t"}]}, 'tool \'t\' has no inputSchema of type "object"'),
        ({"tools": [{"name": "t", "inputSchema": {"type": "array"}}]}, "no inputSchema"),
        ({"tools": [{"name": "t", "inputSchema": {"properties": {}}}]}, "no inputSchema"),
        ({"tools": [{"name": "t", "inputSchema": []}]}, "no inputSchema"),
        ({"tools": [{"name": "t", "inputSchema": {"type": "object"}, "outputSchema": "x"}]},
         "outputSchema that is not an object"),
        ({"tools": [{"name": "t", "inputSchema": {"type": "object"}}] * 2}, "names tool 't' twice"),
        ({"tools": [{"name": 5, "inputSchema": {"type": "object"}}]}, "not a string"),
        ({"tools": [], "nextCursor": 7}, "non-string nextCursor"),
        ([], "not an object"),
    ],
)
def test_catalog_entry_rules(tools_list: object, message: str) -> None:
    with pytest.raises(mcp_sync.InvalidResponse, match=message):
        connect_fake("--raw-tools-list", json.dumps(tools_list))


# ---------------------------------------------------------------- 8. stderr


def test_stderr_flood_never_blocks_the_server() -> None:
    with connect_fake("--stderr-flood", str(50_000_000)) as session:
        for _ in range(200):
            session.call_tool("echo", {"message": "x"}, timeout_ms=10_000)
        tail = session._core.transport._tail.text()  # type: ignore[union-attr]
        assert len(tail.encode()) <= mcp_sync.DEFAULT_MAX_STDERR_BYTES


def test_observer_gets_the_tail_on_failure_only() -> None:
    events: list[mcp_sync.DiagnosticEvent] = []
    with connect_fake("--stderr", "starting up", diagnostics=events.append) as session:
        session.call_tool("echo", {"message": "x"})
    assert events == []  # a clean close reports nothing
    with pytest.raises(mcp_sync.ConnectionClosed):
        connect_fake("--stderr", "booting", "--stderr", "no tools today", "--exit-on", "tools/list",
                     diagnostics=events.append)
    assert [e.kind for e in events] == ["stderr"]
    assert events[0].detail.reveal() == "booting\nno tools today"
    assert "booting" not in repr(events[0]) and str(events[0].detail) == "Redacted(...)"


def test_an_observer_that_raises_is_ignored() -> None:
    def explode(_: mcp_sync.DiagnosticEvent) -> None:
        raise RuntimeError("observer bug")

    with pytest.raises(mcp_sync.ConnectionClosed, match="exited with code 3"):
        connect_fake("--stderr", "x", "--exit-on", "tools/list", diagnostics=explode)
    assert not library_threads() or all(not t.is_alive() for t in library_threads())


def test_stderr_tail_keeps_only_max_bytes_and_the_last_unterminated_line() -> None:
    events: list[mcp_sync.DiagnosticEvent] = []
    with connect_fake("--misbehave", diagnostics=events.append, max_stderr_bytes=64) as session:
        session.call_tool("stderr", {"text": "old line\n" * 50 + "  the   final\tline"})
        with pytest.raises(mcp_sync.ConnectionClosed):
            session.call_tool("crash")
    tail = events[-1].detail.reveal()
    assert len(tail.encode()) <= 64
    assert tail.endswith("the final line")


def test_overlong_stderr_line_is_withheld_whole() -> None:
    events: list[mcp_sync.DiagnosticEvent] = []
    with connect_fake("--misbehave", diagnostics=events.append) as session:
        session.call_tool("stderr", {"text": "ghp_" + "A" * 70_000 + "\nshort line\n"})
        with pytest.raises(mcp_sync.ConnectionClosed):
            session.call_tool("crash")
    tail = events[-1].detail.reveal()
    assert "ghp_" not in tail and "AAAA" not in tail
    assert "withheld" in tail and tail.endswith("short line")


FAKE_SECRETS = {
    "github": "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8",
    "github_pat": "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz",
    "openai": "sk-proj-" + "Ab3" * 12,
    "anthropic": "sk-ant-api03-" + "Zx9" * 12,
    "slack": "xoxb-123456789012-123456789012-" + "a" * 24,
    "aws_id": "AKIA" + "ABCDEFGHIJKLMNOP",
    "aws_secret": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "bearer": "Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5",
    "jwt": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    "password": "correct-horse-battery",
    "token": "tok3n-value-123",
    "secret": "s3cr3t-value-456",
    "api_key": "k3y-value-789",
    "userinfo": "hunter2pw",
}


def _stderr_with_secrets() -> str:
    s = FAKE_SECRETS
    return "\n".join(
        [
            f"GITHUB_TOKEN is {s['github']}",
            f"fine-grained {s['github_pat']}",
            f"openai key {s['openai']} anthropic {s['anthropic']}",
            f"slack {s['slack']}",
            f"aws {s['aws_id']} aws_secret_access_key={s['aws_secret']}",
            f"Authorization: Bearer {s['bearer']}",
            f"jwt {s['jwt']}",
            f"password={s['password']} token={s['token']} secret: {s['secret']} api_key={s['api_key']}",
            f"connecting to https://admin:{s['userinfo']}@db.example/x",
            "",
        ]
    )


def test_credentials_never_survive_anywhere(caplog: pytest.LogCaptureFixture) -> None:
    events: list[mcp_sync.DiagnosticEvent] = []
    caplog.set_level("DEBUG")
    with connect_fake("--misbehave", diagnostics=events.append) as session:
        session.call_tool("stderr", {"text": _stderr_with_secrets()})
        with pytest.raises(mcp_sync.McpError) as caught:
            session.call_tool("crash")
    tail = events[-1].detail.reveal()
    everywhere = " ".join(
        [tail, str(caught.value), repr(caught.value), repr(events), str(events[-1].detail),
         caplog.text, repr(session)]
    )
    for kind, secret in FAKE_SECRETS.items():
        assert secret not in everywhere, kind
    assert "[REDACTED]" in tail


def test_redact_unit_cases() -> None:
    from mcp_sync.protocol.redaction import redact

    assert redact("https://user:pw@host/p") == "https://[REDACTED]@host/p"
    assert redact("token=abc&x=1") == "token=[REDACTED]&x=1"
    assert redact("plain words stay") == "plain words stay"


def test_without_an_observer_stderr_is_discarded() -> None:
    with pytest.raises(mcp_sync.ConnectionClosed) as caught:
        connect_fake("--stderr", "secret diagnostics", "--exit-on", "tools/list")
    assert "diagnostics" not in str(caught.value)


def test_no_threads_left_after_the_whole_module() -> None:
    # Joins (waits on the threads' end itself); 30 s is a cap for a loaded machine.
    deadline = time.monotonic() + 30
    for thread in library_threads():
        thread.join(max(0.0, deadline - time.monotonic()))
    assert not [t for t in library_threads() if t.is_alive()], library_threads()


def test_pids_are_reaped_after_failures(tmp_path: Path) -> None:
    session = connect_fake("--misbehave")
    pid = fake_pid(session)
    with pytest.raises(mcp_sync.ProtocolError):
        session.call_tool("deep", {"depth": 200}, timeout_ms=10_000)
    wait_gone(pid)
    session.close()


def test_a_limits_object_sets_every_bound_and_keywords_override_it() -> None:
    shared = mcp_sync.Limits.create(max_tools=6, request_timeout_ms=4_000)
    assert shared.as_options()["max_tools"] == 6
    with connect_fake(limits=shared, request_timeout_ms=5_000) as session:
        assert session.limits.max_tools == 6
        assert session.limits.request_timeout_ms == 5_000
    with pytest.raises(mcp_sync.InvalidResponse, match="max_tools=6"):
        connect_fake("--extra-tools", "2", limits=shared)
    with pytest.raises(mcp_sync.ProtocolError, match=r"option limits must be an mcp_sync\.Limits"):
        connect_fake(limits={"max_tools": 3})


# ---------------------------------------------------------------- caller mistakes are ValueErrors


def _is_a_caller_mistake(error: BaseException) -> None:
    assert isinstance(error, mcp_sync.McpError) and isinstance(error, ValueError)


def test_an_invalid_option_is_an_mcp_error_and_a_value_error(tmp_path: Path) -> None:
    marker = tmp_path / "spawned"
    with pytest.raises(ValueError, match="option max_tools must be a positive integer") as caught:
        mcp_sync.connect(server="x", command="y", max_tools=0)
    _is_a_caller_mistake(caught.value)
    assert isinstance(caught.value, mcp_sync.ProtocolError) and caught.value.kind == "protocol_error"
    assert isinstance(caught.value, mcp_sync.InvalidOption)
    with pytest.raises(mcp_sync.InvalidOption, match="option max_tools") as caught:
        connect_fake("--marker", str(marker), max_tools=True)
    assert not marker.exists()
    with pytest.raises(TypeError, match="max_tool"):  # every option is a named parameter
        mcp_sync.connect(server="x", command="y", max_tool=5)  # type: ignore[call-arg]
    with pytest.raises(mcp_sync.InvalidOption, match="unknown option 'max_tool'"):
        mcp_sync.Limits.create(max_tool=5)
    with pytest.raises(ValueError, match="elicitation must be callable") as caught:
        mcp_sync.Handlers(elicitation=42)  # type: ignore[arg-type]
    _is_a_caller_mistake(caught.value)
    with pytest.raises(ValueError, match="option respawn") as caught:
        mcp_sync.Servers([], respawn=3)  # type: ignore[arg-type]
    _is_a_caller_mistake(caught.value)


def test_an_option_of_the_other_transport_is_refused_not_ignored(tmp_path: Path) -> None:
    marker = tmp_path / "spawned"
    for option, value in (("bearer_token_env", "TOKEN"), ("http_client", object())):
        with pytest.raises(mcp_sync.InvalidOption, match=f"option {option} does not apply to a command"):
            connect_fake("--marker", str(marker), **{option: value})
    for option, value in (("env", {"A": "1"}), ("cwd", "/"), ("inherit_env", True), ("args", ["x"])):
        with pytest.raises(mcp_sync.InvalidOption, match=f"option {option} does not apply to an HTTP"):
            mcp_sync.connect(server="x", url="http://127.0.0.1:9/mcp", **{option: value})
    assert not marker.exists()


def test_options_take_a_model_of_each_transport() -> None:
    from mcp_sync.config import ConnectOptions, HttpConnectOptions, SseConnectOptions, parse_config

    (sse,) = parse_config([{"server": "a", "url": "http://127.0.0.1:9/sse", "type": "sse"}])
    assert isinstance(sse, SseConnectOptions) and isinstance(sse, HttpConnectOptions)
    with pytest.raises(mcp_sync.InvalidOption, match="has no modern era"):
        mcp_sync.connect(sse, protocol="modern")
    with pytest.raises(mcp_sync.InvalidOption, match="options must be a ConnectOptions"):
        mcp_sync.connect({"server": "x", "command": "y"})
    entry = ConnectOptions(server="x", command="y", args=[])
    with pytest.raises(mcp_sync.InvalidOption, match=r"option server must not contain control"):
        mcp_sync.connect(entry, server="a\x1bb")


def test_an_error_the_server_caused_is_not_a_value_error() -> None:
    with connect_fake("--misbehave", max_frame_bytes=4096) as session, pytest.raises(
        mcp_sync.ProtocolError
    ) as caught:
        session.call_tool("raw", {"lines": [_notification_of(4097)]}, timeout_ms=10_000)
    assert not isinstance(caught.value, ValueError)
    with pytest.raises(mcp_sync.InvalidResponse) as refused:
        connect_fake("--extra-tools", "2", max_tools=1)
    assert not isinstance(refused.value, ValueError)


def test_an_unsendable_argument_is_a_caller_mistake() -> None:
    with connect_fake() as session:
        with pytest.raises(mcp_sync.InvalidOption, match="NaN") as caught:
            session.call_tool("echo", {"message": "x", "n": float("nan")})
        _is_a_caller_mistake(caught.value)
        assert not session.closed


def test_connect_names_every_option_and_every_option_is_a_model_field() -> None:
    import inspect

    from mcp_sync.config import ConnectOptions, HttpConnectOptions

    parameters = inspect.signature(mcp_sync.connect).parameters.values()
    assert all(p.kind is not inspect.Parameter.VAR_KEYWORD for p in parameters)
    named = {p.name for p in parameters}
    fields = (set(ConnectOptions.model_fields) | set(HttpConnectOptions.model_fields)) - {
        "include", "exclude", "name_prefix"
    }
    assert fields <= named, fields - named
    # Each limit is spelled once, in Limits: the models and the file derive it.
    for name in LIMITS:
        assert name in named
        assert name in ConnectOptions.model_fields and name in HttpConnectOptions.model_fields
        alias = ConnectOptions.model_fields[name].alias
        assert alias is not None and "_" not in alias


def test_largest_timeouts_work_over_stdio_under_every_protocol() -> None:
    # The era race waits on conditions with these budgets: the largest
    # allowed value must not overflow a wait.
    huge = mcp_sync.MAX_SAFE_INTEGER
    for era, protocol in (("legacy", "auto"), ("modern", "auto"), ("legacy", "legacy"), ("modern", "modern")):
        options = {"protocol": protocol, "handshake_timeout_ms": huge, "request_timeout_ms": huge}
        with connect_fake("--era", era, **options) as session:
            assert session.call_tool("echo", {"message": "x"}, timeout_ms=huge).content[0]["text"] == "x"
