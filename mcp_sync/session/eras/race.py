"""The race's attempts, for :class:`~.negotiation._Race`: an opening request
(the probe or the handshake) waited for on a daemon thread of its own, and
what the race reads about it and about the server (whether it was answered,
whether the server process is busy). No rule of the negotiation lives here:
those are in :mod:`.negotiation`."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ...protocol.errors import McpError, RemoteError
from .modern import NoCommonVersion

if TYPE_CHECKING:
    from ...transports.contract import Outbound, Transport
    from ..pending import _Watched

__all__ = ["Attempt", "answered", "process_busy"]


class Attempt:
    """One opening request (the probe or the handshake) waited for on a
    daemon thread of its own, so that the other can be sent while it is
    out. It is the request's :class:`~._pending.Watch`: its wait ends with
    the reply, at its deadline, or when the race is decided without it."""

    __slots__ = ("_cond", "_thread", "crash", "deadline", "done", "error", "result", "sent", "stopped")

    def __init__(self, cond: threading.Condition, name: str, deadline: float,
                 send: Callable[[Attempt], Any]) -> None:
        self._cond = cond
        self.deadline = deadline
        self.stopped = False
        self.sent = False  # written, or queued for the writer
        self.done = False
        self.result: Any = None
        self.error: McpError | None = None
        self.crash: BaseException | None = None
        self._thread = threading.Thread(target=self._run, args=(send,), name=name, daemon=True)
        self._thread.start()

    def _run(self, send: Callable[[Attempt], Any]) -> None:
        result: Any = None
        error: McpError | None = None
        crash: BaseException | None = None
        try:
            result = send(self)
        except McpError as exc:
            error = exc.with_traceback(None)
        except BaseException as exc:  # a bug: raised again in the negotiating thread
            crash = exc
        with self._cond:
            self.result, self.error, self.crash, self.done = result, error, crash, True
            self._cond.notify_all()

    def stop(self) -> None:
        """Stop waiting for the reply (it is dropped when it comes)."""
        with self._cond:
            self.stopped = True
            self._cond.notify_all()

    def join(self) -> None:
        self._thread.join()

    # ------------------------------------------------------------ Watch

    def wake(self) -> None:
        with self._cond:
            self._cond.notify_all()

    def retry(self) -> None:
        """Nothing to reset: the probe's one retry (after -32022) has the same deadline."""

    def follow(self, entry: _Watched, transport: Transport, item: Outbound, timeout: float) -> bool:
        # Replies are read by the transport's own threads: this thread only waits.
        if not transport.send(item, timeout):
            return False
        with self._cond:
            self.sent = True
            self._cond.notify_all()
            while not entry.done() and not self.stopped:
                remaining = self.deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._cond.wait(min(remaining, threading.TIMEOUT_MAX))
        return entry.done()


def process_busy(pid: int) -> bool:
    """Whether a thread of process ``pid`` is running or waiting for a CPU
    (Linux ``/proc``; False when that cannot be read)."""
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return False
    for task in tasks:
        try:
            with open(f"/proc/{pid}/task/{task}/stat", "rb") as handle:
                stat = handle.read()
        except OSError:
            continue
        end = stat.rfind(b")")  # the name may hold spaces and parentheses
        if stat[end + 2 : end + 3] == b"R":
            return True
    return False


def answered(attempt: Attempt | None) -> bool:
    """Whether the server answered this attempt's request (a result or a
    JSON-RPC error), rather than the session ending or the wait stopping."""
    if attempt is None or not attempt.done:
        return False
    return attempt.error is None or isinstance(attempt.error, (RemoteError, NoCommonVersion))
