"""The stdio transport's write side: the bounded outbound queue, the writer
thread's loop, and callers' direct writes to the server's stdin."""

from __future__ import annotations

import contextlib
import os
import queue
import select
import struct
import sys
import threading
from collections.abc import Callable
from typing import Any

from .fdio import Write, held_write, plain_write

__all__ = ["Stdin"]

if sys.platform.startswith("linux"):
    import fcntl
    import termios

    # How many bytes wait in a pipe; on Linux also asked of its write end.
    _FIONREAD: int | None = termios.FIONREAD
else:
    _FIONREAD = None
# A caller writes its own frame only when one write(2) is sure to take all of
# it: a pipe writes up to PIPE_BUF bytes atomically or not at all, so no
# caller ever leaves half a frame behind (a frame is written whole or not at
# all, never interleaved with another). Larger frames go through
# the writer thread.
_DIRECT_MAX = getattr(select, "PIPE_BUF", 512)
_STOP = None  # the writer's sentinel


class _Outbound(queue.Queue[tuple[int | None, bytes] | None]):
    """The bounded outbound queue, which teardown can close: every frame in it
    is dropped, the writer's sentinel goes in, and no put waits any more, so
    a thread blocked for room (a caller, or the reader thread with a reply)
    is released at once instead of at its timeout."""

    def close(self) -> None:
        with self.mutex:
            self.queue.clear()
            self.queue.append(_STOP)
            self.maxsize = sys.maxsize  # put() compares against it on every wake-up
            self.not_empty.notify()
            self.not_full.notify_all()


class Stdin:
    """The write side: the bounded outbound queue, the writer thread's loop,
    and the direct writes of callers.

    A caller writes its own small frame at once when stdin is idle. When
    another thread holds stdin, its frame goes into the queue and whoever
    holds stdin writes it on the way out, together with everything else
    queued, in one ``write(2)`` (at most PIPE_BUF bytes, so all or nothing).
    The writer thread is woken only for what no caller may write without
    waiting: a full pipe, a frame over PIPE_BUF, or a frame queued by the
    main thread, which never writes other callers' frames (an interrupt
    there could lose them).
    """

    def __init__(self, claim: Callable[[int], bool], capacity: int) -> None:
        self._claim = claim
        self._queue = _Outbound(maxsize=capacity)
        # Whoever holds lock writes to stdin, so frames never interleave: the
        # writer thread (which waits for it), or a caller (which only tries
        # it: never a wait on the hot path). stdin is non-blocking so that a
        # write can never stall a caller past its deadline. _open turns
        # false, under lock, when stdin closes. (Any: _is_owned is not typed.)
        self.lock: Any = threading.RLock()
        # Released ("set") when the queue holds something only the writer
        # thread can write; the writer thread waits for it by acquiring it.
        # A bare lock used as a binary semaphore, not an Event: one C call on
        # each side, so a KeyboardInterrupt in the main thread can never leave
        # it half-taken (an Event's own lock, taken by a with-statement, can).
        self._kick = threading.Lock()
        self._kick.acquire()
        self._open = True
        self.direct = False
        self._write: Write = plain_write  # callers' writes (see attach)
        self._fd = -1
        self._left_unread: int | None = None  # unread() once stdin is closed
        self._stream: Any = None
        self._main = threading.main_thread().ident

    def attach(self, stream: Any, posix: bool, held: bool = True) -> None:
        """Write to ``stream``: directly from callers where stdin can be made
        non-blocking, through libc's GIL-keeping write unless ``held`` is
        false (the plain path: ``os.write``)."""
        self._stream = stream
        self._fd = stream.fileno()
        if posix and hasattr(select, "poll"):  # _write_all polls a full pipe
            with contextlib.suppress(OSError):
                os.set_blocking(self._fd, False)
                self.direct = True
                # Callers' writes never block now: they keep the GIL (fdio).
                self._write = held_write() if held else plain_write

    def put(self, frame: bytes, request_id: int | None, timeout: float | None) -> bool:
        """Queue a frame, waiting up to ``timeout`` s for room (None: not at
        all), and see it written: by this thread if it may, else by the
        holder of stdin or the writer thread."""
        outbound = self._queue
        with outbound.mutex:
            # Room now (the common case): in without the queue's conditions,
            # which nobody waits on for this side (the writer thread is
            # kicked, it never blocks in get()).
            pending = outbound.queue
            queued = outbound.maxsize <= 0 or len(pending) < outbound.maxsize
            if queued:
                pending.append((request_id, frame))
        if not queued:
            try:
                if timeout is None:
                    outbound.put_nowait((request_id, frame))
                else:
                    outbound.put((request_id, frame), timeout=timeout)
            except queue.Full:
                return False
        self.flush()
        return True

    def flush(self) -> None:
        """Write what is queued, if stdin is idle and this thread may (see
        the class docstring); what it may not write goes to the writer
        thread. A holder of stdin looks again once it lets go, so a frame
        queued while it held stdin is never left behind."""
        pending = self._queue.queue
        lock = self.lock
        while pending:
            if not self.direct or threading.get_ident() == self._main:
                self._wake_writer()
                return
            if not lock.acquire(False):
                return  # its holder looks again once it lets go
            try:
                stuck = self._write_queued()
            finally:
                lock.release()
            if stuck:
                self._wake_writer()
                return

    def _wake_writer(self) -> None:
        # Already released: the writer has not woken for it yet.
        with contextlib.suppress(RuntimeError):
            self._kick.release()

    def _write_queued(self) -> bool:
        """Holding stdin: write the queued frames that fit in one atomic
        write(2). True when what is left needs the writer thread."""
        outbound = self._queue
        batch: list[tuple[int | None, bytes]] = []
        size = 0
        with outbound.mutex:
            pending = outbound.queue
            while pending:
                item = pending[0]
                if item is None or size + len(item[1]) > _DIRECT_MAX:
                    break  # the sentinel, or a frame too large to write whole
                pending.popleft()
                batch.append(item)
                size += len(item[1])
            if batch:
                outbound.not_full.notify(len(batch))
            elif pending:
                return True
        if not self._open:
            return False  # stdin is closed: the queue was dropped with it
        claim = self._claim
        frames = [frame for request_id, frame in batch if request_id is None or claim(request_id)]
        if not frames:
            return False
        data = frames[0] if len(frames) == 1 else b"".join(frames)
        if self._write(self._fd, data, len(data)) < 0:
            # Full (or broken, which the writer thread meets and reports): the
            # frames go back in front, in order, for the writer thread.
            with outbound.mutex:
                outbound.queue.extendleft(reversed(batch))
            return True
        return False

    def try_direct(self, frame: bytes, request_id: int | None) -> bool:
        """Write a small frame from the calling thread if stdin is idle, the
        queue empty and the pipe has room; True if it was written (whole:
        see _DIRECT_MAX)."""
        lock = self.lock
        if not self.direct or len(frame) > _DIRECT_MAX or lock._is_owned():
            return False
        try:
            if not lock.acquire(False):
                return False
            # Reading the deque's length without the queue's mutex is a
            # hint only: a frame queued a moment later is still written.
            if not self._open or self._queue.queue:
                return False
            # Claimed before the write: an interrupt landing just after
            # write(2) returns must still find the request marked as sent,
            # so that abandoning it tells the server. (If the write then
            # fails, the frame goes through the queue and is sent anyway.)
            if request_id is not None and not self._claim(request_id):
                return False  # abandoned (or ended): the writer skips it too
            # Full, or broken (< 0): the writer thread meets and reports the latter.
            return self._write(self._fd, frame, len(frame)) >= 0
        finally:
            # The release is this block's first call (see the module
            # docstring): an interrupt at a check before it would leave
            # stdin held for good.
            try:
                lock.release()
            except RuntimeError:
                pass  # not ours: the acquire failed
            else:
                if self._queue.queue:
                    self.flush()  # queued while we held stdin

    def unread(self) -> int | None:
        """Bytes sent that the server has not read yet (queued here or in the
        pipe); ``None`` where the pipe cannot tell (FIONREAD on a pipe's
        write end is Linux's)."""
        if _FIONREAD is None:
            return None
        if self._fd < 0:
            return self._left_unread  # closed (None: never attached)
        pending = self._queue.queue
        if pending and pending[0] is not None:  # (None: the writer's sentinel)
            return 1
        try:
            count: int = struct.unpack("i", fcntl.ioctl(self._fd, _FIONREAD, b"\0\0\0\0"))[0]
        except (OSError, ValueError):
            return None
        return count

    def run(self) -> None:
        """The writer thread: write what callers could not, until the
        sentinel (OSError: the pipe broke). Closes stdin on the way out."""
        claim = self._claim
        get = self._queue.get_nowait
        lock = self.lock
        kick = self._kick
        try:
            while True:
                kick.acquire()
                with lock:
                    while True:
                        try:
                            item = get()
                        except queue.Empty:
                            break
                        if item is None:  # _STOP
                            return
                        request_id, frame = item
                        if request_id is not None and not claim(request_id):
                            continue  # abandoned before it was started
                        self._write_all(frame)
                if self._queue.queue:
                    self._wake_writer()  # queued while we held stdin
        finally:
            with lock:
                self._open = False
                # What the server left unread stays known after the pipe is
                # closed (whether a server that exited had read anything),
                # and the closed descriptor's number is never asked again.
                self._left_unread = self.unread()
                self._fd = -1
                with contextlib.suppress(OSError):
                    self._stream.close()

    def _write_all(self, frame: bytes | memoryview) -> None:
        # A started frame is always finished: half a frame would corrupt
        # every frame after it.
        fd = self._fd
        view = memoryview(frame)
        poller: select.poll | None = None
        while view:
            try:
                view = view[os.write(fd, view) :]
            except BlockingIOError:
                # Wait for the server to read; its death wakes us too (EPIPE).
                if poller is None:
                    poller = select.poll()
                    poller.register(fd, select.POLLOUT)
                poller.poll()

    def close(self) -> None:
        """Drop what is queued; the writer closes stdin at the sentinel."""
        self._queue.close()
        self._wake_writer()
