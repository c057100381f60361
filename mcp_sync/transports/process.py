"""The server process of a stdio transport: its environment, its start, its
reaping, and how it is stopped (stdin closed, then ``SIGTERM``, then
``SIGKILL`` to its whole process group, then whatever left the group: see
:mod:`._proctree`).

Every server process is registered from its spawn until it is reaped, and the
interpreter's exit stops each one still registered the same way, all at once
(:func:`_stop_at_exit`): a server whose session was still connecting, or
being closed on a daemon thread, does not outlive us.

:func:`spawn_of` is where a stdio server's command, arguments, working
directory and environment are revealed (what a config's ``${VAR}`` expanded
to is a :class:`~.._secret.Secret` until then), as the transport starts the
process; :func:`resolve_command` says which file that start will run, by the
same rules, for the consent a project's file needs.
"""

from __future__ import annotations

import atexit
import contextlib
import errno
import os
import select
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from ..protocol.errors import SpawnFailed
from ..protocol.secret import Text, expansions, reveal
from ..protocol.stderr_tail import StderrTail
from . import process_tree as _proctree

__all__ = [
    "ENV_ALLOWLIST", "ServerProcess", "Spawn", "child_environment", "drain_stderr",
    "resolve_command", "spawn_of",
]  # fmt: skip

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
# At exit, how long spawns under way get to finish registering their process.
_SPAWN_WAIT = 1.0


class _Live:
    """Every server process of this interpreter, from its spawn until it is reaped."""

    def __init__(self) -> None:
        # Guards spawning, procs and exiting. The exit handler waits on it
        # for the spawns under way (Popen running) to register their process.
        self.cond = threading.Condition(threading.Lock())
        self.spawning = 0
        self.procs: set[ServerProcess] = set()
        self.exiting = False

    def begin_spawn(self, server: str) -> None:
        with self.cond:
            if self.exiting:
                raise SpawnFailed(f"server {server!r} was not started: the interpreter is exiting")
            self.spawning += 1

    def end_spawn(self, proc: ServerProcess | None) -> None:
        with self.cond:
            self.spawning -= 1
            if proc is not None:
                self.procs.add(proc)
            self.cond.notify_all()

    def reaped(self, proc: ServerProcess) -> None:
        with self.cond:
            self.procs.discard(proc)


_live = _Live()


def _after_fork_in_child() -> None:
    # The parent's servers are not ours to stop.
    global _live
    _live = _Live()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def _pidfd(proc: ServerProcess) -> int:
    """A pidfd pinning ``proc`` while it is not yet reaped; -1 if there is none."""
    if not hasattr(os, "pidfd_open"):
        return -1
    try:
        return os.pidfd_open(proc.pid)
    except OSError:
        return -1


def _poll_pidfds(pidfds: dict[int, ServerProcess], deadline: float) -> list[ServerProcess]:
    # A pidfd is readable once its process has exited, reaped or not (the
    # waiter thread may never have started).
    poller = select.poll()
    for fd in pidfds:
        poller.register(fd, select.POLLIN)
    left = set(pidfds)
    while left:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            break
        for fd, _ in poller.poll(max(1, int(remaining * 1000))):
            poller.unregister(fd)
            left.discard(fd)
    return [pidfds[fd] for fd in left]


def _wait_gone(procs: list[ServerProcess], timeout: float) -> list[ServerProcess]:
    """Wait up to ``timeout`` s for every process of ``procs`` to exit; those still running."""
    deadline = time.monotonic() + timeout
    pidfds: dict[int, ServerProcess] = {}
    waited: list[ServerProcess] = []
    for proc in procs:
        fd = _pidfd(proc)
        # Checked after pidfd_open: a process not yet reaped then is the
        # one the pidfd pins, not a stranger that reused its pid.
        if proc.exited.is_set():
            if fd >= 0:
                os.close(fd)
        elif fd >= 0:
            pidfds[fd] = proc
        else:
            waited.append(proc)
    try:
        alive = _poll_pidfds(pidfds, deadline) if pidfds else []
    finally:
        for fd in pidfds:
            os.close(fd)
    for proc in waited:
        if not proc.exited.wait(max(0.0, deadline - time.monotonic())):
            alive.append(proc)
    return alive


def _stop_at_exit() -> None:
    """The interpreter is exiting: stop every server process still running,
    whatever its session was doing, as teardown does but all at once: stdin
    closed, then ``SIGTERM``, then ``SIGKILL`` (at most about the three
    graces in all), then whatever left their groups."""
    live = _live
    with live.cond:
        live.exiting = True
        live.cond.wait_for(lambda: live.spawning == 0, _SPAWN_WAIT)
        procs = list(live.procs)
    if not procs:
        return
    for proc in procs:
        closer = proc.close_stdin
        if closer is not None:
            with contextlib.suppress(Exception):
                closer()
    running = _wait_gone(procs, GRACE_AFTER_STDIN)
    for proc in running:
        proc._signal_group(signal.SIGTERM)
    running = _wait_gone(running, GRACE_AFTER_TERM)
    for proc in running:
        proc._signal_group(_SIGKILL)
        if os.name != "posix":
            with contextlib.suppress(OSError):
                proc._kill_child()
    for proc in procs:
        _proctree.kill_marked(proc._marker, exclude=proc.pid)


# Registered at import, before any session exists: it runs after the handlers
# registered later (a Servers set's close, a forgotten session's finalizer),
# which stop their servers the ordinary way first.
atexit.register(_stop_at_exit)


def child_environment(env: Mapping[str, Text] | None, inherit: bool) -> dict[str, str]:
    """The allowlisted part of our environment plus ``env`` (revealed): the
    parent's secrets do not reach an untrusted server unless asked for."""
    if inherit:
        base = dict(os.environ)
    else:
        base = {
            k: v
            for k, v in os.environ.items()
            if k.upper() in ENV_ALLOWLIST or k.startswith("LC_")
        }
    if env:
        base.update((key, reveal(value)) for key, value in env.items())
    return base


@dataclass(frozen=True, slots=True, repr=False)
class Spawn:
    """What a server process starts with, revealed: for ``Popen`` only.
    ``masked``: the values to mask in its stderr (its ``env`` values and
    every piece a ``${VAR}`` expanded to)."""

    command: str
    args: list[str]
    cwd: str | None
    env: dict[str, str]
    masked: tuple[str, ...]
    # The command and directory as written, a ${VAR} as the reference: what
    # a message may name.
    shown_command: str
    shown_cwd: str | None

    def __repr__(self) -> str:
        return "Spawn(...)"


def spawn_of(
    command: Text,
    args: Sequence[Text],
    cwd: Text | None,
    env: Mapping[str, Text] | None,
    inherit: bool,
) -> Spawn:
    """The command, arguments, directory and environment of a server as the
    process is started with them: the one place a stdio server's
    :class:`~.._secret.Secret` values are revealed."""
    given_env = dict(env or {})
    return Spawn(
        command=reveal(command),
        args=[reveal(arg) for arg in args],
        cwd=reveal(cwd) if cwd is not None else None,
        env=child_environment(given_env, inherit),
        masked=(
            *(reveal(value) for value in given_env.values()),
            *expansions([command, *args, cwd]),
        ),
        shown_command=str(command),
        shown_cwd=str(cwd) if cwd is not None else None,
    )


def resolve_command(command: Text, cwd: Text | None, env: Mapping[str, Text] | None) -> str | None:
    """The file a server started with ``command``, ``cwd`` and ``env`` would
    run, as an absolute path (``None``: none is found).

    ``Popen`` looks a bare name up on the child's ``PATH`` (the entry's
    ``env`` PATH when it sets one) and, as exec does, takes a relative
    directory of that PATH, or a relative command, from the child's working
    directory. Only the trust question asks, so ``shutil`` (which brings the
    compression modules) is imported here, not by every connect."""
    import shutil

    where = os.path.abspath(reveal(cwd)) if cwd is not None else os.getcwd()
    name = reveal(command)
    if os.path.dirname(name):
        found = shutil.which(os.path.join(where, name), path="")
        return os.path.abspath(found) if found else None
    path = child_environment(env, False).get("PATH", os.defpath)
    dirs = [os.path.join(where, entry) for entry in path.split(os.pathsep)]
    found = shutil.which(name, path=os.pathsep.join(dirs))
    return os.path.abspath(found) if found else None


def _not_started(
    exc: OSError | ValueError, command: str, cwd: str | None, shown: tuple[str, str | None]
) -> str:
    """Why ``Popen`` failed, naming the command (or the working directory)
    as the user wrote it: a command missing from ``PATH`` is the most
    common broken config."""
    if not isinstance(exc, OSError) or exc.errno is None:
        return type(exc).__name__
    shown_command, shown_cwd = shown
    reason = os.strerror(exc.errno)
    if cwd is not None and exc.filename == cwd:
        return f"its working directory {shown_cwd!r}: {reason}"
    if exc.errno == errno.ENOENT:
        where = "" if os.path.dirname(command) else " on PATH"
        return f"command {shown_command!r} not found{where}"
    return f"command {shown_command!r}: {reason}"


class ServerProcess:
    """The child, in a process group (session) of its own, with its three pipes."""

    def __init__(  # noqa: PLR0913, PLR0917
        self, server: str, command: str, args: Sequence[str], cwd: str | None, env: dict[str, str],
        shown: tuple[str, str | None] | None = None,
    ) -> None:
        """``shown``: the command and directory as a message may name them
        (default: as given)."""
        self.returncode: int | None = None
        # Set by the waiter thread (reap) once the child has exited.
        self.exited = threading.Event()
        # What the exit handler calls first to close stdin (set by the
        # transport once its writer runs; None: the handler goes straight to signals).
        self.close_stdin: Callable[[], None] | None = None
        # Inherited by every process the server starts, so teardown can find
        # the ones that left its process group (see _proctree).
        self._marker = f"{_proctree.MARKER}={os.urandom(8).hex()}"
        posix = os.name == "posix"
        _live.begin_spawn(server)
        spawned = False
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
            reason = _not_started(exc, command, cwd, shown or (command, cwd))
            raise SpawnFailed(f"server {server!r} could not be started: {reason}") from None
        else:
            spawned = True
            # Popen keeps the argv for its repr and its TimeoutExpired
            # messages; it may hold what a ${VAR} expanded to.
            self.proc.args = f"<the server {server!r}>"
        finally:
            # Registered before anything else can happen to it: from now
            # until it is reaped, the interpreter's exit stops it.
            _live.end_spawn(self if spawned else None)

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
        _live.reaped(self)

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

    def abandon(self) -> None:
        """:meth:`kill_now`, and its pipes closed: nothing took the process over."""
        self.kill_now()
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()

    def kill_now(self) -> None:
        """The hardest stop at once (a start that failed half-way)."""
        self._signal_group(_SIGKILL)
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            self._kill_child()
            self.proc.wait(GRACE_AFTER_KILL)
            _live.reaped(self)

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
