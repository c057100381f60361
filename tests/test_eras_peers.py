"""Era negotiation against real servers: an official TypeScript SDK v2 server that
starts slowly (npm ``@modelcontextprotocol/server`` 2.4.0, ``tests/peers/ts_v2_server.mjs``)
and an official Python SDK 1.x server that exits when its first request is not
``initialize`` (``mcp==1.6.0`` in .cache/mcp1-venv, ``tests/peers/sdk1_server.py``).

The TypeScript SDK's ``serveStdio`` pins the handshake era when a handshake follows its
probe, so a client that sends the handshake before such a server has read the probe
lands on 2025-11-25: these tests hold ``auto`` to 2026-07-28 however slow the start.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from conftest import REPO_ROOT, missing_peer, node_exe, peer_bin, peers_dir

import mcp_sync

PEERS = REPO_ROOT / "tests" / "peers"
START_DELAY_MS = 5_000


def ts_v2_command(delay_ms: int = START_DELAY_MS) -> list[str]:
    package = peers_dir() / "node_modules" / "@modelcontextprotocol" / "server" / "package.json"
    if not package.exists():
        missing_peer(f"npm @modelcontextprotocol/server is not installed at {package.parent}")
    return [node_exe(), str(PEERS / "ts_v2_server.mjs"), "--peers", str(peers_dir()),
            "--delay", str(delay_ms)]


def sdk1_command() -> list[str]:
    python = Path(peers_dir()).parent / "mcp1-venv" / "bin" / "python"
    if not python.exists():
        missing_peer(f"the SDK 1.x peer venv is not at {python.parent.parent}")
    return [str(python), str(PEERS / "sdk1_server.py")]


def connect(argv: list[str], **kwargs: object) -> tuple[mcp_sync.Session, float]:
    command, *args = argv
    started = time.monotonic()
    session = mcp_sync.connect(server="peer", command=command, args=args,
                               handshake_timeout_ms=30_000, **kwargs)  # type: ignore[arg-type]
    return session, time.monotonic() - started


@pytest.mark.parametrize("run", [1, 2, 3])
def test_a_slow_typescript_v2_server_settles_on_2026_07_28_every_time(run: int) -> None:
    session, took = connect(ts_v2_command())
    with session:
        assert (session.era, session.protocol_version) == ("modern", "2026-07-28")
        assert session.server_info.name == "ts-v2-peer"
        assert session.call_tool("echo", {"message": "hi"}).content[0]["text"] == "hi"
    assert took >= START_DELAY_MS / 1000


def test_a_slow_typescript_v2_server_under_legacy_gets_the_handshake() -> None:
    session, _ = connect(ts_v2_command(), protocol="legacy")
    with session:
        assert (session.era, session.protocol_version) == ("legacy", "2025-11-25")
        assert session.call_tool("echo", {"message": "hi"}).content[0]["text"] == "hi"


def test_an_sdk_1x_server_that_exits_on_the_probe_connects_under_auto() -> None:
    session, _ = connect(sdk1_command())
    with session:
        assert session.era == "legacy"
        assert session.call_tool("echo", {"message": "hi"}).content[0]["text"] == "hi"


# ------------------------------------------------------------------ starts


def counted(starts: Path, argv: list[str], *, before: str = "") -> list[str]:
    """``argv`` behind a shell wrapper that appends its pid to ``starts`` (each
    start of the server), then runs ``before`` and execs the server."""
    script = 'echo $$ >> "$0"; ' + before + 'exec "$@"'
    return ["/bin/sh", "-c", script, str(starts), *argv]


def start_count(starts: Path) -> int:
    return len(starts.read_text().split()) if starts.exists() else 0


def test_a_server_that_exits_before_reading_is_started_once_and_fails_as_under_legacy(
    tmp_path: Path,
) -> None:
    # A server that crashes at start (a missing service, a wrong Node) reads
    # nothing: under auto it is not started again, and fails with legacy's error
    # in legacy's time.
    outcomes = {}
    for protocol in ("legacy", "auto"):
        starts = tmp_path / f"starts-{protocol}"
        argv = counted(starts, ["/bin/sh", "-c", "exit 3"], before="sleep 1; ")
        started = time.monotonic()
        with pytest.raises(mcp_sync.ConnectionClosed) as caught:
            connect(argv, protocol=protocol)
        outcomes[protocol] = (str(caught.value), time.monotonic() - started, start_count(starts))
    (legacy_error, legacy_took, legacy_starts) = outcomes["legacy"]
    (auto_error, auto_took, auto_starts) = outcomes["auto"]
    assert (legacy_starts, auto_starts) == (1, 1)
    assert auto_error == legacy_error
    assert "exited with code 3" in auto_error
    assert 1.0 <= auto_took < legacy_took + 1.5, outcomes


def test_a_real_server_that_reads_the_probe_then_exits_is_started_again_once(tmp_path: Path) -> None:
    starts = tmp_path / "starts"
    session, _ = connect(counted(starts, sdk1_command()))
    with session:
        assert session.era == "legacy"
        assert session.call_tool("echo", {"message": "hi"}).content[0]["text"] == "hi"
    assert start_count(starts) == 2


def test_a_server_that_reads_nothing_for_90_s_connects_with_defaults(tmp_path: Path) -> None:
    # A cold npx or uvx installs for minutes before the server reads anything:
    # the start budget (start_timeout_ms, 180 s) covers it, not the handshake's.
    starts = tmp_path / "starts"
    memory = peer_bin("memory")
    command, *args = counted(starts, [str(memory)], before="sleep 90; ")
    started = time.monotonic()
    with mcp_sync.connect(server="memory", command=command, args=args) as session:
        took = time.monotonic() - started
        assert "read_graph" in {tool.name for tool in session.tools}
    assert took >= 90
    assert start_count(starts) == 1
