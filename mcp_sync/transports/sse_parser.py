"""An incremental ``text/event-stream`` parser, bounded (both HTTP transports)."""

from __future__ import annotations

import re
from typing import Any, cast

from ..protocol.errors import ProtocolError

__all__ = ["SseParser"]

_EOL = re.compile(rb"\r\n?|\n")
_BOM = b"\xef\xbb\xbf"


class SseParser:
    """An incremental ``text/event-stream`` parser (WHATWG HTML, "Parsing an
    event stream"), over bytes and bounded.

    :meth:`feed` returns the data of each complete ``message`` event with
    non-empty data; a parser made with ``typed=True`` returns every event with
    non-empty data as ``(event type, data)`` instead. ``last_event_id`` and ``retry_ms`` persist across events
    (and, seeded into a new parser, across reconnections). A line, or one
    event's data, longer than ``max_event_bytes`` raises :class:`ProtocolError`,
    so memory stays bounded whatever the server sends.
    """

    __slots__ = (
        "_after_cr",
        "_data",
        "_data_len",
        "_event_type",
        "_line",
        "_line_len",
        "_max",
        "_started",
        "_typed",
        "events",
        "last_event_id",
        "retry_ms",
    )

    def __init__(
        self,
        max_event_bytes: int,
        *,
        last_event_id: str | None = None,
        retry_ms: int | None = None,
        typed: bool = False,
    ) -> None:
        self._max = max_event_bytes
        self._typed = typed
        self.last_event_id = last_event_id
        self.retry_ms = retry_ms
        self.events = 0
        """Events dispatched so far, those with empty data included."""
        self._line: list[bytes] = []
        self._line_len = 0
        self._data: list[bytes] = []
        self._data_len = -1  # -1: no data line yet; else bytes joined with "\n"
        self._event_type = b""
        self._after_cr = False
        self._started = False

    def feed_typed(self, chunk: bytes) -> list[tuple[bytes, bytes]]:
        """:meth:`feed` of a ``typed`` parser."""
        return cast("list[tuple[bytes, bytes]]", self.feed(chunk))

    def feed(self, chunk: bytes) -> list[bytes]:
        if self._after_cr and chunk:
            # A CRLF split across two chunks is one line break.
            self._after_cr = False
            if chunk[0] == 0x0A:
                chunk = chunk[1:]
        out: list[Any] = []
        start = 0
        for match in _EOL.finditer(chunk):
            end = match.start()
            if self._line:
                self._grow(end - start)
                self._line.append(chunk[start:end])
                line = b"".join(self._line)
                self._line.clear()
                self._line_len = 0
            else:
                if end - start > self._max + 64:
                    self._too_long()
                line = chunk[start:end]
            self._process(line, out)
            start = match.end()
        if start < len(chunk):
            self._grow(len(chunk) - start)
            self._line.append(chunk[start:])
        elif chunk and chunk[-1] == 0x0D:
            self._after_cr = True
        return out

    def _grow(self, size: int) -> None:
        self._line_len += size
        # Room for the field name ("data: ") on top of the payload bound.
        if self._line_len > self._max + 64:
            self._too_long()

    def _too_long(self) -> None:
        raise ProtocolError(f"an SSE event is larger than max_frame_bytes={self._max}")

    def _process(self, line: bytes, out: list[Any]) -> None:
        if not self._started:
            # A BOM is skipped only at the very start of the stream.
            self._started = True
            if line.startswith(_BOM):
                line = line[len(_BOM) :]
        if not line:
            self._dispatch(out)
            return
        if line[0] == 0x3A:  # ":" starts a comment
            return
        colon = line.find(b":")
        if colon < 0:
            field, value = line, b""
        else:
            field, value = line[:colon], line[colon + 1 :]
            if value[:1] == b" ":
                value = value[1:]
        if field == b"data":
            size = len(value) + (1 if self._data_len >= 0 else 0)
            if max(self._data_len, 0) + size > self._max:
                self._too_long()
            self._data.append(value)
            self._data_len = max(self._data_len, 0) + size
        elif field == b"event":
            self._event_type = value
        elif field == b"id":
            if b"\0" not in value:
                self.last_event_id = value.decode("utf-8", "replace")
        elif field == b"retry" and value.isdigit():
            # A huge number is just "a long time": no int() of a megabyte of digits.
            self.retry_ms = int(value) if len(value) <= 9 else 10**9

    def _dispatch(self, out: list[Any]) -> None:
        has_data = self._data_len >= 0
        data = b"\n".join(self._data)
        event_type = self._event_type
        self._data.clear()
        self._data_len = -1
        self._event_type = b""
        if not has_data:
            return
        self.events += 1
        if not data:
            return
        if self._typed:
            out.append((event_type or b"message", data))
        elif event_type in (b"", b"message"):
            out.append(data)
