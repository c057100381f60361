"""Notebooks you can look at: docs/guides/work-in-a-jupyter-notebook.md's cells
(its ``runs-in=notebook`` blocks) executed in a real IPython kernel by nbclient,
against the bundled fake server (``--media``) and a real peer (server-everything).

- The display bundles of the cells' outputs: text as text, the chart inline
  as the very PNG the server sent, structured rows as a table, an embedded
  resource by its MIME type and escaped, audio inline, the session and its
  tools as tables, an MCP App as source until ``show_app`` puts it in a
  sandboxed frame.
- Progress in a cell: the ipywidgets bar, tqdm's bar, or a line of text,
  each chosen by what the kernel can import.
- The notebook exported by nbconvert to HTML, and a headless Chromium
  screenshot of the page that is not blank where the image and the tools
  table are (their places are measured in the same page by Chromium itself).

Chromium is Debian's ``chromium`` (scripts/test installs it when run as root);
without it the screenshot test skips, and fails under CI.
"""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

import nbformat
import pytest
from conftest import REPO_ROOT, peer_bin, peers_required
from nbclient import NotebookClient
from test_docs import fenced_blocks

from mcp_sync.testing._media import chart_png

GUIDE = REPO_ROOT / "docs" / "guides" / "work-in-a-jupyter-notebook.md"
SCREENSHOT_IN_DOCS = REPO_ROOT / "docs" / "images" / "notebook.png"
CELL_TIMEOUT = 120
WINDOW = (1100, 2000)
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    # Nothing leaves the machine: every host name fails to resolve.
    "--host-resolver-rules=MAP * ~NOTFOUND",
    f"--window-size={WINDOW[0]},{WINDOW[1]}",
    "--hide-scrollbars",
    "--force-device-scale-factor=1",
]


def guide_cells() -> list[str]:
    blocks = fenced_blocks(GUIDE.read_text(encoding="utf-8"))
    return [block.code.rstrip("\n") for block in blocks if block.runs_in == "notebook"]


def kernel_env(project: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(project), str(REPO_ROOT)])
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    return env


def make_project(root: Path) -> Path:
    """The kernel's working directory. The fake server runs as ``python -m
    mcp_sync.testing`` from it, which imports ``mcp_sync`` from the working
    directory first: the link makes that this tree's package."""
    project = root / "notebook"
    project.mkdir()
    (project / "mcp_sync").symlink_to(REPO_ROOT / "mcp_sync", target_is_directory=True)
    return project


def execute(cells: list[str], project: Path) -> Any:
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(source) for source in cells]
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    client = NotebookClient(
        notebook, timeout=CELL_TIMEOUT, kernel_name="python3", resources={"metadata": {"path": str(project)}}
    )
    client.execute(env=kernel_env(project), cwd=str(project))
    return notebook


def errors_of(notebook: Any) -> list[str]:
    return [
        f"{output['ename']}: {output['evalue']}"
        for cell in notebook.cells
        for output in cell.get("outputs", [])
        if output["output_type"] == "error"
    ]


def cell(notebook: Any, marker: str) -> Any:
    found = [c for c in notebook.cells if marker in c.source]
    assert len(found) == 1, f"{len(found)} cells contain {marker!r}"
    return found[0]


def bundle(notebook: Any, marker: str) -> dict[str, Any]:
    """The display bundle of the cell's result (its execute_result or last display)."""
    outputs = [o for o in cell(notebook, marker).outputs if o["output_type"] in ("execute_result", "display_data")]
    assert outputs, f"the cell with {marker!r} shows nothing"
    return dict(outputs[-1]["data"])


# ---------------------------------------------------------------- the guide, executed


def run_the_guide(root: Path) -> Any:
    project = make_project(root)
    cells = guide_cells()
    if peers_available():
        # A real peer too: its catalog, its image, its progress.
        command = json.dumps(str(peer_bin("everything")))
        cells += [
            f"everything = mcp_sync.connect(server='everything', command={command})\neverything.tools",
            "everything.call_tool('get-tiny-image')",
            "everything.call_tool('trigger-long-running-operation', {'duration': 1, 'steps': 4},"
            " on_progress=Progress('long operation'))",
            "everything.close()",
        ]
    return execute(cells, project)


def peers_available() -> bool:
    try:
        peer_bin("everything")
    except pytest.skip.Exception:
        return False
    return True


def check_the_guide_runs_in_a_kernel_without_error(notebook: Any) -> None:
    assert errors_of(notebook) == []
    assert len(guide_cells()) >= 12


def check_servers_and_the_session_show_their_state_and_tools(notebook: Any) -> None:
    servers = bundle(notebook, 'Servers("notebook_servers.json")')
    assert "<td>demo</td><td>not started (it starts on first use)</td>" in servers["text/html"]
    assert servers["text/plain"] == "demo: not started (it starts on first use)"
    session = bundle(notebook, 'session = servers.session("demo")')
    html = session["text/html"]
    assert "<th>reports itself as</th><td>mcp-sync-fake 1.0</td>" in html
    assert "<th>era</th><td>legacy, protocol 2025-11-25</td>" in html
    assert "<th>health</th><td>open</td>" in html
    # The tools table: a row per tool, with its parameters, their types and descriptions.
    assert html.count("<tr><td><code>") == 11
    assert "<code>values</code> <i>array of integer</i> <b>required</b> — Bar heights, 0-100." in html
    assert "<code>title</code> <i>string</i> — A caption." in html
    assert session["text/plain"].startswith("server: demo; reports itself as: mcp-sync-fake 1.0; era: legacy")


def check_a_result_shows_text_and_the_servers_image_inline(notebook: Any) -> None:
    shown = bundle(notebook, '"chart"')
    size = len(chart_png([35, 80, 55, 95]))
    assert shown["text/plain"] == f"Sales: 4 values\n[image image/png, {size:,} bytes]"
    assert "<pre>Sales: 4 values</pre>" in shown["text/html"]
    found = re.search(r'<img class="mcp-sync-image" src="data:image/png;base64,([A-Za-z0-9+/=]+)"', shown["text/html"])
    assert found is not None
    assert base64.b64decode(found.group(1)) == chart_png([35, 80, 55, 95])


def check_structured_rows_show_as_a_table(notebook: Any) -> None:
    html = bundle(notebook, '"table"')["text/html"]
    assert '<table class="mcp-sync-table"><tr><th>planet</th><th>moons</th><th>au</th></tr>' in html
    assert "<tr><td>Mars</td><td>2</td><td>1.52</td></tr>" in html
    assert "Jupiter" not in html  # limit 4


def check_an_embedded_resource_shows_by_mime_type_and_escaped(notebook: Any) -> None:
    shown = bundle(notebook, '"report"')
    html = shown["text/html"]
    assert '<code>fake://reports/11</code> <span class="mcp-note">text/markdown</span>' in html
    assert "<pre># Report on &lt;notebooks&gt;" in html and "<notebooks>" not in html
    assert "link: <b>chart</b> <code>fake://media/chart.png</code>" in html
    assert "<a " not in html  # no link a server chose
    assert shown["text/plain"] == "[resource fake://reports/11]\n[link fake://media/chart.png]"


def check_audio_plays_inline(notebook: Any) -> None:
    html = bundle(notebook, '"chime"')["text/html"]
    assert '<audio class="mcp-sync-audio" controls src="data:audio/wav;base64,UklGR' in html


def check_resources_and_prompts_show_as_tables_and_contents(notebook: Any) -> None:
    listing = bundle(notebook, "session.list_resources()")
    assert listing["text/plain"] == "4 resources: hello; bytes; chart; dashboard"
    assert "<td>dashboard</td><td>ui://fake/dashboard</td><td>text/html;profile=mcp-app</td>" in listing["text/html"]
    image = bundle(notebook, 'read_resource("fake://media/chart.png")')["text/html"]
    found = re.search(r'src="data:image/png;base64,([A-Za-z0-9+/=]+)"', image)
    assert found is not None and base64.b64decode(found.group(1)) == chart_png([30, 80, 55])
    prompts = bundle(notebook, "session.list_prompts()")
    assert "<td>greet</td><td>Greet someone.</td><td>name*</td>" in prompts["text/html"]
    prompt = bundle(notebook, "session.get_prompt(")
    assert prompt["text/plain"] == "user: Please greet Ada."
    assert "<tr><th>user</th><td><pre>Please greet Ada.</pre></td></tr>" in prompt["text/html"]


def check_an_app_is_source_until_asked_then_a_sandboxed_frame(notebook: Any) -> None:
    source = bundle(notebook, 'session.read_resource("ui://fake/dashboard")')["text/html"]
    assert "&lt;script&gt;" in source and "<script>" not in source and "<iframe" not in source
    frame = bundle(notebook, "show_app(session")["text/html"]
    found = re.fullmatch(
        r'<iframe class="mcp-sync-app" title="ui://fake/dashboard" sandbox="allow-scripts" '
        r'referrerpolicy="no-referrer" srcdoc="([^"]*)" style="width:100%;height:120px;border:1px solid #ccc">'
        r"</iframe>",
        frame,
    )
    assert found is not None, frame
    assert "&lt;script&gt;" in found.group(1) and "<" not in found.group(1)


def check_progress_in_the_guide_finishes(notebook: Any) -> None:
    outputs = cell(notebook, 'Progress("counting")').outputs
    result = [o for o in outputs if o["output_type"] == "execute_result"]
    assert result and result[0]["data"]["text/plain"] == "done after 5 steps"
    assert len(outputs) >= 2, outputs  # the progress display, then the result


def check_a_real_peers_catalog_image_and_progress_render(notebook: Any) -> None:
    if not any("everything" in c.source for c in notebook.cells):
        assert not peers_required(), "server-everything is missing (MCP_SYNC_REQUIRE_PEERS is set)"
        return  # not installed here (scripts/test installs it)
    tools = bundle(notebook, "everything.tools")
    assert "<code>get-tiny-image</code><br>Get Tiny Image Tool" in tools["text/html"]
    assert "<code>steps</code> <i>number</i> — Number of steps in the operation" in tools["text/html"]
    image = bundle(notebook, "get-tiny-image")["text/html"]
    assert '<img class="mcp-sync-image" src="data:image/png;base64,iVBORw0KGgo' in image
    progress = cell(notebook, "trigger-long-running-operation").outputs
    assert progress[-1]["output_type"] == "execute_result", progress


# ---------------------------------------------------------------- progress displays


PROGRESS_CELLS = [
    # ipywidgets and tqdm both hidden: a line of text, updated in place.
    "import sys\nsys.modules['ipywidgets'] = None\nsys.modules['tqdm'] = None\nsys.modules['tqdm.std'] = None",
    "import mcp_sync\nfrom mcp_sync.notebook import Progress\nfrom mcp_sync.testing import server_command\n"
    "command, *args = server_command('--media')\n"
    "session = mcp_sync.connect(server='demo', command=command, args=args)\n"
    "text = Progress('text')\n"
    "session.call_tool('progress', {'steps': 4, 'ms': 150}, on_progress=text)\ntext.style",
    # tqdm back: its bar, on stderr.
    "del sys.modules['tqdm'], sys.modules['tqdm.std']\nbar = Progress('tqdm')\n"
    "session.call_tool('progress', {'steps': 4, 'ms': 150}, on_progress=bar)\nbar.style",
    # ipywidgets back too: a widget.
    "del sys.modules['ipywidgets']\nwidget = Progress('widget')\n"
    "session.call_tool('progress', {'steps': 4, 'ms': 150}, on_progress=widget)\nwidget.style",
    "session.close()",
]


@pytest.mark.timeout(300)
def test_progress_is_a_widget_a_tqdm_bar_or_text_by_what_is_installed(tmp_path: Path) -> None:
    notebook = execute(PROGRESS_CELLS, make_project(tmp_path))
    assert errors_of(notebook) == []
    text, tqdm, widget = notebook.cells[1], notebook.cells[2], notebook.cells[3]
    assert text.outputs[-1]["data"]["text/plain"] == "'text'"
    # nbclient applies the in-place updates: the line as the reader last sees it.
    (line,) = [o for o in text.outputs if o["output_type"] == "display_data"]
    assert line["data"] == {"text/plain": "text: 4/4 (100%) step 4 (done)"}
    assert tqdm.outputs[-1]["data"]["text/plain"] == "'tqdm'"
    stderr = "".join(o["text"] for o in tqdm.outputs if o["output_type"] == "stream" and o["name"] == "stderr")
    assert "tqdm: 100%" in stderr and "4.0/4.0" in stderr and "step 4" in stderr, stderr
    assert widget.outputs[-1]["data"]["text/plain"] == "'widget'"
    (view,) = [o for o in widget.outputs if o["output_type"] == "display_data"]
    assert "application/vnd.jupyter.widget-view+json" in view["data"]
    state = notebook.metadata["widgets"]["application/vnd.jupyter.widget-state+json"]["state"]
    bars = [m["state"] for m in state.values() if m["model_name"] == "FloatProgressModel"]
    labels = [m["state"]["value"] for m in state.values() if m["model_name"] == "LabelModel"]
    assert [(b["value"], b["max"], b["bar_style"], b["description"]) for b in bars] == [(4.0, 4.0, "success", "widget")]
    assert labels == ["step 4"]


# ---------------------------------------------------------------- the page and its screenshot


def chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        reason = "chromium is not installed (scripts/test installs it as root: apt-get install chromium)"
        if os.environ.get("CI") or peers_required():
            pytest.fail(reason)
        pytest.skip(reason)
    return found


# Appended to the exported page: where the first chart image and the tools
# table are, written into the page for --dump-dom to read.
MEASURE = """<script>
window.addEventListener("load", () => {
  const where = (selector) => {
    const r = document.querySelector(selector).getBoundingClientRect();
    return [r.left, r.top, r.right, r.bottom];
  };
  const out = document.createElement("pre");
  out.id = "mcp-sync-measured";
  out.textContent = JSON.stringify({image: where("img.mcp-sync-image"), table: where("table.mcp-sync-tools")});
  document.body.appendChild(out);
});
</script>"""


def offline(page: str) -> str:
    """The exported page without the scripts it would fetch (MathJax, RequireJS)."""
    page = re.sub(r'<script[^>]*\ssrc="https?://[^"]*"[^>]*>\s*</script>', "", page)
    assert not re.search(r'(?:src|href)="https?://', page), "the exported page still loads something"
    return page


def check_the_exported_page_shows_the_table_and_the_image(notebook: Any, root: Path) -> None:
    from nbconvert import HTMLExporter
    from PIL import Image

    browser = chromium()
    page, _ = HTMLExporter().from_notebook_node(notebook)
    page = offline(page)
    target = root / "notebook.html"
    target.write_text(page.replace("</body>", MEASURE + "</body>"), encoding="utf-8")
    profile = root / "chromium-profile"
    common = [browser, *CHROMIUM_FLAGS, f"--user-data-dir={profile}"]
    dom = subprocess.run(
        [*common, "--dump-dom", target.as_uri()], capture_output=True, text=True, timeout=120, check=True
    ).stdout
    measured = re.search(r'<pre id="mcp-sync-measured">([^<]*)</pre>', dom)
    assert measured is not None, "the page did not measure itself"
    places = json.loads(measured.group(1).replace("&quot;", '"'))
    shot = root / "notebook.png"
    subprocess.run(
        [*common, f"--screenshot={shot}", target.as_uri()], capture_output=True, timeout=120, check=True
    )
    image = Image.open(shot).convert("RGB")
    assert image.size == WINDOW
    for name, box in places.items():
        left, top, right, bottom = (round(v) for v in box)
        assert 0 <= left < right <= WINDOW[0] and 0 <= top < bottom <= WINDOW[1], (name, box)
    # The chart: the server's own bars, in their colours, where the image is.
    chart = image.crop(tuple(round(v) for v in places["image"]))
    colours = chart.getcolors(maxcolors=1 << 16) or []
    share = {colour: count / (chart.width * chart.height) for count, colour in colours}
    for bar in ((220, 50, 47), (38, 139, 210), (133, 153, 0), (181, 137, 0)):
        assert share.get(bar, 0) > 0.02, (bar, sorted(share.items(), key=lambda item: -item[1])[:6])
    # The table: text and rules (dark pixels, and contrast), not an empty box.
    table = image.crop(tuple(round(v) for v in places["table"])).convert("L")
    pixels = list(table.get_flattened_data())
    dark = sum(1 for value in pixels if value < 128) / len(pixels)
    assert dark > 0.02 and statistics.pstdev(pixels) > 20, (dark, statistics.pstdev(pixels))
    wanted = os.environ.get("MCP_SYNC_SAVE_SCREENSHOT")
    if wanted:  # to refresh the picture in the docs: MCP_SYNC_SAVE_SCREENSHOT=docs/images/notebook.png
        bottom = min(WINDOW[1], round(places["image"][3]) + 40)
        image.crop((0, 0, WINDOW[0], bottom)).save(wanted, optimize=True)


@pytest.mark.timeout(600)
def test_the_notebook_guide_in_a_kernel_its_bundles_its_page_and_its_screenshot(tmp_path: Path) -> None:
    """One kernel run for every check of the guide's notebook (a module-scoped
    fixture would run it again in each xdist worker)."""
    notebook = run_the_guide(tmp_path)
    check_the_guide_runs_in_a_kernel_without_error(notebook)
    check_servers_and_the_session_show_their_state_and_tools(notebook)
    check_a_result_shows_text_and_the_servers_image_inline(notebook)
    check_structured_rows_show_as_a_table(notebook)
    check_an_embedded_resource_shows_by_mime_type_and_escaped(notebook)
    check_audio_plays_inline(notebook)
    check_resources_and_prompts_show_as_tables_and_contents(notebook)
    check_an_app_is_source_until_asked_then_a_sandboxed_frame(notebook)
    check_progress_in_the_guide_finishes(notebook)
    check_a_real_peers_catalog_image_and_progress_render(notebook)
    check_the_exported_page_shows_the_table_and_the_image(notebook, tmp_path)


# ---------------------------------------------------------------- re-running a cell after an interrupt

# The interrupted cell gets this long before nbclient interrupts the kernel
# (through its kernel manager); the call reaches the server in milliseconds.
INTERRUPT_AFTER_S = 5
SERVER_EXIT_CAP = 30.0


@pytest.mark.timeout(300)
def test_rerunning_the_cell_after_an_interrupted_call_leaves_one_server(tmp_path: Path) -> None:
    """blocking-frameworks.md's notebook cells: build (and call), a long call
    interrupted, a call after it, then the build cell again. IPython keeps the
    interrupt's traceback, whose frames hold the first Servers; still, the
    re-run leaves one server: the first one's process exits."""
    from frameworks import doc_cells, make_project, no_server_left, servers_of, wait_for
    from frameworks import environment as framework_env
    from support import methods

    build, long_call, after = doc_cells("jupyter")
    log = tmp_path / "server.log"
    project = make_project(tmp_path, extra=("--log", str(log)))
    probe = "import sys\nsys.last_traceback is not None"
    old = (
        "tb = sys.last_traceback\n"
        "while not isinstance(tb.tb_frame.f_locals.get('self'), mcp_sync.Servers):\n    tb = tb.tb_next\n"
        "old = tb.tb_frame.f_locals['self']\n"
        "try:\n    old.call_tool('example', 'echo', {'message': 'x'})\n"
        "except mcp_sync.ConnectionClosed as exc:\n    print(exc)\n"
        "old is nb_servers, len(old)"
    )
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(source) for source in (build, long_call, after, probe, build, old)]
    cells = notebook.cells
    client = NotebookClient(
        notebook,
        timeout=CELL_TIMEOUT,
        timeout_func=lambda cell: INTERRUPT_AFTER_S if cell.source == long_call else CELL_TIMEOUT,
        interrupt_on_timeout=True,
        allow_errors=True,
        kernel_name="python3",
        resources={"metadata": {"path": str(project)}},
    )
    with client.setup_kernel(env=framework_env(project), cwd=str(project)):
        client.execute_cell(cells[0], 0)
        (first,) = servers_of(project)
        client.execute_cell(cells[1], 1)
        (error,) = [o for o in cells[1].outputs if o["output_type"] == "error"]
        assert error["ename"] == "KeyboardInterrupt"
        assert methods(log).count("tools/call") == 2  # the add, then the interrupted sleep
        client.execute_cell(cells[2], 2)
        assert cells[2].outputs[-1]["data"]["text/plain"] == "'still here'"
        assert list(servers_of(project)) == [first]
        # The traceback IPython keeps, whose frames hold the first Servers.
        client.execute_cell(cells[3], 3)
        assert cells[3].outputs[-1]["data"]["text/plain"] == "True"
        # Re-run the cell that builds the Servers: the first server exits.
        client.execute_cell(cells[4], 4)
        assert cells[4].outputs[-1]["data"]["text/plain"] == "5"
        wait_for(lambda: first not in servers_of(project), "the first server to exit", SERVER_EXIT_CAP)
        assert len(servers_of(project)) == 1, servers_of(project)
        # The old Servers is closed, and says why.
        client.execute_cell(cells[5], 5)
        printed = cells[5].outputs[0].get("text", "")
        assert printed.startswith("this Servers was closed: a later notebook cell"), cells[5].outputs
        assert cells[5].outputs[-1]["data"]["text/plain"] == "(False, 1)"
    no_server_left(project)
