"""A ``call``'s progress on stderr when stderr is a terminal."""

from __future__ import annotations

from typing import IO, TYPE_CHECKING, Any

from .._errors import McpError
from .._text import escape
from ..flows import FlowFailed, FlowResult

if TYPE_CHECKING:
    from .._session import Session
    from ..flows import Flow

__all__ = ["invoke_with_progress"]

_PROGRESS_WIDTH = 100


def invoke_with_progress(
    flow: Flow, arguments: dict[str, Any], session: Session | None, err: IO[str]
) -> FlowResult:
    """``flow.invoke``, showing the call's progress on ``err`` when it is a
    terminal (one line, rewritten in place, cleared at the end)."""
    isatty = getattr(err, "isatty", None)
    if session is None or flow.tool is None or isatty is None or not isatty():
        return flow.invoke(arguments)
    label = escape(flow.name)
    shown = False

    def report(progress: float, total: float | None, message: str | None) -> None:
        nonlocal shown
        line = f"{label}: {progress:g}" + (f"/{total:g}" if total is not None else "")
        if message:
            line += f" {escape(message)}"
        err.write("\r\x1b[K" + line[:_PROGRESS_WIDTH])
        err.flush()
        shown = True

    try:
        result = session.call_tool(flow.tool.name, arguments, on_progress=report)
    except McpError as exc:
        raise FlowFailed(str(exc), flow=flow.name, cause_kind=exc.kind) from exc
    finally:
        if shown:
            err.write("\r\x1b[K")
            err.flush()
    return FlowResult.from_call(result)
