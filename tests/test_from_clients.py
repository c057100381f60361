"""mcp-sync --from CLIENT: the config files other MCP clients keep."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from support import converse_on_a_pty

from mcp_sync.config import ConfigError, client_config_paths, load_client_config

REPO = Path(__file__).resolve().parent.parent
SERVER = {"command": sys.executable, "args": ["-m", "mcp_sync.testing"]}


def _servers(name: str = "example", **extra: Any) -> dict[str, Any]:
    return {"mcpServers": {name: {**SERVER, **extra}}}


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "home"
    folder.mkdir()
    monkeypatch.setenv("HOME", str(folder))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(folder / ".config"))
    return folder


@pytest.fixture
def project(tmp_path: Path) -> Path:
    folder = tmp_path / "project"
    folder.mkdir()
    return folder


def _write(path: Path, document: object) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document))
    return path


def run(*argv: str, cwd: Path, home: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "MCP_SYNC_CONFIG"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    env["HOME"] = str(home)
    env["XDG_CONFIG_HOME"] = str(home / ".config")
    return subprocess.run(
        [sys.executable, "-m", "mcp_sync", *argv],
        capture_output=True, text=True, cwd=cwd, env=env, timeout=120, check=False,
    )  # fmt: skip


@pytest.mark.skipif(sys.platform in ("darwin", "win32"), reason="Linux locations")
def test_the_paths_tried(home: Path, project: Path) -> None:
    assert client_config_paths("claude-desktop", cwd=project) == (
        str(home / ".config/Claude/claude_desktop_config.json"),
    )
    assert client_config_paths("claude-code", cwd=project) == (
        str(project / ".mcp.json"), str(home / ".claude.json"),
    )  # fmt: skip
    assert client_config_paths("cursor", cwd=project) == (
        str(project / ".cursor/mcp.json"), str(home / ".cursor/mcp.json"),
    )  # fmt: skip
    assert client_config_paths("vscode", cwd=project) == (
        str(project / ".vscode/mcp.json"), str(home / ".config/Code/User/mcp.json"),
    )  # fmt: skip


def test_the_project_file_comes_first(home: Path, project: Path) -> None:
    _write(home / ".cursor/mcp.json", _servers("user-server"))
    path, (entry,) = load_client_config("cursor", cwd=project)
    assert (path, entry.server) == (str(home / ".cursor/mcp.json"), "user-server")
    _write(project / ".cursor/mcp.json", _servers("project-server"))
    path, (entry,) = load_client_config("cursor", cwd=project)
    assert (path, entry.server) == (str(project / ".cursor/mcp.json"), "project-server")


def test_claude_code_user_file_reads_user_and_local_scopes(home: Path, project: Path) -> None:
    _write(
        home / ".claude.json",
        {
            "numStartups": 12,
            "mcpServers": {"shared": SERVER, "both": {**SERVER, "namePrefix": "user"}},
            "projects": {
                str(project): {"mcpServers": {"both": {**SERVER, "namePrefix": "local"}}},
                "/elsewhere": {"mcpServers": {"other": SERVER}},
            },
        },
    )
    path, entries = load_client_config("claude-code", cwd=project)
    assert path == str(home / ".claude.json")
    assert [(e.server, e.name_prefix) for e in entries] == [("shared", None), ("both", "local")]


def test_no_file_lists_the_paths_tried(home: Path, project: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        load_client_config("vscode", cwd=project)
    assert str(caught.value).startswith("vscode: no config file found; looked for ")
    assert str(project / ".vscode/mcp.json") in str(caught.value)
    with pytest.raises(ValueError, match="unknown client 'zed'"):
        load_client_config("zed")


@pytest.mark.skipif(sys.platform in ("darwin", "win32"), reason="Linux locations")
def test_cli_from_each_client(home: Path, project: Path) -> None:
    files = {
        "claude-desktop": (home / ".config/Claude/claude_desktop_config.json", _servers()),
        "claude-code": (project / ".mcp.json", _servers(type="stdio")),
        "cursor": (home / ".cursor/mcp.json", _servers()),
        "vscode": (project / ".vscode/mcp.json", {"servers": {"example": {"type": "stdio", **SERVER}}}),
    }
    for client, (path, document) in files.items():
        _write(path, document)
        # A project's file runs its commands only when trusted (no terminal here).
        trust = ("--trust-project",) if path.is_relative_to(project) else ()
        done = run("--from", client, *trust, "tools", cwd=project, home=home)
        assert done.returncode == 0, done.stderr
        assert done.stderr == f"mcp-sync: reading {path} (--from {client})\n"
        assert done.stdout.splitlines()[1].startswith("mcp/example/echo ")


@pytest.mark.skipif(sys.platform in ("darwin", "win32"), reason="Linux locations")
@pytest.mark.parametrize("client", ["claude-code", "cursor", "vscode"])
def test_a_project_file_is_not_run_without_trust(home: Path, project: Path, client: str, tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    server = {"command": sys.executable, "args": ["-m", "mcp_sync.testing", "--marker", str(marker)]}
    path = {
        "claude-code": project / ".mcp.json",
        "cursor": project / ".cursor/mcp.json",
        "vscode": project / ".vscode/mcp.json",
    }[client]
    _write(path, {"servers" if client == "vscode" else "mcpServers": {"evil": {"type": "stdio", **server}}})
    done = run("--from", client, "tools", cwd=project, home=home)
    assert done.returncode == 2
    assert f"{path} is a project's file and would run 1 command(s); refusing without a terminal" in done.stderr
    assert "--trust-project" in done.stderr
    assert not marker.exists()
    # After the subcommand too, and the flag runs it.
    done = run("--from", client, "tools", "--trust-project", cwd=project, home=home)
    assert done.returncode == 0, done.stderr
    assert marker.exists()


@pytest.mark.skipif(sys.platform in ("darwin", "win32"), reason="Linux locations")
def test_a_user_file_runs_as_before(home: Path, project: Path, tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    _write(home / ".claude.json", {"mcpServers": {"mine": {
        "command": sys.executable, "args": ["-m", "mcp_sync.testing", "--marker", str(marker)]}}})  # fmt: skip
    done = run("--from", "claude-code", "tools", cwd=project, home=home)
    assert done.returncode == 0, done.stderr
    assert marker.exists()


@pytest.mark.skipif(sys.platform in ("darwin", "win32"), reason="Linux locations and a pty")
@pytest.mark.parametrize(("answer", "runs"), [(b"y\n", True), (b"n\n", False), (b"\n", False)])
def test_a_project_file_asks_on_a_terminal(
    home: Path, project: Path, tmp_path: Path, answer: bytes, runs: bool
) -> None:
    marker = tmp_path / "ran"
    _write(project / ".mcp.json", {"mcpServers": {"evil": {
        "command": sys.executable, "args": ["-m", "mcp_sync.testing", "--marker", str(marker)]}}})  # fmt: skip
    env = {k: v for k, v in os.environ.items() if k != "MCP_SYNC_CONFIG"}
    env.update(PYTHONPATH=str(REPO), HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"))
    argv = [sys.executable, "-m", "mcp_sync", "--from", "claude-code", "tools"]
    shown, returncode = converse_on_a_pty(argv, project, env, answer)
    assert b"is a project's file; it runs:" in shown
    assert f"{sys.executable} -m mcp_sync.testing --marker {marker}".encode() in shown
    assert (returncode == 0) is runs
    assert marker.exists() is runs


def test_cli_from_errors(home: Path, project: Path) -> None:
    done = run("--from", "cursor", "tools", cwd=project, home=home)
    assert done.returncode == 2
    assert done.stderr.startswith("mcp-sync: error: --from cursor: no config file found; looked for ")
    path = _write(project / ".cursor/mcp.json", {"mcpServers": {"broken": {"command": 5}}})
    done = run("tools", "--from", "cursor", cwd=project, home=home)
    assert done.returncode == 2
    assert done.stderr == (
        f'mcp-sync: error: --from cursor {path}: entry "broken", field command: must be a string\n'
    )
    done = run("--from", "cursor", "--mcp-config", "x.json", "tools", cwd=project, home=home)
    assert done.returncode == 2
    assert done.stderr == "mcp-sync: error: give --mcp-config or --from, not both\n"
    done = run("--from", "zed", "tools", cwd=project, home=home)
    assert done.returncode == 2 and "invalid choice: 'zed'" in done.stderr
