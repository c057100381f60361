"""What a server says about itself and its offerings is kept: titles, icons
and ``_meta`` on the server info, tools, resources, templates and prompts,
``_meta`` on every result, and a tool's MCP App (``Tool.ui_resource_uri``).

Against peers nobody here wrote: the official SDK (``tests/peers/sdk_meta_server.py``)
and fastmcp (``tests/peers/fastmcp_meta_server.py``) over stdio and Streamable
HTTP in both eras, server-everything (handshake era only) over both transports;
then a hostile server (the fake one) for the bounds and the escaping.
"""

from __future__ import annotations

import contextlib
import json
import logging
import sys
from collections.abc import Iterator
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pytest
from conftest import PEERS_SRC, _serve, connect_sdk_peer
from support import connect_fake
from test_cli import config, fake, run

import mcp_sync
from mcp_sync.flows import FlowResult
from mcp_sync.protocol.limits import MAX_JSON_DEPTH

TRANSPORTS = ["stdio", "http"]
ERAS = ["legacy", "modern"]
VERSIONS = {"legacy": "2025-11-25", "modern": "2026-07-28"}
PNG = (
    "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGNgYGBgAAAABQABpfZFQAAAAABJRU5ErkJggg=="
)
LIGHT = {"src": PNG, "mimeType": "image/png", "sizes": ["1x1"], "theme": "light"}
DARK = {"src": "https://example.com/icons/dark.svg", "mimeType": "image/svg+xml", "sizes": ["any"], "theme": "dark"}
SERVER_INFO_KEY = "io.modelcontextprotocol/serverInfo"


def _frozen(value: object) -> None:
    """``value`` is a read-only mapping all the way down."""
    assert isinstance(value, MappingProxyType)
    with pytest.raises(TypeError):
        value["x"] = 1  # type: ignore[index]


# ----------------------------------------------------------------------- the official SDK


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize("transport", TRANSPORTS)
def test_the_official_sdk_s_icons_titles_and_meta_are_kept(transport: str, era: str) -> None:
    with connect_sdk_peer("sdk_meta_server.py", transport, protocol=era) as session:
        assert session.protocol_version == VERSIONS[era]
        info = session.server_info
        tool = session.tool("weather")
        result = session.call_tool("weather", {"city": "Paris"})
        (resource,) = session.list_resources()
        (template,) = session.list_resource_templates()
        (prompt,) = session.list_prompts()
        read = session.read_resource(tool.ui_resource_uri or "")
        got = session.get_prompt("greet", {"who": "Ann"})
        plain = session.tool("plain")

    assert (info.title, info.description, info.website_url) == (
        "SDK Meta Peer", "A server that shows its icons", "https://example.com/sdk-meta"
    )  # fmt: skip
    assert [icon.to_dict() for icon in info.icons] == [LIGHT, DARK]
    assert info.icons[1].theme == "dark" and info.icons[0].sizes == ("1x1",)

    assert (tool.title, tool.annotations) == ("Weather", {"readOnlyHint": True})
    assert tool.ui_resource_uri == "ui://weather/view.html"
    assert tool.to_dict()["icons"] == [LIGHT]
    assert tool.to_dict()["_meta"] == {
        "ui": {"resourceUri": "ui://weather/view.html"}, "example.com/vendor": {"tier": "gold"}
    }  # fmt: skip
    _frozen(tool.meta)
    _frozen(tool.meta["example.com/vendor"])  # type: ignore[index]
    assert (plain.icons, plain.meta, plain.ui_resource_uri) == ((), None, None)
    assert "icons" not in plain.to_dict() and "_meta" not in plain.to_dict()

    assert result.meta is not None and result.meta["example.com/cost"] == {"units": 3}
    _frozen(result.meta)
    assert result.to_dict()["_meta"]["example.com/cost"] == {"units": 3}

    assert resource.to_dict()["icons"] == [DARK] and resource.meta == {"ui": {"prefersBorder": True}}
    assert resource.title == "Weather view"
    assert template.to_dict()["icons"] == [LIGHT, DARK]
    assert template.to_dict()["_meta"] == {"example.com/kind": "template"}
    assert prompt.title == "Greet" and prompt.to_dict()["icons"] == [DARK]
    assert read.contents[0].meta == {"ui": {"prefersBorder": True}}
    assert read.to_dict()["contents"][0]["_meta"] == {"ui": {"prefersBorder": True}}
    assert got.messages[0].content["text"] == "Hello, Ann."

    if era == "modern":
        # 2026-07-28 stamps every result's _meta with the server's description.
        for meta in (info.meta, result.meta, read.meta, got.meta):
            assert meta is not None and meta[SERVER_INFO_KEY]["name"] == "sdk-meta"
        assert read.to_dict()["_meta"][SERVER_INFO_KEY]["icons"][0]["src"] == PNG
    else:
        assert (info.meta, read.meta, got.meta) == (None, None, None)
        assert set(result.meta) == {"example.com/cost", "ui"}


# ----------------------------------------------------------------------- fastmcp


@contextlib.contextmanager
def fastmcp_peer(transport: str, **kwargs: Any) -> Iterator[mcp_sync.Session]:
    pytest.importorskip("fastmcp")
    path = str(PEERS_SRC / "fastmcp_meta_server.py")
    if transport == "stdio":
        with mcp_sync.connect(server="fm", command=sys.executable, args=[path], **kwargs) as session:
            yield session
        return
    with (
        _serve(lambda port: [sys.executable, path, "http", str(port)]) as url,
        mcp_sync.connect_http(server="fm", url=url, **kwargs) as session,
    ):
        yield session


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize("transport", TRANSPORTS)
def test_fastmcp_s_result_meta_reaches_every_result_type(transport: str, era: str) -> None:
    with fastmcp_peer(transport, protocol=era) as session:
        assert session.protocol_version == VERSIONS[era]
        info = session.server_info
        tool = session.tool("chart")
        result = session.call_tool("chart", {"series": "a"})
        read = session.read_resource("ui://chart/app.html")
        got = session.get_prompt("explain", {"topic": "tides"})
        (prompt,) = session.list_prompts()
    icon = {"src": "https://example.com/fastmcp.png", "mimeType": "image/png", "sizes": ["48x48"], "theme": "light"}
    assert [i.to_dict() for i in info.icons] == [icon] and info.website_url == "https://example.com/fastmcp-meta"
    assert tool.ui_resource_uri == "ui://chart/app.html" and tool.title == "Chart"
    assert tool.meta is not None and tool.meta["example.com/owner"] == "charts"
    assert result.meta is not None and result.meta["example.com/cost"] == {"units": 2}
    assert read.meta is not None and read.meta["example.com/rendered"] is True
    assert got.meta is not None and got.meta["example.com/tokens"] == 4
    assert prompt.meta is not None and prompt.meta["example.com/prompt"] == 1
    assert [i.to_dict() for i in prompt.icons] == [icon]
    assert FlowResult.from_call(result).to_dict()["_meta"]["example.com/cost"] == {"units": 2}


# ----------------------------------------------------------------------- server-everything (handshake era)


def _everything_checks(session: mcp_sync.Session) -> None:
    echo = session.tool("echo")
    assert echo.title == "Echo Tool"
    assert echo.annotations is not None and echo.annotations["readOnlyHint"] is True
    assert (echo.icons, echo.meta) == ((), None)
    assert session.server_info.title == "Everything Reference Server"
    assert {p.name: p.title for p in session.list_prompts()}["simple-prompt"] == "Simple Prompt"
    # A task's result names its task in _meta (the tasks extension's related-task key).
    result = session.call_tool("simulate-research-query", {"topic": "tides"}, task=True, timeout_ms=60_000)
    related = (result.meta or {}).get("io.modelcontextprotocol/related-task")
    assert isinstance(related, MappingProxyType) and isinstance(related["taskId"], str)
    assert result.to_dict()["_meta"]["io.modelcontextprotocol/related-task"]["taskId"] == related["taskId"]


def test_server_everything_over_stdio_keeps_titles_annotations_and_task_meta(
    everything_stdio_cmd: list[str],
) -> None:
    command, *args = everything_stdio_cmd
    with mcp_sync.connect(server="everything", command=command, args=args) as session:
        _everything_checks(session)


def test_server_everything_over_http_keeps_titles_annotations_and_task_meta(everything_http_server: str) -> None:
    with mcp_sync.connect_http(server="everything", url=everything_http_server) as session:
        _everything_checks(session)


# ----------------------------------------------------------------------- a hostile server: the bounds


def _tool(name: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "inputSchema": {"type": "object"}, **extra}


def _nested(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {"leaf": "\x1b[2J"}
    for _ in range(depth - 1):
        value = {"k": value}
    return value


def test_meta_and_icons_over_max_tool_document_bytes_are_dropped_and_the_tool_kept(
    caplog: pytest.LogCaptureFixture,
) -> None:
    tools = [
        _tool("big", _meta={"blob": "x" * 3000}, icons=[DARK]),
        _tool("fits", _meta={"blob": "x" * 100}, icons=[DARK]),
    ]
    with (
        caplog.at_level(logging.WARNING, logger="mcp_sync.session"),
        connect_fake("--tools", json.dumps(tools), max_tool_document_bytes=2048) as session,
    ):
        big, fits = session.tool("big"), session.tool("fits")
        assert session.call_tool("big").is_error  # the fake server knows no such tool: it answered
    assert (big.icons, big.meta) == ((), None)
    assert fits.meta == {"blob": "x" * 100} and len(fits.icons) == 1
    (record,) = [r for r in caplog.records if getattr(r, "mcp_event", None) == "metadata_dropped"]
    assert "tool 'big'" in record.getMessage() and "max_tool_document_bytes=2048" in record.getMessage()
    assert "xxxx" not in record.getMessage()


def test_a_resource_whose_meta_is_over_the_bound_is_listed_without_it() -> None:
    listing = {"resources": [
        {"uri": "fake://a", "name": "a", "_meta": {"blob": "x" * 5000}, "icons": [LIGHT]},
        {"uri": "fake://b", "name": "b", "_meta": {"k": 1}, "icons": [LIGHT]},
    ]}  # fmt: skip
    with connect_fake("--raw", "resources/list", json.dumps(listing), max_tool_document_bytes=4096) as session:
        a, b = session.list_resources()
    assert (a.icons, a.meta) == ((), None)
    assert b.meta == {"k": 1} and b.to_dict()["icons"] == [LIGHT]


def test_meta_as_deep_as_a_frame_may_be_is_kept_frozen_and_printed_escaped(tmp_path: Path) -> None:
    # The envelope, result, tools array and entry take 4 levels of the frame's depth.
    deep = _nested(MAX_JSON_DEPTH - 4)
    listing = {"tools": [_tool("deep", _meta=deep)]}
    with connect_fake("--raw-tools-list", json.dumps(listing)) as session:
        tool = session.tool("deep")
    assert tool.to_dict()["_meta"] == deep
    inner: Any = tool.meta
    for _ in range(MAX_JSON_DEPTH - 5):
        _frozen(inner)
        inner = inner["k"]
    assert inner["leaf"] == "\x1b[2J"
    assert "\x1b" not in repr(tool) and "\\x1b[2J" in repr(tool)
    # One level deeper and the frame itself is refused, as any such frame is.
    too_deep = {"tools": [_tool("deep", _meta=_nested(MAX_JSON_DEPTH - 3))]}
    with pytest.raises(mcp_sync.ProtocolError):
        connect_fake("--raw-tools-list", json.dumps(too_deep))


HOSTILE_ICONS = [
    {"src": "javascript:alert(1)"},
    {"src": "JAVASCRIPT:alert(1)", "mimeType": "image/png"},
    {"src": "https://example.com/a.png\x1b[2J"},
    {"src": "https://example.com/\u202egnp.exe"},
    {"src": "https://example.com/a b.png"},
    {"src": "file:///etc/passwd"},
    {"src": "data:text/html;base64,PHNjcmlwdD4="},
    {"src": "ui://x/y.html"},
    {"mimeType": "image/png"},
    {"src": 7},
    "https://example.com/string-not-object.png",
    None,
]


def test_icons_that_are_not_http_or_image_data_uris_are_left_out() -> None:
    kept = {"src": "HTTPS://example.com/ok.png", "mimeType": "image/png\x1b[31m", "sizes": ["48x48", 3],
            "theme": "neon"}  # fmt: skip
    tools = [_tool("t", icons=[*HOSTILE_ICONS, kept]), _tool("u", icons="https://example.com/not-a-list.png")]
    with connect_fake("--tools", json.dumps(tools)) as session:
        icons = session.tool("t").icons
        assert session.tool("u").icons == ()
    (icon,) = icons
    assert icon.src == "HTTPS://example.com/ok.png" and icon.sizes == ("48x48",) and icon.theme is None
    assert icon.mime_type == "image/png\x1b[31m"  # data, as sent: escaped where it is shown
    assert "\x1b" not in repr(icon)


@pytest.mark.parametrize(
    ("meta", "expected"),
    [
        ({"ui": {"resourceUri": "ui://app/view.html"}}, "ui://app/view.html"),
        ({"ui/resourceUri": "ui://legacy/view.html"}, "ui://legacy/view.html"),
        ({"ui": {"resourceUri": "UI://Upper/v.html"}, "ui/resourceUri": "ui://legacy/x"}, "UI://Upper/v.html"),
        ({"ui": {"resourceUri": "javascript:alert(1)"}}, None),
        ({"ui": {"resourceUri": "https://example.com/app.html"}}, None),
        ({"ui": {"resourceUri": "ui://app/\x1b[2J"}}, None),
        ({"ui": {"resourceUri": "ui://app/\u202eview"}}, None),
        ({"ui": {"resourceUri": "ui://app/a b"}}, None),
        ({"ui": {"resourceUri": "ui://"}}, None),
        ({"ui": "ui://app/view.html"}, None),
        ({"ui": {"resourceUri": ["ui://app/view.html"]}}, None),
    ],
)
def test_ui_resource_uri_is_only_ever_a_clean_ui_uri(meta: dict[str, Any], expected: str | None) -> None:
    tool = mcp_sync.Tool("t", None, {"type": "object"}, meta=meta)
    assert tool.ui_resource_uri == expected


def test_result_meta_that_is_not_an_object_is_none() -> None:
    for meta in ("a string", [1, 2], 7):
        raw = json.dumps({"content": [], "_meta": meta})
        with connect_fake("--raw", "tools/call", raw) as session:
            assert session.call_tool("echo", {"message": "x"}).meta is None
    raw = json.dumps({"contents": [{"uri": "x:y", "text": "t", "_meta": "no"}], "_meta": [1]})
    with connect_fake("--features", "--raw", "resources/read", raw) as session:
        read = session.read_resource("x:y")
    assert read.meta is None and read.contents[0].meta is None


def test_prompt_and_completion_results_keep_their_meta() -> None:
    got = {"messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}], "_meta": {"k": [1, 2]}}
    done = {"completion": {"values": ["a"]}, "_meta": {"acme.dev/source": "index"}}
    with connect_fake(
        "--features", "--raw", "prompts/get", json.dumps(got), "--raw", "completion/complete", json.dumps(done)
    ) as session:
        prompt = session.get_prompt("greet", {"name": "x"})
        completion = session.complete({"type": "ref/prompt", "name": "greet"}, {"name": "name", "value": ""})
    assert prompt.meta == {"k": (1, 2)} and prompt.to_dict()["_meta"] == {"k": [1, 2]}
    _frozen(prompt.meta)
    assert completion.meta == {"acme.dev/source": "index"} and completion.values == ("a",)
    assert completion.to_dict() == {"values": ["a"], "hasMore": False}


def test_server_info_icons_are_kept_and_bounded() -> None:
    result = {
        "protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
        "serverInfo": {"name": "n", "version": "1", "icons": [LIGHT, {"src": "javascript:x"}],
                       "description": "d", "websiteUrl": "https://example.com"},
        "_meta": {"example.com/k": "v"},
    }  # fmt: skip
    with connect_fake("--initialize-result", json.dumps(result), protocol="legacy") as session:
        info = session.server_info
    assert [i.to_dict() for i in info.icons] == [LIGHT]
    assert (info.description, info.website_url, info.meta) == ("d", "https://example.com", {"example.com/k": "v"})
    result["serverInfo"]["icons"] = [LIGHT] * 50  # type: ignore[index]
    with connect_fake("--initialize-result", json.dumps(result), protocol="legacy",
                      max_tool_document_bytes=1024) as session:  # fmt: skip
        assert session.server_info.icons == ()
        assert session.server_info.name == "n"


# ----------------------------------------------------------------------- the CLI


def test_the_cli_shows_a_tool_s_app_escaped_and_never_a_hostile_one(tmp_path: Path) -> None:
    tools = [
        _tool("app", description="Has an app.", _meta={"ui": {"resourceUri": "ui://app/view.html"}}),
        _tool("evil", description="x", _meta={"ui": {"resourceUri": "javascript:alert(1)"}},
              icons=[{"src": "javascript:alert(1)"}, {"src": "https://e.com/\x1b[2J.png"}]),
        _tool("ctl", description="y", _meta={"ui": {"resourceUri": "ui://a/\x1b]0;pwned\x07"}}),
    ]  # fmt: skip
    path = config(tmp_path, fake("s", "--tools", json.dumps(tools)))
    table = run("--mcp-config", str(path), "tools")
    assert table.returncode == 0, table.stderr
    lines = table.stdout.splitlines()
    assert lines[0].split() == ["FLOW", "SERVER", "PARAMETERS", "DESCRIPTION", "APP"]
    assert lines[1].split()[-1] == "ui://app/view.html"
    assert lines[2].split()[-1] == "-" and lines[3].split()[-1] == "-"
    assert "javascript" not in table.stdout and "\x1b" not in table.stdout and "\x07" not in table.stdout
    listed = json.loads(run("--mcp-config", str(path), "tools", "--json").stdout)
    assert [flow.get("uiResourceUri") for flow in listed] == ["ui://app/view.html", None, None]


def test_the_cli_table_has_no_app_column_when_no_tool_has_an_app(tmp_path: Path) -> None:
    path = config(tmp_path, fake("s"))
    header = run("--mcp-config", str(path), "tools").stdout.splitlines()[0]
    assert header.split() == ["FLOW", "SERVER", "PARAMETERS", "DESCRIPTION"]


def test_the_cli_prints_icons_and_meta_escaped_in_its_json(tmp_path: Path) -> None:
    listing = {"resources": [{"uri": "fake://a", "name": "a", "icons": [LIGHT],
                              "_meta": {"note": "\x1b[2J\u202e"}}]}  # fmt: skip
    path = config(tmp_path, fake("s", "--features", "--raw", "resources/list", json.dumps(listing)))
    out = run("--mcp-config", str(path), "resources", "--json")
    assert out.returncode == 0, out.stderr
    assert "\x1b" not in out.stdout and "\u202e" not in out.stdout
    (entry,) = json.loads(out.stdout)
    assert entry["_meta"] == {"note": "\x1b[2J\u202e"} and entry["icons"] == [LIGHT]
