"""Whether the imported ``mcp_sync`` is this project's (the ``mcp-sync-client`` distribution).

An unrelated PyPI project, ``mcp-sync``, also ships a top-level ``mcp_sync`` package and
an ``mcp-sync`` command. pip installs both projects side by side without a word, and the
one installed last overwrites the other's files. ``foreign_install()`` says so, for the
CLI (``mcp-sync --version``, ``python -m mcp_sync``) to print; it never raises.
"""

from __future__ import annotations

import base64
import hashlib
from importlib import metadata
from pathlib import Path

DISTRIBUTION = "mcp-sync-client"
PACKAGE = "mcp_sync"
COMMAND = "mcp-sync"
# The files whose RECORD hashes are compared: the ones the other project's wheel also has.
_CHECKED = ("mcp_sync/__init__.py", "mcp_sync/__main__.py", "mcp_sync/cli/__init__.py")


def foreign_install() -> str | None:
    """A message (several lines, no trailing newline) when the ``mcp_sync`` package that
    is imported does not belong to ``mcp-sync-client`` alone, else None.

    It reports another installed distribution that claims the ``mcp_sync`` package or
    the ``mcp-sync`` command, and files of ``mcp-sync-client`` that no longer match its
    RECORD (overwritten by the other project). Running from a source checkout that is
    not installed at all is not reported.
    """
    try:
        owners = sorted(set(metadata.packages_distributions().get(PACKAGE, [])))
        commands = sorted(
            {
                entry.dist.name
                for entry in metadata.entry_points(group="console_scripts", name=COMMAND)
                if entry.dist is not None
            }
        )
        changed = _changed_files()
    except Exception:  # broken metadata of another package must not break the CLI
        return None
    return verdict(owners, commands, changed)


def verdict(owners: list[str], commands: list[str], changed: list[str]) -> str | None:
    """The message for what was found: the distributions that install a ``mcp_sync``
    package (``owners``) and an ``mcp-sync`` command (``commands``), and this
    distribution's files whose content differs from its RECORD (``changed``)."""
    ours = _normalise(DISTRIBUTION)
    other_packages = [name for name in owners if _normalise(name) != ours]
    other_commands = [name for name in commands if _normalise(name) != ours]
    if not other_packages and not other_commands and not changed:
        return None
    lines = [f"warning: the installed {PACKAGE} package is not (only) {DISTRIBUTION}'s."]
    if other_packages:
        lines.append(
            f"  {', '.join(other_packages)} also installs a package named {PACKAGE}: an unrelated "
            f"project whose files overwrite {DISTRIBUTION}'s (or the reverse)."
        )
    if other_commands:
        lines.append(f"  The {COMMAND} command may belong to {', '.join(other_commands)}.")
    if changed:
        lines.append(f"  Files of {DISTRIBUTION} that another install changed: {', '.join(changed)}.")
    unrelated = " ".join(sorted(set(other_packages + other_commands)))
    remove = f"pip uninstall {unrelated} {DISTRIBUTION}" if unrelated else f"pip uninstall {DISTRIBUTION}"
    lines.append(
        f"  Fix: '{remove}', then reinstall {DISTRIBUTION} alone (or use a separate virtualenv)."
    )
    return "\n".join(lines)


def _normalise(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")


def _changed_files() -> list[str]:
    """Files of the installed ``mcp-sync-client`` whose content differs from its RECORD
    (empty for an editable install or a checkout, whose RECORD lists no package files)."""
    try:
        dist = metadata.distribution(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        return []
    changed = []
    for file in dist.files or []:
        if file.as_posix() not in _CHECKED or file.hash is None or file.hash.mode != "sha256":
            continue
        path = Path(str(dist.locate_file(file)))
        try:
            digest = hashlib.sha256(path.read_bytes()).digest()
        except OSError:
            changed.append(file.as_posix())
            continue
        if base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii") != file.hash.value:
            changed.append(file.as_posix())
    return changed
