"""Who reads a stdio server's stdout: the read token and its lease.

Whoever holds the read token reads stdout and dispatches what it says, so
dispatch is never concurrent. Normally that is the transport's reader
thread, woken by its epoll when stdout has data. A caller waiting for its
reply takes the token when it is free and reads for itself (it *leads*): its
reply then needs no hand-off between threads. While a caller leads, stdout is
disarmed in the reader thread's epoll, so the reply does not wake that thread
too; re-arming is level-triggered, so nothing that arrived meanwhile is
missed.

A caller that will likely be back soon (nobody else waits for a reply, or
one thread has many calls in flight) *leases* stdout when it lets go of the
token: stdout stays disarmed until the lease ends, so its next call takes the
token again with no epoll change and no wake-up of the reader thread. The
reader thread times the lease and re-arms stdout at its end, unless a caller
leads by then (it then keeps stdout for another :data:`LEASE`).

Locks, and who waits for them:

- ``lock`` (re-entrant: its owner is recorded atomically with the
  acquisition, so an interrupt never leaves it taken by nobody) is the token
  itself. It guards stdout and the line being assembled from it (the
  transport's state). The reader thread waits for it; a caller only tries
  it, never waits; teardown waits for it a bounded time before closing the
  descriptors.
- ``_lease_lock`` guards ``armed`` (stdout armed in the epoll), ``leading``
  (a caller holds the token to read), ``leased`` and ``lease_end``, and the
  epoll changes that go with them. It is held for a few steps by callers
  and by the reader thread, never while reading, so the reader thread can
  time a lease without the token and a caller never finds the token taken
  by a mere lease check. Closing the epoll takes it too, so no change is
  made on a closed epoll's number.
"""

from __future__ import annotations

import contextlib
import os
import select
import threading
import time
from collections.abc import Callable
from typing import Any

__all__ = ["LEASE", "ReadToken"]

LEASE = 0.005
"""Seconds stdout stays disarmed after a caller stops reading, when nobody
else waits for a reply or the caller lingers (submitted calls): it is
usually back sooner, and then needs no epoll change. The longest a server's
message between calls (a notification, a request of its own) then waits for
the reader thread, and how often that thread wakes while calls go on."""


class ReadToken:
    """The read token of one stdio transport, the lease on its stdout, and
    what the reader thread waits on.

    ``fd`` is stdout, non-blocking when ``leads``; ``stop`` the read end of
    a pipe written once when the session ends. ``live()`` says whether
    stdout is still open and the session not ending: only then is stdout
    armed again. Without ``leads`` (no epoll, or the plain path forced)
    there is no epoll: callers never lead, and the reader thread alone reads.
    """

    def __init__(self, fd: int, stop: int, live: Callable[[], bool], leads: bool) -> None:
        lock: Any = threading.RLock()  # (Any: _is_owned is not typed)
        self.lock = lock
        # Whether the calling thread holds the token. Bound once: a bound
        # C method made per call costs an object.
        self.holding: Callable[[], bool] = lock._is_owned
        self.epoll: select.epoll | None = None
        self._wake_r = self._wake_w = -1
        self._fd, self._stop = fd, stop
        self._live = live
        self._lease_lock = threading.Lock()
        self.armed = True
        self.leading = False
        self.leased = False
        self.lease_end = 0.0
        # Arms and disarms stdout: only under _lease_lock, which the epoll's
        # close takes. (An attribute: tests stand in for it to land an
        # interrupt there.)
        self.modify: Callable[[int, int], None] = _no_epoll
        # A caller reading for its reply polls stdout and the stop pipe.
        self.lead_poll: Callable[[int], list[tuple[int, int]]] | None = None
        if leads:
            try:
                self._open(fd, stop)
            except BaseException:
                self.close()  # (out of descriptors, say)
                raise

    def _open(self, fd: int, stop: int) -> None:
        # The wake pipe: a caller that hands stdout back with work left for
        # the reader thread (a lease to time, a chunk half split, replies to
        # send, an ending) writes a byte to it.
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_r, False)
        epoll = self.epoll = select.epoll()
        for each in (fd, self._wake_r, stop):
            epoll.register(each, select.EPOLLIN)
        self.modify = epoll.modify
        poll = select.poll()
        poll.register(fd, select.POLLIN)
        poll.register(stop, select.POLLIN)
        self.lead_poll = poll.poll

    def wake(self) -> None:
        """Wake the reader thread (a full wake pipe already does)."""
        with contextlib.suppress(BlockingIOError):
            os.write(self._wake_w, b"x")

    def lead(self) -> None:
        """Holding the token: a caller reads now; stdout leaves the reader
        thread's epoll."""
        with self._lease_lock:
            self.leading = True
            if self.armed:
                self.armed = False
                self.modify(self._fd, 0)

    def hand_back(self, lease: bool) -> bool:
        """A caller stops reading (still holding the token): lease stdout
        (``lease``) or give it back to the reader thread. True when a lease
        was already being timed (the reader thread needs no wake-up)."""
        with self._lease_lock:
            self.leading = False
            timed = self.leased
            if lease:
                self.lease_end = time.monotonic() + LEASE
                self.leased = True
            else:
                self._rearm()
            return timed

    def end_lease_now(self) -> None:
        """After a lease: a caller began waiting meanwhile, and nobody reads
        for it until stdout is armed again."""
        with self._lease_lock:
            if self.leased and not self.leading:
                self._rearm()

    def stranded(self) -> bool:
        """Stdout disarmed, with no lease and nobody reading (a hint: read
        without the lock)."""
        return not (self.armed or self.leased or self.leading)

    def unstrand(self) -> None:
        """After a give-back: outside ``_lease_lock`` stdout is never
        stranded while open, unless an interrupt landed inside the
        give-back's re-arm; callers blocked on replies would then wait out
        their deadlines, since nobody reads."""
        with self._lease_lock:
            if self.stranded():
                self._rearm()

    def _rearm(self) -> None:
        # Under _lease_lock: stdout back to the reader thread (level-
        # triggered: what came in meanwhile wakes it at once).
        self.leased = False
        if not self.armed and self._live():
            # Without the token (the reader thread, or a caller after its
            # give-back) the session may end meanwhile: a closed epoll
            # refuses, and then nobody needs stdout armed.
            with contextlib.suppress(OSError, ValueError):
                self.modify(self._fd, select.EPOLLIN)
            self.armed = True

    def wait_s(self) -> float:
        """How long the reader thread may sleep in its epoll: until the
        lease's end, or for ever (-1). A hint read without the lock."""
        return max(0.0, self.lease_end - time.monotonic()) if self.leased else -1

    def lease_ended(self) -> bool:
        """The reader thread, at a lease's end (or a wake-up during one):
        whether stdout is its own again. A caller reading at the lease's end
        keeps stdout for another LEASE (its give-back renews the lease or
        re-arms): one wake-up of the reader thread per LEASE at most."""
        with self._lease_lock:
            if not self.leased:
                return True
            now = time.monotonic()
            if now < self.lease_end:
                return False
            if self.leading:
                self.lease_end = now + LEASE
                return False
            self._rearm()
            return True

    def follow(self, read: Callable[[], bool]) -> bool:
        """The reader thread: ``read()`` holding the token whenever stdout
        is armed and has data, or a lease ends, until it returns False
        (stdout ended). True when the stop pipe ended it instead."""
        assert self.epoll is not None
        wait, wake, stop = self.epoll.poll, self._wake_r, self._stop
        while True:
            # A lease is timed: wake at its end (a hint read without the
            # lock; checked again under it).
            hangup = False
            for ready, _ in wait(self.wait_s()):
                if ready == stop:
                    return True
                if ready == wake:
                    os.read(wake, 64)
                else:
                    # stdout: armed, or (disarmed) its writer gone: epoll
                    # reports a hang-up whatever the mask.
                    hangup = not self.armed
            if self.leased and not hangup and not self.lease_ended():
                continue  # still leased, or a leader reads
            with self.lock:
                if not read():
                    return False

    def close(self) -> None:
        """Close the epoll (never while an epoll change is being made) and
        the wake pipe."""
        if self.epoll is not None:
            with self._lease_lock:
                self.epoll.close()
        for fd in (self._wake_r, self._wake_w):
            if fd >= 0:
                with contextlib.suppress(OSError):
                    os.close(fd)


def _no_epoll(fd: int, events: int) -> None:
    raise ValueError("no epoll: callers never lead")
