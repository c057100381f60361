"""Pages when the caller wants them: ``list_tools``, ``list_resources``,
``list_resource_templates`` and ``list_prompts`` take ``cursor=`` and return
one :class:`Page` (its entries and ``next_cursor``); without it they walk the
whole list as before; ``Session.pages()`` walks the pages lazily within
``max_catalog_pages``; ``meta=`` rides on every page's request.

Against the official SDK (tests/peers/sdk_cache_server.py: 25 resources 10 to
a page, 12 prompts 5 to a page) in both eras over stdio and Streamable HTTP,
server-everything, and the fake server (``--page-size``, ``--raw``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import connect_sdk_peer, start_everything_http_server
from support import connect_fake, logged, methods

import mcp_sync

PAGED = ("--page-size", "2", "--extra-resources", "5")  # 7 resources: pages of 2, 2, 2, 1


def test_a_cursor_asks_for_one_page_and_none_asks_for_the_first(tmp_path: Path) -> None:
    log = tmp_path / "frames"
    with connect_fake(*PAGED, "--log", str(log)) as session:
        first = session.list_resources(cursor=None)
        assert isinstance(first, mcp_sync.Page)
        assert [r.uri for r in first] == ["fake://text/hello", "fake://blob/bytes"] and len(first) == 2
        assert first.next_cursor == "2"
        second = session.list_resources(cursor=first.next_cursor)
        assert [r.name for r in second.items] == ["r0", "r1"] and second.next_cursor == "4"
        last = session.list_resources(cursor="6")
        assert [r.name for r in last] == ["r4"] and last.next_cursor is None
        whole = session.list_resources()  # unchanged: every page, as a tuple
        assert isinstance(whole, tuple) and len(whole) == 7
    sent = [frame["params"] for frame in logged(log) if frame.get("method") == "resources/list"]
    assert sent[:3] == [{}, {"cursor": "2"}, {"cursor": "6"}]


def test_every_list_takes_a_cursor() -> None:
    with connect_fake("--features", "--page-size", "1") as session:
        tools = session.list_tools(cursor=None)
        assert [t.name for t in tools] == ["echo"] and tools.next_cursor == "1"
        assert [t.name for t in session.list_tools(cursor="1")] == ["add"]
        templates = session.list_resource_templates(cursor=None)
        assert [t.uri_template for t in templates] == ["fake://text/{name}"] and templates.next_cursor is None
        prompts = session.list_prompts(cursor=None)
        assert [p.name for p in prompts] == ["greet"] and prompts.next_cursor == "1"
        assert [t.name for t in session.list_tools()] == [t.name for t in session.tools]


def test_list_tools_leaves_the_snapshot_and_its_flag_alone() -> None:
    with connect_fake("--features") as session:
        before = session.tools
        session.call_tool("storm", {"add": 1, "count": 1, "kind": "tools"})
        listed = session.list_tools()
        assert len(listed) == len(before) + 1
        assert session.tools is before  # refresh_tools replaces it, not list_tools
        assert session.tools_changed


def test_pages_are_asked_for_as_they_are_iterated(tmp_path: Path) -> None:
    log = tmp_path / "frames"
    with connect_fake(*PAGED, "--log", str(log)) as session:
        before = methods(log).count("resources/list")
        walk = session.pages("resources")
        assert methods(log).count("resources/list") == before  # nothing asked yet
        first = next(walk)
        assert methods(log).count("resources/list") == before + 1
        rest = list(walk)
        assert [len(page) for page in (first, *rest)] == [2, 2, 2, 1]
        assert methods(log).count("resources/list") == before + 4
        resumed = list(session.pages("resources", cursor="4"))
        assert [r.name for page in resumed for r in page] == ["r2", "r3", "r4"]


def test_mistakes_in_the_arguments_are_raised_at_once() -> None:
    with connect_fake() as session:
        for bad in ("", 3, b"x"):
            with pytest.raises(mcp_sync.InvalidOption, match="cursor must be None"):
                session.list_resources(cursor=bad)  # type: ignore[call-overload]
        with pytest.raises(mcp_sync.InvalidOption, match="list must be one of"):
            session.pages("everything")
        with pytest.raises(mcp_sync.InvalidOption, match="cursor must be None"):
            session.pages("prompts", cursor="")
        with pytest.raises(mcp_sync.InvalidOption, match="meta must be a dict"):
            session.pages("prompts", meta="x")  # type: ignore[arg-type]


def test_pages_stop_at_max_catalog_pages() -> None:
    with connect_fake(*PAGED, max_catalog_pages=4) as session:
        assert len(list(session.pages("resources"))) == 4
    with connect_fake(*PAGED, "--extra-tools", "0", max_catalog_pages=3) as session:
        walk = session.pages("resources")
        got = [next(walk), next(walk), next(walk)]
        with pytest.raises(mcp_sync.InvalidResponse, match="more than max_catalog_pages=3 pages"):
            next(walk)
        assert len(got) == 3
        # One page at a time, the caller drives: no cap.
        assert session.list_resources(cursor="6").next_cursor is None


LOOP = json.dumps({"resources": [{"uri": "loop://a", "name": "a"}], "nextCursor": "again"})


@pytest.mark.hostile
def test_a_cursor_loop_ends_the_walk_and_the_pages() -> None:
    with connect_fake("--raw", "resources/list", LOOP) as session:
        with pytest.raises(mcp_sync.InvalidResponse, match="repeats an earlier cursor"):
            session.list_resources()
        walk = session.pages("resources")
        assert next(walk).next_cursor == "again"
        assert next(walk).next_cursor == "again"  # asked for with "again": the same cursor back
        with pytest.raises(mcp_sync.InvalidResponse, match="resources/list page repeats an earlier cursor"):
            next(walk)
        assert not session.closed


def test_meta_rides_on_every_page(tmp_path: Path) -> None:
    log = tmp_path / "frames"
    meta = {"example.com/tenant": "a"}
    with connect_fake(*PAGED, "--features", "--log", str(log)) as session:
        tool_pages = -(-len(session.tools) // 2)
        session.list_resources(meta=meta)
        list(session.pages("prompts", meta=meta))
        session.list_tools(cursor=None, meta=meta)
        session.refresh_tools(meta=meta)
        session.complete({"type": "ref/prompt", "name": "greet"}, {"name": "name", "value": "a"}, meta=meta)
        session.submit_tool("echo", {"message": "x"}, meta=meta).result(timeout=30)
        assert list(session.map_tool("echo", [{"message": "y"}], meta=meta))
    frames = [f for f in logged(log) if f.get("method") in ("resources/list", "prompts/list", "tools/list",
                                                              "completion/complete", "tools/call")]  # fmt: skip
    frames = frames[tool_pages:]  # the walk at connect, without meta
    assert all(f["params"].get("_meta") == meta for f in frames), frames
    counted = [f["method"] for f in frames]
    assert [counted.count(m) for m in ("resources/list", "prompts/list", "tools/list", "completion/complete",
                                       "tools/call")] == [4, 1, 1 + tool_pages, 1, 2]  # fmt: skip


# ------------------------------------------------------------------ the official SDK, both eras, both transports

COMBINATIONS = [(t, e) for t in ("stdio", "http") for e in ("legacy", "modern")]


@pytest.mark.parametrize(("transport", "era"), COMBINATIONS)
def test_sdk_pages(transport: str, era: str) -> None:
    with connect_sdk_peer("sdk_cache_server.py", transport, protocol=era) as session:
        first = session.list_resources(cursor=None)
        assert (len(first), first.next_cursor) == (10, "10")
        assert [len(page) for page in session.pages("resources")] == [10, 10, 5]
        assert [len(page) for page in session.pages("prompts")] == [5, 5, 2]
        assert [p.name for p in session.list_prompts(cursor="10")] == ["p11", "p12"]
        assert len(session.list_resources()) == 25
        assert len(session.list_tools()) == len(session.tools)


@pytest.mark.hostile
@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_sdk_cursor_loop(transport: str) -> None:
    with connect_sdk_peer("sdk_cache_server.py", transport, "loop", protocol="modern") as session:
        with pytest.raises(mcp_sync.InvalidResponse, match="repeats an earlier cursor"):
            session.list_resources()
        walked: list[Any] = []
        with pytest.raises(mcp_sync.InvalidResponse, match="repeats an earlier cursor"):
            walked.extend(session.pages("resources"))
        assert len(walked) == 2 and not session.closed


def test_server_everything_has_one_page(everything_stdio_cmd: list[str]) -> None:
    command, *args = everything_stdio_cmd
    with mcp_sync.connect(server="everything", command=command, args=args) as session:
        page = session.list_resources(cursor=None)
        assert page.next_cursor is None and len(page) == len(session.list_resources())
    with start_everything_http_server() as url, mcp_sync.connect_http(server="everything", url=url) as session:
        page = session.list_prompts(cursor=None)
        assert page.next_cursor is None and page.items == session.list_prompts()
