"""Deadlines for blocking socket reads: one thread per HTTP transport.

httpx bounds each *read* by a timeout, not a whole response: a server that
trickles one byte just under the read timeout keeps a worker (and its caller's
place in the pool) for as long as it likes. The watchdog holds the deadline
of every HTTP exchange in flight and, when one passes, shuts that exchange's
sockets down, which makes the blocked read return at once. The worker then
sees its deadline has passed and gives up quietly (its caller already has
its ``Timeout``).
"""

from __future__ import annotations

import heapq
import itertools
import socket
import threading
import time
from collections.abc import Callable

__all__ = ["DeadlineWatch"]


class DeadlineWatch:
    """Calls ``wake(sock)`` for each socket of an exchange whose deadline passed.

    :meth:`add` registers an exchange's socket list (which may still grow, as
    connections are made) with its deadline and returns a key for
    :meth:`remove`. The thread starts with the first exchange and ends at
    :meth:`close`.
    """

    def __init__(self, name: str, wake: Callable[[socket.socket], None]) -> None:
        self._name = name
        self._wake = wake
        # Guards everything below; the thread waits on it for the earliest deadline.
        self._cond = threading.Condition(threading.Lock())
        self._heap: list[tuple[float, int]] = []
        self._live: dict[int, list[socket.socket]] = {}
        self._keys = itertools.count(1)
        self._thread: threading.Thread | None = None
        self._closed = False

    def add(self, deadline: float, sockets: list[socket.socket]) -> int:
        with self._cond:
            key = next(self._keys)
            self._live[key] = sockets
            earliest = not self._heap or deadline < self._heap[0][0]
            heapq.heappush(self._heap, (deadline, key))
            if self._thread is None and not self._closed:
                self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
                self._thread.start()
            elif earliest:
                self._cond.notify()
        return key

    def remove(self, key: int) -> None:
        # The heap entry stays until its time comes; it is skipped then.
        with self._cond:
            self._live.pop(key, None)
            if not self._live:
                self._heap.clear()

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify()
            thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join()

    def _run(self) -> None:
        while True:
            with self._cond:
                expired: list[socket.socket] = []
                while not self._closed:
                    now = time.monotonic()
                    while self._heap and self._heap[0][0] <= now:
                        _, key = heapq.heappop(self._heap)
                        expired.extend(self._live.pop(key, ()))
                    if expired:
                        break
                    wait = self._heap[0][0] - now if self._heap else None
                    self._cond.wait(None if wait is None else min(wait, threading.TIMEOUT_MAX))
                if self._closed:
                    return
            for sock in expired:
                self._wake(sock)
