"""The stdio transport: the server process and its four threads.

- reader: splits stdout into lines (at most one bounded partial frame held)
  and hands each to the session;
- writer: drains the bounded outbound queue into stdin;
- stderr: drains stderr continuously into a redacted, bounded tail;
- waiter: reaps the child and notices when it exits.

Teardown (``shutdown``) runs once, in whichever thread ends the session first.
"""

from __future__ import annotations

import contextlib
import os
import queue
import signal
import subprocess
import threading
from collections.abc import Mapping, Sequence
from typing import Protocol

from ._errors import ConnectionClosed, ProtocolError, SpawnFailed
from ._limits import Limits
from ._redact import StderrTail

__all__ = ["ENV_ALLOWLIST", "StdioTransport", "child_environment"]

ENV_ALLOWLIST: tuple[str, ...] = (
    "PATH", "HOME", "USER", "LOGNAME", "SHELL", "TERM", "LANG", "TMPDIR",
    # Windows equivalents.
    "SYSTEMROOT", "SYSTEMDRIVE", "COMSPEC", "PATHEXT", "WINDIR", "TEMP", "TMP",
    "USERPROFILE", "USERNAME", "APPDATA", "LOCALAPPDATA", "PROGRAMFILES",
    "PROGRAMFILES(X86)", "PROGRAMDATA", "HOMEDRIVE", "HOMEPATH",
)  # fmt: skip

# How long the child gets to exit by itself once stdin closes, then after
# SIGTERM, then after SIGKILL. server-everything needs ~350 ms after stdin
# closes (a pending timer), so the first grace stays well above that.
GRACE_AFTER_STDIN = 1.0
GRACE_AFTER_TERM = 1.0
GRACE_AFTER_KILL = 1.0
# After stdout ends, how long to wait for the exit status so the session can
# say "exited with code N" rather than just "stdout closed".
EXIT_AFTER_EOF = 0.5
THREAD_JOIN = 2.0

_READ_SIZE = 65536
_STOP = None  # the writer's sentinel


def child_environment(env: Mapping[str, str] | None, inherit: bool) -> dict[str, str]:
    """The allowlisted part of our environment plus ``env``: the parent's
    secrets do not reach an untrusted server unless asked for."""
    if inherit:
        base = dict(os.environ)
    else:
        base = {
            k: v
            for k, v in os.environ.items()
            if k.upper() in ENV_ALLOWLIST or k.startswith("LC_")
        }
    if env:
        base.update(env)
    return base


class _Sink(Protocol):
    def receive(self, line: bytes) -> None: ...
    def terminate(self, error: ConnectionClosed | ProtocolError, *, wait: bool = False) -> None: ...
    def claim(self, request_id: int) -> bool: ...
    def transport_closed(self, stderr_tail: str) -> None: ...


class StdioTransport:
    def __init__(
        self,
        sink: _Sink,
        *,
        server: str,
        command: str,
        args: Sequence[str],
        cwd: str | None,
        env: dict[str, str],
        limits: Limits,
    ) -> None:
        self._sink = sink
        self._limits = limits
        self._queue: queue.Queue[tuple[int | None, bytes] | None] = queue.Queue(maxsize=limits.queue_capacity)
        self._tail = StderrTail(limits.max_stderr_bytes)
        self._exited = threading.Event()
        self._stdout_done = threading.Event()
        self._shutdown_lock = threading.Lock()
        self._shutdown_done = threading.Event()
        self._shut_down = False
        self.returncode: int | None = None
        posix = os.name == "posix"
        try:
            self._proc = subprocess.Popen(
                [command, *args],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                bufsize=0,
                cwd=cwd,
                env=env,
                close_fds=True,
                start_new_session=posix,
                creationflags=0 if posix else getattr(subprocess, "CREATE_NEW_PROCESS_GROUP", 0),
            )
        except (OSError, ValueError) as exc:
            reason = type(exc).__name__
            if isinstance(exc, OSError) and exc.errno is not None:
                reason = os.strerror(exc.errno)
            raise SpawnFailed(f"server {server!r} could not be started: {reason}") from None
        assert self._proc.stdin and self._proc.stdout and self._proc.stderr
        self._stdin_fd = self._proc.stdin.fileno()
        self._stdout_fd = self._proc.stdout.fileno()
        self._stderr_fd = self._proc.stderr.fileno()
        self._threads = [
            threading.Thread(target=target, name=f"mcp_sync-{server}-{role}", daemon=True)
            for role, target in (
                ("reader", self._read_stdout),
                ("writer", self._write_stdin),
                ("stderr", self._read_stderr),
                ("waiter", self._wait_exit),
            )
        ]
        for thread in self._threads:
            thread.start()

    @property
    def pid(self) -> int:
        return self._proc.pid

    # ----------------------------------------------------------- outbound

    def send(self, frame: bytes, request_id: int | None, timeout: float) -> bool:
        try:
            self._queue.put((request_id, frame), timeout=timeout)
        except queue.Full:
            return False
        return True

    def send_nowait(self, frame: bytes) -> bool:
        try:
            self._queue.put_nowait((None, frame))
        except queue.Full:
            return False
        return True

    def _write_stdin(self) -> None:
        fd = self._stdin_fd
        claim = self._sink.claim
        get = self._queue.get
        try:
            while True:
                item = get()
                if item is None:  # _STOP
                    return
                request_id, frame = item
                if request_id is not None and not claim(request_id):
                    continue  # abandoned before it was started
                view = memoryview(frame)
                # A started frame is always finished: half a frame would
                # corrupt every frame after it.
                while view:
                    view = view[os.write(fd, view) :]
        except OSError:
            self._sink.terminate(ConnectionClosed("stdin closed"))
        finally:
            with contextlib.suppress(OSError):
                self._proc.stdin.close()  # type: ignore[union-attr]

    # ----------------------------------------------------------- inbound

    def _read_stdout(self) -> None:
        fd = self._stdout_fd
        limit = self._limits.max_frame_bytes
        receive = self._sink.receive
        partial: list[bytes] = []
        held = 0
        try:
            while True:
                try:
                    chunk = os.read(fd, _READ_SIZE)
                except OSError:
                    chunk = b""
                if not chunk:
                    break
                start = 0
                while True:
                    newline = chunk.find(b"\n", start)
                    if newline < 0:
                        rest = len(chunk) - start
                        if held + rest > limit:
                            self._frame_too_long(limit)
                            return
                        if rest:
                            partial.append(chunk[start:] if start else chunk)
                            held += rest
                        break
                    if held + newline - start > limit:
                        self._frame_too_long(limit)
                        return
                    if partial:
                        partial.append(chunk[start:newline])
                        line = b"".join(partial)
                        partial.clear()
                        held = 0
                    else:
                        line = chunk[start:newline]
                    receive(line)
                    start = newline + 1
        finally:
            self._stdout_done.set()
        # stdout ended. Prefer the exit status when it follows promptly.
        if self._exited.wait(EXIT_AFTER_EOF):
            self._sink.terminate(ConnectionClosed(f"exited with code {self.returncode}"))
        else:
            self._sink.terminate(ConnectionClosed("stdout closed"))

    def _frame_too_long(self, limit: int) -> None:
        self._sink.terminate(
            ProtocolError(f"an inbound frame is longer than max_frame_bytes={limit}")
        )

    def _read_stderr(self) -> None:
        fd = self._stderr_fd
        tail = self._tail
        while True:
            try:
                chunk = os.read(fd, _READ_SIZE)
            except OSError:
                break
            if not chunk:
                break
            tail.feed(chunk)
        tail.finish()

    def _wait_exit(self) -> None:
        if hasattr(os, "waitid"):
            # Wait without reaping: while the child is an unreaped zombie its
            # pid, and so its process group id, cannot be reused, so killing
            # the group cannot hit a stranger. Anything the child left behind
            # in its group (npx's node, a forked worker) dies with it.
            with contextlib.suppress(ChildProcessError, OSError):
                os.waitid(os.P_PID, self._proc.pid, os.WEXITED | os.WNOWAIT)
            self._signal_group(signal.SIGKILL)
        self.returncode = self._proc.wait()
        self._exited.set()
        # A reply written just before exiting is still in the pipe: let the
        # reader finish it. A grandchild may hold stdout open forever, so the
        # wait is bounded.
        self._stdout_done.wait(EXIT_AFTER_EOF)
        self._sink.terminate(ConnectionClosed(f"exited with code {self.returncode}"))

    # ----------------------------------------------------------- teardown

    def shutdown(self, wait: bool) -> None:
        with self._shutdown_lock:
            mine = not self._shut_down
            self._shut_down = True
        if not mine:
            if wait:
                self._shutdown_done.wait()
            return
        try:
            self._teardown()
        finally:
            self._shutdown_done.set()

    def _teardown(self) -> None:
        self._stop_writer()
        if not self._exited.wait(GRACE_AFTER_STDIN):
            self._signal_group(signal.SIGTERM)
            if not self._exited.wait(GRACE_AFTER_TERM):
                self._signal_group(signal.SIGKILL)
                self._exited.wait(GRACE_AFTER_KILL)
        current = threading.current_thread()
        for thread in self._threads:
            if thread is not current:
                thread.join(THREAD_JOIN)
        for stream in (self._proc.stdout, self._proc.stderr):
            if stream is not None and not self._thread_alive_for(stream):
                with contextlib.suppress(OSError):
                    stream.close()
        self._sink.transport_closed(self._tail.text())

    def _thread_alive_for(self, stream: object) -> bool:
        role = "reader" if stream is self._proc.stdout else "stderr"
        return any(t.name.endswith(role) and t.is_alive() for t in self._threads)

    def _stop_writer(self) -> None:
        # Pending frames belong to requests that already failed; drop them so
        # the sentinel fits, and the writer closes stdin when it reaches it.
        while True:
            with contextlib.suppress(queue.Empty):
                self._queue.get_nowait()
            try:
                self._queue.put_nowait(_STOP)
                return
            except queue.Full:
                continue

    def _signal_group(self, sig: signal.Signals) -> None:
        if self.returncode is not None:
            return  # reaped: the group id may belong to someone else now
        if os.name != "posix":
            if sig == signal.SIGTERM:
                with contextlib.suppress(OSError):
                    self._proc.terminate()
            elif not self._exited.is_set():
                with contextlib.suppress(OSError):
                    self._proc.kill()
            return
        # start_new_session made the child a group leader: its pid is the
        # group id, which stays reserved while any member lives.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self._proc.pid, sig)

