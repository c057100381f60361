"""Real MCP servers nobody here wrote, over stdio: the official Python SDK's
server and the npm reference servers (pinned; installed by scripts/test)."""

from __future__ import annotations

import base64
import gc
import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from conftest import assert_no_process_left, descendant_pids
from support import fake_pid

import mcp_sync


def _connect(name: str, argv: list[str], **kwargs: object) -> mcp_sync.Session:
    command, *args = argv
    return mcp_sync.connect(server=name, command=command, args=args, **kwargs)  # type: ignore[arg-type]


def _close_and_check(session: mcp_sync.Session) -> None:
    pid = fake_pid(session)
    tree = {pid} | descendant_pids(pid)
    session.close()
    assert_no_process_left(tree)
    assert_no_process_left(pid)


def _hammer(session: mcp_sync.Session, tool: str, make_args: object, count: int = 64) -> list[mcp_sync.CallToolResult]:
    with ThreadPoolExecutor(max_workers=8) as pool:
        return list(pool.map(lambda n: session.call_tool(tool, make_args(n)), range(count)))  # type: ignore[operator]


@pytest.mark.parametrize(
    ("protocol", "era", "version"),
    [("auto", "modern", "2026-07-28"), ("legacy", "legacy", "2025-11-25")],
)
def test_official_python_sdk_server(
    sdk_stdio_cmd: list[str], protocol: str, era: str, version: str
) -> None:
    # The SDK's server speaks both eras: auto finds the modern one.
    session = _connect("sdk", sdk_stdio_cmd, protocol=protocol)
    try:
        assert (session.era, session.protocol_version) == (era, version)
        names = [t.name for t in session.tools]
        assert names == ["echo", "add", "fail", "structured", "sleep", "forecast", "connect_account"]
        echo = session.call_tool("echo", {"message": "héllo"})
        assert echo.content[0]["text"] == "héllo"
        assert echo.structured_content == {"result": "héllo"}
        assert session.tool("echo").output_schema is not None
        assert session.call_tool("add", {"a": 2, "b": 40}).content[0]["text"] == "42"
        failed = session.call_tool("fail")
        assert failed.is_error is True
        structured = session.call_tool("structured")
        assert mcp_sync.thaw(structured.structured_content) == {"answer": 42, "label": "forty-two", "tags": ["a", "b"]}
        results = _hammer(session, "add", lambda n: {"a": n, "b": 1})
        assert [r.content[0]["text"] for r in results] == [str(n + 1) for n in range(64)]
        unknown = session.call_tool("echo", {"wrong": 1})
        assert unknown.is_error is True  # bad arguments are a tool error, not a JSON-RPC one
    finally:
        _close_and_check(session)


def test_server_everything(everything_stdio_cmd: list[str]) -> None:
    # It sends tools/list_changed before the tools/list reply: the snapshot is still whole.
    session = _connect("everything", everything_stdio_cmd)
    try:
        # A handshake-era server: protocol="auto" falls back after one probe.
        assert (session.era, session.protocol_version) == ("legacy", "2025-11-25")
        names = [t.name for t in session.tools]
        assert len(names) == 13 and len(set(names)) == 13
        assert {"echo", "get-sum", "get-structured-content"} <= set(names)
        assert session.call_tool("echo", {"message": "hi"}).content[0]["text"] == "Echo: hi"
        total = session.call_tool("get-sum", {"a": 2, "b": 3})
        assert "5" in total.content[0]["text"]
        structured = session.call_tool("get-structured-content", {"location": "New York"})
        assert structured.structured_content is not None
        # Its taskSupport is "required": call_tool runs it as a task (issue 13).
        research = session.call_tool("simulate-research-query", {"topic": "x"}, timeout_ms=30_000)
        assert not research.is_error and "Research Report: x" in research.content[0]["text"]
        results = _hammer(session, "echo", lambda n: {"message": str(n)})
        assert [r.content[0]["text"] for r in results] == [f"Echo: {n}" for n in range(64)]
    finally:
        _close_and_check(session)


def test_server_filesystem(filesystem_stdio_cmd: list[str], tmp_path: Path) -> None:
    root = Path(filesystem_stdio_cmd[-1])
    (root / "note.txt").write_text("remember the milk")
    session = _connect("files", filesystem_stdio_cmd)
    try:
        assert session.era == "legacy"
        assert len(session.tools) == 14
        assert all(tool.output_schema is not None for tool in session.tools)
        read = session.call_tool("read_text_file", {"path": str(root / "note.txt")})
        assert read.content[0]["text"] == "remember the milk"
        assert read.structured_content == {"content": "remember the milk"}
        outside = session.call_tool("read_text_file", {"path": str(tmp_path / "elsewhere")})
        assert outside.is_error is True
        results = _hammer(session, "list_directory", lambda _: {"path": str(root)}, count=32)
        assert all("note.txt" in r.content[0]["text"] for r in results)
    finally:
        _close_and_check(session)


def test_server_memory(memory_stdio: tuple[list[str], dict[str, str]]) -> None:
    argv, env = memory_stdio
    session = _connect("memory", argv, env=env)
    try:
        assert session.era == "legacy"
        assert len(session.tools) == 9
        entities = [
            {"name": f"person-{n}", "entityType": "person", "observations": [f"likes {n}"]}
            for n in range(3)
        ]
        created = session.call_tool("create_entities", {"entities": entities})
        assert created.is_error is False
        results = _hammer(
            session,
            "add_observations",
            lambda n: {"observations": [{"entityName": f"person-{n % 3}", "contents": [f"o{n}"]}]},
            count=24,
        )
        assert not any(r.is_error for r in results)
        graph = session.call_tool("read_graph")
        text = graph.content[0]["text"]
        assert {e["name"] for e in json.loads(text)["entities"]} == {"person-0", "person-1", "person-2"}
        missing = session.call_tool("add_observations", {"observations": [{"entityName": "nobody", "contents": ["x"]}]})
        assert missing.is_error is True
    finally:
        _close_and_check(session)


@pytest.mark.parametrize("peer", ["everything", "sdk"])
def test_a_forgotten_peer_session_leaves_no_process(
    peer: str, everything_stdio_cmd: list[str], sdk_stdio_cmd: list[str]
) -> None:
    # A re-run notebook cell: the session is dropped mid-life, never closed.
    argv = everything_stdio_cmd if peer == "everything" else sdk_stdio_cmd
    session = _connect(peer, argv)
    pid = fake_pid(session)
    tree = {pid} | descendant_pids(pid)
    if peer == "sdk":
        with pytest.raises(mcp_sync.Timeout):
            session.call_tool("sleep", {"ms": 30_000}, timeout_ms=200)
    else:
        assert session.call_tool("echo", {"message": "x"}).is_error is False
    del session
    gc.collect()
    assert_no_process_left(tree)


# ---------------------------------------------------------------- big replies (issue 20)


def test_server_filesystem_big_reads_with_the_default_limits(filesystem_stdio_cmd: list[str]) -> None:
    # The sweep's cases: a 5 MiB text file (a ~10.6 MB frame: the text comes
    # twice), a 3 MiB image, and a 20 MiB file (a ~42 MB frame).
    root = Path(filesystem_stdio_cmd[-1])
    (root / "five.txt").write_text("a" * (5 * 2**20))
    (root / "twenty.txt").write_text("b" * (20 * 2**20))
    image = bytes(range(256)) * (3 * 2**20 // 256)
    (root / "picture.png").write_bytes(image)
    session = _connect("files", filesystem_stdio_cmd)
    try:
        five = session.call_tool("read_text_file", {"path": str(root / "five.txt")})
        assert five.content[0]["text"] == "a" * (5 * 2**20)
        del five
        picture = session.call_tool("read_media_file", {"path": str(root / "picture.png")})
        assert picture.content[0]["mimeType"] == "image/png"
        assert base64.b64decode(picture.content[0]["data"]) == image
        del picture
        twenty = session.call_tool("read_text_file", {"path": str(root / "twenty.txt")})
        assert len(twenty.content[0]["text"]) == 20 * 2**20
        del twenty
        assert session.call_tool("list_allowed_directories").is_error is False
    finally:
        _close_and_check(session)


def test_server_filesystem_a_read_over_the_limit_fails_alone(filesystem_stdio_cmd: list[str]) -> None:
    root = Path(filesystem_stdio_cmd[-1])
    (root / "five.txt").write_text("a" * (5 * 2**20))
    (root / "note.txt").write_text("small")
    session = _connect("files", filesystem_stdio_cmd, max_frame_bytes=8 * 2**20)
    try:
        # The TypeScript SDK writes the id last: read from the line's tail.
        with pytest.raises(mcp_sync.ProtocolError, match=r"sent a reply of \d+ bytes, over max_frame_bytes=8388608$"):
            session.call_tool("read_text_file", {"path": str(root / "five.txt")})
        assert not session.closed
        note = session.call_tool("read_text_file", {"path": str(root / "note.txt")})
        assert note.content[0]["text"] == "small"
    finally:
        _close_and_check(session)
