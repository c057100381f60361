"""The CLI says a server is still starting while it has read nothing (a first
``npx -y`` installing its package), on a terminal, and nothing elsewhere."""

from __future__ import annotations

import io
import json
import os
import pty
import select
import subprocess
import sys
import time
from pathlib import Path

from mcp_sync.cli._starting import SHOW_AFTER_S, StartingStatus

SLOW_START_S = 3


def slow_config(tmp_path: Path) -> Path:
    # A real server (the package's example) behind a start that reads nothing.
    script = f"sleep {SLOW_START_S}; exec \"$0\" -m mcp_sync.testing"
    config = {"mcpServers": {"slow": {"command": "/bin/sh", "args": ["-c", script, sys.executable]}}}
    path = tmp_path / "servers.json"
    path.write_text(json.dumps(config))
    return path


def run_on_a_pty(argv: list[str], env: dict[str, str]) -> tuple[str, str, int]:
    """Run ``argv`` with stderr on a pty: (stderr as shown, stdout, exit code)."""
    leader, follower = pty.openpty()
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=follower, env=env)
    os.close(follower)
    shown = b""
    try:
        while True:
            ready, _, _ = select.select([leader], [], [], 60)
            assert ready, shown
            try:
                chunk = os.read(leader, 4096)
            except OSError:  # the child closed the terminal
                break
            if not chunk:
                break
            shown += chunk
        proc.wait(60)
    finally:
        proc.kill()
        proc.wait()
        os.close(leader)
    assert proc.stdout is not None
    out = proc.stdout.read().decode()
    proc.stdout.close()
    return shown.decode(errors="replace"), out, proc.returncode


def test_a_slow_start_is_shown_on_a_terminal_then_cleared(tmp_path: Path) -> None:
    config = slow_config(tmp_path)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    argv = [sys.executable, "-m", "mcp_sync", "--mcp-config", str(config), "tools"]
    shown, out, code = run_on_a_pty(argv, env)
    assert code == 0, (shown, out)
    assert "server 'slow' is still starting (nothing read yet)" in shown
    assert shown.rstrip().endswith("\x1b[K")  # the line is cleared at the end
    assert "echo" in out


def test_off_a_terminal_nothing_is_drawn(tmp_path: Path) -> None:
    config = slow_config(tmp_path)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    run = subprocess.run([sys.executable, "-m", "mcp_sync", "--mcp-config", str(config), "tools"],
                         capture_output=True, text=True, env=env, timeout=120, check=False)
    assert run.returncode == 0, run.stderr
    assert "still starting" not in run.stderr


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_line_names_the_longest_starting_server_and_counts_the_others() -> None:
    status = StartingStatus(_Tty())
    status.report("a", "starting")
    status.report("b", "starting")
    status.report("c", "starting")
    status.report("c", "reading")
    now = time.monotonic() + SHOW_AFTER_S + 5
    line = status.line(now)
    assert line is not None and line.startswith("server 'a' is still starting")
    assert line.endswith(", and 1 more")
    status.report("a", "reading")
    status.report("b", "reading")
    assert status.line(now) is None


def test_a_server_name_is_escaped_on_the_terminal() -> None:
    status = StartingStatus(_Tty())
    status.report("evil\x1b[2J", "starting")
    line = status.line(time.monotonic() + SHOW_AFTER_S + 1)
    assert line is not None and "\x1b" not in line
