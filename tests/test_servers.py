"""mcp_sync.Servers: lazy, per-process, self-healing servers (against the fake server)."""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from support import alive, fake_pid, methods, wait_gone

import mcp_sync
from mcp_sync.config import ConfigError, ConnectOptions
from mcp_sync.testing import server_command

# Fail-fast tests hold the next attempt back far longer than any test runs.
NEVER = mcp_sync.RespawnPolicy(immediate=1, first_delay_ms=600_000, max_delay_ms=600_000)


def fake(*options: str, server: str = "fake", **fields: object) -> ConnectOptions:
    command, *args = server_command(*options)
    return ConnectOptions(server=server, command=command, args=args, **fields)  # type: ignore[arg-type]


@pytest.fixture
def servers_made() -> Iterator[list[mcp_sync.Servers]]:
    made: list[mcp_sync.Servers] = []
    yield made
    for servers in made:
        servers.close()


@pytest.fixture
def make(servers_made: list[mcp_sync.Servers]) -> Callable[..., mcp_sync.Servers]:
    def build(config: object, **kwargs: object) -> mcp_sync.Servers:
        servers = mcp_sync.Servers(config, **kwargs)  # type: ignore[arg-type]
        servers_made.append(servers)
        return servers

    return build


def server_pid(servers: mcp_sync.Servers, name: str = "fake") -> int:
    return fake_pid(servers.session(name))


def eventually(check: Callable[[], bool], within: float = 10.0) -> None:
    deadline = time.monotonic() + within
    while not check():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.01)


# ---------------------------------------------------------------- building


def test_building_starts_nothing_from_any_source(tmp_path: Path, make: Callable[..., mcp_sync.Servers]) -> None:
    marker = tmp_path / "started"
    entry = fake("--marker", str(marker))
    path = tmp_path / "servers.json"
    path.write_text(json.dumps([entry.model_dump(by_alias=True, exclude_none=True)]))
    parsed = json.loads(path.read_text())
    other = fake(server="other")
    for source in (str(path), path, parsed, entry, [entry, other]):
        servers = make(source)
        assert servers.names[0] == "fake" and "fake" in servers
        assert repr(servers).endswith("0 connected>")
    assert list(make([entry, other])) == ["fake", "other"]
    assert not marker.exists()
    # Now one use starts it.
    assert make(entry).call_tool("fake", "echo", {"message": "hi"}).content[0]["text"] == "hi"
    assert marker.exists()


def test_every_config_format_the_loader_reads(tmp_path: Path, make: Callable[..., mcp_sync.Servers]) -> None:
    command, *args = server_command()
    document = {"mcpServers": {"fake": {"command": command, "args": args}}}
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps(document))
    for source in (document, path, {"servers": {"fake": {"type": "stdio", "command": command, "args": args}}}):
        servers = make(source)
        assert servers.names == ("fake",)
    assert servers.call_tool("fake", "echo", {"message": "vs code"}).content[0]["text"] == "vs code"


def test_bad_configs_and_names_are_refused(tmp_path: Path, make: Callable[..., mcp_sync.Servers]) -> None:
    with pytest.raises(ConfigError, match="file not found"):
        make(tmp_path / "missing.json")
    with pytest.raises(ConfigError, match=r"entry 0, field command: is required"):
        make([{"server": "x", "args": []}])
    with pytest.raises(ConfigError, match=r"server name 'fake' is already used by entry 0"):
        make([fake(), fake()])
    with pytest.raises(mcp_sync.ProtocolError, match="option respawn must be a RespawnPolicy"):
        make(fake(), respawn={"immediate": 1})
    with pytest.raises(mcp_sync.ProtocolError, match="option health_check_interval_ms must be"):
        make(fake(), health_check_interval_ms=0)
    with pytest.raises(mcp_sync.ProtocolError, match="option first_delay_ms must be"):
        mcp_sync.RespawnPolicy(first_delay_ms=0)
    with pytest.raises(mcp_sync.ProtocolError, match="option immediate must be an integer"):
        mcp_sync.RespawnPolicy(immediate=-1)
    servers = make(fake())
    with pytest.raises(KeyError, match=r"no server named 'nope' is configured \(configured: 'fake'\)"):
        servers.session("nope")


# ---------------------------------------------------------------- one spawn


def at_once(action: Callable[[], object], threads: int = 16) -> list[object]:
    """What ``action`` returned (or raised) in each of ``threads`` threads released together."""
    barrier = threading.Barrier(threads)
    outcomes: list[object] = []

    def run() -> None:
        barrier.wait()
        try:
            outcomes.append(action())
        except mcp_sync.McpError as exc:
            outcomes.append(exc)

    pool = [threading.Thread(target=run) for _ in range(threads)]
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join()
    return outcomes


def test_sixteen_threads_at_once_cause_one_spawn(tmp_path: Path, make: Callable[..., mcp_sync.Servers]) -> None:
    log = tmp_path / "log"
    servers = make(fake("--log", str(log)))
    got = at_once(lambda: servers.session("fake"))
    assert len(got) == 16 and all(isinstance(s, mcp_sync.Session) for s in got)
    assert len({id(s) for s in got}) == 1
    assert methods(log).count("initialize") == 1


def test_sixteen_threads_share_one_failed_attempt(tmp_path: Path, make: Callable[..., mcp_sync.Servers]) -> None:
    log = tmp_path / "log"
    servers = make(
        fake("--log", str(log), "--exit-on", "initialize"),
        respawn=mcp_sync.RespawnPolicy(immediate=0, first_delay_ms=600_000, max_delay_ms=600_000),
    )
    errors = at_once(lambda: servers.session("fake"))
    assert len(errors) == 16
    assert methods(log).count("initialize") == 1
    # Those who waited for the attempt share its error; a late one is told to wait.
    assert {type(e) for e in errors} <= {mcp_sync.ConnectionClosed, mcp_sync.ServerUnavailable}
    assert any(isinstance(e, mcp_sync.ConnectionClosed) for e in errors)
    assert len({id(e) for e in errors}) == 16


# ---------------------------------------------------------------- replacing


def test_a_call_in_flight_fails_and_the_next_call_gets_a_fresh_server(
    make: Callable[..., mcp_sync.Servers],
) -> None:
    servers = make(fake("--misbehave"))
    first = server_pid(servers)
    with pytest.raises(mcp_sync.ConnectionClosed, match="exited with code 3"):
        servers.call_tool("fake", "crash")
    assert servers.call_tool("fake", "echo", {"message": "again"}).content[0]["text"] == "again"
    second = server_pid(servers)
    assert second != first
    wait_gone(first)


def test_a_session_closed_by_its_owner_is_replaced_without_counting_a_failure(
    make: Callable[..., mcp_sync.Servers],
) -> None:
    servers = make(fake(), respawn=mcp_sync.RespawnPolicy(immediate=0, first_delay_ms=600_000, max_delay_ms=600_000))
    for _ in range(3):
        servers.session("fake").close()
    assert servers.call_tool("fake", "echo", {"message": "ok"}).content[0]["text"] == "ok"


def test_a_crash_loop_fails_fast_with_a_clear_error(tmp_path: Path, make: Callable[..., mcp_sync.Servers]) -> None:
    log = tmp_path / "log"
    servers = make(fake("--log", str(log), "--exit-on", "initialize"), respawn=NEVER)
    # Failure 1, then the immediate second attempt: failure 2.
    for _ in range(2):
        with pytest.raises(mcp_sync.ConnectionClosed, match="exited with code 3"):
            servers.session("fake")
    started = time.monotonic()
    for _ in range(50):
        with pytest.raises(mcp_sync.ServerUnavailable) as caught:
            servers.call_tool("fake", "echo", {"message": "x"})
    assert time.monotonic() - started < 5.0  # nothing waited for the back-off
    assert methods(log).count("initialize") == 2
    error = caught.value
    assert error.kind == "server_unavailable"
    assert (error.server, error.failures) == ("fake", 2)
    assert 590 < error.retry_in <= 600
    assert isinstance(error.last_error, mcp_sync.ConnectionClosed)
    assert str(error).startswith(
        "server 'fake' is unavailable: it failed 2 times in a row "
        "(last: connection_closed, exited with code 3); the next attempt is allowed in "
    )


def test_the_back_off_grows_and_a_later_attempt_goes_through(make: Callable[..., mcp_sync.Servers]) -> None:
    policy = mcp_sync.RespawnPolicy(immediate=0, first_delay_ms=50, max_delay_ms=200, stable_after_ms=600_000)
    assert [policy.delay(n) for n in range(1, 6)] == [0.05, 0.1, 0.2, 0.2, 0.2]
    assert [mcp_sync.RespawnPolicy().delay(n) for n in range(1, 11)] == [0, 0, 1, 2, 4, 8, 16, 32, 60, 60]
    servers = make(fake("--misbehave"), respawn=policy)
    old = server_pid(servers)
    with pytest.raises(mcp_sync.ConnectionClosed):
        servers.call_tool("fake", "crash")
    with pytest.raises(mcp_sync.ServerUnavailable):
        servers.session("fake")

    def replaced() -> bool:
        try:
            return server_pid(servers) != old
        except mcp_sync.ServerUnavailable:
            return False

    eventually(replaced)


@pytest.mark.parametrize(("stable_after_ms", "held_back"), [(1, False), (600_000, True)])
def test_a_session_that_stayed_up_clears_the_count(
    make: Callable[..., mcp_sync.Servers], stable_after_ms: int, held_back: bool
) -> None:
    policy = mcp_sync.RespawnPolicy(immediate=1, first_delay_ms=600_000, stable_after_ms=stable_after_ms)
    servers = make(fake("--misbehave"), respawn=policy)
    outcomes = []
    for _ in range(3):
        try:
            servers.session("fake")
            time.sleep(0.01)  # the session stays up a little (stable_after_ms=1 counts it stable)
            with pytest.raises(mcp_sync.ConnectionClosed):
                servers.call_tool("fake", "crash")
            outcomes.append("crashed")
        except mcp_sync.ServerUnavailable:
            outcomes.append("held back")
    assert outcomes == (["crashed", "crashed", "held back"] if held_back else ["crashed"] * 3)


# ---------------------------------------------------------------- closing, forking, exiting


def test_close_closes_every_server_and_is_final(make: Callable[..., mcp_sync.Servers]) -> None:
    servers = make([fake(), fake(server="other")])
    pids = [server_pid(servers, "fake"), server_pid(servers, "other")]
    servers.close()
    servers.close()
    for pid in pids:
        wait_gone(pid)
    with pytest.raises(mcp_sync.ConnectionClosed, match="connection scope closed"):
        servers.session("fake")
    assert repr(servers) == "<Servers ['fake', 'other'] closed>"


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_forked_child_gets_its_own_server_and_spares_the_parents(make: Callable[..., mcp_sync.Servers]) -> None:
    servers = make(fake())
    parent_server = server_pid(servers)
    read_end, write_end = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - runs in the child
        try:
            try:
                text = servers.call_tool("fake", "echo", {"message": "child"}).content[0]["text"]
                mine = server_pid(servers)
                report = f"{text}|{mine}|{mine != parent_server}"
            except BaseException as exc:
                report = f"error|{type(exc).__name__}|{exc}"
            servers.close()
            os.write(write_end, report.encode())
        finally:
            os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        report = pipe.read().decode()
    os.waitpid(child, 0)
    text, child_server, differs = report.split("|")
    assert (text, differs) == ("child", "True"), report
    wait_gone(int(child_server))
    assert alive(parent_server) and server_pid(servers) == parent_server
    assert servers.call_tool("fake", "echo", {"message": "parent"}).content[0]["text"] == "parent"


def test_the_interpreter_exit_closes_servers_nobody_closed(tmp_path: Path) -> None:
    pidfile = tmp_path / "pid"
    command, *args = server_command("--marker", str(pidfile))
    script = textwrap.dedent(
        f"""
        import mcp_sync
        from mcp_sync.config import ConnectOptions
        servers = mcp_sync.Servers(ConnectOptions(server="s", command={command!r}, args={args!r}))
        assert servers.call_tool("s", "echo", {{"message": "x"}}).content[0]["text"] == "x"
        """
    )
    done = subprocess.run([sys.executable, "-c", script], check=False, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    wait_gone(int(pidfile.read_text()))


# ---------------------------------------------------------------- health


def test_ping_answers_and_times_out(tmp_path: Path, make: Callable[..., mcp_sync.Servers]) -> None:
    log = tmp_path / "log"
    servers = make([fake("--log", str(log)), fake("--hang-on", "ping", server="deaf")])
    assert servers.session("fake").ping(timeout_ms=5_000) is None
    assert methods(log)[-1] == "ping"
    with pytest.raises(mcp_sync.Timeout, match=r"^ping of server 'deaf' \(timeout_ms=100\) missed its deadline$"):
        servers.session("deaf").ping(timeout_ms=100)
    assert not servers.session("deaf").closed
    with pytest.raises(mcp_sync.ProtocolError, match="option timeout_ms must be"):
        servers.session("fake").ping(timeout_ms=0)
    session = servers.session("fake")
    session.close()
    with pytest.raises(mcp_sync.ConnectionClosed):
        session.ping()


def test_the_health_check_replaces_a_wedged_server(
    make: Callable[..., mcp_sync.Servers], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="mcp_sync")
    servers = make(fake(), health_check_interval_ms=50, health_check_timeout_ms=500)
    wedged = server_pid(servers)
    old = servers.session("fake")
    os.kill(wedged, signal.SIGSTOP)  # alive, but answers nothing
    try:
        eventually(lambda: any(r.mcp_event == "respawn" for r in caplog.records if hasattr(r, "mcp_event")))
        eventually(lambda: old.closed)
    finally:
        if alive(wedged):
            os.kill(wedged, signal.SIGCONT)
    assert servers.call_tool("fake", "echo", {"message": "fresh"}).content[0]["text"] == "fresh"
    assert server_pid(servers) != wedged
    wait_gone(wedged)
    events = [r.mcp_event for r in caplog.records if hasattr(r, "mcp_event")]
    assert events.index("health") < events.index("respawn")
    health = next(r for r in caplog.records if getattr(r, "mcp_event", None) == "health")
    assert health.mcp_error_kind == "timeout" and health.levelno == logging.WARNING
    servers.close()
    assert not [t for t in threading.enumerate() if t.name == "mcp_sync-servers-health"]


def test_the_health_check_replaces_a_crashed_server_before_a_request_comes(
    make: Callable[..., mcp_sync.Servers],
) -> None:
    servers = make(fake("--misbehave"), health_check_interval_ms=20)
    first = servers.session("fake")
    with pytest.raises(mcp_sync.ConnectionClosed):
        first.call_tool("crash")
    eventually(lambda: repr(servers).endswith("1 connected>"))
    assert servers.session("fake") is not first


# ---------------------------------------------------------------- trace context


def test_traceparent_goes_in_the_request_meta(tmp_path: Path, make: Callable[..., mcp_sync.Servers]) -> None:
    from support import logged

    log = tmp_path / "log"
    servers = make(fake("--log", str(log)))
    parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
    servers.call_tool("fake", "echo", {"message": "t"}, traceparent=parent)
    servers.call_tool("fake", "echo", {"message": "plain"})
    calls = [frame["params"] for frame in logged(log) if frame.get("method") == "tools/call"]
    assert calls[0]["_meta"] == {"traceparent": parent}
    assert "_meta" not in calls[1]
    for bad in ("", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7", parent.upper(),
                "ff" + parent[2:], "00-" + "0" * 32 + parent[35:], parent[:36] + "0" * 16 + "-01", 7):
        with pytest.raises(mcp_sync.ProtocolError, match="option traceparent must be a W3C traceparent"):
            servers.call_tool("fake", "echo", {"message": "t"}, traceparent=bad)  # type: ignore[arg-type]
    assert len([f for f in logged(log) if f.get("method") == "tools/call"]) == 2


# ---------------------------------------------------------------- the era, remembered


@pytest.mark.parametrize(("era", "opening"), [("legacy", "initialize"), ("dual", "server/discover")])
def test_a_respawned_server_is_not_probed_again(
    tmp_path: Path, make: Callable[..., mcp_sync.Servers], era: str, opening: str
) -> None:
    # The era is a property of the server: the probe is paid once per server in
    # this process, and each respawn is sent its era's opening request alone.
    log = tmp_path / "log"
    servers = make(fake("--era", era, "--log", str(log)))
    for _ in range(3):
        session = servers.session("fake")
        assert session.era == ("legacy" if era == "legacy" else "modern")
        session.close()
    assert servers.call_tool("fake", "echo", {"message": "ok"}).content[0]["text"] == "ok"
    openings = [m for m in methods(log) if m in ("server/discover", "initialize")]
    if era == "legacy":
        assert openings == ["server/discover", "initialize", "initialize", "initialize", "initialize"]
    else:
        assert openings == ["server/discover"] * 4


def test_a_remembered_era_that_fails_is_forgotten(tmp_path: Path) -> None:
    from mcp_sync.session.eras.negotiation import EraMemory, remembering

    memory = EraMemory()
    memory.era = "modern"  # remembered, but this server is legacy now
    log = tmp_path / "log"
    command, *args = server_command("--log", str(log))
    with remembering(memory), mcp_sync.connect(server="fake", command=command, args=args) as session:
        assert session.era == "legacy"  # the probe was refused: the handshake followed
    assert memory.era == "legacy"
    assert methods(log)[:2] == ["server/discover", "initialize"]
