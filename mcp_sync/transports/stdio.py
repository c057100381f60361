"""The stdio transport: the server process and its four threads.

- reader: splits stdout into lines (at most one bounded partial frame held)
  and hands each to the session, whenever no caller is reading;
- writer: drains the bounded outbound queue into stdin, whenever a caller
  could not write its frame itself;
- stderr: drains stderr continuously into a redacted, bounded tail;
- waiter: reaps the child and notices when it exits.

On the hot path a calling thread writes its own request and reads its own
reply (``exchange``: the optional :class:`~._base.Leader` capability, which
only this transport has), so a sequential call crosses no thread boundary. A
caller never waits for anyone else while it reads: a reply to a server
request that finds the queue full is left to the reader thread, which may
wait (a reply never makes a caller wait; one that cannot be queued within
``request_timeout_ms`` ends the session). Teardown (``shutdown``) runs once, in whichever thread
ends the session first, or in a helper thread when the thread that meets the
end is a caller or is in the middle of reading.

Only the main thread receives ``KeyboardInterrupt``, and it may arrive
wherever the interpreter checks for signals: after a call into C returns, and
as a Python function begins. The locks a caller takes are re-entrant locks,
whose owner the interpreter records atomically with the acquisition, and each
is taken inside the ``try`` whose ``finally`` gives it back if the thread owns
it. That ``finally`` is itself a place an interrupt can land: stdin's lock is
released by its first call, and the read token's give-back (a method, so a
check at its start and one after the ownership test) is tried once more in a
``finally`` of its own. So one Ctrl-C never leaves the read token or stdin
held; it would take a second landing within the same few bytecodes. Nor
does it leave stdout unread: one that lands inside the give-back, as stdout
is handed back to the reader thread, is undone by the same ``finally``.
"""

from __future__ import annotations

import collections
import contextlib
import math
import os
import queue
import select
import struct
import sys
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from ..protocol.errors import ConnectionClosed, ProtocolError, SpawnFailed
from ..protocol.frames import decode_line
from ..protocol.limits import Limits, reply_not_queued, seconds
from ..protocol.oversize import Oversized, frame_too_long, reply_too_long
from ..protocol.redaction import StderrTail
from .contract import REQUEST, Leader, Outbound, ShutdownOnce, Sink
from .fdio import Modify, Read, Write, held_modify, held_reader, held_write, plain_write
from .process import ENV_ALLOWLIST, ServerProcess, child_environment, drain_stderr

__all__ = ["ENV_ALLOWLIST", "StdioTransport", "child_environment"]

# After stdout ends, how long to wait for the exit status so the session can
# say "exited with code N" rather than just "stdout closed".
EXIT_AFTER_EOF = 0.5
THREAD_JOIN = 2.0

_READ_SIZE = 65536
if sys.platform.startswith("linux"):
    import fcntl
    import termios

    # How many bytes wait in a pipe; on Linux also asked of its write end.
    _FIONREAD: int | None = termios.FIONREAD
else:
    _FIONREAD = None
LEASE = 0.005
"""Seconds stdout stays disarmed after a caller stops reading, when nobody
else waits for a reply or the caller lingers (submitted calls): it is
usually back sooner, and then needs no epoll_ctl. The longest a server's
message between calls (a notification, a request of its own) then waits for
the reader thread, and how often that thread wakes while calls go on."""
_POLL_MAX_MS = 2**31 - 1
_PEEK_AFTER_MISS = 16
"""Leaders that poll at once after a read before polling found nothing,
before one tries that read again (see _read_until)."""
# A caller writes its own frame only when one write(2) is sure to take all of
# it: a pipe writes up to PIPE_BUF bytes atomically or not at all, so no
# caller ever leaves half a frame behind (a frame is written whole or not at
# all, never interleaved with another). Larger frames go through
# the writer thread.
_DIRECT_MAX = getattr(select, "PIPE_BUF", 512)
# stdout's state, changed only by the holder of the read token.
_OPEN, _EOF, _TOO_LONG = "open", "eof", "too long"
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


def _whole_frame(line: bytes) -> bool:
    """Whether ``line`` is a protocol frame on its own (resync after an interrupt)."""
    try:
        return decode_line(line) is not None
    except ProtocolError:
        return False


class _Stdin:
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
        self._stream: Any = None
        self._main = threading.main_thread().ident

    def attach(self, stream: Any, posix: bool) -> None:
        self._stream = stream
        self._fd = stream.fileno()
        if posix and hasattr(select, "poll"):  # _write_all polls a full pipe
            with contextlib.suppress(OSError):
                os.set_blocking(self._fd, False)
                self.direct = True
                # Callers' writes never block now: they keep the GIL (_fdio).
                self._write = held_write()

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
        if self._queue.queue:
            return 1
        if _FIONREAD is None or self._fd < 0:
            return None
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


class StdioTransport:
    """A server process on our pipes: a :class:`~._base.Transport` that is
    also its own :class:`~._base.Leader`."""

    def __init__(
        self,
        sink: Sink,
        *,
        server: str,
        command: str,
        args: Sequence[str],
        cwd: str | None,
        env: dict[str, str],
        limits: Limits,
        secrets: Sequence[str] = (),
    ) -> None:
        self._sink = sink
        self._waiting = sink.table_size  # (a C method: _give_read_side asks it per call)
        self.leader: Leader | None = self
        self._limits = limits
        self._stdin = _Stdin(sink.claim, limits.queue_capacity)
        self._tail = StderrTail(limits.max_stderr_bytes, secrets=secrets)
        self._stdout_done = threading.Event()
        self._once = ShutdownOnce()
        self._teardown_thread: threading.Thread | None = None
        self._teardown_ident: int | None = None
        self._name = f"mcp_sync-{server}"
        self._server = server
        self._epoll: select.epoll | None = None
        posix = os.name == "posix"
        self._child = ServerProcess(server, command, args, cwd, env)
        self._proc = self._child.proc
        try:
            self._setup(posix)
        except BaseException as exc:
            # Out of descriptors or threads: the child must not outlive us.
            self._abandon_child()
            if isinstance(exc, (OSError, RuntimeError)):
                raise SpawnFailed(
                    f"server {server!r} could not be started: {type(exc).__name__}"
                ) from None
            raise
        # The interpreter's exit closes stdin the way teardown does, first.
        self._child.close_stdin = self._stdin.close

    def _abandon_child(self) -> None:
        # A writer thread that did start is waiting for frames: stop it, and
        # the stop pipe (if made) ends the other threads.
        self._stdin.close()
        with contextlib.suppress(AttributeError, OSError):
            os.write(self._stop_w, b"x")
        self._child.kill_now()
        for thread in getattr(self, "_threads", ()):
            if thread.ident is not None:
                thread.join(THREAD_JOIN)
        for stream in (self._proc.stdin, self._proc.stdout, self._proc.stderr):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
        self._close_read_side()

    def _close_read_side(self) -> None:
        """Close the epoll and the wake and stop pipes (whichever exist)."""
        if self._epoll is not None:
            with self._lease_lock:  # not while a held _modify uses its number
                self._epoll.close()
        for name in ("_wake_r", "_wake_w", "_stop_r", "_stop_w"):
            fd = getattr(self, name, None)
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)

    def _setup(self, posix: bool) -> None:
        assert self._proc.stdin and self._proc.stdout and self._proc.stderr
        self._stdout_fd = self._proc.stdout.fileno()
        self._stderr_fd = self._proc.stderr.fileno()
        self._stdin.attach(self._proc.stdin, posix)
        # The read token (see "Who reads stdout" below): guards stdout, the
        # line being assembled (_partial, _held, _chunk, _pos, _reading,
        # _resync, _skipping, _stdout_state) and dispatch. The reader thread waits for
        # it; a caller only tries it (``lead``), and teardown waits for it at
        # most THREAD_JOIN before closing the descriptors.
        rlock: Any = threading.RLock()  # (Any: _is_owned is not typed)
        self._rlock = rlock
        # Whether the calling thread holds the token. Bound once: a bound
        # C method made per call costs an object.
        self._holding: Callable[[], bool] = rlock._is_owned
        self._partial: list[bytes] = []
        self._held = 0
        self._chunk: bytes | None = None
        self._pos = 0
        self._stdout_state = _OPEN
        # The kept ends of a line over max_frame_bytes while the rest of it
        # is skipped (see ._oversize).
        self._skipping: Oversized | None = None
        # Set around a read(2) whose result could be lost to an interrupt;
        # _resync then drops what may be the tail of a line that lost its middle.
        self._reading = False
        self._resync = False
        # Set when a read found stdout empty (a leader reading ahead).
        self._empty = False
        # Leaders still to poll before one reads first (see _read_until).
        self._peek_wait = 0
        # Who may read stdout next, apart from the token. _lease_lock guards
        # _armed (stdout armed in the reader's epoll: a leader disarms it),
        # _leading (a caller holds the token to read), _leased and
        # _lease_end, and the epoll changes that go with them. Held for a few
        # steps by leaders and by the reader thread, never while reading: the
        # reader thread times a lease under it without the token, so a
        # caller never finds the token taken by a mere lease check.
        # A lease: a leader that will likely be back soon (nobody else
        # waits for a reply, or lead(linger=True): one thread with many
        # calls in flight) leaves stdout disarmed until _lease_end, so that
        # it reads its replies itself, with no epoll_ctl and no wake-up of
        # the reader thread per call. _leased: the reader thread times it,
        # and re-arms stdout at its end unless a leader is reading by then.
        self._lease_lock = threading.Lock()
        self._armed = True
        self._leading = False
        self._leased = False
        self._lease_end = 0.0
        # Replies to server requests that a reading caller could not queue at
        # once: the reader thread sends them, waiting as long as it must.
        self._replies: collections.deque[bytes] = collections.deque()
        # Written once when the session ends and never drained: the reader,
        # the stderr thread and a leader polling for a reply all leave at once.
        self._stop_r, self._stop_w = os.pipe()
        # The token's holder reads stdout; a blocking read must let go of the GIL.
        self._read: Read = os.read
        if hasattr(select, "epoll") and hasattr(select, "poll"):
            os.set_blocking(self._stdout_fd, False)
            self._read = held_reader(_READ_SIZE)  # never blocks now: keeps the GIL (_fdio)
            self._wake_r, self._wake_w = os.pipe()
            os.set_blocking(self._wake_r, False)
            self._epoll = select.epoll()
            self._epoll.register(self._stdout_fd, select.EPOLLIN)
            self._epoll.register(self._wake_r, select.EPOLLIN)
            self._epoll.register(self._stop_r, select.EPOLLIN)
            # Arming and disarming stdout never blocks: it keeps the GIL
            # (_fdio). Only under _lease_lock, which the epoll's close takes.
            self._modify: Modify = held_modify(self._epoll)
            lead_poll = select.poll()
            lead_poll.register(self._stdout_fd, select.POLLIN)
            lead_poll.register(self._stop_r, select.POLLIN)
            self._lead_poll = lead_poll.poll
        self._threads = [
            threading.Thread(target=target, name=f"{self._name}-{role}", daemon=True)
            for role, target in (
                ("reader", self._read_stdout),
                ("writer", self._write_stdin),
                ("stderr", self._read_stderr),
                ("waiter", self._wait_exit),
            )
        ]
        self._reader, _, self._stderr_reader, _ = self._threads
        for thread in self._threads:
            thread.start()

    @property
    def pid(self) -> int:
        return self._child.pid

    def stdin_unread(self) -> int | None:
        """Bytes sent that the server has not read yet, if the platform tells
        (era negotiation starts its clock once the server has read the probe)."""
        return self._stdin.unread()

    @property
    def returncode(self) -> int | None:
        """The server's exit status, once it has been reaped (the teardown log shows it)."""
        return self._child.returncode

    # ----------------------------------------------------------- outbound

    def send(self, item: Outbound, timeout: float) -> bool:
        # (_send's line, not a call to it: 0.5-1k fewer instructions per request)
        stdin, frame, request_id = self._stdin, item.frame, item.request_id
        skipping = self._skipping
        if skipping is not None and request_id is not None and item.kind == REQUEST:
            skipping.late.add(request_id)  # (see Oversized.claimable)
        return stdin.try_direct(frame, request_id) or stdin.put(frame, request_id, timeout)

    def _send(self, frame: bytes, request_id: int | None, timeout: float) -> bool:
        stdin = self._stdin
        return stdin.try_direct(frame, request_id) or stdin.put(frame, request_id, timeout)

    def send_nowait(self, item: Outbound) -> bool:
        return self._send_nowait(item.frame)

    def _send_nowait(self, frame: bytes) -> bool:
        return self._stdin.put(frame, None, None)

    def listen(self) -> None:
        """Everything the server sends comes on stdout: nothing to open."""

    def reply(self, frame: bytes) -> bool:
        """Send a reply to a server request without ever making a caller wait
        for room. False only when it could not be queued within
        ``request_timeout_ms``."""
        if self._stdin.try_direct(frame, None) or self._send_nowait(frame):
            return True
        if self._holding() and threading.current_thread() is not self._reader:
            # A caller reading for everyone: it leaves the reply, and the
            # reading, to the reader thread (see _read_until).
            self._replies.append(frame)
            return True
        return self._send(frame, None, seconds(self._limits.request_timeout_ms))

    def _write_stdin(self) -> None:
        try:
            self._stdin.run()
        except OSError:
            # A dead child also breaks the pipe: when it has exited, its exit
            # status is the truer reason (as for stdout's end).
            if self._child.exited.wait(EXIT_AFTER_EOF):
                self._sink.terminate(ConnectionClosed(f"exited with code {self._child.returncode}"))
            else:
                self._sink.terminate(ConnectionClosed("stdin closed"))

    # ----------------------------------------------------------- inbound

    # Who reads stdout. Whoever holds _rlock (the read token) reads and
    # dispatches frames, so dispatch is never concurrent. Normally that is the
    # reader thread, woken by epoll when stdout has data. But a caller waiting
    # for its reply takes the token when it is free and reads for itself
    # (``lead``): its own reply then needs no hand-off between threads, which
    # is most of the cost of a round trip. While it leads, stdout is disarmed
    # in the reader thread's epoll, so the reply does not wake that thread too;
    # re-arming it is level-triggered, so nothing that arrives in between is
    # missed. Every ending (EOF, an over-long frame) is finished by the reader
    # thread: a leader that meets one wakes it through the wake pipe. So is
    # every wait: a leader stops reading once it would have to wait for room
    # to reply to a server request, and reads one chunk at a time, so its
    # deadline is looked at between chunks.

    def exchange(
        self, item: Outbound, timeout: float, done: Callable[[], bool], deadline: float
    ) -> bool:
        """Send a request and, if nobody else is reading, read until ``done()``
        or ``deadline``. False if the frame could not be queued in time.
        (``item.headers`` and ``item.hold`` are for HTTP; stdio carries
        everything in the frame, and its reader thread reads for as long as
        the session lasts.)

        The read token is taken and stdout disarmed *before* the write: a
        server that answers at once (on one CPU it runs the moment it is
        woken) would otherwise wake the reader thread with the reply.
        """
        frame, request_id = item.frame, item.request_id
        skipping = self._skipping
        if skipping is not None and request_id is not None and item.kind == REQUEST:
            # Sent after an over-long line began: it cannot be that line's
            # owner (see Oversized.claimable).
            skipping.late.add(request_id)
        owned = self._holding
        # A thread that already holds the token is a callback calling from
        # inside a dispatch: it never reads (nor gives back) for itself.
        if not owned():
            try:
                # Only a write that cannot block: never hold the token while
                # waiting for room, or nobody reads the replies the server is
                # blocked on.
                if self._take_read_side() and self._stdin.try_direct(frame, request_id):
                    self._read_until(done, deadline)
                    if self._waiting() and done():
                        self._read_ahead()
                    return True
            finally:
                try:
                    if owned():
                        self._give_read_side()
                finally:
                    if owned():  # interrupted before the give-back began
                        self._give_read_side()
                    elif not (self._armed or self._leased or self._leading):
                        self._unstrand()  # interrupted inside it
        if not self._send(frame, request_id, timeout):
            return False
        self.lead(done, deadline)
        return True

    def lead(self, done: Callable[[], bool], deadline: float, linger: bool = False) -> None:
        """Read stdout in the calling thread until ``done()`` or ``deadline``
        (a ``time.monotonic`` value), if nobody else is reading. ``linger``:
        the caller will be back soon for more (one thread with many calls in
        flight): stdout stays out of the reader thread's hands for LEASE s
        even while other requests wait."""
        owned = self._holding
        if owned():
            return
        try:
            if self._take_read_side():
                self._read_until(done, deadline)
        finally:
            try:
                if owned():
                    self._give_read_side(linger)
            finally:
                if owned():  # interrupted before the give-back began
                    self._give_read_side(linger)
                elif not (self._armed or self._leased or self._leading):
                    self._unstrand()  # interrupted inside it

    def _take_read_side(self) -> bool:
        """Take the read token and disarm stdout in the reader's epoll, if
        nobody else reads, stdout is still open and no reply waits for the
        reader thread. Call inside a ``try`` that gives the token back if the
        thread owns it, so an interrupt between the steps loses nothing."""
        rlock = self._rlock
        if self._epoll is None or not rlock.acquire(False):
            return False
        if self._stdout_state is not _OPEN or self._replies or self._once.begun:
            rlock.release()
            return False
        with self._lease_lock:
            self._leading = True
            if self._armed:
                self._armed = False
                self._modify(self._stdout_fd, 0)
        return True

    def _give_read_side(self, linger: bool = False) -> None:
        # Re-arm stdout for the reader thread, or lease it (see _lease_lock).
        # A chunk left half-split (an interrupted leader) or replies left to
        # send need the reader thread even if nothing more ever arrives on
        # stdout.
        lease = False
        try:
            if self._reading:
                # Interrupted between read(2) and keeping what it returned:
                # the line being assembled may have lost its middle.
                self._reading = False
                self._partial.clear()
                self._held = 0
                self._skipping = None
                self._resync = True
            # Once stdout has ended (or the session is ending) the reader
            # thread sees the end itself: nothing to arm, lease or wake.
            live = self._stdout_state is _OPEN and not self._once.begun
            # A lone caller leases too: nobody else waits for a reply, and it
            # is usually back for its next call before the lease ends (then
            # it needs no epoll_ctl at all).
            lease = live and (linger or not self._waiting()) and self._chunk is None and not self._replies
            with self._lease_lock:
                self._leading = False
                timed = self._leased
                if lease:
                    self._lease_end = time.monotonic() + LEASE
                    self._leased = True
                else:
                    self._rearm()  # (a no-op on the epoll unless live)
            if live and ((lease and not timed) or self._chunk is not None or self._replies):
                # The reader thread starts timing the lease, or has a chunk
                # or replies to finish even if nothing more arrives. (A full
                # wake pipe already wakes it.)
                with contextlib.suppress(BlockingIOError):
                    os.write(self._wake_w, b"x")
        finally:
            self._rlock.release()
        if lease and not linger and self._waiting():
            # A request entered while we held the token: its caller, who
            # found the token taken, now waits for someone to read.
            with self._lease_lock:
                if self._leased and not self._leading:
                    self._rearm()

    def _unstrand(self) -> None:
        """After a give-back: stdout disarmed, with no lease and nobody
        reading. Outside _lease_lock that is never so while stdout is open,
        unless an interrupt landed inside the give-back's re-arm; callers
        blocked on replies would then wait out their deadlines, since nobody
        reads. (Checked inline first, without the lock: a hint.)"""
        with self._lease_lock:
            if not (self._armed or self._leased or self._leading):
                self._rearm()

    def _rearm(self) -> None:
        # Under _lease_lock: stdout back to the reader thread (level-
        # triggered: what came in meanwhile wakes it at once).
        self._leased = False
        if not self._armed and self._stdout_state is _OPEN and not self._once.begun:
            assert self._epoll is not None
            # Without the read token (the reader thread, or a caller after
            # its give-back) the session may end meanwhile: a closed epoll
            # refuses, and then nobody needs stdout armed.
            with contextlib.suppress(OSError, ValueError):
                self._modify(self._stdout_fd, select.EPOLLIN)
            self._armed = True

    def _lease_ended(self) -> bool:
        """The reader thread, at a lease's end (or a wake-up during one):
        whether stdout is its own again. A leader reading at the lease's end
        keeps stdout for another LEASE (its give-back renews the lease or
        re-arms): one wake-up of this thread per LEASE at most."""
        with self._lease_lock:
            if not self._leased:
                return True
            now = time.monotonic()
            if now < self._lease_end:
                return False
            if self._leading:
                self._lease_end = now + LEASE
                return False
            self._rearm()
            return True

    def _read_until(self, done: Callable[[], bool], deadline: float) -> None:
        # Holding the read token, with stdout disarmed in the reader's epoll.
        fd = self._stdout_fd
        poll = self._lead_poll
        # Read before polling when the last leader that tried found its
        # reply already waiting: the server ran on this CPU while we wrote (a
        # busy or one-CPU machine), and the read saves the poll. Where the
        # server runs beside us that read finds nothing and costs a failed
        # read(2), so after a miss only every _PEEK_AFTER_MISS-th leader tries.
        peek = self._peek_wait
        streaming = peek == 0
        if not streaming:
            self._peek_wait = peek - 1
        while not done():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return
            if streaming:
                # Also after a chunk that held replies for others, not ours:
                # under load the next is often there already.
                self._empty = False
                if not self._read_available():
                    os.write(self._wake_w, b"x")
                    return
                if self._replies:
                    return
                if self._empty:
                    streaming = False
                    if peek == 0:
                        self._peek_wait = _PEEK_AFTER_MISS
                peek = 1  # only the first read tells whether replies come ahead of the poll
                continue
            wait_ms = math.ceil(remaining * 1000)  # (no min(): it parses keywords on every call)
            ready = poll(wait_ms if wait_ms < _POLL_MAX_MS else _POLL_MAX_MS)
            if not ready:
                continue
            if len(ready) > 1 or ready[0][0] != fd:
                return  # the stop pipe: the session has ended
            streaming = True
            if not self._read_available():
                os.write(self._wake_w, b"x")  # the reader thread finishes the ending
                return
            if self._replies:
                return  # a reply must wait for room: the reader thread takes over

    def _read_ahead(self) -> None:
        """Holding the read token, with our own reply in and other callers
        blocked on theirs: one more read before handing stdout back. Under
        load their replies are often there already, and settling them here
        spares the reader thread a wake-up to take stdout back and read
        them. (Not for submitted calls: their thread reads the rest itself
        when it next waits, and an empty read would be wasted.)"""
        if not self._replies and not self._read_available():
            os.write(self._wake_w, b"x")  # the reader thread finishes the ending

    def _read_available(self) -> bool:
        """Read one chunk of stdout (holding the read token) and dispatch each
        complete line. False once stdout has ended or broken the frame limit.

        The chunk being split and the position in it live on the transport,
        and the position moves past a line before the line is dispatched: a
        caller interrupted here (KeyboardInterrupt in the main thread) loses at
        most that one line, and the next holder of the token carries on with
        the rest of the chunk instead of losing it, or the framing with it.
        A reading caller that had to leave a reply for the reader thread stops
        after that line.
        """
        if self._stdout_state is not _OPEN:
            return False
        limit = self._limits.max_frame_bytes
        receive = self._sink.receive
        partial = self._partial
        chunk = self._chunk
        if chunk is None:
            self._reading = True
            try:
                chunk = self._read(self._stdout_fd, _READ_SIZE)
            except BlockingIOError:
                self._reading = False
                self._empty = True
                return True
            except OSError:
                chunk = b""
            # One statement: no interrupt can come between keeping the chunk
            # and clearing the flag.
            self._chunk, self._pos, self._reading = chunk, 0, False
            if not chunk:
                self._chunk = None
                self._stdout_state = _EOF
                return False
        if self._resync:
            # A chunk may have been lost: up to the next newline stands
            # either a whole line (the lost chunk ended with one) or the tail
            # of a line that lost its middle. Only a whole frame is kept.
            newline = chunk.find(b"\n", self._pos)
            if newline < 0:
                self._chunk = None
                return True
            first = chunk[self._pos : newline]
            self._pos, self._resync = newline + 1, False
            if _whole_frame(first):
                receive(first)
        start = self._pos
        size = len(chunk)
        while True:
            newline = chunk.find(b"\n", start)
            end = size if newline < 0 else newline
            skipping = self._skipping
            if skipping is None and self._held + end - start > limit:
                # Over the limit: from here on only the line's ends are kept.
                skipping = self._skipping = Oversized()
                for part in partial:
                    skipping.feed(part)
                partial.clear()
                self._held = 0
            if skipping is not None:
                skipping.feed(chunk[start:end])
                if newline < 0:
                    self._chunk = None
                    return self._skipped(skipping, ended=False)
                start = self._pos = newline + 1
                if not self._skipped(skipping, ended=True):
                    return False
                continue
            if newline < 0:
                rest = size - start
                self._chunk = None
                if rest:
                    partial.append(chunk[start:] if start else chunk)
                    self._held += rest
                return True
            if partial:
                partial.append(chunk[start:newline])
                line = b"".join(partial)
                partial.clear()
                self._held = 0
            else:
                line = chunk[start:newline]
            start = self._pos = newline + 1
            receive(line)
            if start == size:  # the chunk ended with this line (the usual case)
                self._chunk = None
                return True
            if self._replies and threading.current_thread() is not self._reader:
                return True

    def _skipped(self, skipping: Oversized, ended: bool) -> bool:
        """Charge an over-long line to its request as soon as its kept ends
        tell which one (holding the read token). False when they cannot:
        the session ends, as for any frame over the limit."""
        limit = self._limits.max_frame_bytes
        if not skipping.decided:
            reply = skipping.head_says(ended)
            if reply is False:
                self._skipping = None
                self._stdout_state = _TOO_LONG
                return False
            if reply and skipping.request_id is not None:
                # Its caller is told now, not after the rest is skipped.
                self._fail_reply(skipping.request_id, skipping.size, limit, ended)
        if not ended:
            if (
                skipping.decided
                and skipping.request_id is None
                and not skipping.claimable(self._waiting(), self._sink.waiting)
            ):
                # A reply whose id would only show at its end, and nobody
                # left who could own it: a line that never ends would
                # otherwise hold every later call until its deadline.
                self._skipping = None
                self._stdout_state = _TOO_LONG
                return False
            return True
        self._skipping = None
        if skipping.request_id is None:
            request_id = skipping.tail_id()
            if request_id is None:
                self._stdout_state = _TOO_LONG
                return False
            self._fail_reply(request_id, skipping.size, limit, True)
        return True

    def _fail_reply(self, request_id: int, size: int, limit: int, whole: bool) -> None:
        # A reply nobody waits for any more is dropped, as a late reply of
        # any size is.
        if self._sink.waiting(request_id):
            self._sink.fail(request_id, reply_too_long(self._server, size, limit, whole))

    def _flush_replies(self) -> bool:
        """Send the replies a reading caller left (reader thread, holding the
        read token). False when one could not be queued in time: the session
        ends."""
        timeout = seconds(self._limits.request_timeout_ms)
        while self._replies and not self._once.begun:
            if not self._send(self._replies[0], None, timeout):
                self._sink.terminate(reply_not_queued(self._limits))
                return False
            self._replies.popleft()
        return True

    def _read_stdout(self) -> None:
        stopped = False
        try:
            if self._epoll is None:
                # No epoll: a plain blocking reader, and callers never lead.
                if hasattr(os, "set_blocking"):  # Windows before Python 3.12 has none
                    os.set_blocking(self._stdout_fd, True)
                while self._read_available():
                    pass
            else:
                wait = self._epoll.poll
                wake, stop = self._wake_r, self._stop_r
                while not stopped:
                    # A lease is timed: wake at its end (a hint read without
                    # the lock; checked again under it).
                    timeout = max(0.0, self._lease_end - time.monotonic()) if self._leased else -1
                    hangup = False
                    for ready, _ in wait(timeout):
                        if ready == wake:
                            os.read(wake, 64)
                        elif ready == stop:
                            stopped = True
                        else:
                            # stdout: armed, or (disarmed) its writer gone:
                            # epoll reports a hang-up whatever the mask.
                            hangup = not self._armed
                    if stopped:
                        break
                    if self._leased and not hangup and not self._lease_ended():
                        continue  # still leased, or a leader reads
                    with self._rlock:
                        if not self._flush_replies() or not self._read_available():
                            break
        finally:
            self._stdout_done.set()
        if stopped or self._once.begun:
            return  # the session has already ended
        if self._stdout_state is _TOO_LONG:
            self._sink.terminate(frame_too_long(self._limits.max_frame_bytes))
        # stdout ended. Prefer the exit status when it follows promptly.
        elif self._child.exited.wait(EXIT_AFTER_EOF):
            self._sink.terminate(ConnectionClosed(f"exited with code {self._child.returncode}"))
        else:
            self._sink.terminate(ConnectionClosed("stdout closed"))

    def _read_stderr(self) -> None:
        drain_stderr(self._stderr_fd, self._stop_r, self._tail)

    def _wait_exit(self) -> None:
        self._child.reap()
        # A reply written just before exiting is still in the pipe: let the
        # reader finish it. A grandchild may hold stdout open forever, so the
        # wait is bounded.
        self._stdout_done.wait(EXIT_AFTER_EOF)
        self._sink.terminate(ConnectionClosed(f"exited with code {self._child.returncode}"))

    # ----------------------------------------------------------- teardown

    def shutdown(self, wait: bool) -> None:
        mine = self._once.begin()
        if mine:
            os.write(self._stop_w, b"x")
        if not mine:
            if wait and self._teardown_ident != threading.get_ident() and not self._holding():
                self._once.wait()
                helper = self._teardown_thread
                if helper is not None and helper is not threading.current_thread():
                    helper.join(THREAD_JOIN)
            return
        # Teardown joins the threads and takes the read token, so it runs here
        # only in a thread that holds neither: one that closes (wait), or one
        # of ours that is not in the middle of reading. A caller that met the
        # end while reading for its own reply neither pays for the teardown
        # nor holds the read token through it.
        inline = not self._holding() and (
            wait or threading.current_thread() in self._threads
        )
        if inline:
            self._run_teardown()
            return
        helper = threading.Thread(target=self._run_teardown, name=f"{self._name}-teardown", daemon=True)
        self._teardown_thread = helper
        helper.start()

    def _run_teardown(self) -> None:
        self._teardown_ident = threading.get_ident()
        try:
            self._teardown()
        finally:
            self._once.finished()

    def _teardown(self) -> None:
        self._stop_writer()
        self._child.stop(polite=not self._sink.failed())
        current = threading.current_thread()
        for thread in self._threads:
            if thread is not current and thread.ident is not None:
                thread.join(THREAD_JOIN)
        # A caller still leading leaves as soon as it sees the end; take the
        # read token so that nobody polls a descriptor as it is closed.
        if self._rlock.acquire(True, THREAD_JOIN):
            try:
                if self._stdout_state is _OPEN:
                    self._stdout_state = _EOF
                reader_gone = not self._alive(self._reader)
                stderr_gone = not self._alive(self._stderr_reader)
                if reader_gone and stderr_gone:
                    self._close_read_side()
                for stream, gone in ((self._proc.stdout, reader_gone), (self._proc.stderr, stderr_gone)):
                    if stream is not None and gone:
                        with contextlib.suppress(OSError):
                            stream.close()
            finally:
                self._rlock.release()
        self._sink.transport_closed(self._tail.text())

    @staticmethod
    def _alive(thread: threading.Thread) -> bool:
        # The thread running the teardown is done with its descriptors.
        return thread.is_alive() and thread is not threading.current_thread()

    def _stop_writer(self) -> None:
        # Pending frames belong to requests that already failed; the writer
        # closes stdin when it reaches the sentinel.
        self._stdin.close()
