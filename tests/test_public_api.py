"""The public surface is pinned: each public module's ``__all__`` is exactly
its public names, sorted (as httpx pins its own), so adding, removing or
re-exporting a name is a deliberate change that shows up in review."""

from __future__ import annotations
import __future__

import importlib
import subprocess
import sys
import textwrap
import types

import pytest

# Packages whose __init__ only gathers public names: __all__ is all of them.
PACKAGES = ["mcp_sync", "mcp_sync.auth", "mcp_sync.testing"]
# Modules that also hold their own implementation (and its imports): __all__
# is sorted and names only what exists.
MODULES = ["mcp_sync.config", "mcp_sync.flows", "mcp_sync.model_tools", "mcp_sync.notebook", "mcp_sync.skills"]
_ALLOWED_DUNDERS = {"__version__"}


def _public_names(module: types.ModuleType) -> list[str]:
    # dir(), not vars(): mcp_sync defines some names on first use (its __dir__
    # lists them).
    names = []
    for name in dir(module):
        if name.startswith("_") and name not in _ALLOWED_DUNDERS:
            continue
        value = getattr(module, name)
        if isinstance(value, (types.ModuleType, __future__._Feature)):
            continue  # submodules and `from __future__ import annotations`
        names.append(name)
    return names


@pytest.mark.parametrize("name", PACKAGES + MODULES)
def test_all_is_sorted_and_exists(name: str) -> None:
    module = importlib.import_module(name)
    exported = list(module.__all__)
    assert exported == sorted(exported), f"{name}.__all__ is not sorted"
    assert len(set(exported)) == len(exported)
    missing = [n for n in exported if not hasattr(module, n)]
    assert not missing, f"{name}.__all__ names what it does not define: {missing}"


@pytest.mark.parametrize("name", PACKAGES)
def test_all_is_every_public_name(name: str) -> None:
    module = importlib.import_module(name)
    assert sorted(module.__all__) == sorted(_public_names(module))


def test_feature_value_types_are_defined_on_first_use() -> None:
    """`import mcp_sync` leaves the modules of the handler, resource, prompt
    and root types (and socket, which only HTTP needs) unimported; the first
    use of a name imports its module, and every way of reaching it works."""
    code = textwrap.dedent("""
        import sys
        import mcp_sync
        lazy = ("mcp_sync.session.handlers", "mcp_sync.session.resources", "mcp_sync.protocol.roots", "socket",
                "mcp_sync.session.paging", "mcp_sync.session.response_cache")
        print(sorted(m for m in lazy if m in sys.modules))
        from mcp_sync import Handlers, Resource
        from mcp_sync.session.handlers import Handlers as defined
        print(Handlers is defined, Resource.__module__, mcp_sync.Root.__module__)
        print(sorted(m for m in lazy if m in sys.modules))
        print(mcp_sync.Page.__module__, "mcp_sync.session.response_cache" in sys.modules)
        print("Prompt" in dir(mcp_sync), "Prompt" in vars(mcp_sync))
        try:
            mcp_sync.Handler
        except AttributeError as exc:
            print(exc)
    """)
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    ).stdout.splitlines()
    assert out == [
        "[]",
        "True mcp_sync.session.resources mcp_sync.protocol.roots",
        "['mcp_sync.protocol.roots', 'mcp_sync.session.handlers', 'mcp_sync.session.resources']",
        "mcp_sync.session.paging True",
        "True False",
        "module 'mcp_sync' has no attribute 'Handler'",
    ]
