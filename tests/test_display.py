"""The Jupyter display of results, catalogs, resources and sessions, without a
kernel: what a hostile server's strings become (escaped text, never markup),
what is inlined and what only described, the bounds, the progress display
outside a kernel, the App frame's sandbox, and which Servers a notebook cell
closes. tests/test_notebook.py runs the same in a real kernel."""

from __future__ import annotations

import base64
import re
import sys
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import mcp_sync
from mcp_sync import notebook
from mcp_sync.config import ConnectOptions
from mcp_sync.protocol.catalog import CallToolResult, Tool, Tools, freeze
from mcp_sync.protocol.limits import Limits
from mcp_sync.session.resources import Listing, ReadResourceResult, Resource, ResourceContents
from mcp_sync.testing import server_command
from mcp_sync.testing._media import chart_png

HOSTILE = '<script>alert("x")</script><img src=x onerror=alert(1)>\x1b[31m'
PNG = base64.b64encode(chart_png([10, 90])).decode()


def html_of(value: Any) -> str:
    bundle: dict[str, str] = value._repr_mimebundle_()
    assert set(bundle) == {"text/plain", "text/html"}
    return bundle["text/html"]


def without_style(html: str) -> str:
    return html.split("</style>", 1)[1]


def no_markup_from(html: str) -> None:
    """Nothing the server said became an element or an attribute."""
    body = without_style(html)
    assert "<script" not in body and "<img src=x" not in body and "onerror=alert" not in body.replace(
        "onerror=alert(1)&gt;", ""
    )
    assert "&lt;script&gt;" in body


def result(*blocks: dict[str, Any], structured: Any = None, error: bool = False) -> CallToolResult:
    return CallToolResult(freeze(list(blocks)), error, freeze(structured))


def test_server_text_everywhere_is_escaped() -> None:
    shown = result(
        {"type": "text", "text": HOSTILE},
        {"type": "resource", "resource": {"uri": HOSTILE, "mimeType": HOSTILE, "text": HOSTILE}},
        {"type": "resource_link", "uri": HOSTILE, "name": HOSTILE, "mimeType": HOSTILE},
        {"type": HOSTILE},
        structured={"rows": [{HOSTILE: HOSTILE}]},
    )
    no_markup_from(html_of(shown))
    plain = shown._repr_mimebundle_()["text/plain"]
    assert "\x1b" not in plain and "\\x1b[31m" in plain  # a terminal sees no escape sequence
    tool = Tool(HOSTILE, HOSTILE, freeze({"properties": {HOSTILE: {"type": HOSTILE, "description": HOSTILE}}}))
    no_markup_from(html_of(Tools((tool,))))
    no_markup_from(html_of(tool))
    listing = Listing((Resource(HOSTILE, HOSTILE, description=HOSTILE, mime_type=HOSTILE),))
    no_markup_from(html_of(listing))


def test_images_and_audio_are_inlined_only_with_a_plain_type_and_base64() -> None:
    good = html_of(result({"type": "image", "mimeType": "image/png", "data": PNG}))
    assert f'<img class="mcp-sync-image" src="data:image/png;base64,{PNG}"' in good
    assert '<audio class="mcp-sync-audio" controls src="data:audio/wav;base64,AAAA">' in html_of(
        result({"type": "audio", "mimeType": "audio/wav", "data": "AAAA"})
    )
    refused = [
        {"type": "image", "mimeType": 'image/png" onload="alert(1)', "data": PNG},
        {"type": "image", "mimeType": "text/html", "data": PNG},
        {"type": "image", "mimeType": "IMAGE/PNG", "data": PNG},
        {"type": "audio", "mimeType": "image/png", "data": PNG},
        {"type": "image", "mimeType": "image/png", "data": '" onload="alert(1)'},
        {"type": "image", "mimeType": "image/png", "data": PNG[:-1]},
        {"type": "image", "mimeType": "image/png", "data": 12},
    ]
    for block in refused:
        body = without_style(html_of(result(block)))
        assert "<img" not in body and "<audio" not in body, block
        assert "not shown" in body, block
        assert 'onload="' not in body


def test_html_and_apps_are_source_never_markup() -> None:
    page = "<h1>app</h1><script>parent.document.title='owned'</script>"
    for uri in ("ui://x/app", "https://x/page"):
        contents = ReadResourceResult((ResourceContents(uri, "text/html;profile=mcp-app", page),))
        body = without_style(html_of(contents))
        assert "<h1>" not in body and "<script" not in body and "<iframe" not in body
        assert "&lt;script&gt;parent.document.title=&#x27;owned&#x27;&lt;/script&gt;" in body
        assert ("app_frame" in body) == uri.startswith("ui://")


def test_an_app_frame_is_sandboxed_and_its_page_escaped() -> None:
    page = '<p title="q">x</p><script>top.location="https://example.invalid"</script>'
    frame = notebook.app_frame(ReadResourceResult((ResourceContents("ui://x/app", "text/html", page),)), height=90)
    html = frame._repr_html_()
    tag = re.fullmatch(r"<iframe ([^>]*)></iframe>", html)
    assert tag is not None, html
    attributes = dict(re.findall(r'(\w+)="([^"]*)"', tag.group(1)))
    assert attributes["sandbox"] == "allow-scripts"
    assert set(attributes) == {"class", "title", "sandbox", "referrerpolicy", "srcdoc", "style"}
    assert "<" not in attributes["srcdoc"] and "&quot;" in attributes["srcdoc"]
    assert attributes["style"].endswith("height:90px;border:1px solid #ccc")


@pytest.mark.parametrize(
    "contents",
    [
        ResourceContents("file:///x.html", "text/html", "<p>"),
        ResourceContents("ui://x/app", "text/plain", "<p>"),
        ResourceContents("ui://x/app", "text/html", None, b"<p>"),
        ReadResourceResult(()),
    ],
)
def test_app_frame_refuses_what_is_not_an_apps_page(contents: Any) -> None:
    with pytest.raises(mcp_sync.InvalidInput, match="app_frame needs the HTML text of a ui:// resource"):
        notebook.app_frame(contents)


def test_show_app_refuses_other_uris_before_sending() -> None:
    with pytest.raises(mcp_sync.InvalidInput, match="show_app needs a ui:// URI"):
        notebook.show_app(None, "file:///x")  # type: ignore[arg-type]
    with pytest.raises(mcp_sync.InvalidOption, match="option height must be an integer from 1 to 10000"):
        notebook.show_app(None, "ui://x", height=0)  # type: ignore[arg-type]


def test_what_is_shown_is_bounded_by_the_limits() -> None:
    from mcp_sync.protocol.display import bundle

    limits = Limits(max_tool_document_bytes=1000, max_tools=3, max_frame_bytes=4000)
    long = result({"type": "text", "text": "é" * 5000})
    html = bundle(long, limits)["text/html"]
    assert "é" * 500 in html and "é" * 501 not in html
    assert "… 9,000 more bytes not shown" in html
    many = result(*({"type": "text", "text": f"block {n}"} for n in range(10)))
    html = bundle(many, limits)["text/html"]
    assert "block 2" in html and "block 3" not in html and "… 7 more blocks not shown" in html
    texts = [{"type": "text", "text": "x" * 1000}] * 3
    budget = result(*texts, {"type": "image", "mimeType": "image/png", "data": PNG})
    html = bundle(budget, Limits(max_tool_document_bytes=1000, max_tools=10, max_frame_bytes=3500))["text/html"]
    assert "<img" not in html and "over the display budget" in html
    tools = Tools(Tool(f"t{n}", None, freeze({"type": "object"})) for n in range(5))
    html = bundle(tools, limits)["text/html"]
    assert html.count("<tr><td>") == 3 and "… 2 more tools not shown" in html


def test_a_deeply_nested_parameter_type_costs_a_fixed_number_of_steps() -> None:
    from mcp_sync.protocol.display import Page, tool_rows

    schema: dict[str, Any] = {"type": "string"}
    for _ in range(100):
        schema = {"anyOf": [schema] * 8}
    tool = Tool("t", None, {"properties": {"p": schema}})  # shared, not frozen: 8**100 paths
    html = tool_rows([tool], Page())
    assert "<code>p</code> <i>any | any" in html


def test_structured_content_is_a_table_of_records_or_json() -> None:
    rows = html_of(result(structured={"rows": [{"a": 1, "b": {"c": 2}}, {"a": 3}]}))
    assert "<tr><th>a</th><th>b</th></tr><tr><td>1</td><td>{&quot;c&quot;: 2}</td></tr>" in rows
    assert "<tr><td>3</td><td></td></tr>" in rows
    plain = html_of(result(structured={"sum": 5, "unit": "m"}))
    assert "<tr><td>sum</td><td>5</td></tr><tr><td>unit</td><td>m</td></tr>" in plain
    nested = html_of(result(structured={"a": {"b": [1, 2]}, "c": 1}))
    assert '<pre>{\n  &quot;a&quot;: {\n    &quot;b&quot;: [\n      1,' in nested


def test_a_tool_error_says_so() -> None:
    bundle = result({"type": "text", "text": "boom"}, error=True)._repr_mimebundle_()
    assert bundle["text/plain"] == "tool error:\nboom"
    assert '<div class="mcp-error">the tool reported an error</div><pre>boom</pre>' in bundle["text/html"]


def test_progress_outside_a_kernel_writes_lines(capsys: pytest.CaptureFixture[str], monkeypatch: Any) -> None:
    monkeypatch.setitem(sys.modules, "tqdm", None)
    monkeypatch.setitem(sys.modules, "tqdm.std", None)
    bar = notebook.Progress("copy")
    assert bar.style == "text"
    bar(1, 4, "one\x1b[2J")
    bar(2, 4, "two")  # within a tenth of a second: not drawn
    bar(4, 4, "done")
    bar(5, 4, "after the end")
    bar.close()
    assert capsys.readouterr().err.splitlines() == ["copy: 1/4 (25%) one\\x1b[2J", "copy: 4/4 (100%) done"]
    with pytest.raises(mcp_sync.InvalidOption, match="option description must be a string"):
        notebook.Progress(3)  # type: ignore[arg-type]


def test_servers_call_tool_passes_on_progress(tmp_path: Path) -> None:
    command, *args = server_command("--features")
    seen: list[tuple[float, float | None, str | None]] = []
    with mcp_sync.Servers(ConnectOptions(server="fake", command=command, args=args)) as servers:
        shown = servers._repr_mimebundle_()["text/plain"]
        assert shown == "fake: not started (it starts on first use)"
        servers.call_tool("fake", "progress", {"steps": 2}, on_progress=lambda *report: seen.append(report))
        assert servers._repr_mimebundle_()["text/plain"].startswith("fake: connected: mcp-sync-fake 1.0, legacy era")
        servers.session("fake").close()
        assert servers._display_rows() == [("fake", "ended (connection_closed): connection scope closed; "
                                                    "the next use starts it again")]  # fmt: skip
    assert seen == [(1.0, 2.0, "step 1"), (2.0, 2.0, "step 2")]
    assert servers._repr_mimebundle_()["text/plain"] == "fake: closed"


# ---------------------------------------------------------------- which Servers a cell closes


@pytest.fixture
def shell(monkeypatch: Any) -> Iterator[dict[str, Any]]:
    """An IPython shell as Servers sees one: ``get_ipython().user_ns``."""
    namespace: dict[str, Any] = {"__name__": "__main__"}
    shell = types.SimpleNamespace(user_ns=namespace)
    monkeypatch.setitem(sys.modules, "IPython", types.SimpleNamespace(get_ipython=lambda: shell))
    monkeypatch.setattr(notebook, "_in_cells", {})
    yield namespace


def test_a_servers_built_in_a_cell_closes_the_earlier_cells_one(shell: dict[str, Any]) -> None:
    command, *args = server_command()
    shell.update(mcp_sync=mcp_sync, ConnectOptions=ConnectOptions, command=command, args=args)
    cell = "servers = mcp_sync.Servers(ConnectOptions(server='fake', command=command, args=args))"
    exec(cell, shell)
    first = shell["servers"]
    first.session("fake")
    kept = first  # as a traceback would keep it
    exec(cell, shell)
    assert shell["servers"] is not kept
    with pytest.raises(mcp_sync.ConnectionClosed, match="a later notebook cell built a Servers for the same"):
        kept.session("fake")
    assert kept._repr_mimebundle_()["text/plain"] == "fake: closed"
    # Other names, or a Servers built outside the shell's namespace: left alone.
    exec("other = mcp_sync.Servers(ConnectOptions(server='other', command=command, args=args))", shell)
    elsewhere: dict[str, Any] = dict(shell)
    exec(cell.replace("servers =", "module_servers ="), elsewhere)
    for name in ("servers", "other"):
        assert shell[name]._repr_mimebundle_()["text/plain"].endswith("not started (it starts on first use)")
    for servers in (shell["servers"], shell["other"], elsewhere["module_servers"]):
        servers.close()
