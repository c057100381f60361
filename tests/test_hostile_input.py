"""Hostile config files and command-line input (issue 11, point 7).

Each gets exit code 2 and a one-line message from the command, and a
ConfigError (never a RecursionError, never unbounded memory) from
load_config.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from mcp_sync.config import MAX_CONFIG_BYTES, ConfigError, load_config

pytestmark = pytest.mark.hostile

REPO = Path(__file__).resolve().parent.parent
# A child whose address space is capped: reading /dev/zero without a bound
# dies of MemoryError (a traceback, exit 1) instead of eating the machine.
ADDRESS_SPACE = 2 * 1024**3


def _cap_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))


def run(*argv: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "MCP_SYNC_CONFIG"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    return subprocess.run(
        [sys.executable, "-m", "mcp_sync", *argv],
        capture_output=True, text=True, cwd=cwd, env=env, timeout=120, check=False,
        preexec_fn=_cap_memory,
    )  # fmt: skip


def one_line_usage_error(done: subprocess.CompletedProcess[str], text: str) -> None:
    assert done.returncode == 2, (done.returncode, done.stderr[-2000:])
    assert done.stdout == ""
    assert done.stderr.startswith("mcp-sync: error: "), done.stderr[-2000:]
    assert done.stderr.count("\n") == 1 and done.stderr.endswith("\n")
    assert text in done.stderr
    assert "Traceback" not in done.stderr


def _deep_config(tmp_path: Path) -> Path:
    path = tmp_path / "deep.json"
    path.write_text("[" * 100_000 + "]" * 100_000)
    return path


def _deep_env(tmp_path: Path) -> Path:
    nested = '{"A": ' * 2_000 + '"x"' + "}" * 2_000
    path = tmp_path / "env.json"
    path.write_text(
        '[{"server": "s", "command": "x", "args": [], "env": ' + nested + "}]"
    )
    return path


def test_a_config_nested_100000_deep(tmp_path: Path) -> None:
    path = _deep_config(tmp_path)
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert str(caught.value) == f"{path}: nests objects and arrays deeper than 128 levels"
    one_line_usage_error(
        run("--mcp-config", "deep.json", "tools", cwd=tmp_path),
        "--mcp-config deep.json: nests objects and arrays deeper than 128 levels",
    )


def test_an_env_nested_2000_deep(tmp_path: Path) -> None:
    path = _deep_env(tmp_path)
    with pytest.raises(ConfigError, match="deeper than 128 levels"):
        load_config(path)
    one_line_usage_error(run("--mcp-config", "env.json", "check", cwd=tmp_path), "deeper than 128")


def test_a_deep_mcp_servers_document(tmp_path: Path) -> None:
    nested = '{"x": ' * 5_000 + "1" + "}" * 5_000
    (tmp_path / ".mcp.json").write_text('{"mcpServers": {"s": {"command": "x", "env": ' + nested + "}}}")
    one_line_usage_error(run("--mcp-config", ".mcp.json", "tools", cwd=tmp_path), "deeper than 128")


def test_a_config_as_deep_as_allowed_is_read(tmp_path: Path) -> None:
    # 128 levels: the array, its entry, then 126 more inside "env" (refused by type, not depth).
    nested = '{"A": ' * 125 + '"x"' + "}" * 125
    path = tmp_path / "ok.json"
    path.write_text('[{"server": "s", "command": "x", "args": [], "env": ' + nested + "}]")
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert caught.value.field == "env.A"


def test_args_nested_5000_deep(tmp_path: Path) -> None:
    # A server that cannot start proves --args is checked before anything is spawned.
    (tmp_path / "servers.json").write_text(
        json.dumps([{"server": "x", "command": str(tmp_path / "missing"), "args": []}])
    )
    for deep in ("[" * 5_000 + "]" * 5_000, '{"a": ' * 5_000 + "1" + "}" * 5_000, "[" * 100_000):
        one_line_usage_error(
            run("--mcp-config", "servers.json", "call", "mcp/x/y", "--args", deep, cwd=tmp_path),
            "--args: nests objects and arrays deeper than 126 levels",
        )


def test_args_with_nan_are_refused(tmp_path: Path) -> None:
    (tmp_path / "servers.json").write_text(
        json.dumps([{"server": "x", "command": str(tmp_path / "missing"), "args": []}])
    )
    one_line_usage_error(
        run("--mcp-config", "servers.json", "call", "mcp/x/y", "--args", '{"a": NaN}', cwd=tmp_path),
        "--args: not valid JSON: NaN is not a JSON number",
    )


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="needs /dev/zero")
def test_dev_zero_as_the_config(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        load_config("/dev/zero")
    assert str(caught.value) == (
        f"/dev/zero: is larger than {MAX_CONFIG_BYTES} bytes, the limit for a config file"
    )
    one_line_usage_error(
        run("--mcp-config", "/dev/zero", "tools", cwd=tmp_path),
        "--mcp-config /dev/zero: is larger than 16777216 bytes",
    )


def test_a_file_over_the_size_bound(tmp_path: Path) -> None:
    path = tmp_path / "big.json"
    path.write_bytes(b"[" + b" " * MAX_CONFIG_BYTES + b"]")
    with pytest.raises(ConfigError, match="is larger than 16777216 bytes"):
        load_config(path)
    path.write_bytes(b"[" + b" " * (MAX_CONFIG_BYTES - 2) + b"]")
    assert load_config(path) == ()


@pytest.mark.parametrize("client", ["claude-code", "cursor"])
def test_from_a_hostile_project_file(tmp_path: Path, client: str) -> None:
    target = tmp_path / (".mcp.json" if client == "claude-code" else ".cursor/mcp.json")
    target.parent.mkdir(exist_ok=True)
    target.write_text("{" * 100_000)
    done = run("--from", client, "tools", cwd=tmp_path)
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert done.stderr.splitlines()[-1] == (
        f"mcp-sync: error: --from {client} {target}: nests objects and arrays deeper than 128 levels"
    )
