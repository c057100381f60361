"""A small, bounded pool of library threads: the one pool implementation.

Work that the thread reading the server's output must not do itself (answer a
server request, run a user's handler, emit a log record, refresh a catalog) is
handed here: the reader only appends a job to a bounded backlog and goes on
reading, so a slow handler never holds up another caller's reply. The HTTP
transports hand their exchanges here too (a caller that finds the backlog full
may wait for room: ``submit(job, timeout)``).

Threads start on demand, up to ``max_workers``, and leave after ``idle_exit``
s without work. Jobs start in the order they were submitted (one worker runs
them strictly in order). ``close`` drops what is still queued (the session is
over: nothing more is dispatched) and joins the threads it can.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections import deque
from collections.abc import Callable

__all__ = ["Workers"]

IDLE_EXIT = 10.0
"""A worker with nothing to do for this long exits."""


class Workers:
    """Runs jobs on at most ``max_workers`` threads; at most ``backlog`` wait."""

    def __init__(
        self, name: str, *, max_workers: int, backlog: int, idle_exit: float = IDLE_EXIT
    ) -> None:
        self._name = name
        self._max = max_workers
        self._backlog = backlog
        self._idle_exit = idle_exit
        # Guards the queue, the thread set, the counters and _closed. Idle
        # workers wait on _wake for a job; a submitter that may wait for room
        # in the backlog waits on _room.
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._room = threading.Condition(self._lock)
        self._local = threading.local()
        self._jobs: deque[Callable[[], None]] = deque()
        self._threads: set[threading.Thread] = set()
        self._idle = 0
        self._started = 0
        self._closed = False

    def submit(self, job: Callable[[], None], timeout: float = 0.0) -> bool:
        """Queue ``job``; False (and nothing queued) when the pool is closed,
        the backlog stayed full for ``timeout`` s (0: do not wait), or no
        thread could be started."""
        with self._lock:
            if len(self._jobs) >= self._backlog and timeout > 0 and not self._closed:
                end = time.monotonic() + timeout
                while len(self._jobs) >= self._backlog and not self._closed:
                    remaining = end - time.monotonic()
                    if remaining <= 0:
                        break
                    self._room.wait(min(remaining, threading.TIMEOUT_MAX))
            if self._closed or len(self._jobs) >= self._backlog:
                return False
            if self._idle > len(self._jobs):
                self._jobs.append(job)
                self._wake.notify()
                return True
            if len(self._threads) >= self._max:
                self._jobs.append(job)  # a busy worker takes it next
                return True
            self._started += 1
            thread = threading.Thread(
                target=self._run, name=f"{self._name}-{self._started}", daemon=True
            )
            try:
                thread.start()
            except RuntimeError:  # out of threads: a running worker may still take it
                if not self._threads:
                    return False
            else:
                self._threads.add(thread)
            self._jobs.append(job)
            return True

    def _run(self) -> None:
        me = threading.current_thread()
        self._local.mine = True
        try:
            while True:
                with self._lock:
                    while not self._jobs and not self._closed:
                        self._idle += 1
                        woken = self._wake.wait(self._idle_exit)
                        self._idle -= 1
                        if not woken and not self._jobs:
                            return
                    if self._closed and not self._jobs:
                        return
                    job = self._jobs.popleft()
                    self._room.notify()
                # A job handles its own errors; one that slips out must not
                # take the worker (and the jobs behind it) down.
                with contextlib.suppress(Exception):
                    job()
                del job
        finally:
            with self._lock:
                self._threads.discard(me)

    def running_here(self) -> bool:
        """Whether the calling thread is one of this pool's workers."""
        return getattr(self._local, "mine", False) is True

    @property
    def busy(self) -> int:
        """Threads running a job now (a hint)."""
        with self._lock:
            return len(self._threads) - self._idle

    def close(self, timeout: float, *, drain: bool = False) -> None:
        """Drop queued jobs (``drain``: run them first), stop the workers, and
        wait up to ``timeout`` s in all for those not running in this thread
        (0: do not wait). Nothing is queued after it."""
        with self._lock:
            self._closed = True
            if not drain:
                self._jobs.clear()
            self._wake.notify_all()
            self._room.notify_all()
            threads = list(self._threads)
        if timeout <= 0:
            return
        deadline = time.monotonic() + timeout
        current = threading.current_thread()
        for thread in threads:
            if thread is not current:
                thread.join(max(0.0, deadline - time.monotonic()))
