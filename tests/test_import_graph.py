"""The import graph of ``mcp_sync`` has no cycle (``scripts/import_cycles``),
features reach the session core only through ``session.feature_contract.Core``, and
``Session`` lists its whole surface in one class."""

from __future__ import annotations

import ast
import functools
import importlib.machinery
import importlib.util
import inspect
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

import mcp_sync
from mcp_sync.session.api import Session

REPO = Path(__file__).resolve().parent.parent
SCRIPT = REPO / "scripts" / "import_cycles"
PACKAGE = REPO / "mcp_sync"

# Written against the narrow core protocol: none may import the session.
FEATURES = (
    "session.feature_contract",
    "session.resources",
    "session.refresh",
    "session.server_logs",
    "session.health",
    "protocol.roots",
)
SESSION_MODULES = {"mcp_sync.session.core", "mcp_sync.session.api", "mcp_sync.session.inbound"}


@functools.cache
def _script() -> ModuleType:
    loader = importlib.machinery.SourceFileLoader("import_cycles", str(SCRIPT))
    spec = importlib.util.spec_from_loader("import_cycles", loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


@functools.cache
def _package_graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = _script().graph(PACKAGE)
    return graph


def _write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root / "pkg"


def test_the_script_finds_a_cycle_through_function_local_and_type_only_imports(tmp_path: Path) -> None:
    package = _write(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/a.py": "def f():\n    from .b import g\n",
        "pkg/b.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from . import c\n",
        "pkg/c.py": "from .sub import d\n",
        "pkg/sub/__init__.py": "",
        "pkg/sub/d.py": "from .. import a\n",
        "pkg/e.py": "from . import a, b\n",
    })  # fmt: skip
    run = subprocess.run([sys.executable, str(SCRIPT), str(package)], capture_output=True, text=True, check=False)
    assert run.returncode == 1
    assert "cycle of 4 modules: pkg.a, pkg.b, pkg.c, pkg.sub.d" in run.stdout
    assert "pkg.sub.d -> pkg.a" in run.stdout
    assert "pkg.e" not in run.stdout


def test_the_script_passes_a_graph_without_cycle(tmp_path: Path) -> None:
    package = _write(tmp_path, {
        "pkg/__init__.py": "from .a import f\n__version__ = '1'\n",
        "pkg/a.py": "from . import b\n",
        "pkg/b.py": "import pkg.c\n",
        "pkg/c.py": "import os\n",
    })  # fmt: skip
    run = subprocess.run([sys.executable, str(SCRIPT), str(package)], capture_output=True, text=True, check=False)
    assert (run.returncode, run.stdout) == (0, "no import cycle\n")


def test_from_package_import_name_counts_the_package_itself(tmp_path: Path) -> None:
    package = _write(tmp_path, {
        "pkg/__init__.py": "from .a import f\n__version__ = '1'\n",
        "pkg/a.py": "def f():\n    from . import __version__\n",
    })  # fmt: skip
    edges = _script().graph(package)
    assert edges["pkg.a"] == {"pkg"}
    assert edges["pkg"] == {"pkg.a"}


@pytest.mark.parametrize("feature", FEATURES)
def test_a_feature_does_not_import_the_session(feature: str) -> None:
    edges = _package_graph()
    assert not edges[f"mcp_sync.{feature}"] & SESSION_MODULES


def test_the_core_protocol_names_only_value_types() -> None:
    edges = _package_graph()
    low = {f"mcp_sync.protocol.{name}" for name in ("catalog", "errors", "limits", "roots")}
    assert edges["mcp_sync.session.feature_contract"] <= low


def test_no_feature_or_session_module_is_in_a_cycle() -> None:
    script = _script()
    mine = {
        f"mcp_sync.{name}"
        for name in (*FEATURES, "session.api", "_log", "protocol.catalog", "protocol.output_check", "protocol.text")
    }
    cycles = [component for component in script.components(_package_graph()) if len(component) > 1]
    in_cycles = {name for component in cycles for name in component}
    assert not mine & in_cycles


def test_the_package_import_graph_has_no_cycle() -> None:
    run = subprocess.run([sys.executable, str(SCRIPT)], capture_output=True, text=True, check=False)
    assert (run.returncode, run.stdout) == (0, "no import cycle\n"), run.stdout


# The contracts at the bottom of the session's layers: each may name only
# value types and the contracts below it, never the machinery, an era or the core.
CONTRACTS = {
    "session.pending": {"transports.contract"},
    "session.feature_contract": {"protocol.catalog", "protocol.errors", "protocol.limits", "protocol.roots"},
    "session.eras.contract": {
        "protocol.catalog",
        "protocol.errors",
        "protocol.limits",
        "session.pending",
        "session.feature_contract",
        "transports.contract",
    },
}


@pytest.mark.parametrize("contract", sorted(CONTRACTS))
def test_the_session_contracts_import_only_lower_modules(contract: str) -> None:
    edges = _package_graph()[f"mcp_sync.{contract}"]
    allowed = {f"mcp_sync.{name}" for name in CONTRACTS[contract]}
    assert edges <= allowed, edges - allowed


@pytest.mark.parametrize(
    "machinery",
    [
        "session.server_requests",
        "session.inbound",
        "session.eras.handshake",
        "session.eras.modern",
        "session.call_plan",
        "session.progress",
        "session.tool_tasks",
        "session.cancel",
    ],
)
def test_the_session_machinery_does_not_import_the_core(machinery: str) -> None:
    assert "mcp_sync.session.core" not in _package_graph()[f"mcp_sync.{machinery}"]


def test_session_lists_its_whole_surface_in_one_class() -> None:
    assert Session.__bases__ == (object,)
    public = {name for name in dir(Session) if not name.startswith("_")}
    assert public == {name for name in vars(Session) if not name.startswith("_")}
    for name in public:
        member = vars(Session)[name]
        if name in ("era", "server_info"):
            continue  # instance attributes (slots), documented where they are set
        target = member.fget if isinstance(member, property) else member
        assert inspect.getdoc(target), f"Session.{name} has no docstring"
    assert mcp_sync.Session is Session


# The layers, bottom up. A module may import its own layer and the layers below
# it; lazy and type-only imports count. The loose private modules at the top are
# the foundation (logging, the version, the distribution check), which every layer
# may use, and the surface that builds on sessions.
LAYERS = (
    ("protocol",),
    ("_log", "_version", "_identity"),
    ("transports",),
    ("auth",),
    ("session",),
    ("config",),
    ("", "_servers", "_langchain", "flows", "model_tools", "skills", "otel", "notebook"),
    ("cli", "testing", "demo", "__main__"),
)
MAX_LOOSE_PRIVATE_MODULES = 12


def _layer(module: str) -> int:
    first = module.split(".")[1] if "." in module else ""
    for rank, names in enumerate(LAYERS):
        if first in names:
            return rank
    raise AssertionError(f"{module} is in no layer: add its folder or name to LAYERS")


def test_no_import_runs_back_up_the_layers() -> None:
    upward = sorted(
        f"{module} -> {target}"
        for module, targets in _package_graph().items()
        for target in targets
        if _layer(target) > _layer(module)
    )
    assert not upward, upward


def test_few_private_modules_sit_loose_at_the_top() -> None:
    loose = sorted(path.name for path in PACKAGE.glob("_*.py") if not path.name.startswith("__"))
    assert len(loose) <= MAX_LOOSE_PRIVATE_MODULES, loose


def test_every_subpackage_says_what_lives_there() -> None:
    for init in PACKAGE.rglob("__init__.py"):
        doc = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8")))
        assert doc and len(doc) > 80, f"{init.relative_to(REPO)} has no docstring saying what lives there"
