"""The stdio transport: the server process and its four threads.

- reader: splits stdout into lines (at most one bounded partial frame held)
  and hands each to the session, whenever no caller is reading;
- writer: drains the bounded outbound queue into stdin, whenever a caller
  could not write its frame itself;
- stderr: drains stderr continuously into a redacted, bounded tail;
- waiter: reaps the child and notices when it exits.

On the hot path a calling thread writes its own request and reads its own
reply (``exchange``), so a sequential call crosses no thread boundary.
Teardown (``shutdown``) runs once, in whichever thread ends the session first
(or in a helper thread, when a caller meets the end).
"""

from __future__ import annotations

import contextlib
import math
import os
import queue
import select
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
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
_POLL_MAX_MS = 2**31 - 1
# stdout's state, changed only by the holder of the read token.
_OPEN, _EOF, _TOO_LONG = "open", "eof", "too long"
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
        self._teardown_thread: threading.Thread | None = None
        self._name = f"mcp_sync-{server}"
        self.returncode: int | None = None
        self._epoll: select.epoll | None = None
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
        try:
            self._setup(posix)
        except BaseException as exc:
            # Out of descriptors or threads: the child must not outlive us.
            self._abandon_child()
            if isinstance(exc, (OSError, RuntimeError)):
                raise SpawnFailed(
                    f"server {server!r} could not be started: {type(exc).__name__}"
                ) from None
            raise

    def _abandon_child(self) -> None:
        # A writer thread that did start is waiting for frames: stop it.
        with contextlib.suppress(queue.Full):
            self._queue.put_nowait(_STOP)
        self._signal_group(signal.SIGKILL)
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            self._proc.kill()
            self._proc.wait(GRACE_AFTER_KILL)
        for stream in (self._proc.stdin, self._proc.stdout, self._proc.stderr):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
        self._close_read_side()

    def _close_read_side(self) -> None:
        """Close the epoll and the wake and stop pipes (whichever exist)."""
        if self._epoll is not None:
            self._epoll.close()
        for name in ("_wake_r", "_wake_w", "_stop_r", "_stop_w"):
            fd = getattr(self, name, None)
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)

    def _setup(self, posix: bool) -> None:
        assert self._proc.stdin and self._proc.stdout and self._proc.stderr
        self._stdin_fd = self._proc.stdin.fileno()
        self._stdout_fd = self._proc.stdout.fileno()
        self._stderr_fd = self._proc.stderr.fileno()
        # Whoever holds _wlock writes to stdin, so frames never interleave.
        # An idle pipe lets the calling thread write its own frame (no hand-off
        # to the writer thread on the hot path); stdin is non-blocking so that
        # write can never stall a caller past its deadline. The unwritten end
        # of a frame a caller began (_carry) is finished by the writer before
        # anything else. _stdin_open turns false, under _wlock, when stdin closes.
        self._wlock = threading.Lock()
        self._carry: memoryview | None = None
        self._stdin_open = True
        self._direct = False
        if posix:
            with contextlib.suppress(OSError):
                os.set_blocking(self._stdin_fd, False)
                self._direct = True
        # The read side (see ``lead``).
        self._rlock = threading.Lock()
        self._partial: list[bytes] = []
        self._held = 0
        self._chunk: bytes | None = None
        self._pos = 0
        self._stdout_state = _OPEN
        if hasattr(select, "epoll"):
            os.set_blocking(self._stdout_fd, False)
            self._wake_r, self._wake_w = os.pipe()
            os.set_blocking(self._wake_r, False)
            self._epoll = select.epoll()
            self._epoll.register(self._stdout_fd, select.EPOLLIN)
            self._epoll.register(self._wake_r, select.EPOLLIN)
            # Written once when the session ends and never drained: a leader
            # polling for a reply that will now never come leaves at once.
            self._stop_r, self._stop_w = os.pipe()
            self._lead_poll = select.poll()
            self._lead_poll.register(self._stdout_fd, select.POLLIN)
            self._lead_poll.register(self._stop_r, select.POLLIN)
        self._threads = [
            threading.Thread(target=target, name=f"{self._name}-{role}", daemon=True)
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
        if self._try_direct(frame, request_id):
            return True
        try:
            self._queue.put((request_id, frame), timeout=timeout)
        except queue.Full:
            return False
        return True

    def _try_direct(self, frame: bytes, request_id: int | None) -> bool:
        """Write the frame from the calling thread if stdin is idle; True if it
        was written, or begun and left to the writer thread to finish."""
        if not self._direct or not self._wlock.acquire(False):
            return False
        try:
            # Reading the deque's length without the queue's mutex is a
            # hint only: a frame queued a moment later is still written.
            if not self._stdin_open or self._carry is not None or self._queue.queue:
                return False
            written = self._write_some(frame)
            if written and request_id is not None:
                self._sink.claim(request_id)
            if written == len(frame):
                return True
            if written:
                self._carry = memoryview(frame)[written:]
                # A wake-up for the writer; a full queue means it is busy
                # and reaches the carry before its next item.
                with contextlib.suppress(queue.Full):
                    self._queue.put_nowait((None, b""))
                return True
            return False
        finally:
            self._wlock.release()

    def send_nowait(self, frame: bytes) -> bool:
        try:
            self._queue.put_nowait((None, frame))
        except queue.Full:
            return False
        return True

    def _write_some(self, frame: bytes) -> int:
        """One non-blocking write; a broken pipe is left for the writer thread
        to meet and report."""
        try:
            return os.write(self._stdin_fd, frame)
        except OSError:
            return 0

    def _write_all(self, frame: bytes | memoryview) -> None:
        # A started frame is always finished: half a frame would corrupt
        # every frame after it.
        fd = self._stdin_fd
        view = memoryview(frame)
        poller: select.poll | None = None
        while view:
            try:
                view = view[os.write(fd, view) :]
            except BlockingIOError:
                # Wait for the server to read; its death wakes us too (EPIPE).
                if poller is None:
                    poller = select.poll()
                    poller.register(fd, select.POLLOUT)
                poller.poll()

    def _write_stdin(self) -> None:
        claim = self._sink.claim
        get = self._queue.get
        lock = self._wlock
        try:
            while True:
                item = get()
                with lock:
                    if self._carry is not None:
                        carry, self._carry = self._carry, None
                        self._write_all(carry)
                    if item is None:  # _STOP
                        return
                    request_id, frame = item
                    if not frame:
                        continue  # a wake-up for the carry
                    if request_id is not None and not claim(request_id):
                        continue  # abandoned before it was started
                    self._write_all(frame)
        except OSError:
            # A dead child also breaks the pipe: when it has exited, its exit
            # status is the truer reason (as for stdout's end).
            if self._exited.wait(EXIT_AFTER_EOF):
                self._sink.terminate(ConnectionClosed(f"exited with code {self.returncode}"))
            else:
                self._sink.terminate(ConnectionClosed("stdin closed"))
        finally:
            with lock:
                self._stdin_open = False
                with contextlib.suppress(OSError):
                    self._proc.stdin.close()  # type: ignore[union-attr]

    # ----------------------------------------------------------- inbound

    # Who reads stdout. Whoever holds _rlock (the read token) reads and
    # dispatches frames, so dispatch is never concurrent. Normally that is the
    # reader thread, woken by epoll when stdout has data. But a caller waiting
    # for its reply takes the token when it is free and reads for itself
    # (``lead``): its own reply then needs no hand-off between threads, which
    # is most of the cost of a round trip. While it leads, stdout is disarmed
    # in the reader thread's epoll, so the reply does not wake that thread too;
    # re-arming it is level-triggered, so nothing that arrives in between is
    # missed. Every ending (EOF, an over-long frame) is finished by the reader
    # thread: a leader that meets one wakes it through the wake pipe.

    def exchange(
        self,
        frame: bytes,
        request_id: int,
        timeout: float,
        done: Callable[[], bool],
        deadline: float,
        *,
        headers: Mapping[str, str] | None = None,
    ) -> bool:
        """Send a request and, if nobody else is reading, read until ``done()``
        or ``deadline``. False if the frame could not be queued in time.
        (``headers`` are for HTTP; stdio carries everything in the frame.)

        The read token is taken and stdout disarmed *before* the write: a
        server that answers at once (on one CPU it runs the moment it is
        woken) would otherwise wake the reader thread with the reply.
        """
        if self._take_read_side():
            try:
                # Only a write that cannot block: never hold the token while
                # waiting for room, or nobody reads the replies the server is
                # blocked on.
                if self._try_direct(frame, request_id):
                    self._read_until(done, deadline)
                    return True
            finally:
                self._give_read_side()
        if not self.send(frame, request_id, timeout):
            return False
        self.lead(done, deadline)
        return True

    def lead(self, done: Callable[[], bool], deadline: float) -> None:
        """Read stdout in the calling thread until ``done()`` or ``deadline``
        (a ``time.monotonic`` value), if nobody else is reading."""
        if self._take_read_side():
            try:
                self._read_until(done, deadline)
            finally:
                self._give_read_side()

    def _take_read_side(self) -> bool:
        """Take the read token and disarm stdout in the reader's epoll, if
        nobody else reads and stdout is still open."""
        if self._epoll is None or not self._rlock.acquire(False):
            return False
        if self._stdout_state is not _OPEN:
            self._rlock.release()
            return False
        self._epoll.modify(self._stdout_fd, 0)
        return True

    def _give_read_side(self) -> None:
        # Re-arm stdout for the reader thread (level-triggered: what came in
        # meanwhile wakes it at once). A chunk left half-split means the
        # leader was interrupted: the reader must finish it even if nothing
        # more ever arrives on stdout.
        try:
            assert self._epoll is not None
            self._epoll.modify(self._stdout_fd, select.EPOLLIN)
            if self._chunk is not None:
                os.write(self._wake_w, b"x")
        finally:
            self._rlock.release()

    def _read_until(self, done: Callable[[], bool], deadline: float) -> None:
        # Holding the read token, with stdout disarmed in the reader's epoll.
        fd = self._stdout_fd
        poll = self._lead_poll.poll
        while not done():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return
            ready = poll(min(math.ceil(remaining * 1000), _POLL_MAX_MS))
            if not ready:
                continue
            if len(ready) > 1 or ready[0][0] != fd:
                return  # the stop pipe: the session has ended
            if not self._read_available():
                os.write(self._wake_w, b"x")  # the reader thread finishes the ending
                return

    def _read_available(self) -> bool:
        """Read what stdout has (holding the read token) and dispatch each
        complete line. False once stdout has ended or broken the frame limit.

        The chunk being split and the position in it live on the transport,
        and the position moves past a line before the line is dispatched: a
        caller interrupted here (KeyboardInterrupt in the main thread) loses at
        most that one line, and the next holder of the token carries on with
        the rest of the chunk instead of losing it, or the framing with it.
        """
        if self._stdout_state is not _OPEN:
            return False
        fd = self._stdout_fd
        limit = self._limits.max_frame_bytes
        receive = self._sink.receive
        partial = self._partial
        while True:
            chunk = self._chunk
            if chunk is None:
                try:
                    chunk = os.read(fd, _READ_SIZE)
                except BlockingIOError:
                    return True
                except OSError:
                    chunk = b""
                if not chunk:
                    self._stdout_state = _EOF
                    return False
                self._chunk, self._pos = chunk, 0
            start = self._pos
            while True:
                newline = chunk.find(b"\n", start)
                if newline < 0:
                    rest = len(chunk) - start
                    if self._held + rest > limit:
                        self._stdout_state = _TOO_LONG
                        partial.clear()
                        return False
                    self._chunk = None
                    if rest:
                        partial.append(chunk[start:] if start else chunk)
                        self._held += rest
                    break
                if self._held + newline - start > limit:
                    self._stdout_state = _TOO_LONG
                    partial.clear()
                    return False
                if partial:
                    partial.append(chunk[start:newline])
                    line = b"".join(partial)
                    partial.clear()
                    self._held = 0
                else:
                    line = chunk[start:newline]
                start = self._pos = newline + 1
                receive(line)
            if len(chunk) < _READ_SIZE:
                return True  # most likely drained; poll says when there is more

    def _read_stdout(self) -> None:
        try:
            if self._epoll is None:
                # No epoll: a plain blocking reader, and callers never lead.
                while self._read_available():
                    pass
            else:
                wait = self._epoll.poll
                wake = self._wake_r
                while True:
                    for ready, _ in wait():
                        if ready == wake:
                            os.read(wake, 64)
                    with self._rlock:
                        if not self._read_available():
                            break
        finally:
            self._stdout_done.set()
        if self._stdout_state is _TOO_LONG:
            limit = self._limits.max_frame_bytes
            self._sink.terminate(
                ProtocolError(f"an inbound frame is longer than max_frame_bytes={limit}")
            )
        # stdout ended. Prefer the exit status when it follows promptly.
        elif self._exited.wait(EXIT_AFTER_EOF):
            self._sink.terminate(ConnectionClosed(f"exited with code {self.returncode}"))
        else:
            self._sink.terminate(ConnectionClosed("stdout closed"))

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
        if mine and self._epoll is not None:
            os.write(self._stop_w, b"x")
        if not mine:
            if wait:
                self._shutdown_done.wait()
                helper = self._teardown_thread
                if helper is not None and helper is not threading.current_thread():
                    helper.join(THREAD_JOIN)
            return
        if not wait and threading.current_thread() not in self._threads:
            # A caller that met the end while reading for its own reply: it
            # neither pays for the teardown nor holds the read token through it.
            helper = threading.Thread(target=self._run_teardown, name=f"{self._name}-teardown", daemon=True)
            self._teardown_thread = helper
            helper.start()
            return
        self._run_teardown()

    def _run_teardown(self) -> None:
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
        # A caller still leading leaves as soon as it sees the end; take the
        # read token so that nobody polls a descriptor as it is closed.
        if self._rlock.acquire(True, THREAD_JOIN):
            try:
                if self._stdout_state is _OPEN:
                    self._stdout_state = _EOF
                if not self._thread_alive_for(self._proc.stdout):
                    self._close_read_side()
                for stream in (self._proc.stdout, self._proc.stderr):
                    if stream is not None and not self._thread_alive_for(stream):
                        with contextlib.suppress(OSError):
                            stream.close()
            finally:
                self._rlock.release()
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

