"""A ``call`` on a session: its deadline, extended by progress as the
library extends it, and what it shows on stderr when stderr is a terminal
(the progress the server reports, else a spinner with the time elapsed)."""

from __future__ import annotations

import contextlib
import threading
import time
from typing import IO, TYPE_CHECKING, Any

from ..flows import FlowFailed, FlowResult
from ..protocol.errors import McpError
from ..protocol.text import escape

if TYPE_CHECKING:
    from ..flows import Flow
    from ..session.api import Session

__all__ = ["invoke_with_progress"]

_PROGRESS_WIDTH = 100
# The spinner shows once a call has run this long without progress, and
# redraws at this pace.
SPINNER_AFTER_S = 0.5
SPINNER_EVERY_S = 0.1
_FRAMES = "-\\|/"
_CLEAR = "\r\x1b[K"


class _Status:
    """The one status line on a terminal: progress when the server reports
    it, else a spinner with the elapsed time; cleared at the end."""

    def __init__(self, label: str, err: IO[str]) -> None:
        self._label = label
        self._err = err
        self._started = time.monotonic()
        # Guards the line on the terminal (writes to err) and the two flags:
        # the caller's thread (progress callbacks, the final clear) and the
        # spinner thread both take it, each for one short write.
        self._lock = threading.Lock()
        self._shown = False
        self._progressed = False
        self._done = threading.Event()  # set once the call returned or failed
        self._spinner = threading.Thread(target=self._spin, name="mcp-sync-cli-spinner", daemon=True)

    def __enter__(self) -> _Status:
        self._spinner.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._done.set()
        self._spinner.join()
        with self._lock:
            if self._shown:
                self._write(_CLEAR)

    def report(self, progress: float, total: float | None, message: str | None) -> None:
        line = f"{self._label}: {progress:g}" + (f"/{total:g}" if total is not None else "")
        if message:
            line += f" {escape(message)}"
        with self._lock:
            self._progressed = True
            self._write(_CLEAR + line[:_PROGRESS_WIDTH])

    def _spin(self) -> None:
        frame = 0
        if self._done.wait(SPINNER_AFTER_S):
            return
        while True:
            elapsed = time.monotonic() - self._started
            with self._lock:
                if self._progressed:
                    return  # the server's own progress says more
                self._write(f"{_CLEAR}{self._label}: waiting {_FRAMES[frame % len(_FRAMES)]} {elapsed:.1f}s")
            frame += 1
            if self._done.wait(SPINNER_EVERY_S):
                return

    def _write(self, text: str) -> None:
        # Called with self._lock held.
        self._err.write(text)
        self._err.flush()
        self._shown = True


def invoke_with_progress(
    flow: Flow,
    arguments: dict[str, Any],
    session: Session | None,
    err: IO[str],
    timeout_ms: int | None = None,
) -> FlowResult:
    """``flow.invoke`` with ``timeout_ms`` (``None``: the server entry's
    ``requestTimeoutMs``), where each progress report moves the deadline to
    "now plus the timeout", up to the library's hard maximum of ten times it
    (``progress_extends_deadline``). On a terminal ``err`` shows the progress,
    or a spinner with the time elapsed while there is none."""
    if session is None or flow.tool is None:
        return flow.invoke(arguments, timeout_ms=timeout_ms)
    isatty = getattr(err, "isatty", None)
    status = _Status(escape(flow.name), err) if isatty is not None and isatty() else None
    try:
        with status or contextlib.nullcontext():
            result = session.call_tool(
                flow.tool.name,
                arguments,
                timeout_ms=timeout_ms,
                on_progress=_quiet if status is None else status.report,
                progress_extends_deadline=True,
            )
    except McpError as exc:
        raise FlowFailed(str(exc), flow=flow.name, cause_kind=exc.kind) from exc
    return FlowResult.from_call(result)


def _quiet(progress: float, total: float | None, message: str | None) -> None:
    """Progress off a terminal: shown nowhere, but it still extends the deadline."""
