"""``mcp-sync --version``: which distribution this is, and whether the
imported ``mcp_sync`` really is this project's.

An unrelated project on PyPI, ``mcp-sync``, ships a module of the same name
and a script of the same name; pip installs both side by side without a word,
and each overwrites the other's files. This is where that is detected.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from types import ModuleType

__all__ = ["DISTRIBUTION", "version_report"]

DISTRIBUTION = "mcp-sync-client"
MODULE = "mcp_sync"


def version_report(module: ModuleType | None = None) -> tuple[str, list[str]]:
    """``(line, warnings)``: the version line for stdout, and one warning per
    sign that the ``mcp_sync`` module is not (only) this project's."""
    from importlib import metadata

    # importlib.metadata costs every other command some 20 ms: loaded here.
    from .._identity import foreign_install

    if module is None:
        module = importlib.import_module(MODULE)
    where = Path(getattr(module, "__file__", None) or "?").parent
    try:
        installed: str | None = metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        installed = None
    imported = getattr(module, "__version__", None)
    python = ".".join(map(str, sys.version_info[:3]))
    shown = installed or (f"{imported} (not installed, run from source)" if imported else "unknown")
    line = f"{DISTRIBUTION} {shown}: module {MODULE} from {where}, Python {python}"
    warnings: list[str] = []
    foreign = foreign_install()  # another project's mcp_sync beside or over this one
    if foreign is not None:
        warnings.append(foreign.removeprefix("warning: "))
    client_info = getattr(module, "CLIENT_INFO", None)
    if not hasattr(client_info, "get") or not hasattr(module, "connect"):
        warnings.append(
            f"the imported {MODULE} ({where}) is not this project's: it has no CLIENT_INFO or connect()"
        )
    elif installed is not None and imported != installed:
        warnings.append(
            f"the imported {MODULE} is version {imported}, but {DISTRIBUTION} {installed} is installed: "
            "another copy shadows it"
        )
    return line, warnings
