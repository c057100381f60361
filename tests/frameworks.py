"""Helpers for the framework tests (tests/test_frameworks_*.py).

The code those tests run inside Flask, Django, Celery and Jupyter is the code
of docs/guides/blocking-frameworks.md: its ``file=PATH`` blocks are written
into a fresh project directory and its ``runs-in=jupyter`` blocks are the
notebook cells. What the page does not show (a Django settings module, a
Celery broker config, a header naming the worker that answered) is test
scaffolding, kept in tests/framework_projects/.

Every server the project starts is the fake server with a ``--marker`` path
inside the test's own directory, so its command line names the test: a scan
of /proc finds exactly this test's servers, whoever started them.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from conftest import REPO_ROOT, free_port, missing_peer
from test_docs import fenced_blocks

from mcp_sync.testing import server_command

GUIDE = REPO_ROOT / "docs" / "guides" / "blocking-frameworks.md"
SCAFFOLDS = REPO_ROOT / "tests" / "framework_projects"
START_TIMEOUT = 60.0


def doc_files() -> dict[str, str]:
    """The guide's ``file=PATH`` blocks: path -> code."""
    blocks = fenced_blocks(GUIDE.read_text(encoding="utf-8"))
    return {block.file: block.code for block in blocks if block.file is not None}


def doc_cells(runs_in: str) -> list[str]:
    """The guide's ``runs-in=NAME`` blocks, in page order."""
    blocks = fenced_blocks(GUIDE.read_text(encoding="utf-8"))
    return [block.code for block in blocks if block.runs_in == runs_in]


def make_project(root: Path, *doc_paths: str, scaffold: str | None = None, extra: tuple[str, ...] = ()) -> Path:
    """A project directory: the scaffold (if any), the guide's blocks named by
    ``doc_paths``, and ``mcp_servers.json`` naming a fake server tagged with
    this directory. ``extra``: more fake-server options."""
    project = root / "project"
    if scaffold is not None:
        shutil.copytree(SCAFFOLDS / scaffold, project)
    project.mkdir(exist_ok=True)
    files = doc_files()
    for path in ("mcp_servers.py", *doc_paths):
        assert path in files, f"{GUIDE.name} has no ```python file={path} block"
        target = project / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(files[path], encoding="utf-8")
    command, *args = server_command("--marker", str(marker(project)), *extra)
    config = [{"server": "example", "command": command, "args": args, "requestTimeoutMs": 20000}]
    (project / "mcp_servers.json").write_text(json.dumps(config), encoding="utf-8")
    return project


def marker(project: Path) -> Path:
    return project / "server-started"


def environment(project: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(project), str(REPO_ROOT)])
    env["PYTHONUNBUFFERED"] = "1"
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    return env


# ------------------------------------------------------------------ processes


def _cmdline(pid: int) -> str:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return ""
    return raw.replace(b"\0", b" ").decode("utf-8", "replace")


def _stat(pid: int) -> tuple[str, int] | None:
    try:
        raw = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    fields = raw[raw.rfind(")") + 2 :].split()
    return fields[0], int(fields[1])


def servers_of(project: Path) -> dict[int, int]:
    """This project's live fake servers: pid -> parent pid."""
    tag = str(marker(project))
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        pid = int(entry)
        if tag in _cmdline(pid):
            stat = _stat(pid)
            if stat is not None and stat[0] not in ("Z", "X"):
                found[pid] = stat[1]
    return found


def children(pid: int) -> set[int]:
    out = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            stat = _stat(int(entry))
            if stat is not None and stat[1] == pid and stat[0] not in ("Z", "X"):
                out.add(int(entry))
    return out


def wait_for(check: Any, what: str, timeout: float = START_TIMEOUT) -> Any:
    """Poll ``check()`` until it returns something truthy; fail after ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


def no_server_left(project: Path, timeout: float = 15.0) -> None:
    left: dict[int, int] = {}

    def gone() -> bool:
        nonlocal left
        left = servers_of(project)
        return not left

    try:
        wait_for(gone, "the servers to exit", timeout)
    except AssertionError:
        for pid in left:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        raise AssertionError(f"server processes left behind: {sorted(left)}") from None


@dataclass
class Running:
    proc: subprocess.Popen[bytes]
    log: IO[bytes]

    def output(self) -> str:
        self.log.flush()
        self.log.seek(0)
        return self.log.read().decode("utf-8", "replace")[-6000:]


@contextlib.contextmanager
def run(argv: list[str], project: Path, env: dict[str, str] | None = None) -> Iterator[Running]:
    """Run a framework's process (in its own process group) with output to a file;
    on the way out, SIGTERM it and wait (SIGKILL the group after 20 s)."""
    with (project / "process.log").open("w+b") as log:
        proc = subprocess.Popen(
            argv, cwd=project, env=env or environment(project), stdin=subprocess.DEVNULL,
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
        running = Running(proc, log)
        try:
            yield running
        finally:
            stop(running)


def stop(running: Running, sig: int = signal.SIGTERM) -> int:
    proc = running.proc
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(proc.pid, sig)
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)
            raise AssertionError(f"{proc.args[:3]} did not stop on SIGTERM:\n{running.output()}") from None
    return proc.returncode


# ------------------------------------------------------------------ a Redis broker


@contextlib.contextmanager
def redis_server(root: Path) -> Iterator[str]:
    """A private Redis server on a free loopback port, for as long as the block runs:
    yields its URL. Skips (fails when peers are required, as in CI) without
    ``redis-server`` on PATH (Debian's package; scripts/test installs it as root) or
    the ``redis`` client package (the dev dependency group)."""
    exe = shutil.which("redis-server")
    if exe is None:
        missing_peer("redis-server is not installed (apt-get install redis-server)")
    try:
        import redis  # noqa: F401  (kombu's Redis transport imports it in the worker)
    except ImportError:
        missing_peer("the redis client package is not installed (pip install -e . --group dev)")
    data = root / "redis"
    data.mkdir()
    port = free_port()
    argv = [
        exe, "--port", str(port), "--bind", "127.0.0.1", "--dir", str(data), "--save", "",
        "--appendonly", "no", "--daemonize", "no", "--loglevel", "warning",
    ]  # fmt: skip
    with (data / "redis.log").open("w+b") as log:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)
        running = Running(proc, log)
        try:
            def up() -> bool:
                assert proc.poll() is None, f"redis-server exited early:\n{running.output()}"
                try:
                    with socket.create_connection(("127.0.0.1", port), timeout=2) as sock:
                        sock.sendall(b"PING\r\n")
                        return sock.recv(16).startswith(b"+PONG")
                except OSError:
                    return False

            wait_for(up, "redis-server to answer PING")
            yield f"redis://127.0.0.1:{port}/0"
        finally:
            stop(running)


# ------------------------------------------------------------------ gunicorn and HTTP


def gunicorn(project: Path, app: str, *options: str) -> tuple[list[str], int]:
    port = free_port()
    argv = [
        sys.executable, "-m", "gunicorn", app, "--bind", f"127.0.0.1:{port}",
        "--timeout", "60", "--graceful-timeout", "10", *options,
    ]  # fmt: skip
    return argv, port


def wait_listening(running: Running, port: int) -> None:
    def up() -> bool:
        assert running.proc.poll() is None, f"exited early:\n{running.output()}"
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=2):
                return True
        except OSError:
            return False

    wait_for(up, "the server to listen")


def request(port: int, method: str, path: str, body: Any = None) -> tuple[int, dict[str, Any], str]:
    """One HTTP request on loopback: (status, JSON body, the X-Worker header)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        headers = {"Content-Type": "application/json"} if body is not None else {}
        conn.request(method, path, body=json.dumps(body) if body is not None else None, headers=headers)
        response = conn.getresponse()
        data = response.read()
        return response.status, json.loads(data), response.getheader("X-Worker") or ""
    finally:
        conn.close()


def workers_of(master: int) -> set[int]:
    return children(master)


@dataclass(frozen=True)
class Answer:
    index: int
    status: int
    body: dict[str, Any]
    worker: int


def traffic(
    send: Any, count: int, threads: int = 8, progress: threading.Event | None = None, after: int = 0
) -> list[Answer]:
    """``count`` requests from ``threads`` client threads; ``send(i)`` makes
    request ``i`` and returns (status, body, worker). ``progress`` is set once
    ``after`` answers are in."""
    answers: list[Answer] = []
    lock = threading.Lock()
    next_index = iter(range(count))

    def client() -> None:
        while True:
            with lock:
                index = next(next_index, None)
            if index is None:
                return
            status, body, worker = send(index)
            with lock:
                answers.append(Answer(index, status, body, int(worker or 0)))
                if progress is not None and len(answers) >= after:
                    progress.set()

    pool = [threading.Thread(target=client, name=f"client-{n}") for n in range(threads)]
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join()
    return answers
