"""Where other MCP clients keep their config files (``mcp-sync --from``).

For each client, the candidate files in the order they are tried: the
project's own file first (in the directory the command runs in) where the
client has one, then the user's. The first that exists is read; nothing is
merged across files, so what runs is exactly one file's servers.

Claude Code keeps user-scope servers in ``~/.claude.json`` under
``mcpServers`` and servers added for one project (``claude mcp add``'s
default, "local" scope) under ``projects[<that directory>].mcpServers``;
from that file both are read for the current directory, the local ones
winning on a name.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..protocol.errors import InvalidInput

__all__ = ["CLIENTS", "Location", "candidates", "select_servers"]

CLIENTS: tuple[str, ...] = ("claude-desktop", "claude-code", "cursor", "vscode")
"""The names ``--from`` takes."""


@dataclass(frozen=True)
class Location:
    """One candidate file; ``scope`` is ``"project"`` or ``"user"``."""

    path: Path
    scope: str


def _home() -> Path:
    return Path(os.path.expanduser("~"))


def _config_home(environ: Mapping[str, str]) -> Path:
    """The per-user settings directory of a desktop application."""
    if sys.platform == "darwin":
        return _home() / "Library" / "Application Support"
    if sys.platform == "win32":
        return Path(environ.get("APPDATA") or _home() / "AppData" / "Roaming")
    xdg = environ.get("XDG_CONFIG_HOME", "")
    return Path(xdg) if os.path.isabs(xdg) else _home() / ".config"


def candidates(
    client: str, *, cwd: Path | None = None, environ: Mapping[str, str] | None = None
) -> tuple[Location, ...]:
    """The files ``client`` reads, most specific first."""
    env = os.environ if environ is None else environ
    here = Path.cwd() if cwd is None else cwd
    if client == "claude-desktop":
        return (Location(_config_home(env) / "Claude" / "claude_desktop_config.json", "user"),)
    if client == "claude-code":
        return (
            Location(here / ".mcp.json", "project"),
            Location(_home() / ".claude.json", "user"),
        )
    if client == "cursor":
        return (
            Location(here / ".cursor" / "mcp.json", "project"),
            Location(_home() / ".cursor" / "mcp.json", "user"),
        )
    if client == "vscode":
        return (
            Location(here / ".vscode" / "mcp.json", "project"),
            Location(_config_home(env) / "Code" / "User" / "mcp.json", "user"),
        )
    raise InvalidInput(f"unknown client {client!a}; one of {', '.join(CLIENTS)}")


def _claude_code_user(document: Any, cwd: Path) -> Any:
    if not isinstance(document, dict):
        return document
    servers = document.get("mcpServers")
    merged: dict[str, Any] = dict(servers) if isinstance(servers, dict) else {}
    projects = document.get("projects")
    project = projects.get(str(cwd)) if isinstance(projects, dict) else None
    local = project.get("mcpServers") if isinstance(project, dict) else None
    if isinstance(local, dict):
        merged.update(local)
    if servers is None and local is None:
        return document  # neither: let the format check say so
    return {"mcpServers": merged}


_SELECTORS: dict[tuple[str, str], Callable[[Any, Path], Any]] = {
    ("claude-code", "user"): _claude_code_user,
}


def select_servers(client: str, location: Location, document: Any, *, cwd: Path | None = None) -> Any:
    """The part of ``document`` that holds the servers this client would run."""
    selector = _SELECTORS.get((client, location.scope))
    if selector is None:
        return document
    return selector(document, Path.cwd() if cwd is None else cwd)
