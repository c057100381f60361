"""The server process of a stdio transport: its environment, its start, its
reaping, and how it is stopped (stdin closed, then ``SIGTERM``, then
``SIGKILL`` to its whole process group, then whatever left the group: see
:mod:`._proctree`).
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import threading
from collections.abc import Mapping, Sequence
from secrets import token_hex

from .._errors import SpawnFailed
from .._redact import StderrTail
from . import _proctree

__all__ = ["ENV_ALLOWLIST", "ServerProcess", "child_environment", "drain_stderr"]

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
_READ_SIZE = 65536
# The hardest stop the platform has: SIGKILL, or (Windows) Popen.kill(), which
# is TerminateProcess there. None where there is no SIGKILL (see _signal_group).
_SIGKILL: signal.Signals | None = getattr(signal, "SIGKILL", None)


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


class ServerProcess:
    """The child, in a process group (session) of its own, with its three pipes."""

    def __init__(
        self, server: str, command: str, args: Sequence[str], cwd: str | None, env: dict[str, str]
    ) -> None:
        self.returncode: int | None = None
        # Set by the waiter thread (reap) once the child has exited.
        self.exited = threading.Event()
        # Inherited by every process the server starts, so teardown can find
        # the ones that left its process group (see _proctree).
        self._marker = f"{_proctree.MARKER}={token_hex(8)}"
        posix = os.name == "posix"
        try:
            self.proc = subprocess.Popen(
                [command, *args],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                bufsize=0,
                cwd=cwd,
                env={**env, _proctree.MARKER: self._marker.split("=", 1)[1]},
                close_fds=True,
                start_new_session=posix,
                creationflags=0 if posix else getattr(subprocess, "CREATE_NEW_PROCESS_GROUP", 0),
            )
        except (OSError, ValueError) as exc:
            reason = type(exc).__name__
            if isinstance(exc, OSError) and exc.errno is not None:
                reason = os.strerror(exc.errno)
            raise SpawnFailed(f"server {server!r} could not be started: {reason}") from None

    @property
    def pid(self) -> int:
        return self.proc.pid

    def reap(self) -> None:
        """Wait for the child to exit (the waiter thread), then reap it."""
        if hasattr(os, "waitid"):
            # Wait without reaping: while the child is an unreaped zombie its
            # pid, and so its process group id, cannot be reused, so killing
            # the group cannot hit a stranger. Anything the child left behind
            # in its group (npx's node, a forked worker) dies with it.
            with contextlib.suppress(ChildProcessError, OSError):
                os.waitid(os.P_PID, self.proc.pid, os.WEXITED | os.WNOWAIT)
            self._signal_group(_SIGKILL)
        self.returncode = self.proc.wait()
        self.exited.set()

    def stop(self, polite: bool = True) -> None:
        """Teardown, once stdin is closed: wait for the child to leave, then
        make it; then kill what it started that left its group.

        ``polite`` (the caller closed the session): the child first gets
        ``GRACE_AFTER_STDIN`` to leave on its own. A session that failed
        skips it: its server broke a rule, stopped answering or is stuck
        writing a reply nobody reads, so waiting for it to notice the end
        of stdin only made closing take a second."""
        if not self.exited.wait(GRACE_AFTER_STDIN if polite else 0):
            self._signal_group(signal.SIGTERM)
            if not self.exited.wait(GRACE_AFTER_TERM):
                self._signal_group(_SIGKILL)
                self.exited.wait(GRACE_AFTER_KILL)
        # Processes the server started that left its group (setsid) are found
        # by the marker in their environment.
        _proctree.kill_marked(self._marker, exclude=self.proc.pid)

    def kill_now(self) -> None:
        """The hardest stop at once (a start that failed half-way)."""
        self._signal_group(_SIGKILL)
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            self._kill_child()
            self.proc.wait(GRACE_AFTER_KILL)

    def _kill_child(self) -> None:
        if _SIGKILL is None and os.name == "posix":
            self.proc.terminate()  # Popen.kill() would send the SIGKILL we lack
        else:
            self.proc.kill()

    def _signal_group(self, sig: signal.Signals | None) -> None:
        """Send ``sig`` (None: the hardest stop there is) to the server's
        process group, or to the server alone where there are no groups."""
        if self.returncode is not None:
            return  # reaped: the group id may belong to someone else now
        if os.name != "posix" or not hasattr(os, "killpg"):
            if sig == signal.SIGTERM:
                with contextlib.suppress(OSError):
                    self.proc.terminate()
            elif not self.exited.is_set():
                with contextlib.suppress(OSError):
                    self._kill_child()
            return
        if sig is None:
            sig = signal.SIGTERM  # a POSIX build without SIGKILL: the strongest left
        # start_new_session made the child a group leader: its pid is the
        # group id, which stays reserved while any member lives.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, sig)


def drain_stderr(fd: int, stop_fd: int, tail: StderrTail) -> None:
    """The stderr thread: keep a redacted, bounded tail of ``fd`` until it
    ends, or (where poll exists) until ``stop_fd`` is readable and what is
    already there has been read."""
    poller: select.poll | None = None
    if hasattr(select, "poll"):
        # Until the session ends, then only what is already there: a
        # process that escaped the kill may hold stderr open for ever.
        os.set_blocking(fd, False)
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        poller.register(stop_fd, select.POLLIN)
    stopping = False
    while True:
        if poller is not None and not stopping:
            stopping = any(ready == stop_fd for ready, _ in poller.poll())
        try:
            chunk = os.read(fd, _READ_SIZE)
        except BlockingIOError:
            if stopping:
                break
            continue
        except OSError:
            break
        if not chunk:
            break
        tail.feed(chunk)
    tail.finish()
