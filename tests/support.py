"""Helpers for tests that drive the fake server (mcp_sync.testing)."""

from __future__ import annotations

import gc
import json
import logging
import os
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import mcp_sync
from mcp_sync.testing import server_command


def connect_fake(*options: str, server: str = "fake", **kwargs: Any) -> mcp_sync.Session:
    command, *args = server_command(*options)
    return mcp_sync.connect(server=server, command=command, args=args, **kwargs)


def fake_pid(session: mcp_sync.Session) -> int:
    """The server's pid (private: tests only)."""
    return session._core.transport.pid  # type: ignore[union-attr, attr-defined, no-any-return]


def alive(pid: int) -> bool:
    """Whether ``pid`` is a live process (a zombie counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as handle:
            state = handle.read().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state not in ("Z", "X")


def wait_gone(pid: int, timeout: float = 30.0) -> None:
    """Wait for ``pid`` to end; ``timeout`` is a cap for a loaded machine, not an expectation."""
    deadline = time.monotonic() + timeout
    while alive(pid):
        assert time.monotonic() < deadline, f"process {pid} is still running"
        time.sleep(0.01)


def logged(path: Path) -> list[dict[str, Any]]:
    """Every JSON frame the fake server received (its --log file)."""
    if not path.exists():
        return []
    # Read while the server may be writing: a last line without its newline
    # is still being written, and is left for the next look.
    complete = path.read_bytes().split(b"\n")[:-1]
    return [json.loads(line) for line in complete if line.strip()]


def methods(path: Path) -> list[str]:
    return [frame.get("method", "<reply>") for frame in logged(path)]


def library_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("mcp_sync-")]


def rss_bytes() -> int:
    with open(f"/proc/{os.getpid()}/status", encoding="ascii") as handle:
        for line in handle:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


@contextmanager
def timed(limit: float) -> Iterator[None]:
    """Assert the block ends within ``limit`` s of wall-clock time: a deadline check (the
    deadline plus a tolerance for a loaded machine), not a speed test."""
    start = time.monotonic()
    yield
    took = time.monotonic() - start
    assert took < limit, f"took {took:.2f}s, over {limit}s"


@contextmanager
def cpu_bounded(limit: float) -> Iterator[None]:
    """Assert the block uses less than ``limit`` s of this process's CPU time (all its
    threads): a check that some work is bounded (no quadratic scan, no expansion of a
    shared graph), which other processes on a loaded machine cannot stretch the way
    they stretch wall-clock time."""
    start = time.process_time()
    yield
    used = time.process_time() - start
    assert used < limit, f"used {used:.2f}s of CPU, over {limit}s"


@contextmanager
def captured_logs(name: str) -> Iterator[list[logging.LogRecord]]:
    """Every record logged on ``name`` (at any level) while the block runs."""
    with _collect(name) as handler:
        yield handler.records


class Records(logging.Handler):
    """Collects every record of a logger (and its children) while installed."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    def events(self, event: str) -> list[logging.LogRecord]:
        return [r for r in self.records if getattr(r, "mcp_event", None) == event]


@contextmanager
def mcp_records() -> Iterator[Records]:
    """Every ``mcp_sync`` record, at DEBUG, while the block runs."""
    with _collect("mcp_sync") as handler:
        yield handler


@contextmanager
def _collect(name: str) -> Iterator[Records]:
    handler = Records()
    logger = logging.getLogger(name)
    old_level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)
        logger.setLevel(old_level)


@contextmanager
def heartbeat(tick: float = 0.01) -> Iterator[list[float]]:
    """The longest wall-clock gap (``[0]``, seconds, once the block has ended)
    between two wake-ups of conftest's ``Heartbeat`` ticking every ``tick`` s: a
    thread starved of the GIL shows here. (The ``hostile`` marker's check, and
    :func:`starvation`, count only the time the process ran.)"""
    from conftest import Heartbeat

    beat = Heartbeat(tick)
    gaps = [0.0]
    try:
        yield gaps
    finally:
        beat.stop()
        gaps[0] = beat.longest_gap


@contextmanager
def peak_rss_growth() -> Iterator[list[int]]:
    """The highest growth (``[0]``, bytes) of this process's RSS over the block,
    sampled every 2 ms, after a collection."""
    gc.collect()
    base = rss_bytes()
    peak = [0]
    stop = threading.Event()

    def sample() -> None:
        while not stop.wait(0.002):
            peak[0] = max(peak[0], rss_bytes() - base)

    thread = threading.Thread(target=sample)
    thread.start()
    try:
        yield peak
    finally:
        stop.set()
        thread.join()
        peak[0] = max(peak[0], rss_bytes() - base)


@contextmanager
def starvation() -> Iterator[list[float]]:
    """The longest time (``[0]``, seconds) a heartbeat thread was starved while this
    process ran, over the block: the ``hostile`` marker's measure (conftest's
    ``Heartbeat``), which a busy machine's scheduler does not inflate."""
    from conftest import Heartbeat

    beat = Heartbeat()
    worst = [0.0]
    try:
        yield worst
    finally:
        worst[0] = beat.stop()


def converse_on_a_pty(argv: list[str], cwd: Path, env: dict[str, str], answer: bytes) -> tuple[bytes, int]:
    """Run ``argv`` on a pty, answer its question: what it showed, and its exit code."""
    import pty
    import select

    leader, follower = pty.openpty()
    proc = subprocess.Popen(
        argv, stdin=follower, stdout=subprocess.PIPE, stderr=follower, cwd=cwd, env=env
    )
    os.close(follower)
    shown = b""
    try:
        while b"[y/N]" not in shown:
            ready, _, _ = select.select([leader], [], [], 60)
            assert ready, shown
            try:
                chunk = os.read(leader, 4096)
            except OSError:  # the child closed the terminal
                chunk = b""
            assert chunk, shown
            shown += chunk
        os.write(leader, answer)
        proc.wait(60)
        while select.select([leader], [], [], 0)[0]:
            try:
                chunk = os.read(leader, 4096)
            except OSError:
                break
            if not chunk:
                break
            shown += chunk
    finally:
        proc.kill()
        proc.wait()
        os.close(leader)
        assert proc.stdout is not None
        shown += proc.stdout.read()
        proc.stdout.close()
    return shown, proc.returncode
