"""The standalone GET stream of Streamable HTTP, on which a server sends what
is not part of a request's reply (requests such as ``elicitation/create``,
``list_changed`` notifications, logs). One thread,
``mcp_sync-<server>-http-listen``, holds it open until the transport closes,
reconnecting with ``Last-Event-ID`` after the server's ``retry``; a server that
offers none (405 or another refusal) is left alone.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from .. import _log
from ..protocol.errors import ProtocolError
from ..protocol.limits import Limits
from .contract import Sink
from .exchange import Exchanger
from .http_status import Failure, Stopped, content_type
from .sse_parser import SseParser

__all__ = ["DEFAULT_RETRY", "FIRST_ANSWER_WAIT", "LISTEN_READ_TIMEOUT", "MAX_EVENT_ID", "MIN_RETRY", "Listener"]

FIRST_ANSWER_WAIT = 1.0
"""How long ``listen()`` waits for the first GET's answer: a session whose
server may send it requests (an elicitation during a tool call) must not make
that call before the stream they come on is open. A server that holds its
answer back costs connect at most this."""
DEFAULT_RETRY = 1.0
"""Seconds to wait before resuming a stream whose server sent no ``retry`` field."""
MIN_RETRY = 0.05
"""A floor under the server's ``retry`` so a hostile ``retry: 0`` cannot spin us."""
LISTEN_READ_TIMEOUT = 300.0
"""The standalone stream is reopened after this many seconds without a byte."""
MAX_EVENT_ID = 1024


class Listener:
    """The thread that holds the standalone stream."""

    def __init__(
        self,
        *,
        server: str,
        sink: Sink,
        limits: Limits,
        exchanger: Exchanger,
        headers: Callable[[], dict[str, str]],
        stopping: threading.Event,
    ) -> None:
        self._server = server
        self._sink = sink
        self._limits = limits
        self._exchanger = exchanger
        self._headers = headers  # the session's headers, built afresh for each GET
        self._stopping = stopping
        # Set once the first GET is answered (whatever the answer) or given up.
        self.answered = threading.Event()
        self.thread = threading.Thread(
            target=self._listen, name=f"mcp_sync-{server}-http-listen", daemon=True
        )

    def _listen(self) -> None:
        try:
            self._hold()
        finally:
            self.answered.set()

    def _hold(self) -> None:
        parser = SseParser(self._limits.max_frame_bytes)
        quiet = 0  # connections in a row that brought nothing
        while not self._stopping.is_set():
            headers = self._headers()
            if parser.last_event_id and len(parser.last_event_id) <= MAX_EVENT_ID:
                headers["Last-Event-ID"] = parser.last_event_id
                _log.transport_event(
                    logging.DEBUG, "listen_resume", self._server,
                    "server %r: resuming the event stream (Last-Event-ID)", self._server,
                )  # fmt: skip
            seen = parser.events
            try:
                deadline = time.monotonic() + LISTEN_READ_TIMEOUT
                with self._exchanger.open("GET", None, deadline, headers) as response:
                    self.answered.set()
                    if response.status_code != 200 or content_type(response) != "text/event-stream":
                        return  # no standalone stream here (405 is the usual answer)
                    self._exchanger.check_encoding(response)
                    parser = SseParser(
                        self._limits.max_frame_bytes,
                        last_event_id=parser.last_event_id,
                        retry_ms=parser.retry_ms,
                    )
                    for chunk in response.iter_raw():
                        for data in parser.feed(chunk):
                            self._sink.receive(data)
                        if self._stopping.is_set():
                            return
            except (Stopped, Failure):
                return
            except ProtocolError as exc:  # an event over max_frame_bytes
                self._sink.terminate(exc)
                return
            except Exception:  # a timeout or a broken connection: reconnect
                if self._stopping.is_set():
                    return
            self.answered.set()  # (a first attempt that failed: connect need not wait for the next)
            quiet = 0 if parser.events > seen else quiet + 1
            delay = DEFAULT_RETRY if parser.retry_ms is None else parser.retry_ms / 1000.0
            # A stream that keeps ending at once backs off, up to 30 s.
            delay = max(delay, MIN_RETRY, min(30.0, MIN_RETRY * 2**quiet))
            if self._stopping.wait(delay):
                return
