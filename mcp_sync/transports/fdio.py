"""Reads and writes on non-blocking pipes that keep the GIL.

``os.read`` and ``os.write`` let go of the GIL around the system call, as
every call that may block must. On a non-blocking pipe they never block,
though, and letting go then only hands the GIL to another thread that waits
for it (with many callers there nearly always is one): the caller sleeps
until the GIL comes back, one more context switch, often across CPUs. libc's
``read`` and ``write`` called through :class:`ctypes.PyDLL` keep the GIL for
those microseconds. With 16 threads calling over stdio the voluntary
context switches per call went from 3.5 to 2.3 (writes alone: to 3.0);
alone, each call costs 0.15-0.25 us more than its ``os`` twin. (The same
was tried for ``epoll_ctl`` and taken out: in same-run A/Bs it gave 0.85x to
1.17x calls/s at 16 threads, no gain that held from run to run.)

Loaded on first use (ctypes takes about 2 ms to import); where ctypes or
libc is missing (Windows, say), the ``os`` functions stand in.

The fast path fails soft. Any exception from ctypes, at load or in any later
call (an audit hook installed after the first connect that refuses
``ctypes.get_errno`` or ``ctypes.cdata/buffer``, say: it raises
``RuntimeError``), turns it off for the whole process (:func:`_give_up`):
one INFO record on ``mcp_sync.transport`` (event ``fast_path_off``), and
from then on every function here, including those already handed out, goes
to the ``os`` function, which also completes the operation that failed.
That completion neither loses nor repeats data: an audit hook runs before
the operation it audits, and the foreign calls themselves raise only before
the system call (argument conversion, ctypes' errno space) or after it
failed (``get_errno``), never after one that moved data. (The exception is
a ``MemoryError`` boxing a read or write's byte count: a process that short
of memory has lost more than a frame.) So the functions here raise only what
their ``os`` twins raise.
"""

from __future__ import annotations

import errno
import logging
import os
import threading
from collections.abc import Callable
from typing import Any

from .._log import transport_event

__all__ = ["Read", "Write", "held_reader", "held_write", "plain_write"]

Write = Callable[[int, bytes, int], int]
"""``write(fd, data, len(data))``: bytes written, or a negative number when
nothing was (full, interrupted, broken: the caller's slower path finds out
which). ``data`` must be ``bytes``, fewer than 2**31 of them."""

Read = Callable[[int, int], bytes]
"""``os.read``'s shape, for a non-blocking fd."""

_EMPTY = frozenset((errno.EAGAIN, errno.EWOULDBLOCK))
_lock = threading.Lock()  # guards the one-time load of _libc, and giving up on it
# ctypes' handle on libc; False: none to be had, or given up on. Every
# function handed out looks at it on each call: False sends it to os.
_libc: Any = None
_told = False  # the one record that the fast path is off was logged


def plain_write(fd: int, data: bytes, size: int) -> int:
    """``Write`` through ``os.write`` (which lets go of the GIL)."""
    try:
        return os.write(fd, data)
    except OSError:
        return -1


def _give_up(operation: str, error: Exception) -> None:
    """ctypes raised ``error`` in ``operation``: the ``os`` functions stand
    in from now on, in every session of this process; the first time, one
    record says so (the error's type only: its text may be a hook's)."""
    global _libc, _told
    with _lock:
        _libc = False
        if _told:
            return
        _told = True
    kind = type(error).__name__
    transport_event(
        logging.INFO, "fast_path_off", "",
        "GIL-keeping pipe I/O is off for this process: ctypes raised %s in %s; "
        "the os functions stand in",
        kind, operation, operation=operation, error_kind=kind,
    )  # fmt: skip


def _load() -> Any:
    global _libc
    if _libc is None:
        failure: Exception | None = None
        with _lock:
            if _libc is None:
                libc: Any
                try:
                    import ctypes

                    libc = ctypes.PyDLL(None, use_errno=True)
                    # No argtypes: converting through them costs more than
                    # the call. Arguments go as C int, char * (bytes or a
                    # buffer) and int; the ABIs this runs on widen an int
                    # argument to the register a size_t is read from.
                    libc.read.restype = libc.write.restype = ctypes.c_ssize_t
                    # A trial call (EBADF): whatever refuses ctypes from the
                    # start (an audit hook on its events, say) does so here,
                    # not in a caller's write.
                    libc.read(-1, None, 0)
                except Exception as error:  # no ctypes, no libc (Windows: TypeError), a refusing hook
                    libc, failure = False, error
                _libc = libc
        if failure is not None:
            _give_up("loading libc", failure)  # (outside _lock, which it takes)
    return _libc


def held_write() -> Write:
    """The GIL-keeping write, or ``plain_write`` where there is none."""
    libc = _load()
    if libc is False:
        return plain_write
    try:
        write = libc.write  # (looked up at load: no dlsym here)
    except Exception as error:
        _give_up("write", error)
        return plain_write

    def held(fd: int, data: bytes, size: int) -> int:
        if _libc is not False:
            try:
                got: int = write(fd, data, size)
            except Exception as error:  # raised before write(2): nothing went out
                _give_up("write", error)
            else:
                return got
        return plain_write(fd, data, size)

    return held


def held_reader(size: int) -> Read:
    """A GIL-keeping ``os.read`` for reads of at most ``size`` bytes, with a
    buffer of its own: one thread at a time may use it (the caller's lock
    says which)."""
    libc = _load()
    if libc is False:
        return os.read
    space = bytearray(size)
    view = memoryview(space)
    try:
        import ctypes

        target = (ctypes.c_char * size).from_buffer(space)
        read, errno_of = libc.read, ctypes.get_errno
    except Exception as error:  # (from_buffer is audited: ctypes.cdata/buffer)
        _give_up("read buffer", error)
        return os.read

    def held_read(fd: int, count: int) -> bytes:
        if _libc is False:
            return os.read(fd, count)
        try:
            got: int = read(fd, target, count if count < size else size)
            code = 0 if got >= 0 else errno_of()
        except Exception as error:  # before read(2), or after it failed: nothing was read
            _give_up("read", error)
            return os.read(fd, count)
        if got >= 0:
            return view[:got].tobytes()
        if code in _EMPTY:  # (a leader reading ahead meets this often)
            raise BlockingIOError(code, os.strerror(code))
        # Anything else: os.read says what (or retries an EINTR).
        return os.read(fd, count)

    return held_read
