"""The per-request wait objects of the session's request table.

A caller that sends a request waits on one of these until the reader (or the
end of the session) completes it: :class:`_Pending` for a plain wait,
:class:`_Watched` for a caller that also runs its :class:`Watch`'s events
(progress) while it waits. Kept apart from the core so that the progress
routes and the era contract can name them without importing the session.
"""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from ._transports._base import Outbound, Transport

__all__ = ["Watch", "_Pending", "_Watched"]


class _Pending:
    """One caller's wait for one reply.

    A bare lock, taken at birth and released by whoever completes the entry:
    cheaper than a ``concurrent.futures.Future`` (no condition variable, no
    callbacks), which matters on a path that runs once per call. Only the
    thread that removes the entry from the request table (under the table
    lock) completes it, so it is completed at most once.
    """

    __slots__ = ("_done", "error", "result", "written")

    def __init__(self) -> None:
        self._done = threading.Lock()
        self._done.acquire()
        self.result: Any = None
        self.error: BaseException | None = None
        # Set under the table lock when the transport starts writing the
        # frame; decides whether abandoning it needs a cancellation.
        self.written = False

    def set_result(self, result: Any) -> None:
        self.result = result
        self._done.release()

    def set_exception(self, error: BaseException) -> None:
        self.error = error
        self._done.release()

    def done(self) -> bool:
        return not self._done.locked()

    def wait(self, timeout: float) -> bool:
        """Block until completed or ``timeout`` s pass (negative: forever)."""
        return self._done.acquire(True, timeout)

    def outcome(self) -> Any:
        error = self.error
        if error is not None:
            # Neither this entry nor this frame may keep the error: its
            # traceback holds both, and the cycle would keep every frame
            # above (and what they hold: a session that should close when it
            # is dropped) alive until a GC pass.
            self.error = None
            try:
                raise error
            finally:
                del error
        return self.result

    def settle(self, transport: Transport, item: Outbound, timeout: float, deadline: float) -> bool:
        """Send the request and wait for its reply until ``deadline``; False
        if the deadline (or the wait for room in the queue) came first."""
        leader = transport.leader  # stdio: read our own reply if nobody else reads
        sent = (
            transport.send(item, timeout)
            if leader is None
            else leader.exchange(item, timeout, self.done, deadline)
        )
        return sent and self.wait(max(0.0, deadline - time.monotonic()))


class Watch(Protocol):
    """Events a caller runs on its own thread while it waits for its reply
    (progress notifications: see ``_progress.py``). ``deadline`` may move."""

    deadline: float

    def wake(self) -> None: ...

    def retry(self) -> None:
        """The same call sends a new request (a retry after ``input_required``)."""

    def follow(self, entry: _Watched, transport: Transport, item: Outbound, timeout: float) -> bool: ...


class _Watched(_Pending):
    """A pending request whose caller also runs its :class:`Watch`'s events
    while it waits; completing it wakes that caller."""

    __slots__ = ("watch",)

    def __init__(self, watch: Watch) -> None:
        super().__init__()
        self.watch = watch

    def set_result(self, result: Any) -> None:
        super().set_result(result)
        self.watch.wake()

    def set_exception(self, error: BaseException) -> None:
        super().set_exception(error)
        self.watch.wake()

    def settle(self, transport: Transport, item: Outbound, timeout: float, deadline: float) -> bool:
        return self.watch.follow(self, transport, item, timeout)
