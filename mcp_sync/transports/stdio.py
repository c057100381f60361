"""The stdio transport: the server process and its four threads.

- reader: splits stdout into lines (at most one bounded partial frame held)
  and hands each to the session, whenever no caller is reading;
- writer: drains the bounded outbound queue into stdin, whenever a caller
  could not write its frame itself;
- stderr: drains stderr continuously into a redacted, bounded tail;
- waiter: reaps the child and notices when it exits.

The rooms: ``stdin.py`` (the write side: the outbound queue, the writer
thread, callers' direct writes), ``read_token.py`` (who reads stdout: the
read token, the lease, and what the reader thread waits on),
``stdout_lines.py`` (stdout cut into lines for the token's holder), and this
module, which starts the process and its threads, lets a caller lead, and
tears it all down.

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
check at its start and one after the ownership test) is tried once more by
a handler of its own when it raises. So one Ctrl-C never leaves the read
token or stdin held; it would take a second landing within the same few
bytecodes. Nor does it leave stdout unread: one that lands inside the
give-back, as stdout is handed back to the reader thread, is undone by the
same handler.
"""

from __future__ import annotations

import collections
import contextlib
import math
import os
import select
import threading
import time
from collections.abc import Callable, Sequence

from ..protocol.errors import ConnectionClosed, SpawnFailed
from ..protocol.limits import Limits, reply_not_queued, seconds
from ..protocol.oversize import frame_too_long
from ..protocol.stderr_tail import StderrTail
from .contract import REQUEST, Leader, Outbound, ShutdownOnce, Sink
from .fdio import Read, held_reader
from .process import ENV_ALLOWLIST, ServerProcess, child_environment, drain_stderr
from .read_token import ReadToken
from .stdin import Stdin
from .stdout_lines import EOF, OPEN, READ_SIZE, TOO_LONG, StdoutLines

__all__ = ["ENV_ALLOWLIST", "StdioTransport", "child_environment"]

# After stdout ends, how long to wait for the exit status so the session can
# say "exited with code N" rather than just "stdout closed".
EXIT_AFTER_EOF = 0.5
THREAD_JOIN = 2.0

_POLL_MAX_MS = 2**31 - 1
_PEEK_AFTER_MISS = 16
"""Leaders that poll at once after a read before polling found nothing,
before one tries that read again (see _read_until)."""


class StdioTransport:
    """A server process on our pipes: a :class:`~._base.Transport` that is
    also its own :class:`~._base.Leader`."""

    def __init__(
        self,
        sink: Sink,
        *,
        server: str,
        child: ServerProcess,
        limits: Limits,
        secrets: Sequence[str] = (),
    ) -> None:
        """Take over ``child``, a server process just started: the caller
        starts it first, so that building this transport and the session
        around it overlaps the server's own start."""
        self._child = child
        self._proc = child.proc
        self._sink = sink
        self._waiting = sink.table_size  # (a C method: _give_read_side asks it per call)
        self.leader: Leader | None = self
        self._limits = limits
        self._stdout_done = threading.Event()
        self._once = ShutdownOnce()
        self._teardown_thread: threading.Thread | None = None
        self._teardown_ident: int | None = None
        self._name = f"mcp_sync-{server}"
        self._server = server
        self._epoll: select.epoll | None = None
        posix = os.name == "posix"
        try:
            self._stdin = Stdin(sink.claim, limits.queue_capacity)
            self._tail = StderrTail(limits.max_stderr_bytes, secrets=secrets)
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
        stdin: Stdin | None = getattr(self, "_stdin", None)
        if stdin is not None:
            stdin.close()
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
        token = getattr(self, "_token", None)
        if token is not None:
            token.close()
        for name in ("_stop_r", "_stop_w"):
            fd = getattr(self, name, None)
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)

    def _setup(self, posix: bool) -> None:
        assert self._proc.stdin and self._proc.stdout and self._proc.stderr
        self._stdout_fd = self._proc.stdout.fileno()
        self._stderr_fd = self._proc.stderr.fileno()
        # Forced for tests: the path of systems without epoll (macOS, the
        # BSDs), with no ctypes either.
        plain = os.environ.get("MCP_SYNC_PLAIN_STDIO", "") not in ("", "0")
        self._stdin.attach(self._proc.stdin, posix, held=not plain)
        # Leaders still to poll before one reads first (see _read_until).
        self._peek_wait = 0
        # Replies to server requests that a reading caller could not queue at
        # once: the reader thread sends them, waiting as long as it must.
        self._replies: collections.deque[bytes] = collections.deque()
        # Written once when the session ends and never drained: the reader,
        # the stderr thread and a leader polling for a reply all leave at once.
        self._stop_r, self._stop_w = os.pipe()
        # The token's holder reads stdout; a blocking read must let go of the GIL.
        read: Read = os.read
        leads = not plain and hasattr(select, "epoll") and hasattr(select, "poll")
        if leads:
            os.set_blocking(self._stdout_fd, False)
            read = held_reader(READ_SIZE)  # never blocks now: keeps the GIL (fdio)
        self._token = token = ReadToken(self._stdout_fd, self._stop_r, self._live, leads)
        self._epoll, self._holding, self._wake = token.epoll, token.holding, token.wake
        if token.lead_poll is not None:
            self._lead_poll = token.lead_poll
        self._lines = StdoutLines(self._stdout_fd, read, self._sink, self._limits, self._server, self._pause)
        self._read_available = self._lines.read_available
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
        if item.kind == REQUEST:
            self._mark_late(item.request_id)
        return self._send(item.frame, item.request_id, timeout)

    def _mark_late(self, request_id: int | None) -> None:
        skipping = self._lines.skipping
        if skipping is not None and request_id is not None:
            # A request sent after an over-long line began: it cannot be that
            # line's owner (see Oversized.claimable).
            skipping.late.add(request_id)

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

    # Who reads stdout: the holder of the read token (read_token.py), the
    # reader thread or a caller reading for its own reply (``lead``). Every
    # ending (EOF, an over-long frame) is finished by the reader thread: a
    # leader that meets one wakes it through the wake pipe. So is every wait:
    # a leader stops reading once it would have to wait for room to reply to
    # a server request, and reads one chunk at a time, so its deadline is
    # looked at between chunks.

    def exchange(
        self, frame: bytes, request_id: int | None, timeout: float, done: Callable[[], bool], deadline: float
    ) -> bool:
        """Send a request and, if nobody else is reading, read until ``done()``
        or ``deadline``. False if the frame could not be queued in time.
        (An :class:`Outbound`'s ``headers`` and ``hold`` are for HTTP; stdio
        carries everything in the frame, and its reader thread reads for as
        long as the session lasts.)

        The read token is taken and stdout disarmed *before* the write: a
        server that answers at once (on one CPU it runs the moment it is
        woken) would otherwise wake the reader thread with the reply.
        """
        if self._lines.skipping is not None:
            self._mark_late(request_id)
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
                except BaseException:
                    if owned():  # interrupted before the give-back began
                        self._give_read_side()
                    elif self._token.stranded():
                        self._token.unstrand()  # interrupted inside it
                    raise
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
            except BaseException:
                if owned():  # interrupted before the give-back began
                    self._give_read_side(linger)
                elif self._token.stranded():
                    self._token.unstrand()  # interrupted inside it
                raise

    def _take_read_side(self) -> bool:
        """Take the read token and disarm stdout in the reader's epoll, if
        nobody else reads, stdout is still open and no reply waits for the
        reader thread. Call inside a ``try`` that gives the token back if the
        thread owns it, so an interrupt between the steps loses nothing."""
        token = self._token
        if self._epoll is None or not token.lock.acquire(False):
            return False
        if self._lines.state is not OPEN or self._replies or self._once.begun:
            token.lock.release()
            return False
        token.lead()
        return True

    def _give_read_side(self, linger: bool = False) -> None:
        # Re-arm stdout for the reader thread, or lease it (see _lease_lock).
        # A chunk left half-split (an interrupted leader) or replies left to
        # send need the reader thread even if nothing more ever arrives on
        # stdout.
        lease = False
        try:
            lines = self._lines
            if lines.reading:
                lines.interrupted()
            # Once stdout has ended (or the session is ending) the reader
            # thread sees the end itself: nothing to arm, lease or wake.
            live = lines.state is OPEN and not self._once.begun
            # A lone caller leases too: nobody else waits for a reply, and it
            # is usually back for its next call before the lease ends (then
            # it needs no epoll_ctl at all).
            lease = live and (linger or not self._waiting()) and lines.chunk is None and not self._replies
            timed = self._token.hand_back(lease)
            if live and ((lease and not timed) or lines.chunk is not None or self._replies):
                # The reader thread starts timing the lease, or has a chunk
                # or replies to finish even if nothing more arrives.
                self._wake()
        finally:
            self._token.lock.release()
        if lease and not linger and self._waiting():
            # A request entered while we held the token: its caller, who
            # found the token taken, now waits for someone to read.
            self._token.end_lease_now()

    def _pause(self) -> bool:
        """Whether a caller reading for everyone stops after this line: it
        left a reply for the reader thread to send (see _read_until)."""
        return bool(self._replies) and threading.current_thread() is not self._reader

    def _live(self) -> bool:
        """Whether stdout is open and the session not ending (then stdout
        may need arming)."""
        return self._lines.state is OPEN and not self._once.begun

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
                self._lines.empty = False
                if not self._read_available():
                    self._wake()
                    return
                if self._replies:
                    return
                if self._lines.empty:
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
                self._wake()  # the reader thread finishes the ending
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
            self._wake()  # the reader thread finishes the ending

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

    def _flush_and_read(self) -> bool:
        return self._flush_replies() and self._read_available()

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
                stopped = self._token.follow(self._flush_and_read)
        finally:
            self._stdout_done.set()
        if stopped or self._once.begun:
            return  # the session has already ended
        if self._lines.state is TOO_LONG:
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
        if self._token.lock.acquire(True, THREAD_JOIN):
            try:
                if self._lines.state is OPEN:
                    self._lines.state = EOF
                reader_gone = not self._alive(self._reader)
                stderr_gone = not self._alive(self._stderr_reader)
                if reader_gone and stderr_gone:
                    self._close_read_side()
                for stream, gone in ((self._proc.stdout, reader_gone), (self._proc.stderr, stderr_gone)):
                    if stream is not None and gone:
                        with contextlib.suppress(OSError):
                            stream.close()
            finally:
                self._token.lock.release()
        self._sink.transport_closed(self._tail.text())

    @staticmethod
    def _alive(thread: threading.Thread) -> bool:
        # The thread running the teardown is done with its descriptors.
        return thread.is_alive() and thread is not threading.current_thread()

    def _stop_writer(self) -> None:
        # Pending frames belong to requests that already failed; the writer
        # closes stdin when it reaches the sentinel.
        self._stdin.close()
