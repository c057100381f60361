"""Shared test infrastructure: real MCP peers, process and thread leak checks.

Everything here is independent of ``mcp_sync`` internals, so it keeps working while the
library changes. Helpers are plain functions; tests import them with
``from conftest import peer_bin, assert_no_process_left`` (``tests/`` is on ``sys.path``
because it has no ``__init__.py``), or use the fixtures of the same purpose.

Peers (real servers, installed by ``scripts/test``):

- npm servers in ``$MCP_SYNC_PEERS`` (default ``.cache/peers``): ``peer_bin("everything")``,
  ``peer_bin("filesystem")``, ``peer_bin("memory")``; missing -> skip, or fail when
  ``MCP_SYNC_REQUIRE_PEERS`` is set (CI).
- ``tests/peers/sdk_server.py``: the official Python SDK over stdio (``sdk_stdio_cmd``)
  or Streamable HTTP (``sdk_http_server`` / ``start_sdk_http_server``).
- server-everything over Streamable HTTP on loopback (``everything_http_server``).

Tests that use a peer fixture get the ``peer`` marker automatically (``-m "not peer"``).
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import IO, Any, NoReturn

import pytest

# pytester runs nested pytest sessions (test_infra checks the thread leak check with it).
pytest_plugins = ["pytester"]

REPO_ROOT = Path(__file__).resolve().parent.parent
PEERS_SRC = REPO_ROOT / "tests" / "peers"
SDK_SERVER_SCRIPT = PEERS_SRC / "sdk_server.py"
LOOPBACK_SHIM = PEERS_SRC / "loopback.cjs"

# The npm peers and the names of their executables in node_modules/.bin.
NPM_PEERS = {
    "everything": "mcp-server-everything",
    "filesystem": "mcp-server-filesystem",
    "memory": "mcp-server-memory",
}

# Generous: on a loaded 2-core CI machine the SDK server (~0.5 s idle) can take seconds.
SERVER_START_TIMEOUT = 30.0
THREAD_PREFIX = "mcp_sync"
# How long a test's library threads get to finish after the test (a module global so
# test_infra can shorten it in a nested pytest run).
THREAD_LEAK_GRACE = 15.0


# --------------------------------------------------------------------------------------
# Peers: where they are, and what to do when they are missing
# --------------------------------------------------------------------------------------


def peers_required() -> bool:
    """True when a missing peer must fail the test (scripts/test sets this under CI)."""
    return os.environ.get("MCP_SYNC_REQUIRE_PEERS", "") not in ("", "0")


def missing_peer(reason: str) -> NoReturn:
    """Skip the test because a peer is unavailable, or fail it when peers are required."""
    if peers_required():
        pytest.fail(f"{reason} (MCP_SYNC_REQUIRE_PEERS is set; run scripts/test)", pytrace=False)
    pytest.skip(f"{reason} (run scripts/test to install the peers)")


def peers_dir() -> Path:
    """The npm peer install: ``$MCP_SYNC_PEERS``, else ``<repo>/.cache/peers``."""
    configured = os.environ.get("MCP_SYNC_PEERS")
    return Path(configured) if configured else REPO_ROOT / ".cache" / "peers"


def node_exe() -> str:
    """Absolute path of ``node``; skips/fails the test when Node is not installed."""
    node = shutil.which("node")
    if node is None:
        missing_peer("node is not on PATH")
    return node


def peer_bin(name: str) -> Path:
    """Path of an npm peer's executable, e.g. ``peer_bin("everything")``.

    Accepts the short name (``everything``) or the executable name
    (``mcp-server-everything``). The executables are ``#!/usr/bin/env node`` scripts, so
    ``node`` must be on the child's PATH as well.
    """
    exe = NPM_PEERS.get(name, name)
    if exe not in NPM_PEERS.values():
        raise ValueError(f"unknown npm peer {name!r}; known: {sorted(NPM_PEERS)}")
    path = peers_dir() / "node_modules" / ".bin" / exe
    if not path.exists():
        missing_peer(f"MCP peer {exe} is not installed at {path}")
    node_exe()
    return path


def peer_package_dir(name: str) -> Path:
    """The installed npm package directory of a peer, e.g. for its ``dist/index.js``."""
    exe = NPM_PEERS.get(name, name)
    short = next((k for k, v in NPM_PEERS.items() if v == exe), None)
    if short is None:
        raise ValueError(f"unknown npm peer {name!r}; known: {sorted(NPM_PEERS)}")
    path = peers_dir() / "node_modules" / "@modelcontextprotocol" / f"server-{short}"
    if not (path / "package.json").exists():
        missing_peer(f"MCP peer package server-{short} is not installed at {path}")
    return path


def sdk_stdio_command() -> list[str]:
    """argv that runs the official-SDK peer over stdio (needs ``mcp`` installed)."""
    # Look for the module without importing it: importing the SDK costs ~0.5 s.
    spec = importlib.util.find_spec("mcp")
    locations = list(spec.submodule_search_locations or []) if spec else []
    if not any((Path(loc) / "server" / "mcpserver").is_dir() for loc in locations):
        missing_peer("the official MCP SDK (mcp==2.3.0, mcp.server.mcpserver) is not installed")
    return [sys.executable, str(SDK_SERVER_SCRIPT), "stdio"]


# --------------------------------------------------------------------------------------
# Processes: /proc-based inspection (Linux only, like the test machines)
# --------------------------------------------------------------------------------------


def _proc_stat(pid: int) -> tuple[str, int, int, str] | None:
    """``(state, ppid, pgid, comm)`` from /proc/PID/stat, or None if there is no such pid."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8", errors="replace")
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    # comm is in parentheses and may itself contain spaces or ')': split at the last ')'.
    open_paren = raw.find("(")
    close_paren = raw.rfind(")")
    if open_paren < 0 or close_paren < 0:
        return None
    comm = raw[open_paren + 1 : close_paren]
    fields = raw[close_paren + 2 :].split()
    # fields[0] = state, [1] = ppid, [2] = pgrp (man 5 proc, fields 3..5)
    try:
        return fields[0], int(fields[1]), int(fields[2]), comm
    except (IndexError, ValueError):
        return None


def _all_pids() -> list[int]:
    return [int(entry) for entry in os.listdir("/proc") if entry.isdigit()]


def is_alive(pid: int) -> bool:
    """True while ``pid`` exists and has not exited (zombie ``Z`` and dead ``X`` are gone)."""
    stat = _proc_stat(pid)
    return stat is not None and stat[0] not in ("Z", "X")


def descendant_pids(pid: int) -> set[int]:
    """Every descendant of ``pid`` (children, grandchildren, ...), zombies included.

    A snapshot via the ppid links in /proc/*/stat. A process that was orphaned earlier is
    re-parented (to init or a subreaper) and no longer counts, so take the snapshot
    while the tree is intact, e.g. right after the server is up.
    """
    children: dict[int, list[int]] = {}
    for candidate in _all_pids():
        stat = _proc_stat(candidate)
        if stat is not None:
            children.setdefault(stat[1], []).append(candidate)
    found: set[int] = set()
    stack = [pid]
    while stack:
        for child in children.get(stack.pop(), ()):
            if child not in found:
                found.add(child)
                stack.append(child)
    return found


def pids_in_group(pgid: int, *, include_zombies: bool = False) -> set[int]:
    """Processes whose process group id (field 5 of /proc/PID/stat) is ``pgid``."""
    found: set[int] = set()
    for candidate in _all_pids():
        stat = _proc_stat(candidate)
        if stat is not None and stat[2] == pgid and (include_zombies or stat[0] not in "ZX"):
            found.add(candidate)
    return found


def _describe(pids: Iterable[int]) -> str:
    parts = []
    for pid in sorted(pids):
        stat = _proc_stat(pid)
        parts.append(f"{pid} ({stat[3]}, state {stat[0]})" if stat else f"{pid} (gone)")
    return ", ".join(parts)


def assert_no_process_left(
    pids_or_pgid: int | Iterable[int],
    timeout: float = 5.0,
    *,
    kill_leftovers: bool = True,
) -> None:
    """Wait until the processes are gone; fail the test if any is alive after ``timeout``.

    ``pids_or_pgid``: an ``int`` is a **process group id**: every member of that group
    must be gone (a server started in its own session has ``pgid == its pid``, so pass
    the child's pid to cover it and any grandchildren that stayed in its group). Any
    other iterable is a set of **pids** (e.g. ``{child} | descendant_pids(child)``,
    which also covers grandchildren that moved to a group of their own).

    A zombie counts as gone: it has exited, only its exit status is left to collect.
    Leftovers are SIGKILLed after the failure is recorded (``kill_leftovers``) so one
    leak does not cascade into later tests.
    """
    group: int | None
    pids: set[int]
    if isinstance(pids_or_pgid, int):
        group, pids = pids_or_pgid, set()
        if group <= 1 or group == os.getpgrp():
            raise ValueError(f"refusing to watch process group {group} (the test's own or init)")
    else:
        group, pids = None, set(pids_or_pgid)
        if os.getpid() in pids:
            raise ValueError("refusing to wait for the test process itself to exit")

    def alive() -> set[int]:
        left = {pid for pid in pids if is_alive(pid)}
        if group is not None:
            left |= pids_in_group(group)
        return left

    deadline = time.monotonic() + timeout
    left = alive()
    while left and time.monotonic() < deadline:
        time.sleep(0.02)
        left = alive()
    if not left:
        return
    what = f"process group {group}" if group is not None else f"pids {sorted(pids)}"
    description = _describe(left)
    if kill_leftovers:
        for pid in left:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
    pytest.fail(f"processes still alive {timeout:.1f}s after teardown ({what}): {description}")


# --------------------------------------------------------------------------------------
# Threads: nothing named mcp_sync* may outlive the test that started it
# --------------------------------------------------------------------------------------


def _library_threads(before: set[threading.Thread]) -> list[threading.Thread]:
    return [
        thread
        for thread in threading.enumerate()
        if thread not in before and thread.name.startswith(THREAD_PREFIX) and thread.is_alive()
    ]


@pytest.fixture(autouse=True)
def thread_leak_check(request: pytest.FixtureRequest) -> Iterator[None]:
    """After each test, join new ``mcp_sync*`` threads (up to 15 s, a cap for a loaded
    machine), and fail if any is still running.

    Cheap (one ``threading.enumerate()`` before and after). Threads started by wider-scoped
    fixtures exist before the snapshot and are not counted. Opt out with
    ``@pytest.mark.allow_thread_leak`` (e.g. a test about the atexit/finalizer path).
    """
    before = set(threading.enumerate())
    yield
    if request.node.get_closest_marker("allow_thread_leak") is not None:
        return
    deadline = time.monotonic() + THREAD_LEAK_GRACE
    leaked = _library_threads(before)
    for thread in leaked:
        thread.join(max(0.0, deadline - time.monotonic()))
    leaked = [thread for thread in leaked if thread.is_alive()]
    if leaked:
        names = ", ".join(sorted(thread.name for thread in leaked))
        pytest.fail(
            f"library threads still running {THREAD_LEAK_GRACE:g} s after the test: {names}",
            pytrace=False,
        )


# --------------------------------------------------------------------------------------
# Heartbeat: nothing a hostile server sends may starve the host's other threads
# --------------------------------------------------------------------------------------

# The longest a thread of the host may be starved while a hostile-server test runs.
# A server that makes the library hold the GIL (one long C call over its bytes, a
# backtracking regex) starves it for seconds.
HEARTBEAT_MAX_GAP = 0.5
# How often the heartbeat thread wakes.
HEARTBEAT_TICK = 0.01


class Heartbeat:
    """A thread that wakes every ``tick`` s and keeps the longest time it was
    starved (``worst``, seconds) and the longest wall-clock gap between two of
    its wake-ups (``longest_gap``).

    Starved means: the process ran (used CPU) and this thread did not. A gap
    between two wake-ups counts as the lesser of its wall-clock length and the CPU
    time the process used meanwhile, so a machine too busy to run the process at
    all (a loaded CI machine descheduling it) does not count, while a thread that
    holds the GIL through one long C call does: the process is busy all along."""

    def __init__(self, tick: float = HEARTBEAT_TICK) -> None:
        self.worst = 0.0
        self.longest_gap = 0.0  # wall-clock only, for tests that assert on it
        self._tick = tick
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="test-heartbeat", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        # Where allowed (root, as in CI), the heartbeat runs at a higher priority
        # than the rest of a busy machine, so the scheduler's own delays shrink;
        # a thread holding the GIL starves it all the same.
        with contextlib.suppress(OSError):
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), -10)
        last, last_cpu = time.monotonic(), time.process_time()
        while not self._stop.wait(self._tick):
            now, cpu = time.monotonic(), time.process_time()
            self.longest_gap = max(self.longest_gap, now - last)
            self.worst = max(self.worst, min(now - last, cpu - last_cpu))
            last, last_cpu = now, cpu

    def stop(self) -> float:
        """Stop the thread (joined) and return the longest gap it saw."""
        self._stop.set()
        self._thread.join()
        return self.worst


@pytest.fixture(autouse=True)
def heartbeat_check(request: pytest.FixtureRequest) -> Iterator[Heartbeat | None]:
    """For tests marked ``hostile``: fail the test if a heartbeat thread running beside
    it was starved for more than ``HEARTBEAT_MAX_GAP`` s at any moment."""
    if request.node.get_closest_marker("hostile") is None:
        yield None
        return
    beat = Heartbeat()
    try:
        yield beat
    finally:
        worst = beat.stop()
    if worst > HEARTBEAT_MAX_GAP:
        pytest.fail(
            f"the heartbeat thread was starved for {worst:.2f} s (at most {HEARTBEAT_MAX_GAP} s)",
            pytrace=False,
        )


# --------------------------------------------------------------------------------------
# Servers listening on loopback
# --------------------------------------------------------------------------------------


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago (callers retry on a clash)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _decode_proc_net_addr(hex_addr: str) -> str:
    """``0100007F:1F90`` (/proc/net/tcp) -> ``127.0.0.1``; tcp6 gives e.g. ``::``."""
    host_hex = hex_addr.split(":", maxsplit=1)[0]
    raw = bytes.fromhex(host_hex)
    # The kernel prints each 32-bit word in host (little-endian) order.
    swapped = b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4))
    family = socket.AF_INET if len(swapped) == 4 else socket.AF_INET6
    return socket.inet_ntop(family, swapped)


def listening_addresses(port: int) -> set[str]:
    """Local addresses with a TCP socket in LISTEN state on ``port`` (IPv4 and IPv6).

    Read from /proc/net/tcp{,6} so it works without ``ss``/``netstat``. ``0.0.0.0`` or
    ``::`` in the result means the port is reachable from other machines.
    """
    found: set[str] = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except FileNotFoundError:
            continue
        for line in lines:
            fields = line.split()
            local, state = fields[1], fields[3]
            if state == "0A" and int(local.split(":")[1], 16) == port:  # 0A = TCP_LISTEN
                found.add(_decode_proc_net_addr(local))
    return found


def _tail(log: IO[bytes], limit: int = 2000) -> str:
    log.flush()
    log.seek(0)
    return log.read().decode("utf-8", errors="replace")[-limit:]


def _stop_process_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM the server's process group, then SIGKILL it after 5 s; reap the leader."""
    for sig, wait in ((signal.SIGTERM, 5.0), (signal.SIGKILL, 5.0)):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, sig)
        try:
            proc.wait(wait)
            return
        except subprocess.TimeoutExpired:
            continue


def _wait_for_port(proc: subprocess.Popen[bytes], port: int, log: IO[bytes]) -> None:
    """Poll until 127.0.0.1:port accepts a connection; raise if the server dies first."""
    deadline = time.monotonic() + SERVER_START_TIMEOUT
    while True:
        if proc.poll() is not None:
            raise _ServerDied(f"exited with {proc.returncode} before listening:\n{_tail(log)}")
        try:
            # Connect and close without sending anything: servers do not log that.
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise TimeoutError(
                f"server did not listen on 127.0.0.1:{port} within "
                f"{SERVER_START_TIMEOUT:.0f}s:\n{_tail(log)}"
            )
        time.sleep(0.02)


class _ServerDied(RuntimeError):
    pass


@contextlib.contextmanager
def _serve(make_argv: Callable[[int], list[str]], path: str = "/mcp") -> Iterator[str]:
    """Start an HTTP peer on a free loopback port; yield ``http://127.0.0.1:PORT/mcp``.

    The port is picked before the server binds it, so another process can take it in
    between: a server that exits before listening is retried on a new port (3 tries).
    Output goes to a temp file, never a pipe nobody reads (server-everything logs every
    request to stdout and would block on a full pipe). The server runs in its own
    session so teardown can signal its whole process group.
    """
    last_error = ""
    for _attempt in range(3):
        port = free_port()
        argv = make_argv(port)
        # PORT is how server-everything takes its port; the SDK script ignores it.
        run_env = {**os.environ, "PORT": str(port)}
        with tempfile.TemporaryFile() as log:
            proc = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=run_env,
                cwd=REPO_ROOT,
                start_new_session=True,
            )
            try:
                try:
                    _wait_for_port(proc, port, log)
                except _ServerDied as exc:
                    last_error = str(exc)
                    continue
                yield f"http://127.0.0.1:{port}{path}"
                return
            finally:
                _stop_process_group(proc)
    raise RuntimeError(f"{argv[:3]} failed to start three times; last error: {last_error}")


@contextlib.contextmanager
def start_sdk_http_server(*, json_response: bool = False, stateless: bool = False) -> Iterator[str]:
    """Run ``tests/peers/sdk_server.py http`` (official SDK, uvicorn) on 127.0.0.1.

    Modes (observed, see tests/peers/NOTES.md): replies are SSE unless ``json_response``;
    ``Mcp-Session-Id`` is issued unless ``stateless`` (then DELETE answers 405).
    """

    def argv(port: int) -> list[str]:
        extra = (["--json-response"] if json_response else []) + (
            ["--stateless"] if stateless else []
        )
        return [*sdk_stdio_command()[:2], "http", "--port", str(port), *extra]

    with _serve(argv) as url:
        yield url


@contextlib.contextmanager
def connect_sdk_peer(script: str, transport: str, *args: str, **kwargs: Any) -> Iterator[Any]:
    """A Session with ``tests/peers/SCRIPT`` (an official-SDK server that runs
    through ``tests/peers/_serve.py``) over ``transport``, "stdio" or "http"
    (on 127.0.0.1), given ``args`` after its own; ``kwargs`` go to
    ``connect``/``connect_http``."""
    import mcp_sync

    sdk_stdio_command()  # skips (or fails under CI) when the SDK is missing
    path = str(PEERS_SRC / script)
    if transport == "stdio":
        with mcp_sync.connect(server="sdk", command=sys.executable, args=[path, *args], **kwargs) as session:
            yield session
        return
    with (
        _serve(lambda port: [sys.executable, path, "http", str(port), *args]) as url,
        mcp_sync.connect_http(server="sdk", url=url, **kwargs) as session,
    ):
        yield session


@contextlib.contextmanager
def start_sdk_sse_server() -> Iterator[str]:
    """The official SDK's server on the deprecated HTTP+SSE transport (2024-11-05);
    yields its ``/sse`` URL."""

    def argv(port: int) -> list[str]:
        return [*sdk_stdio_command()[:2], "sse", "--port", str(port)]

    with _serve(argv, "/sse") as url:
        yield url


@contextlib.contextmanager
def start_everything_http_server() -> Iterator[str]:
    """Run server-everything in ``streamableHttp`` mode, bound to 127.0.0.1 only.

    It calls ``listen(PORT)`` with no host (every interface), so ``loopback.cjs`` is
    preloaded to force 127.0.0.1. Replies are always SSE; with protocol 2025-11-25 each
    stream starts with a priming event (an ``id`` and empty ``data``).
    """
    index_js = peer_package_dir("everything") / "dist" / "index.js"
    node = node_exe()

    def argv(_port: int) -> list[str]:
        return [node, "--require", str(LOOPBACK_SHIM), str(index_js), "streamableHttp"]

    with _serve(argv) as url:
        yield url


# --------------------------------------------------------------------------------------
# Fixtures
# --------------------------------------------------------------------------------------

PEER_FIXTURES = frozenset(
    {
        "everything_bin",
        "everything_stdio_cmd",
        "filesystem_stdio_cmd",
        "memory_stdio",
        "sdk_stdio_cmd",
        "sdk_http_server",
        "sdk_sse_server",
        "everything_http_server",
    }
)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "allow_thread_leak: skip the mcp_sync* thread leak check for this test"
    )
    config.addinivalue_line(
        "markers",
        "hostile: a hostile-server test; a heartbeat thread beside it must never be starved",
    )


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # Tag every test that uses a real peer, so `pytest -m "not peer"` runs the rest fast.
    for item in items:
        if PEER_FIXTURES.intersection(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.peer)


@pytest.fixture
def everything_bin() -> Path:
    """``.cache/peers/node_modules/.bin/mcp-server-everything``."""
    return peer_bin("everything")


@pytest.fixture
def everything_stdio_cmd() -> list[str]:
    """argv for server-everything over stdio (13 tools; sends list_changed early)."""
    return [str(peer_bin("everything")), "stdio"]


@pytest.fixture
def filesystem_stdio_cmd(tmp_path: Path) -> list[str]:
    """argv for server-filesystem allowed to touch only ``tmp_path / "root"``."""
    root = tmp_path / "root"
    root.mkdir()
    return [str(peer_bin("filesystem")), str(root)]


@pytest.fixture
def memory_stdio(tmp_path: Path) -> tuple[list[str], dict[str, str]]:
    """``(argv, env)`` for server-memory; env points MEMORY_FILE_PATH into ``tmp_path``.

    Without MEMORY_FILE_PATH it would write inside node_modules. Pass ``env`` as the
    child's extra environment.
    """
    return [str(peer_bin("memory"))], {"MEMORY_FILE_PATH": str(tmp_path / "memory.jsonl")}


@pytest.fixture
def sdk_stdio_cmd() -> list[str]:
    """``[sys.executable, tests/peers/sdk_server.py, "stdio"]`` (starts in ~0.5 s)."""
    return sdk_stdio_command()


@pytest.fixture
def sdk_http_server() -> Callable[..., contextlib.AbstractContextManager[str]]:
    """The ``start_sdk_http_server`` context manager, for use inside a test::

    with sdk_http_server(json_response=True, stateless=False) as url: ...
    """
    sdk_stdio_command()  # skip/fail early when the SDK is missing
    return start_sdk_http_server


@pytest.fixture
def sdk_sse_server() -> Iterator[str]:
    """The official SDK on the deprecated HTTP+SSE transport; yields its ``/sse`` URL."""
    sdk_stdio_command()
    with start_sdk_sse_server() as url:
        yield url


@pytest.fixture
def everything_http_server() -> Iterator[str]:
    """server-everything over Streamable HTTP on loopback; yields its ``/mcp`` URL."""
    with start_everything_http_server() as url:
        yield url


@pytest.fixture
def no_process_left() -> Callable[..., None]:
    """``assert_no_process_left`` as a fixture, for tests that prefer not to import it."""
    return assert_no_process_left
