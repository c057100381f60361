"""The docs are tested like code, so they cannot rot.

- Every fenced ```python block of README.md and docs/**/*.md runs, in a fresh
  interpreter per page whose working directory is a temporary directory: one
  pytest case per page. Each block runs in a fresh namespace, as if pasted
  alone, unless the page declares up front (before its first ``##`` heading)
  that its examples share set-up, with the sentence SHARED_NOTE: its blocks
  then run top to bottom in one namespace. A block whose info string is
  ```python no-run is skipped (framework snippets whose framework is not
  installed, snippets that need a remote server).
- A page runs without the modules of the extras it does not declare: the
  page and mcp_sync cannot import them (EXTRA_MODULES). A page declares its
  extras up front in a ``> Needs:`` line naming
  ``pip install 'mcp-sync-client[EXTRA]'``, and every page whose examples
  use an extra's feature must (EXTRA_USES).
  A block of any language with ``file=PATH`` in its info string (```python
  file=tests/conftest.py, ```json file=servers.json) is not run but written
  to PATH under the working directory, once the blocks before it have run.
  Tracebacks point at the Markdown file and its real line numbers.
  Pages run with OPENAI_BASE_URL, ANTHROPIC_BASE_URL, GEMINI_BASE_URL and
  dummy API keys pointing at a stand-in for the model APIs on 127.0.0.1
  (tests/model_standin.py), so the guides' tool-calling loops run with the
  real SDK clients exactly as written.
- A block with ``runs-in=NAME`` (```python runs-in=jupyter) is not run here but
  by the test that runs that environment (RUNS_IN: a Jupyter kernel for the
  notebook cells, nbclient for the notebook guide's); an unknown NAME fails.
- Every relative link between pages resolves to a file that exists, and a
  ``#fragment`` to a heading (or ``id=`` anchor) in the target page.
- docs/index.md and README.md link to every page under docs/; docs/api.md
  names every public name; docs/troubleshooting.md quotes every error
  message the library builds (the fixed words around its placeholders).
"""

from __future__ import annotations

import ast
import importlib
import json
import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from model_standin import StandIn, environment, standin

REPO = Path(__file__).resolve().parent.parent
DOCS = REPO / "docs"
PAGES = sorted([REPO / "README.md", *DOCS.rglob("*.md")])
PAGE_IDS = [str(page.relative_to(REPO)) for page in PAGES]

# One page gets this long to run all its blocks (several fake servers, a few
# deliberate timeouts and teardowns: a few seconds in practice).
PAGE_TIMEOUT = 120.0

_FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})(?P<info>.*)$")
_RUNNABLE = {"python", "py", "python3"}
_SKIP_FLAG = "no-run"
# Blocks run elsewhere, and the test file that runs them.
RUNS_IN = {"jupyter": "tests/test_frameworks_jupyter.py", "notebook": "tests/test_notebook.py"}

# What a page says, before its first ## heading, when its blocks build on each other.
SHARED_NOTE = "The examples on this page build on each other: run them in order, in one interpreter."
_NEEDS = re.compile(r"^> Needs: (.*(?:\n>(?! *$).*)*)", re.MULTILINE)
_EXTRA = re.compile(r"pip install 'mcp-sync-client\[([a-z]+)\]'")
# The top-level modules each extra of pyproject.toml installs.
EXTRA_MODULES = {
    "http": ("httpx",),
    "validation": ("jsonschema", "re2"),
    "auth": ("httpx", "joserfc", "cryptography"),
    "langchain": ("langchain_core",),
    # (otel is not blocked: the official SDK, which some pages use, imports
    # opentelemetry itself.)
    "skills": ("yaml",),
    "testing": ("mcp",),
}
# Code in a page's blocks (run or not) that only works with an extra.
EXTRA_USES = {
    "connect_http(": ("http", "auth"),
    "import httpx": ("http", "auth"),
    "validate_output=True": ("validation",),
    "mcp_sync.auth": ("auth",),
    "from mcp_sync import auth": ("auth",),
    "langchain_tools(": ("langchain",),
    "from mcp_sync import otel": ("otel",),
    "mcp_sync.otel": ("otel",),
    "load_skill(": ("skills",),
    "connect_in_process(": ("testing",),
}


def page_head(text: str) -> str:
    """What a page says before its first ``##`` heading (its title and lead)."""
    return _without_fences(text).split("\n## ", 1)[0]


def declared_extras(text: str) -> set[str]:
    return {extra for needs in _NEEDS.findall(page_head(text)) for extra in _EXTRA.findall(needs)}


def shares_namespace(text: str) -> bool:
    return SHARED_NOTE in " ".join(page_head(text).replace("\n>", "\n").split())


def blocked_modules(extras: set[str]) -> tuple[str, ...]:
    allowed = {module for extra in extras for module in EXTRA_MODULES.get(extra, ())}
    return tuple(sorted({m for modules in EXTRA_MODULES.values() for m in modules} - allowed))


@dataclass(frozen=True)
class Block:
    line: int  # 1-based line number, in the page, of the block's first code line
    language: str
    flags: tuple[str, ...]
    code: str

    @property
    def file(self) -> str | None:
        """The PATH of a ``file=PATH`` flag: the block is written there, not run."""
        for flag in self.flags:
            if flag.startswith("file="):
                return flag.removeprefix("file=")
        return None

    @property
    def runs_in(self) -> str | None:
        """The NAME of a ``runs-in=NAME`` flag: another test runs the block."""
        for flag in self.flags:
            if flag.startswith("runs-in="):
                return flag.removeprefix("runs-in=")
        return None

    @property
    def runs(self) -> bool:
        return (
            self.language in _RUNNABLE
            and _SKIP_FLAG not in self.flags
            and self.file is None
            and self.runs_in is None
        )

    @property
    def used(self) -> bool:
        """Whether the page's test runs or writes this block."""
        return self.runs or self.file is not None

    @property
    def first_line(self) -> str:
        for text in self.code.splitlines():
            if text.strip():
                return text.strip()
        return "(empty block)"


def fenced_blocks(text: str) -> list[Block]:
    """The fenced code blocks of a Markdown page (CommonMark fences)."""
    blocks: list[Block] = []
    lines = text.splitlines()
    index = 0
    while index < len(lines):
        opening = _FENCE.match(lines[index])
        if opening is None or (opening["fence"][0] == "`" and "`" in opening["info"]):
            index += 1
            continue
        indent = len(opening["indent"].expandtabs())
        fence = opening["fence"]
        words = opening["info"].split()
        language = words[0].lower() if words else ""
        body: list[str] = []
        index += 1
        start = index + 1
        while index < len(lines):
            closing = _FENCE.match(lines[index])
            if (
                closing is not None
                and closing["fence"][0] == fence[0]
                and len(closing["fence"]) >= len(fence)
                and not closing["info"].strip()
            ):
                break
            raw = lines[index]
            # Remove up to the opening fence's indentation (a block in a list item).
            strip = len(raw) - len(raw.lstrip(" "))
            body.append(raw[min(indent, strip) :])
            index += 1
        index += 1  # past the closing fence (or the end of the page)
        blocks.append(Block(start, language, tuple(words[1:]), "".join(f"{b}\n" for b in body)))
    return blocks


# Runs in the child interpreter: argv[1] is the page, argv[2] its name for
# messages, argv[3] a JSON file of its blocks, argv[4] a JSON object of options:
# "shared" (the blocks run in one namespace, else each in a fresh one) and
# "blocked" (top-level modules that the page and mcp_sync may not import: those of
# the extras the page does not declare). Each block is compiled with the page as
# its filename and padded so that its line numbers are the page's.
_RUNNER = r"""
import importlib.util, json, os, sys, traceback
page, display, blocks = sys.argv[1], sys.argv[2], json.load(open(sys.argv[3], encoding="utf-8"))
options = json.loads(sys.argv[4])
library = os.path.dirname(importlib.util.find_spec("mcp_sync").origin) + os.sep

class ExtraNotDeclared:
    # Only imports made by the page or by mcp_sync are refused: a third-party
    # package the page uses (an SDK built on httpx) brings its own dependencies.
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] not in options["blocked"]:
            return None
        frame = sys._getframe(1)
        while frame is not None and (frame.f_code.co_filename.startswith("<frozen")
                                     or "importlib" in frame.f_code.co_filename):
            frame = frame.f_back
        where = frame.f_code.co_filename if frame is not None else ""
        if where == page or where.startswith(library):
            raise ModuleNotFoundError(
                f"No module named {name!r} ({display} does not declare the extra that installs it)", name=name)
        return None

sys.meta_path.insert(0, ExtraNotDeclared())
namespace = {"__name__": "__main__", "__file__": page}
for block in blocks:
    if not options["shared"]:
        namespace = {"__name__": "__main__", "__file__": page}
    code = "\n" * (block["line"] - 1) + block["code"]
    try:
        if block["file"] is not None:
            target = os.path.abspath(block["file"])
            if not target.startswith(os.getcwd() + os.sep):
                raise ValueError(f"file={block['file']} is outside the working directory")
            os.makedirs(os.path.dirname(target), exist_ok=True)
            with open(target, "w", encoding="utf-8") as handle:
                handle.write(block["code"])
            continue
        exec(compile(code, page, "exec"), namespace)
    except BaseException as exc:
        if isinstance(exc, SystemExit) and exc.code in (None, 0):
            continue
        sys.stdout.flush()
        print(f"\n*** {display}: the block at line {block['line']} failed: {block['first']}",
              file=sys.stderr)
        traceback.print_exc()
        sys.exit(1)
"""


def _run_page(
    page: Path,
    blocks: list[Block],
    workdir: Path,
    extra_env: dict[str, str] | None = None,
    *,
    shared: bool = True,
    blocked: tuple[str, ...] = (),
) -> subprocess.CompletedProcess[str]:
    display = str(page.relative_to(REPO))
    spec = workdir.parent / f"{workdir.name}-blocks.json"
    spec.write_text(
        json.dumps(
            [
                {"line": b.line, "code": b.code, "first": b.first_line, "file": b.file}
                for b in blocks
            ]
        ),
        encoding="utf-8",
    )
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    env["PYTHONUNBUFFERED"] = "1"
    env.update(extra_env or {})
    proc = subprocess.Popen(
        [sys.executable, "-c", _RUNNER, str(page), display, str(spec),
         json.dumps({"shared": shared, "blocked": list(blocked)})],
        cwd=workdir,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=PAGE_TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        err += f"\n*** {display}: still running after {PAGE_TIMEOUT:g} s; killed"
        return subprocess.CompletedProcess(proc.args, -9, out, err)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


@pytest.fixture(scope="module")
def model_api() -> Iterator[StandIn]:
    """The stand-in model API the guides' SDK clients talk to."""
    with standin() as running:
        yield running


@pytest.mark.parametrize("page", PAGES, ids=PAGE_IDS)
def test_python_blocks_run(page: Path, tmp_path: Path, model_api: StandIn) -> None:
    blocks = [b for b in fenced_blocks(page.read_text(encoding="utf-8")) if b.used]
    if not any(b.runs for b in blocks):
        return
    workdir = tmp_path / "cwd"
    workdir.mkdir()
    text = page.read_text(encoding="utf-8")
    result = _run_page(
        page, blocks, workdir, environment(model_api),
        shared=shares_namespace(text), blocked=blocked_modules(declared_extras(text)),
    )  # fmt: skip
    if result.returncode != 0:
        pytest.fail(
            f"{page.relative_to(REPO)}: a python block failed (exit {result.returncode})\n"
            f"--- stdout ---\n{result.stdout[-4000:]}\n--- stderr ---\n{result.stderr[-8000:]}",
            pytrace=False,
        )
    assert model_api.problems == [], model_api.problems


GUIDES = [page for page in PAGES if page.parent.name in ("guides", "concepts")]


@pytest.mark.parametrize("page", GUIDES, ids=[str(page.relative_to(REPO)) for page in GUIDES])
def test_pages_that_use_an_extra_say_so_up_front(page: Path) -> None:
    text = page.read_text(encoding="utf-8")
    declared = declared_extras(text)
    assert declared <= set(_project_extras()), f"unknown extras {declared - set(_project_extras())}"
    code = "".join(b.code for b in fenced_blocks(text) if b.language in _RUNNABLE)
    for use, extras in EXTRA_USES.items():
        if use in code:
            assert declared & set(extras), (
                f"{page.relative_to(REPO)}: its examples use {use!r}; say up front "
                f"\"> Needs: `pip install 'mcp-sync-client[{extras[0]}]'`\""
            )


def _project_extras() -> dict[str, list[str]]:
    import tomllib

    with (REPO / "pyproject.toml").open("rb") as handle:
        extras: dict[str, list[str]] = tomllib.load(handle)["project"]["optional-dependencies"]
    return extras


# Distributions whose import name is another.
_IMPORT_NAMES = {"PyYAML": "yaml", "google_re2": "re2"}


def test_extra_modules_match_pyproject() -> None:
    extras = _project_extras()
    for extra, modules in EXTRA_MODULES.items():
        names = {
            r.split(">")[0].split("=")[0].split("<")[0].split("[")[0].strip().replace("-", "_")
            for r in extras[extra]
        }
        names = {_IMPORT_NAMES.get(name, name) for name in names}
        assert set(modules) == names, (extra, names)


def test_the_runner_gives_each_block_a_fresh_namespace_unless_shared(tmp_path: Path) -> None:
    page = REPO / "docs" / "__probe__.md"  # never written: only its name is used
    blocks = [Block(3, "python", (), "x = 1\n"), Block(7, "python", (), "print(x)\n")]
    for shared, code in ((True, 0), (False, 1)):
        workdir = tmp_path / f"cwd-{shared}"
        workdir.mkdir()
        result = _run_page(page, blocks, workdir, shared=shared)
        assert result.returncode == code, result.stderr
    assert "NameError: name 'x' is not defined" in result.stderr


def test_the_runner_refuses_an_undeclared_extra_to_the_page_and_the_library(tmp_path: Path) -> None:
    page = REPO / "docs" / "__probe__.md"
    workdir = tmp_path / "cwd"
    workdir.mkdir()
    result = _run_page(page, [Block(3, "python", (), "import httpx\n")], workdir, blocked=("httpx",))
    assert result.returncode == 1
    assert "No module named 'httpx' (docs/__probe__.md does not declare the extra" in result.stderr
    # The library's own lazy import is refused too (the error says which extra).
    code = "import mcp_sync\nmcp_sync.connect_http(server='x', url='http://127.0.0.1:9/mcp')\n"
    result = _run_page(page, [Block(3, "python", (), code)], tmp_path / "cwd", blocked=("httpx",))
    assert result.returncode == 1 and "mcp-sync-client[http]" in result.stderr, result.stderr


def test_page_heads_declare_extras_and_shared_set_up() -> None:
    text = (
        "# T\n\n> Needs: `pip install 'mcp-sync-client[http]'` and\n> `pip install 'mcp-sync-client[auth]'`.\n>\n"
        + "> {}:\n> {}\n".format(*SHARED_NOTE.split(": "))
        + "\n## Later\n\n> Needs: `pip install 'mcp-sync-client[validation]'`\n"
    )
    assert declared_extras(text) == {"http", "auth"}
    assert shares_namespace(text)
    assert not shares_namespace(f"# T\n\n## Later\n\n{SHARED_NOTE}\n")
    assert blocked_modules({"http"}) == (
        "cryptography", "joserfc", "jsonschema", "langchain_core", "mcp", "re2", "yaml",
    )  # fmt: skip


@pytest.mark.parametrize("page", PAGES, ids=PAGE_IDS)
def test_blocks_run_elsewhere_have_a_runner(page: Path) -> None:
    for block in fenced_blocks(page.read_text(encoding="utf-8")):
        if block.runs_in is not None:
            assert block.runs_in in RUNS_IN, f"line {block.line}: no test runs runs-in={block.runs_in}"
            assert (REPO / RUNS_IN[block.runs_in]).exists()


# ---------------------------------------------------------------- links

_INLINE_CODE = re.compile(r"(`+)(?:(?!\1).)+?\1", re.DOTALL)
_INLINE_LINK = re.compile(
    r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]"  # the text, which may hold [brackets]
    r"\(\s*<?([^)\s>]*)>?(?:\s+\"[^\"]*\")?\s*\)"  # (target "optional title")
)
_REFERENCE = re.compile(r"^[ ]{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$", re.MULTILINE)
_HTML_LINK = re.compile(r"""<a\s[^>]*href=["']([^"']+)["']""", re.IGNORECASE)
_HEADING = re.compile(r"^[ ]{0,3}#{1,6}[ \t]+(.*?)[ \t]*#*[ \t]*$", re.MULTILINE)
_ANCHOR = re.compile(r"""<[^>]+\s(?:id|name)=["']([^"']+)["']""", re.IGNORECASE)
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


def _without_fences(text: str) -> str:
    """The page with its fenced blocks blanked (line numbers are kept)."""
    lines = text.splitlines()
    for block in fenced_blocks(text):
        count = block.code.count("\n")
        for i in range(block.line - 2, min(len(lines), block.line + count)):
            lines[i] = ""
    return "\n".join(lines)


def _prose(text: str) -> str:
    """The page without fenced blocks and inline code (links there are examples)."""
    return _INLINE_CODE.sub("", _without_fences(text))


def slug(heading: str) -> str:
    """The anchor GitHub gives a heading."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link: keep its text
    text = re.sub(r"<[^>]+>", "", text).strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    text = _without_fences(page.read_text(encoding="utf-8"))
    found: set[str] = set()
    counts: dict[str, int] = {}
    for heading in _HEADING.findall(text):
        base = slug(heading)
        n = counts.get(base, 0)
        counts[base] = n + 1
        found.add(base if n == 0 else f"{base}-{n}")
    found.update(_ANCHOR.findall(page.read_text(encoding="utf-8")))
    return found


def links(page: Path) -> list[str]:
    text = _prose(page.read_text(encoding="utf-8"))
    return [
        *_INLINE_LINK.findall(text),
        *_REFERENCE.findall(text),
        *_HTML_LINK.findall(text),
    ]


def broken_links(page: Path) -> list[str]:
    problems = []
    for target in links(page):
        if not target or _SCHEME.match(target):
            continue  # http:, https:, mailto: ... are not checked here
        path_part, _, fragment = target.partition("#")
        if path_part.startswith("/"):
            problems.append(f"{target}: use a relative link (site-absolute paths break on GitHub)")
            continue
        resolved = (page.parent / path_part).resolve() if path_part else page
        if REPO not in resolved.parents and resolved != REPO:
            problems.append(f"{target}: points outside the repository")
            continue
        if not resolved.exists():
            problems.append(f"{target}: {resolved.relative_to(REPO)} does not exist")
            continue
        if fragment and resolved.suffix == ".md" and fragment not in anchors(resolved):
            problems.append(f"{target}: no heading #{fragment} in {resolved.relative_to(REPO)}")
    return problems


@pytest.mark.parametrize("page", PAGES, ids=PAGE_IDS)
def test_relative_links_resolve(page: Path) -> None:
    problems = broken_links(page)
    assert not problems, f"{page.relative_to(REPO)} has broken links:\n  " + "\n  ".join(problems)


def _linked_pages(page: Path) -> set[Path]:
    out = set()
    for target in links(page):
        path_part = target.partition("#")[0]
        if path_part and not _SCHEME.match(path_part) and not path_part.startswith("/"):
            out.add((page.parent / path_part).resolve())
    return out


@pytest.mark.parametrize("hub", ["README.md", "docs/index.md"])
def test_every_docs_page_is_linked_from_the_hubs(hub: str) -> None:
    hub_page = REPO / hub
    assert hub_page.exists(), f"{hub} is missing"
    linked = _linked_pages(hub_page)
    missing = [
        str(page.relative_to(REPO))
        for page in sorted(DOCS.rglob("*.md"))
        if page.resolve() != hub_page.resolve() and page.resolve() not in linked
    ]
    assert not missing, f"{hub} does not link to: {', '.join(missing)}"


# ---------------------------------------------------------------- the API page


@pytest.mark.parametrize(
    "module",
    [
        "mcp_sync", "mcp_sync.testing", "mcp_sync.flows", "mcp_sync.config", "mcp_sync.model_tools",
        "mcp_sync.auth", "mcp_sync.skills", "mcp_sync.notebook",
    ],
)
def test_api_page_names_every_public_name(module: str) -> None:
    api = (DOCS / "api.md").read_text(encoding="utf-8")
    names = importlib.import_module(module).__all__
    missing = [name for name in names if f"`{name}" not in api]
    assert not missing, f"docs/api.md does not describe {module}: {', '.join(missing)}"


# ---------------------------------------------------------------- troubleshooting

_ERROR_CLASSES = {
    "SpawnFailed",
    "ProtocolError",
    "InvalidOption",
    "InvalidInput",
    "DeclarationError",
    "ProjectionError",
    "NarrowingError",
    "InvalidResponse",
    "ConnectionClosed",
    "Timeout",
    "ToolNotFound",
    "RemoteError",
    "InputRequired",
    "NoCommonVersion",
    "ServerUnavailable",
    "_NumberRefused",
    "AuthError",
    "LoginRequired",
}


def _literal_chunks(node: ast.AST) -> list[str]:
    return [
        part.value
        for part in ast.walk(node)
        if isinstance(part, ast.Constant) and isinstance(part.value, str)
    ]


def library_messages() -> list[tuple[str, int, str]]:
    """``(file, line, fixed text)`` of each session error the library builds.

    The fixed text is the longest literal part of the message: the words
    around its ``{placeholders}``.
    """
    found = []
    package = REPO / "mcp_sync"
    sources = [
        *package.glob("_*.py"),
        *(package / "protocol").glob("*.py"),
        *(package / "transports").glob("*.py"),
        *(path for path in (package / "session").rglob("*.py") if path.name != "skills.py"),
        *(path for path in (package / "config").glob("*.py") if path.name != "__init__.py"),
        *(package / "auth").glob("_*.py"),
    ]
    for source in sorted(sources):
        tree = ast.parse(source.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and node.args):
                continue
            func = node.func
            name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
            if name not in _ERROR_CLASSES:
                continue
            chunks = [c.strip() for c in _literal_chunks(node.args[0]) if c.strip()]
            if chunks:
                found.append((source.name, node.lineno, max(chunks, key=len)))
    return found


def test_troubleshooting_lists_every_library_message() -> None:
    page = " ".join((DOCS / "troubleshooting.md").read_text(encoding="utf-8").split())
    missing = [f"{f}:{line}: {text!r}" for f, line, text in library_messages() if text not in page]
    assert not missing, "docs/troubleshooting.md does not mention:\n  " + "\n  ".join(missing)


# ---------------------------------------------------------------- counts and lists that could rot

_NUMBER_WORDS = {
    8: "eight", 9: "nine", 10: "ten", 11: "eleven", 12: "twelve", 13: "thirteen", 14: "fourteen", 15: "fifteen",
}


def _session_kinds() -> set[str]:
    """Every ``kind`` of mcp_sync's session errors; ``auth_failed`` (the OAuth extra's)
    has its own section of the troubleshooting page."""
    import mcp_sync
    from mcp_sync.protocol import errors as _errors

    return {
        cls.kind
        for cls in vars(_errors).values()
        if isinstance(cls, type) and issubclass(cls, mcp_sync.McpError) and cls is not mcp_sync.McpError
    } - {"auth_failed"}


def _kinds_table() -> list[str]:
    """The kinds in the first table of docs/troubleshooting.md, in order."""
    text = (DOCS / "troubleshooting.md").read_text(encoding="utf-8")
    table = text.split("\n\n| kind |", 1)[1].split("\n\n", 1)[0]
    return re.findall(r"^\| `([a-z_]+)` \|", table, re.MULTILINE)


def test_troubleshooting_counts_and_lists_every_kind() -> None:
    table = _kinds_table()
    assert set(table) == _session_kinds() and len(table) == len(set(table)), table
    text = " ".join((DOCS / "troubleshooting.md").read_text(encoding="utf-8").split())
    assert f"is one of {_NUMBER_WORDS[len(table)]} stable strings" in text
    assert "## `auth_failed` and OAuth" in (DOCS / "troubleshooting.md").read_text(encoding="utf-8")


def test_readme_names_every_kind_and_counts_the_limits() -> None:
    import dataclasses

    import mcp_sync

    readme = (REPO / "README.md").read_text(encoding="utf-8")
    missing = [kind for kind in sorted(_session_kinds() | {"auth_failed"}) if f"`{kind}`" not in readme]
    assert not missing, f"README.md does not name the error kinds {missing}"
    limits = len(dataclasses.fields(mcp_sync.Limits))
    assert f"{_NUMBER_WORDS[limits]} limits" in " ".join(readme.split())


def test_readme_names_every_extra() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    missing = [extra for extra in _project_extras() if f"`[{extra}]`" not in readme]
    assert not missing, f"README.md's install section does not name the extras {missing}"


# ---------------------------------------------------------------- the checker itself


def test_fence_parser_handles_indentation_flags_and_longer_fences() -> None:
    page = (
        "text\n"
        "```python\nx = 1\n```\n"
        "- item\n\n  ```python no-run\n  import flask\n  ```\n"
        "````md\n```python\nnot = 'a block'\n```\n````\n"
        "~~~py\ny = 2\n~~~\n"
    )
    blocks = fenced_blocks(page)
    assert [(b.line, b.language, b.flags, b.runs) for b in blocks] == [
        (3, "python", (), True),
        (8, "python", ("no-run",), False),
        (11, "md", (), False),
        (16, "py", (), True),
    ]
    assert blocks[1].code == "import flask\n"
    assert blocks[2].code == "```python\nnot = 'a block'\n```\n"
    written = fenced_blocks("```python file=tests/conftest.py\nimport pytest\n```\n")[0]
    assert (written.file, written.runs, written.used) == ("tests/conftest.py", False, True)


def test_file_blocks_are_written_before_later_blocks_run(tmp_path: Path) -> None:
    blocks = [
        Block(2, "json", ("file=conf/servers.json",), '{"a": 1}\n'),
        Block(6, "python", (), "import json\nassert json.load(open('conf/servers.json'))\n"),
    ]
    workdir = tmp_path / "cwd"
    workdir.mkdir()
    result = _run_page(REPO / "docs" / "__probe__.md", blocks, workdir)
    assert result.returncode == 0, result.stderr
    assert (workdir / "conf" / "servers.json").exists()


def test_slugs_follow_github() -> None:
    assert slug("Ending: five events") == "ending-five-events"
    assert slug("`connect()` options") == "connect-options"
    assert slug("The ten limits") == "the-ten-limits"
    assert slug("stdout: noise versus protocol") == "stdout-noise-versus-protocol"


def test_a_failing_block_names_the_page_and_line(tmp_path: Path) -> None:
    page = REPO / "docs" / "__probe__.md"  # never written: only its name is used
    blocks = [Block(3, "python", (), "x = 1\n"), Block(7, "python", (), "assert x == 2, 'boom'\n")]
    workdir = tmp_path / "cwd"
    workdir.mkdir()
    result = _run_page(page, blocks, workdir)
    assert result.returncode == 1
    assert "docs/__probe__.md: the block at line 7 failed: assert x == 2, 'boom'" in result.stderr
    assert "line 7" in result.stderr and "AssertionError: boom" in result.stderr
