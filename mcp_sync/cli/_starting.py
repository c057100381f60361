"""While the command's servers connect: one status line on a terminal saying
which server is still starting (it has read nothing yet: a first ``npx -y``
installing its package) and for how long, cleared once every connect is done."""

from __future__ import annotations

import threading
import time
from typing import IO

from ..protocol.text import escape

__all__ = ["StartingStatus"]

# The line shows once a server has read nothing for this long, and redraws
# at this pace.
SHOW_AFTER_S = 1.0
REDRAW_EVERY_S = 0.5
_CLEAR = "\r\x1b[K"
_WIDTH = 100


class StartingStatus:
    """Told by the connects (on their own threads) when a server process
    starts and when it is first seen reading; a thread of its own draws the
    line on ``err`` when ``err`` is a terminal (elsewhere it draws nothing)."""

    def __init__(self, err: IO[str]) -> None:
        self._err = err
        isatty = getattr(err, "isatty", None)
        self._tty = bool(isatty is not None and isatty())
        # Guards _starting and _shown: the connects' threads report, the
        # drawing thread reads and writes the line.
        self._lock = threading.Lock()
        self._starting: dict[str, float] = {}  # server -> when it started
        self._shown = False
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._draw, name="mcp-sync-cli-starting", daemon=True)

    def __enter__(self) -> StartingStatus:
        if self._tty:
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._done.set()
        if self._tty:
            self._thread.join()
        with self._lock:
            if self._shown:
                self._write(_CLEAR)

    def report(self, server: str, state: str) -> None:
        """``state`` is ``"starting"`` (spawned, nothing read) or ``"reading"``."""
        with self._lock:
            if state == "starting":
                self._starting[server] = time.monotonic()
            else:
                self._starting.pop(server, None)

    def line(self, now: float) -> str | None:
        """The status text, or None when no server has been starting long enough."""
        with self._lock:
            waiting = sorted((started, name) for name, started in self._starting.items())
        waiting = [(started, name) for started, name in waiting if now - started >= SHOW_AFTER_S]
        if not waiting:
            return None
        started, name = waiting[0]
        text = f"server '{escape(name)}' is still starting (nothing read yet) {now - started:.0f}s"
        if len(waiting) > 1:
            text += f", and {len(waiting) - 1} more"
        return text[:_WIDTH]

    def _draw(self) -> None:
        while not self._done.wait(REDRAW_EVERY_S):
            text = self.line(time.monotonic())
            with self._lock:
                if text is not None:
                    self._write(_CLEAR + text)
                elif self._shown:
                    self._write(_CLEAR)
                    self._shown = False

    def _write(self, text: str) -> None:
        # Called with self._lock held.
        self._err.write(text)
        self._err.flush()
        self._shown = True
