"""The per-request wait objects of the session's request table.

A caller that sends a request waits on one of these until the reader (or the
end of the session) completes it: :class:`_Pending` for a plain wait,
:class:`_Watched` for a caller that also runs its :class:`Watch`'s events
(progress) while it waits. Kept apart from the core so that the progress
routes and the era contract can name them without importing the session.
"""

from __future__ import annotations

import contextlib
import math
import os
import select
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from ._transports._base import Outbound, Transport

__all__ = ["Watch", "_Pending", "_Watched"]

_POLL_MAX_MS = 2**31 - 1


class _Waker:
    """One thread's wake-up: a non-blocking eventfd and a poll object on it.

    The thread that completes a request writes the eventfd with the GIL
    released, so the woken caller does not queue behind the completer for
    the GIL (a ``threading.Lock`` is released with the GIL held, and under
    load each such wake-up cost a caller two or three context switches).
    The descriptor is closed when the last reference goes: the thread's own
    (dropped when the thread ends) or that of an entry still being completed,
    so a completer never writes to a number that was closed and reused.
    """

    __slots__ = ("_poll", "fd")

    def __init__(self) -> None:
        self.fd = os.eventfd(0, os.EFD_NONBLOCK | os.EFD_CLOEXEC)
        self._poll = select.poll()
        self._poll.register(self.fd, select.POLLIN)

    def wake(self) -> None:
        with contextlib.suppress(OSError):
            os.eventfd_write(self.fd, 1)

    def sleep(self, done: Callable[[], bool], timeout: float) -> bool:
        """Until ``done()`` or ``timeout`` s (negative: forever). A wake-up
        left over from an earlier wait only costs one more look."""
        deadline = time.monotonic() + timeout if timeout >= 0 else math.inf
        poll = self._poll.poll
        fd = self.fd
        while not done():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            poll(-1 if remaining == math.inf else min(math.ceil(remaining * 1000), _POLL_MAX_MS))
            with contextlib.suppress(BlockingIOError):
                os.eventfd_read(fd)
        return True

    def __del__(self, _close: Callable[[int], None] = os.close) -> None:
        with contextlib.suppress(OSError, AttributeError):
            _close(self.fd)


# Each thread's _Waker, made on its first wait (Linux only: eventfd).
_wakers = threading.local()
_EVENTFD = hasattr(os, "eventfd") and hasattr(select, "poll")


def _forked() -> None:
    # The child's copy of the eventfd is the parent's object: a wake-up
    # meant for one process must never reach the other.
    _wakers.__dict__.pop("waker", None)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forked)


def _waker() -> _Waker | None:
    waker: _Waker | None = _wakers.__dict__.get("waker")
    if waker is None and _EVENTFD:
        try:
            waker = _wakers.waker = _Waker()
        except OSError:
            return None  # out of descriptors: the entry's lock serves
    return waker


class _Pending:
    """One caller's wait for one reply.

    Cheaper than a ``concurrent.futures.Future`` (no condition variable, no
    callbacks), which matters on a path that runs once per call. Only the
    thread that removes the entry from the request table (under the table
    lock) completes it, so it is completed at most once: it sets ``_settled``
    first, then releases ``_done`` (a bare lock taken at birth) and wakes the
    registered waiters. A thread that must block registers its thread's
    :class:`_Waker` and is woken through it (one wake-up per call; several
    threads may wait on one entry); where there is no eventfd it blocks on
    the lock instead, and gives it back at once for the next one.
    """

    __slots__ = ("_done", "_settled", "_wakers", "error", "result", "written")

    def __init__(self) -> None:
        self._done = threading.Lock()
        self._done.acquire()
        self._settled = False
        # Appended and removed by waiting threads (atomic list operations);
        # the completer wakes a copy.
        self._wakers: list[_Waker] = []
        self.result: Any = None
        self.error: BaseException | None = None
        # Set under the table lock when the transport starts writing the
        # frame; decides whether abandoning it needs a cancellation.
        self.written = False

    def set_result(self, result: Any) -> None:
        self.result = result
        self._settled = True
        self._done.release()
        for waker in self._wakers[:]:  # read after _settled: see wait()
            waker.wake()

    def set_exception(self, error: BaseException) -> None:
        self.error = error
        self._settled = True
        self._done.release()
        for waker in self._wakers[:]:
            waker.wake()

    def done(self) -> bool:
        return self._settled

    def wait(self, timeout: float) -> bool:
        """Block until completed or ``timeout`` s pass (negative: forever)."""
        if self._settled:
            return True
        waker = _waker()
        if waker is None:
            done = self._done
            if done.acquire(True, timeout):
                done.release()  # for the next thread that waits on it
            return self._settled
        # Registered before the last look at _settled: a completer that set
        # it before copying the list is caught by that look.
        wakers = self._wakers
        wakers.append(waker)
        try:
            return waker.sleep(self.done, timeout)
        finally:
            wakers.remove(waker)

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
        # A caller that read its own reply has nothing to wait for.
        return sent and (self._settled or self.wait(max(0.0, deadline - time.monotonic())))


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
