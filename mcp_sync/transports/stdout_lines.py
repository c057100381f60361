"""A stdio server's stdout cut into lines, each handed to the session.

Only the holder of the read token (read_token.py) reads and splits, so none
of this is guarded by a lock of its own. At most one bounded partial line is
held; a line over ``max_frame_bytes`` keeps only its ends (``Oversized``)
while the rest is skipped, and is charged to its request as soon as those
ends say which one.

The chunk being split and the position in it live on the object, and the
position moves past a line before the line is dispatched: a caller
interrupted here (KeyboardInterrupt in the main thread) loses at most that
one line, and the next holder of the token carries on with the rest of the
chunk instead of losing it, or the framing with it.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from ..protocol.errors import ProtocolError
from ..protocol.frames import decode_line
from ..protocol.limits import Limits
from ..protocol.oversize import Oversized, reply_too_long
from .contract import Sink
from .fdio import Read

__all__ = ["EOF", "OPEN", "READ_SIZE", "TOO_LONG", "StdoutLines"]

READ_SIZE = 65536
# A chunk longer than this says the server writes faster than it is read.
BACKLOG = READ_SIZE // 2
# stdout's state, changed only by the holder of the read token.
OPEN, EOF, TOO_LONG = "open", "eof", "too long"


def _whole_frame(line: bytes) -> bool:
    """Whether ``line`` is a protocol frame on its own (resync after an interrupt)."""
    try:
        return decode_line(line) is not None
    except ProtocolError:
        return False


class StdoutLines:
    """The line being assembled from stdout, for whoever holds the read token.

    ``read`` is ``os.read``'s shape, on ``fd``; ``pause()`` says whether the
    reading thread must stop after the line just dispatched (a caller that
    left a reply for the reader thread to send)."""

    def __init__(  # noqa: PLR0913, PLR0917
        self, fd: int, read: Read, sink: Sink, limits: Limits, server: str, pause: Callable[[], bool]
    ) -> None:
        self.fd = fd
        self.read = read
        self._sink = sink
        self._waiting = sink.table_size
        self._limit = limits.max_frame_bytes
        self._server = server
        self._pause = pause
        self.state = OPEN
        self._partial: list[bytes] = []
        self._held = 0
        self.chunk: bytes | None = None
        self._pos = 0
        # The kept ends of a line over max_frame_bytes while the rest of it
        # is skipped (see protocol.oversize).
        self.skipping: Oversized | None = None
        # Set around a read(2) whose result could be lost to an interrupt;
        # the resync then drops what may be the tail of a line that lost its middle.
        self.reading = False
        self._resync = False
        # Set when a read found stdout empty (a leader reading ahead).
        self.empty = False
        # Set when the last read came back over BACKLOG: more is waiting.
        self._backlog = False

    def interrupted(self) -> None:
        """The token is handed back with ``reading`` set: its holder was
        interrupted between read(2) and keeping what it returned, and the
        line being assembled may have lost its middle."""
        if self.reading:
            self.reading = False
            self._partial.clear()
            self._held = 0
            self.skipping = None
            self._resync = True

    def read_available(self) -> bool:
        """Read one chunk of stdout (holding the read token) and dispatch each
        complete line. False once stdout has ended or broken the frame limit.
        A reading caller that had to leave a reply for the reader thread
        stops after that line. A chunk left half split (an interrupted
        reader) is finished before stdout is read again."""
        if self.state is not OPEN:
            return False
        chunk = self.chunk
        if chunk is None:
            self.reading = True
            # A read after a chunk of over half the buffer meets a backlog (a
            # flood, a big reply): it lets go of the GIL, so a server writing
            # faster than we parse cannot keep the host's other threads from it.
            read = os.read if self._backlog else self.read
            try:
                chunk = read(self.fd, READ_SIZE)
            except BlockingIOError:
                self.reading = False
                self.empty = True
                return True  # nothing there for now
            except OSError:
                chunk = b""
            # One statement: no interrupt can come between keeping the chunk
            # and clearing the flag.
            self.chunk, self._pos, self.reading = chunk, 0, False
            self._backlog = len(chunk) > BACKLOG
            if not chunk:
                self.chunk = None
                self.state = EOF
                return False
        if self._resync and not self._resynced(chunk):
            return True
        return self._split(chunk)

    def _resynced(self, chunk: bytes) -> bool:
        """After a lost chunk: up to the next newline stands either a whole
        line (the lost chunk ended with one) or the tail of a line that lost
        its middle. Only a whole frame is kept. False: no newline in this
        chunk, which is dropped."""
        newline = chunk.find(b"\n", self._pos)
        if newline < 0:
            self.chunk = None
            return False
        first = chunk[self._pos : newline]
        self._pos, self._resync = newline + 1, False
        if _whole_frame(first):
            self._sink.receive(first)
        return True

    def _split(self, chunk: bytes) -> bool:
        receive = self._sink.receive
        partial = self._partial
        start = self._pos
        size = len(chunk)
        while True:
            newline = chunk.find(b"\n", start)
            end = size if newline < 0 else newline
            skipping = self.skipping
            if skipping is None and self._held + end - start > self._limit:
                skipping = self._start_skipping()
            if skipping is not None:
                skipping.feed(chunk[start:end])
                if newline < 0:
                    self.chunk = None
                    return self._skipped(skipping, ended=False)
                start = self._pos = newline + 1
                if not self._skipped(skipping, ended=True):
                    return False
                continue
            if newline < 0:
                rest = size - start
                self.chunk = None
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
                self.chunk = None
                return True
            if self._pause():
                return True

    def _start_skipping(self) -> Oversized:
        # Over the limit: from here on only the line's ends are kept.
        skipping = self.skipping = Oversized()
        for part in self._partial:
            skipping.feed(part)
        self._partial.clear()
        self._held = 0
        return skipping

    def _too_long(self) -> bool:
        self.skipping = None
        self.state = TOO_LONG
        return False

    def _skipped(self, skipping: Oversized, ended: bool) -> bool:
        """Charge an over-long line to its request as soon as its kept ends
        tell which one (holding the read token). False when they cannot:
        the session ends, as for any frame over the limit."""
        if not skipping.decided:
            reply = skipping.head_says(ended)
            if reply is False:
                return self._too_long()
            if reply and skipping.request_id is not None:
                # Its caller is told now, not after the rest is skipped.
                self._fail_reply(skipping.request_id, skipping.size, ended)
        if not ended:
            if (
                skipping.decided
                and skipping.request_id is None
                and not skipping.claimable(self._waiting(), self._sink.waiting)
            ):
                # A reply whose id would only show at its end, and nobody
                # left who could own it: a line that never ends would
                # otherwise hold every later call until its deadline.
                return self._too_long()
            return True
        self.skipping = None
        if skipping.request_id is None:
            request_id = skipping.tail_id()
            if request_id is None:
                return self._too_long()
            self._fail_reply(request_id, skipping.size, True)
        return True

    def _fail_reply(self, request_id: int, size: int, whole: bool) -> None:
        # A reply nobody waits for any more is dropped, as a late reply of
        # any size is.
        if self._sink.waiting(request_id):
            self._sink.fail(request_id, reply_too_long(self._server, size, self._limit, whole))
