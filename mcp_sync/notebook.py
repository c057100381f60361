"""What a Jupyter notebook adds: progress you can watch, MCP Apps you ask to see.

Results, content blocks, tool catalogs, resources, prompts, sessions and
``Servers`` render in Jupyter by themselves (the display protocol: their
``_repr_mimebundle_``). This module holds what is asked for explicitly:

- :class:`Progress`, an ``on_progress`` callback that shows a call's
  progress in the cell: a notebook progress bar (ipywidgets) when ipywidgets
  is installed, tqdm's text bar when tqdm is, a line of text updated in place
  otherwise.
- :func:`app_frame` and :func:`show_app`: an MCP App's ``ui://`` page in a
  sandboxed frame (scripts run, in an opaque origin: no access to the
  notebook, its cookies or storage, no navigation of the notebook's page, no
  pop-ups, no forms). Never by default: a displayed resource shows its HTML
  as source.

Nothing here is imported by ``import mcp_sync``; IPython, ipywidgets and tqdm
are imported only when a :class:`Progress` is made.
"""

from __future__ import annotations

import html
import importlib
import sys
import threading
import time
import weakref
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

from .protocol.errors import InvalidInput, InvalidOption
from .protocol.text import escape

if TYPE_CHECKING:
    from .session.api import Session
    from .session.resources import ReadResourceResult, ResourceContents

__all__ = ["AppFrame", "Progress", "app_frame", "show_app"]

DEFAULT_APP_HEIGHT = 480
MAX_APP_HEIGHT = 10_000
# A display is redrawn at most this often (the last report is always shown):
# a server may report progress thousands of times a second.
_REDRAW_EVERY_S = 0.1
_MESSAGE_CHARS = 200


def _kernel_shell() -> Any:
    """The IPython kernel's shell running this code, or ``None`` (a plain
    interpreter, or a terminal IPython where widgets cannot show)."""
    module = sys.modules.get("IPython")
    shell = module.get_ipython() if module is not None else None
    return shell if getattr(shell, "kernel", None) is not None else None


def _importable(name: str) -> Any:
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


class Progress:
    """A call's progress, shown in the notebook cell that makes the call.

    Pass it as ``on_progress``: ``servers.call_tool(..., on_progress=Progress("indexing"))``
    (or ``Session.call_tool``). It draws a progress bar at once, moves it
    on each report the server sends (``progress`` of ``total``, with the
    server's message), and finishes when ``progress`` reaches ``total``, or
    at :meth:`close` (a ``with`` block closes it too). The bar is an
    ipywidgets ``FloatProgress`` in a kernel where ipywidgets is installed,
    else tqdm's bar when tqdm is installed, else one line of text updated in
    place (outside a kernel: a line on stderr per redraw). Redrawn at most
    ten times a second; the server's text is shown as text, its control
    characters escaped.

    One ``Progress`` is for one call; calls after :meth:`close` change nothing.
    """

    def __init__(self, description: str = "") -> None:
        if not isinstance(description, str):
            raise InvalidOption("option description must be a string")
        self._description = escape(description)[:_MESSAGE_CHARS]
        self._lock = threading.Lock()  # the reports and close() may come from two threads
        self._closed = False
        self._drawn_at = 0.0
        self._state: tuple[float, float | None, str] = (0.0, None, "")
        self.style = ""
        """Which display was chosen: ``"widget"``, ``"tqdm"`` or ``"text"``."""
        self._view: Any = None
        self._open()

    # ------------------------------------------------------------ the display

    def _open(self) -> None:
        shell = _kernel_shell()
        widgets = _importable("ipywidgets") if shell is not None else None
        if widgets is not None:
            display = importlib.import_module("IPython.display").display
            self.style = "widget"
            bar = widgets.FloatProgress(value=0.0, min=0.0, max=1.0, description=self._description)
            label = widgets.Label(value="waiting for progress")
            self._view = (bar, label)
            display(widgets.HBox([bar, label]))
            return
        tqdm = _importable("tqdm.std")
        if tqdm is not None:
            self.style = "tqdm"
            self._view = tqdm.tqdm(total=None, desc=self._description or None, file=sys.stderr, leave=True)
            return
        self.style = "text"
        if shell is not None:
            display = importlib.import_module("IPython.display").display
            self._view = display({"text/plain": self._line()}, raw=True, display_id=True)

    def _line(self) -> str:
        progress, total, message = self._state
        head = f"{self._description}: " if self._description else ""
        if total is None:
            line = f"{head}{progress:g}" if self._drawn_at else f"{head}waiting for progress"
        else:
            share = f" ({100 * progress / total:.0f}%)" if total > 0 else ""
            line = f"{head}{progress:g}/{total:g}{share}"
        return f"{line} {message}" if message else line

    def _draw(self, final: bool = False) -> None:
        progress, total, message = self._state
        view = self._view
        if self.style == "widget":
            bar, label = view
            if total is not None and total > 0:
                bar.max = float(total)
            elif progress > bar.max:
                bar.max = float(progress) * 2  # no total: the bar still moves
            bar.value = float(progress)
            label.value = message or f"{progress:g}" + (f"/{total:g}" if total is not None else "")
            if final:
                bar.bar_style = "success"
        elif self.style == "tqdm":
            view.total = total
            view.n = progress
            if message:
                view.set_postfix_str(message, refresh=False)
            if final:
                view.close()  # draws the last state
            else:
                view.refresh()
        elif view is not None:
            view.update({"text/plain": self._line() + (" (done)" if final else "")}, raw=True)
        else:
            print(self._line(), file=sys.stderr, flush=True)

    # ------------------------------------------------------------ the callback

    def __call__(self, progress: float, total: float | None = None, message: str | None = None) -> None:
        """One report: ``on_progress``'s signature."""
        with self._lock:
            if self._closed:
                return
            text = escape(message)[:_MESSAGE_CHARS] if isinstance(message, str) else ""
            self._state = (float(progress), None if total is None else float(total), text)
            final = total is not None and progress >= total
            now = time.monotonic()
            if not final and now - self._drawn_at < _REDRAW_EVERY_S:
                return
            self._drawn_at = now
            self._closed = final
            self._draw(final)

    def close(self) -> None:
        """Finish the display with the last report. Idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._drawn_at = self._drawn_at or time.monotonic()
            self._draw(final=True)

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<Progress {self._line()!r} {self.style}{' closed' if self._closed else ''}>"


# ---------------------------------------------------------------- MCP Apps


class AppFrame:
    """An MCP App's page, displayed in a sandboxed ``iframe``: its scripts run
    in an opaque origin (``sandbox="allow-scripts"``, without
    ``allow-same-origin``), so it cannot reach the notebook, its cookies or
    storage, navigate the notebook's page, open pop-ups or submit forms. The
    page is given whole in ``srcdoc`` (escaped): nothing is fetched to show it.
    The app's messages to its host (``ui/*`` over ``postMessage``) go
    unanswered: what needs a host does not work."""

    __slots__ = ("height", "page", "uri")

    def __init__(self, uri: str, page: str, height: int = DEFAULT_APP_HEIGHT) -> None:
        if type(height) is not int or not 1 <= height <= MAX_APP_HEIGHT:
            raise InvalidOption(f"option height must be an integer from 1 to {MAX_APP_HEIGHT} (pixels)")
        self.uri = uri
        self.page = page
        self.height = height

    def _repr_html_(self) -> str:
        title = html.escape(escape(self.uri)[:200], quote=True)
        source = html.escape(self.page, quote=True)
        return (
            f'<iframe class="mcp-sync-app" title="{title}" sandbox="allow-scripts" '
            f'referrerpolicy="no-referrer" srcdoc="{source}" '
            f'style="width:100%;height:{self.height}px;border:1px solid #ccc"></iframe>'
        )

    def __repr__(self) -> str:
        return f"<AppFrame {self.uri[:200]!a}, {len(self.page):,} characters>"


def app_frame(
    contents: ResourceContents | ReadResourceResult, *, height: int = DEFAULT_APP_HEIGHT
) -> AppFrame:
    """An MCP App's page from what ``Session.read_resource`` returned: the
    first HTML text of a ``ui://`` resource, to display in a sandboxed frame.
    :class:`InvalidInput` when there is none (another scheme, binary or non-HTML
    contents)."""
    items = getattr(contents, "contents", None)
    candidates = items if isinstance(items, tuple) else (contents,)
    for item in candidates:
        uri, mime, text = getattr(item, "uri", None), getattr(item, "mime_type", None), getattr(item, "text", None)
        base = (mime or "").split(";", 1)[0].strip().lower()
        if isinstance(uri, str) and uri.startswith("ui://") and base == "text/html" and isinstance(text, str):
            return AppFrame(uri, text, height)
    raise InvalidInput(
        "app_frame needs the HTML text of a ui:// resource (an MCP App's page), "
        "as Session.read_resource returns it; these contents hold none"
    )


def show_app(
    session: Session, uri: str, *, height: int = DEFAULT_APP_HEIGHT, timeout_ms: int | None = None
) -> AppFrame:
    """Read the MCP App at ``uri`` (a ``ui://`` URI, such as a tool's
    ``_meta.ui.resourceUri``) and return it as an :class:`AppFrame`, which a
    notebook cell shows in a sandboxed frame. ``timeout_ms`` bounds the read
    (default ``request_timeout_ms``)."""
    if not isinstance(uri, str) or not uri.startswith("ui://"):
        raise InvalidInput(f"show_app needs a ui:// URI (an MCP App's page), got {str(uri)[:200]!a}")
    if type(height) is not int or not 1 <= height <= MAX_APP_HEIGHT:
        raise InvalidOption(f"option height must be an integer from 1 to {MAX_APP_HEIGHT} (pixels)")
    return app_frame(session.read_resource(uri, timeout_ms=timeout_ms), height=height)


# ---------------------------------------------------------------- re-run cells

# The Servers built in an IPython shell's cells, by server name. Re-running
# the cell that builds one must leave one server running, even though IPython
# may keep the old object alive (the traceback of a failed or interrupted
# call holds its frames, an output cell the object itself): so a Servers
# built in the shell's namespace closes the one an earlier cell built for any
# of the same server names. A Servers built anywhere else (a module, a
# script, a function of an imported package) is never touched.
class _Named(Protocol):
    """A ``Servers``, as this module sees it (it does not import ``Servers``)."""

    @property
    def names(self) -> tuple[str, ...]: ...


_in_cells: dict[str, weakref.ref[_Named]] = {}
_in_cells_lock = threading.Lock()
REPLACED = "this Servers was closed: a later notebook cell built a Servers for the same server names"


def replace_earlier_cells(servers: _Named, namespace: Mapping[str, Any]) -> list[_Named]:
    """Called by ``Servers()`` in an IPython process: when ``namespace`` (the
    globals of the code that built ``servers``) is the shell's own, record
    ``servers`` under its server names and return the Servers of earlier
    cells that it replaces, for the caller to close."""
    module = sys.modules.get("IPython")
    shell = module.get_ipython() if module is not None else None
    if shell is None or getattr(shell, "user_ns", None) is not namespace:
        return []
    earlier: dict[int, _Named] = {}
    with _in_cells_lock:
        for name in servers.names:
            old = _in_cells.get(name)
            found = old() if old is not None else None
            if found is not None and found is not servers:
                earlier[id(found)] = found
            _in_cells[name] = weakref.ref(servers)
    return list(earlier.values())
