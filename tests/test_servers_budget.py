"""Servers: every wait takes the caller's remaining budget, and close() stops a connect.

A connect on first use, a wait for another caller's connect and a respawn
each last at most until the caller's deadline, then raise ``Timeout``; the
connect goes on, and a later caller uses what it made. ``close()`` during a
connect ends it: the server process and the library's threads are gone when
``close()`` returns.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from support import alive, library_threads

import mcp_sync
from mcp_sync.config import ConnectOptions
from mcp_sync.testing import server_command

pytestmark = pytest.mark.hostile

# How long past its deadline a caller may be back on a loaded 2-core machine.
HEADROOM = 1.5
# A handshake that never ends lasts this long: far longer than any caller waits.
HANDSHAKE_MS = 8_000
# A server that never finishes its handshake (it reads both opening requests).
DEAF = ("--hang-on", "initialize", "--hang-on", "server/discover")


def fake(*options: str, server: str = "fake", **fields: object) -> ConnectOptions:
    command, *args = server_command(*options)
    return ConnectOptions(server=server, command=command, args=args, **fields)  # type: ignore[arg-type]


@pytest.fixture
def make() -> Iterator[Callable[..., mcp_sync.Servers]]:
    made: list[mcp_sync.Servers] = []

    def build(config: object, **kwargs: object) -> mcp_sync.Servers:
        servers = mcp_sync.Servers(config, **kwargs)  # type: ignore[arg-type]
        made.append(servers)
        return servers

    yield build
    for servers in made:
        servers.close()


def started(path: Path, count: int = 1, within: float = 30.0) -> list[int]:
    """The pids the fake server wrote at each start (``--starts``), once there are ``count``."""
    deadline = time.monotonic() + within
    while True:
        pids = [int(line) for line in path.read_text().split()] if path.exists() else []
        if len(pids) >= count:
            return pids
        assert time.monotonic() < deadline, f"{len(pids)} starts, expected {count}"
        time.sleep(0.01)


def new_threads(before: set[threading.Thread]) -> list[threading.Thread]:
    return [t for t in library_threads() if t not in before and t.is_alive()]


def concurrently(action: Callable[[], object], threads: int) -> list[tuple[object, float]]:
    """What ``action`` returned or raised in each of ``threads`` threads started
    together, with how long each took."""
    barrier = threading.Barrier(threads)
    outcomes: list[tuple[object, float]] = []

    def run() -> None:
        barrier.wait()
        begun = time.monotonic()
        try:
            outcome: object = action()
        except mcp_sync.McpError as exc:
            outcome = exc
        outcomes.append((outcome, time.monotonic() - begun))

    pool = [threading.Thread(target=run) for _ in range(threads)]
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join(60)
    return outcomes


def test_callers_of_a_server_that_never_connects_are_back_by_their_deadline_and_close_ends_the_connect(
    tmp_path: Path, make: Callable[..., mcp_sync.Servers]
) -> None:
    before = set(library_threads())
    starts = tmp_path / "starts"
    servers = make(fake(*DEAF, "--starts", str(starts), handshake_timeout_ms=HANDSHAKE_MS))
    begun = time.monotonic()
    outcomes = concurrently(
        lambda: servers.call_tool("fake", "echo", {"message": "x"}, timeout_ms=1_000), threads=4
    )
    assert len(outcomes) == 4
    for outcome, took in outcomes:
        # One caller started the connect; three waited for it: each gets its own deadline.
        assert isinstance(outcome, mcp_sync.Timeout), outcome
        assert took < 1.0 + HEADROOM, f"back {took - 1.0:.2f}s after its deadline"
        assert str(outcome) == (
            "connecting server 'fake' (timeout_ms=1000) missed its deadline; "
            "the connect goes on, and a later call may use it"
        )
    (pid,) = started(starts)
    # The connect is still under way: its handshake budget has not run out.
    assert time.monotonic() - begun < HANDSHAKE_MS / 1000 - 2
    assert alive(pid)
    closing = time.monotonic()
    servers.close()
    took = time.monotonic() - closing
    assert took < 5.0, f"close() took {took:.2f}s"
    # Nothing outlives close(): no waiting here, it is all gone already.
    assert time.monotonic() - begun < HANDSHAKE_MS / 1000, "the handshake ran out before close() returned"
    assert not alive(pid), "the server process outlived close()"
    assert not new_threads(before), f"threads outlived close(): {new_threads(before)}"
    with pytest.raises(mcp_sync.ConnectionClosed, match="connection scope closed"):
        servers.call_tool("fake", "echo", {"message": "x"}, timeout_ms=1_000)


@pytest.mark.parametrize("method", ["session", "call_tool", "submit_tool", "map_tool"])
def test_every_blocking_method_waits_for_a_connect_only_its_budget(
    tmp_path: Path, make: Callable[..., mcp_sync.Servers], method: str
) -> None:
    servers = make(fake(*DEAF, handshake_timeout_ms=HANDSHAKE_MS))
    calls: dict[str, Callable[[], object]] = {
        "session": lambda: servers.session("fake", timeout_ms=500),
        "call_tool": lambda: servers.call_tool("fake", "echo", {"message": "x"}, timeout_ms=500),
        "submit_tool": lambda: servers.submit_tool("fake", "echo", {"message": "x"}, timeout_ms=500),
        "map_tool": lambda: servers.map_tool("fake", "echo", [{"message": "x"}], timeout_ms=500),
    }
    for _ in range(2):  # the caller that starts the connect, then one that joins it
        begun = time.monotonic()
        with pytest.raises(mcp_sync.Timeout, match=r"^connecting server 'fake' \(timeout_ms=500\) missed its deadline"):
            calls[method]()
        took = time.monotonic() - begun
        assert took < 0.5 + HEADROOM, f"back {took - 0.5:.2f}s after its deadline"


def test_close_releases_the_callers_waiting_for_a_connect(
    tmp_path: Path, make: Callable[..., mcp_sync.Servers]
) -> None:
    before = set(library_threads())
    starts = tmp_path / "starts"
    servers = make(fake(*DEAF, "--starts", str(starts), handshake_timeout_ms=HANDSHAKE_MS))
    outcomes: list[tuple[object, float]] = []
    waiting = threading.Thread(
        target=lambda: outcomes.extend(
            concurrently(lambda: servers.call_tool("fake", "echo", {"message": "x"}, timeout_ms=60_000), 3)
        )
    )
    waiting.start()
    (pid,) = started(starts)
    time.sleep(0.3)  # most likely all three wait for the connect by now (if not, close() stops them all the same)
    begun = time.monotonic()
    servers.close()
    waiting.join(30)
    assert len(outcomes) == 3
    for outcome, _took in outcomes:
        assert isinstance(outcome, mcp_sync.ConnectionClosed), outcome
    assert time.monotonic() - begun < 5.0
    assert not alive(pid)
    assert not new_threads(before), f"threads outlived close(): {new_threads(before)}"


def test_a_connect_that_ends_after_its_caller_gave_up_serves_the_next_caller(
    tmp_path: Path, make: Callable[..., mcp_sync.Servers]
) -> None:
    starts = tmp_path / "starts"
    # Reads nothing for 4 s, then answers: longer than the first caller waits.
    servers = make(fake("--start-delay", "4000", "--starts", str(starts), handshake_timeout_ms=30_000))
    begun = time.monotonic()
    with pytest.raises(mcp_sync.Timeout, match="server 'fake'"):
        servers.call_tool("fake", "echo", {"message": "first"}, timeout_ms=1_000)
    took = time.monotonic() - begun
    assert took < 1.0 + HEADROOM, f"back {took - 1.0:.2f}s after its deadline"
    # The next caller, with room to wait, takes the same connect's session.
    result = servers.call_tool("fake", "echo", {"message": "second"}, timeout_ms=30_000)
    assert result.content[0]["text"] == "second"
    assert servers.call_tool("fake", "echo", {"message": "third"}).content[0]["text"] == "third"
    assert len(started(starts)) == 1, "the server was started again"


def test_a_respawn_that_hangs_takes_only_the_callers_budget(
    tmp_path: Path, make: Callable[..., mcp_sync.Servers]
) -> None:
    # The first process answers and crashes on demand; every later one hangs in the handshake.
    starts = tmp_path / "starts"
    command, *args = server_command("--misbehave", "--starts", str(starts))
    wrapper = tmp_path / "wrapper.py"
    wrapper.write_text(
        "import os, sys\n"
        f"later = os.path.exists({str(starts)!r})\n"
        "extra = ['--hang-on', 'initialize', '--hang-on', 'server/discover'] if later else []\n"
        "os.execv(sys.argv[1], sys.argv[1:] + extra)\n"
    )
    entry = ConnectOptions(  # type: ignore[call-arg]  # the limits are fields made at import
        server="fake", command=command, args=[str(wrapper), command, *args], handshake_timeout_ms=HANDSHAKE_MS
    )
    servers = make(entry)
    assert servers.call_tool("fake", "echo", {"message": "up"}).content[0]["text"] == "up"
    with pytest.raises(mcp_sync.ConnectionClosed):
        servers.call_tool("fake", "crash")
    begun = time.monotonic()
    with pytest.raises(mcp_sync.Timeout, match="server 'fake'"):
        servers.call_tool("fake", "echo", {"message": "again"}, timeout_ms=1_000)
    took = time.monotonic() - begun
    assert took < 1.0 + HEADROOM, f"back {took - 1.0:.2f}s after its deadline"
    assert len(started(starts, 2)) == 2


def test_a_bad_timeout_is_refused_before_anything_starts(
    tmp_path: Path, make: Callable[..., mcp_sync.Servers]
) -> None:
    marker = tmp_path / "started"
    servers = make(fake("--marker", str(marker)))
    bad_values = (0, -1, 1.5, True)
    for bad in bad_values:
        with pytest.raises(mcp_sync.ProtocolError, match="option timeout_ms must be"):
            servers.call_tool("fake", "echo", {"message": "x"}, timeout_ms=bad)  # type: ignore[arg-type]
    assert not marker.exists()
    for bad in bad_values:
        with pytest.raises(mcp_sync.ProtocolError, match="option timeout_ms must be"):
            servers.session("fake", timeout_ms=bad)  # type: ignore[arg-type]
    assert not marker.exists()


@contextmanager
def _refresh_that_hangs() -> Iterator[tuple[Any, mcp_sync.Session]]:
    """An OAuth session over HTTP (the fake authorization server) whose token is
    due for refresh now, against a token endpoint that never answers; closed on exit."""
    from dataclasses import replace

    from oauth_fake import fake_oauth_server, stand_in_browser

    from mcp_sync import auth

    with fake_oauth_server() as fake:
        flow = auth.AuthorizationCode(redirect_handler=stand_in_browser(fake))
        session = mcp_sync.connect_http(server="fake", url=f"{fake.url}/mcp", auth=flow)
        try:
            grant = flow._grant(f"{fake.url}/mcp")
            assert grant.token is not None
            grant.token = replace(grant.token, refresh_at=0.0)  # due for refresh now
            fake.token_hang = True  # the refresh never gets its answer
            yield fake, session
        finally:
            session.close()


def test_requests_waiting_for_another_requests_token_refresh_are_back_by_their_deadline() -> None:
    with _refresh_that_hangs() as (fake, session):
        try:
            budgets = (3_000, 1_000, 1_000, 1_000)  # the first to come refreshes; the others wait
            outcomes: list[tuple[object, float]] = []
            barrier = threading.Barrier(len(budgets))

            def call(timeout_ms: int) -> None:
                barrier.wait()
                begun = time.monotonic()
                try:
                    outcome: object = session.call_tool("echo", {"message": "x"}, timeout_ms=timeout_ms)
                except mcp_sync.McpError as exc:
                    outcome = exc
                outcomes.append((outcome, time.monotonic() - begun - timeout_ms / 1000))

            pool = [threading.Thread(target=call, args=(ms,)) for ms in budgets]
            for thread in pool:
                thread.start()
            for thread in pool:
                thread.join(30)
            assert len(outcomes) == len(budgets)
            for outcome, late in outcomes:
                assert isinstance(outcome, mcp_sync.Timeout), outcome
                assert late < HEADROOM, f"back {late:.2f}s after its deadline"
        finally:
            fake.release.set()


def test_close_wakes_a_token_refresh_that_a_worker_waits_on() -> None:
    """A timed-out call's notifications/cancelled goes out on a library worker,
    which refreshes the due token first; the token endpoint never answers.
    close() wakes that fetch as it wakes the session's own requests: the
    worker is gone within seconds, not at the notification's 30 s deadline."""
    with _refresh_that_hangs() as (fake, session):
        asked = len(fake.seen("/token"))
        with pytest.raises(mcp_sync.Timeout):
            session.call_tool("echo", {"message": "x"}, timeout_ms=1_000)
        # The call's own refresh, then the cancellation's.
        cap = time.monotonic() + 15
        while len(fake.seen("/token")) < asked + 2:
            assert time.monotonic() < cap, "the cancellation never asked for a token"
            time.sleep(0.01)
        mine = [t for t in library_threads() if t.name.startswith("mcp_sync-fake-")]
        assert mine
        session.close()
        for thread in mine:
            thread.join(5)  # a cap for a loaded machine; woken, they end at once
        assert not [t.name for t in mine if t.is_alive()]
