"""Platforms without epoll, poll or SIGKILL (macOS and the BSDs have no epoll;
Windows has none of the three): the attributes are deleted before mcp_sync is
imported, in a fresh interpreter, and the stdio transport does everything it
does here: connect, calls from many threads, a server request, a timeout and
its cancellation, a crash, Servers replacing it, a server that must be
signalled at close, and a grandchild in the server's process group. Nothing
may be left running.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from support import alive, wait_gone

SCRIPT = textwrap.dedent(
    """
    import json, select, signal, sys, threading, time
    for dotted in sys.argv[1].split(","):
        module, name = dotted.split(".")
        delattr(sys.modules[module], name)

    import mcp_sync
    from mcp_sync.transports import stdio as _stdio  # noqa: F401
    from mcp_sync.config import ConnectOptions
    from mcp_sync.testing import server_command

    report = {"pids": []}
    command, *args = server_command("--misbehave")
    with mcp_sync.connect(server="s", command=command, args=args) as session:
        transport = session._core.transport
        report["pids"].append(transport.pid)
        report["leads"] = transport._epoll is not None
        report["direct"] = transport._stdin.direct
        results = []
        threads = [threading.Thread(target=lambda n=n: results.append(
            session.call_tool("add", {"a": n, "b": 1}).structured_content["sum"])) for n in range(16)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        report["sums"] = sorted(results)
        report["pong"] = session.call_tool("ping_client", {}).content[0]["text"]
        report["big"] = len(session.call_tool("echo", {"message": "x" * 200_000}).content[0]["text"])
        try:
            session.call_tool("hang", timeout_ms=100)
        except mcp_sync.Timeout:
            report["timeout"] = True
        report["grandchild"] = int(session.call_tool("grandchild").content[0]["text"])
        session.ping(timeout_ms=5_000)

    command, *args = server_command("--misbehave")
    with mcp_sync.Servers(ConnectOptions(server="s", command=command, args=args)) as servers:
        report["pids"].append(servers.session("s")._core.transport.pid)
        try:
            servers.call_tool("s", "crash")
        except mcp_sync.ConnectionClosed as exc:
            report["crash"] = str(exc)
        report["after"] = servers.call_tool("s", "echo", {"message": "again"}).content[0]["text"]
        report["pids"].append(servers.session("s")._core.transport.pid)

    # A server that ignores the end of its stdin must be signalled at close.
    command, *args = server_command("--ignore-stdin-eof")
    session = mcp_sync.connect(server="s", command=command, args=args)
    report["pids"].append(session._core.transport.pid)
    session.close()

    deadline = time.monotonic() + 5
    while [t for t in threading.enumerate() if t.name.startswith("mcp_sync")] and time.monotonic() < deadline:
        time.sleep(0.01)
    report["threads"] = [t.name for t in threading.enumerate() if t.name.startswith("mcp_sync")]
    print(json.dumps(report))
    """
)

CASES = {
    "no-epoll (macOS, BSD)": ["select.epoll"],
    "no-sigkill": ["signal.SIGKILL"],
    "none of the three (Windows-like)": ["select.epoll", "select.poll", "signal.SIGKILL"],
}


@pytest.mark.parametrize("hidden", CASES.values(), ids=CASES.keys())
def test_the_transport_without_epoll_poll_or_sigkill(hidden: list[str]) -> None:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, ",".join(hidden)], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr[-4000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    no_epoll, no_poll = "select.epoll" in hidden, "select.poll" in hidden
    assert report["leads"] is not no_epoll  # callers read for themselves only with epoll
    assert report["direct"] is not no_poll  # and write for themselves only with poll
    assert report["sums"] == list(range(1, 17))
    assert report["pong"] == "pong ok"
    assert report["big"] == 200_000
    assert report["timeout"] is True
    assert report["crash"] == "exited with code 3"
    assert report["after"] == "again"
    assert report["threads"] == []
    for pid in [*report["pids"], report["grandchild"]]:
        wait_gone(pid)
    assert not any(alive(pid) for pid in report["pids"])


def test_importing_needs_none_of_them(tmp_path: Path) -> None:
    code = (
        "import select, signal\n"
        "del select.epoll, select.poll, signal.SIGKILL\n"
        "import mcp_sync, mcp_sync.config, mcp_sync.flows, mcp_sync.testing, mcp_sync.cli\n"
        "print('ok')\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False)
    assert (done.returncode, done.stdout.strip()) == (0, "ok"), done.stderr
