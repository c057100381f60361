"""A stdio line longer than ``max_frame_bytes``: skipped, not held, and
charged to the request it answers when that can be read off its ends.

While the rest of the line is skipped only its first and last ``KEEP`` bytes
are kept. A reply says so in its first members (``{"jsonrpc":"2.0","id":5,
"result":...`` from the Python SDK, ``{"result":...`` from the TypeScript
SDK) and carries its id either there or among its last members
(``...,"jsonrpc":"2.0","id":5}``). Two strict, anchored patterns read them;
the line itself is never parsed. A line that is not a reply by its head, or
whose id cannot be read (absent, null, a string: this client only sends
integer ids), cannot be attributed and ends the session as before. So does a
reply whose id is not in its head once no request that could own it still
waits: its id could only be read at its end, which may never come (a server
writing one endless line), and meanwhile no other reply can arrive.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from .errors import ProtocolError

__all__ = ["KEEP", "Oversized", "frame_too_long", "reply_too_long"]

KEEP = 4096
"""Bytes kept of each end of a skipped line."""

_JSONRPC = rb'"jsonrpc"\s*:\s*"2\.0"'
_ID = rb'"id"\s*:\s*([0-9]{1,16})'
# The object's first members: jsonrpc and id in either order, each at most
# once, then the result or error key. Only a top-level member can come first.
_HEAD = re.compile(
    rb"\s*\{\s*(?:"
    + _JSONRPC + rb"\s*,\s*(?:" + _ID + rb"\s*,\s*)?"
    + rb"|" + _ID + rb"\s*,\s*(?:" + _JSONRPC + rb"\s*,\s*)?"
    + rb')?"(?:result|error)"\s*:'
)  # fmt: skip
# The object's last members: id, with jsonrpc after or before it. What ends
# right before the final brace is a top-level member.
_TAIL = re.compile(
    rb"[,{]\s*(?:" + _JSONRPC + rb"\s*,\s*)?" + _ID + rb"\s*(?:,\s*" + _JSONRPC + rb"\s*)?\}\s*\Z"
)


class Oversized:
    """The kept ends of one line over the limit, and its length so far."""

    __slots__ = ("_head", "_tail", "decided", "late", "request_id", "size")

    def __init__(self) -> None:
        self._head = b""
        self._tail = b""
        self.size = 0
        # Set once the head has been read: whether (and, if the head holds
        # it, for which request) this is a reply.
        self.decided = False
        self.request_id: int | None = None
        # Requests sent after this line began to be skipped: it cannot
        # answer them (see ``claimable``). Added to from callers' threads.
        self.late: set[int] = set()

    def claimable(self, waiting: int, has: Callable[[int], bool]) -> bool:
        """Whether a request that was sent before this line began still
        waits (``waiting``: how many wait in all; ``has``: whether one id
        does). Only such a request can own a reply whose id is not in its
        head; once none is left, the line can be charged to nobody."""
        late = list(self.late)  # (one C call: other threads may add meanwhile)
        return waiting > len(late) or waiting > sum(map(has, late))

    def feed(self, data: bytes) -> None:
        """The next piece of the line (a few chunks at most: never the line)."""
        self.size += len(data)
        if len(self._head) < KEEP:
            self._head += data[: KEEP - len(self._head)]
        if len(data) >= KEEP:
            self._tail = data[-KEEP:]
        else:
            self._tail = (self._tail + data)[-KEEP:]

    def head_says(self, ended: bool) -> bool | None:
        """Once enough of the head is in (all ``KEEP`` bytes, or the whole
        line): False if the line is no reply or its head holds an id that is
        not an integer, else True (``request_id`` set when the head holds
        it). None: not enough yet."""
        if not ended and len(self._head) < KEEP:
            return None
        self.decided = True
        found = _HEAD.match(self._head)
        if found is None:
            return False
        digits = found.group(1) or found.group(2)
        if digits is not None:
            self.request_id = int(digits)
        return True

    def tail_id(self) -> int | None:
        """The id among the last members of the ended line, if any."""
        found = _TAIL.search(self._tail)
        return None if found is None else int(found.group(1))


def reply_too_long(server: str, size: int, limit: int, whole: bool) -> ProtocolError:
    """The error of the one request whose reply was too long."""
    amount = f"{size} bytes" if whole else f"more than {size} bytes"
    return ProtocolError(
        f"server {server!r} sent a reply of {amount}, over max_frame_bytes={limit}"
    )


def frame_too_long(limit: int) -> ProtocolError:
    """The session's end when a line over the limit cannot be attributed."""
    return ProtocolError(f"an inbound frame is longer than max_frame_bytes={limit}")
