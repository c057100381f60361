"""Finding the processes a server started that left its process group.

A server runs in a process group of its own, and teardown signals the whole
group. A descendant that calls ``setsid()`` (a daemon, some process managers)
leaves that group, and once its parent exits it is re-parented away from the
server, so neither the group nor the parent chain finds it. Every process the
server starts inherits its environment, though, and the transport puts a
marker there, unique to the session: teardown kills every process of ours
that still carries it (Linux: ``/proc/<pid>/environ``; elsewhere nothing is
found and only the group is signalled).

What remains out of reach: a descendant that starts with a cleaned
environment (``env -i``), one that runs as another user (setuid), or one in
another PID namespace. ``docs/concepts/the-session.md`` says so too.
"""

from __future__ import annotations

import contextlib
import os
import signal

__all__ = ["MARKER", "kill_marked"]

MARKER = "MCP_SYNC_SESSION"
"""The environment variable each server process inherits; its value is unique per session."""

_PROC = "/proc"


def _marked(pid: int, needle: bytes) -> bool:
    try:
        with open(f"{_PROC}/{pid}/environ", "rb") as handle:
            environ = handle.read()
    except OSError:  # gone, or not ours
        return False
    return needle in environ.split(b"\0")


def kill_marked(marker: str, *, exclude: int) -> int:
    """SIGKILL every process (but ``exclude`` and ourselves) whose environment
    holds ``marker`` (``NAME=value``); how many were signalled.

    A pidfd pins the process between the check and the signal, so a pid that
    is reused in between is never hit.
    """
    if not (
        os.path.isdir(_PROC)
        and hasattr(signal, "pidfd_send_signal")
        and hasattr(os, "pidfd_open")
        and hasattr(signal, "SIGKILL")
    ):
        return 0
    needle = marker.encode()
    ours = {os.getpid(), exclude}
    killed = 0
    try:
        names = os.listdir(_PROC)
    except OSError:
        return 0
    for name in names:
        if not name.isdigit() or int(name) in ours:
            continue
        pid = int(name)
        if not _marked(pid, needle):
            continue
        try:
            pidfd = os.pidfd_open(pid)
        except OSError:
            continue
        try:
            # Checked again through the pinned process: the pid may have
            # been reused between the first look and pidfd_open.
            if _marked(pid, needle):
                with contextlib.suppress(OSError):
                    signal.pidfd_send_signal(pidfd, signal.SIGKILL)
                    killed += 1
        finally:
            os.close(pidfd)
    return killed
