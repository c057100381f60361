"""No server outlives the interpreter: whatever a daemon thread was doing
with a server when the main thread returned (connecting, closing a session,
``Servers.session()`` connecting), the server is gone 3 s after the
interpreter has exited, even one that ignores SIGTERM and the end of stdin."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tests.conftest import assert_no_process_left

pytestmark = pytest.mark.skipif(os.name != "posix", reason="process groups and /proc")

_PRELUDE = """
import sys, threading, time
import mcp_sync
from mcp_sync.config import ConnectOptions

marker = sys.argv[1]
STUBBORN = [sys.executable, "-m", "mcp_sync.testing", "--ignore-sigterm",
            "--ignore-stdin-eof", "--marker", marker]
HANG = [*STUBBORN, "--hang-on", "initialize"]

def started():
    # The server writes its pid into the marker once it runs.
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            with open(marker) as handle:
                if handle.read():
                    return
        except FileNotFoundError:
            pass
        time.sleep(0.01)
    raise SystemExit("the server never started")
"""

_CASES = {
    "connect": """
def work():
    mcp_sync.connect(server="s", command=HANG[0], args=HANG[1:], protocol="legacy")

threading.Thread(target=work, daemon=True).start()
started()
""",
    "close-dropped": """
holder = [mcp_sync.connect(server="s", command=STUBBORN[0], args=STUBBORN[1:], protocol="legacy")]
core = holder[0]._core

def work():
    holder.clear()  # the last reference: the finalizer closes it on this thread

threading.Thread(target=work, daemon=True).start()
assert core.ended.wait(10), "close never began"
""",
    "close": """
session = mcp_sync.connect(server="s", command=STUBBORN[0], args=STUBBORN[1:], protocol="legacy")
threading.Thread(target=session.close, daemon=True).start()
assert session._core.ended.wait(10), "close never began"
""",
    "servers": """
servers = mcp_sync.Servers(ConnectOptions(
    server="s", command=HANG[0], args=HANG[1:], protocol="legacy"))

def work():
    servers.session("s")

threading.Thread(target=work, daemon=True).start()
started()
""",
}


@pytest.mark.parametrize("case", sorted(_CASES))
def test_no_server_outlives_the_interpreter(case: str, tmp_path: Path) -> None:
    marker = tmp_path / "server.pid"
    script = tmp_path / "child.py"
    script.write_text(textwrap.dedent(_PRELUDE) + textwrap.dedent(_CASES[case]))
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    child = subprocess.run(
        [sys.executable, str(script), str(marker)],
        capture_output=True, timeout=60, env=env, check=False,
    )  # fmt: skip
    assert child.returncode == 0, child.stderr.decode(errors="replace")
    server = int(marker.read_text())
    try:
        # The server led a process group of its own: every member must be gone.
        assert_no_process_left(server, timeout=3.0)
    finally:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(server, signal.SIGKILL)


def test_exit_stops_every_server_at_once(tmp_path: Path) -> None:
    """Three stubborn servers mid-connect: stopped together, so the exit takes
    about the graces of one, not three times as long."""
    script = tmp_path / "child.py"
    script.write_text(textwrap.dedent(_PRELUDE) + textwrap.dedent("""
        markers = [marker + str(i) for i in range(3)]
        for name in markers:
            command = [*HANG[:-3], name, "--hang-on", "initialize"]
            threading.Thread(target=mcp_sync.connect, kwargs=dict(
                server="s", command=command[0], args=command[1:], protocol="legacy"),
                daemon=True).start()
        for name in markers:
            marker = name
            started()
        """))
    marker = tmp_path / "m"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    began = time.monotonic()
    child = subprocess.run(
        [sys.executable, str(script), str(marker)],
        capture_output=True, timeout=60, env=env, check=False,
    )  # fmt: skip
    took = time.monotonic() - began
    assert child.returncode == 0, child.stderr.decode(errors="replace")
    servers = [int((tmp_path / f"m{i}").read_text()) for i in range(3)]
    try:
        assert_no_process_left(set(servers), timeout=3.0)
    finally:
        for pid in servers:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pid, signal.SIGKILL)
    assert took < 8.0, f"the exit took {took:.1f} s"
