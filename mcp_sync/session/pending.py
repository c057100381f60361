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

from ..transports.contract import REQUEST, Outbound

if TYPE_CHECKING:
    from collections.abc import Mapping

    from ..transports.contract import Transport

__all__ = ["Entry", "Watch", "_Pending", "_Watched"]


class Entry(Protocol):
    """What the request table holds for one request in flight.

    Whichever thread takes it off the table (one atomic dict operation: the
    reply's reader, the end of the session, a withdrawal) completes it, with
    ``_arrived`` or ``_failed``, exactly once. ``_written`` is set when the
    transport starts writing the frame (the session's claim) and decides
    whether giving the request up needs a cancellation, which the remover
    records in ``_told`` under the table lock. A caller's wait
    (:class:`_Pending`) or a submitted call's handle (``ToolCall``, which is
    its own entry: no object in between) is one.
    """

    _written: bool
    _told: bool

    def _arrived(self, result: Any) -> None: ...

    def _failed(self, error: BaseException) -> None: ...

    def done(self) -> bool: ...


class _Pending:
    """One caller's wait for one reply.

    Cheaper than a ``concurrent.futures.Future`` (no condition variable, no
    callbacks), which matters on a path that runs once per call. Only the
    thread that removes the entry from the request table (one atomic dict
    operation) completes it, so it is completed at most once: it sets ``_settled``
    first, then releases ``_done``, a bare lock taken at birth. A thread that
    must block acquires that lock with its timeout and gives it back at once
    for the next one (several threads may wait on one entry: the futures
    built on it do).

    Why a lock, measured (``scripts/bench_ab.py --threads 16`` on a quiet
    machine, the whole client): a per-thread eventfd, written with the GIL
    released and waited for with ``poll`` and a read, cost 6.0 voluntary
    context switches per call at 16 threads against the lock's 3.5, and
    0.7-0.9x its calls/s. The woken thread needs the GIL either way; the
    eventfd's poll-then-read crosses the GIL twice on the way out, the lock
    once.
    """

    __slots__ = ("_done", "_settled", "_told", "_written", "error", "result")

    def __init__(self) -> None:
        self._done = threading.Lock()
        self._done.acquire()
        self._settled = False
        self.result: Any = None
        self.error: BaseException | None = None
        self._written = False  # (see Entry)
        self._told = False

    def _arrived(self, result: Any) -> None:
        self.result = result
        self._settled = True
        self._done.release()

    def _failed(self, error: BaseException) -> None:
        self.error = error
        self._settled = True
        self._done.release()

    def done(self) -> bool:
        return self._settled

    def wait(self, timeout: float) -> bool:
        """Block until completed or ``timeout`` s pass (negative: forever)."""
        if self._settled:
            return True
        done = self._done
        if done.acquire(True, timeout):
            # Given back for the next thread that waits. (An interrupt landing
            # just before this line leaves the lock held: the other waiters
            # then see _settled at their own deadline, never a false result.)
            done.release()
        return self._settled

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

    def settle(  # noqa: PLR0913, PLR0917
        self,
        transport: Transport,
        frame: bytes,
        request_id: int,
        method: str,
        headers: Mapping[str, str] | None,
        timeout: float,
        deadline: float,
    ) -> bool:
        """Send the request and wait for its reply until ``deadline``; False
        if the deadline (or the wait for room in the queue) came first. The
        :class:`Outbound` is built only for a transport that is not a leader:
        stdio takes the frame and id alone."""
        leader = transport.leader  # stdio: read our own reply if nobody else reads
        sent = (
            transport.send(Outbound(frame, REQUEST, request_id, method, headers), timeout)
            if leader is None
            else leader.exchange(frame, request_id, timeout, self.done, deadline)
        )
        # A caller that read its own reply has nothing to wait for.
        return sent and (self._settled or self.wait(max(0.0, deadline - time.monotonic())))


class Watch(Protocol):
    """Events a caller runs on its own thread while it waits for its reply
    (progress notifications: see ``session/progress.py``). ``deadline`` may move."""

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

    def _arrived(self, result: Any) -> None:
        super()._arrived(result)
        self.watch.wake()

    def _failed(self, error: BaseException) -> None:
        super()._failed(error)
        self.watch.wake()

    def settle(  # noqa: PLR0913, PLR0917
        self,
        transport: Transport,
        frame: bytes,
        request_id: int,
        method: str,
        headers: Mapping[str, str] | None,
        timeout: float,
        deadline: float,
    ) -> bool:
        # The watch decides how to send (HTTP may carry a later hold): it
        # gets the whole Outbound, and its own deadline.
        item = Outbound(frame, REQUEST, request_id, method, headers)
        return self.watch.follow(self, transport, item, timeout)
