"""Fresh catalogs without giving up the frozen snapshot.

``notifications/tools/list_changed`` only sets ``session.tools_changed``.
``session.refresh_tools()`` walks ``tools/list`` again under every catalog
rule of the first walk and, only if the whole walk passes, swaps the new
snapshot in at once; a failed refresh raises, says why, and leaves the old
snapshot in place. ``connect(auto_refresh=True)`` runs that refresh on a
library thread whenever the flag goes up.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._catalog import CatalogWalk, Snapshot, Tool
from ._errors import McpError, RemoteError
from ._limits import check_limit, seconds

if TYPE_CHECKING:
    from ._session import _Core

__all__ = ["CatalogMixin", "refresh_tools", "with_context"]


def with_context(error: McpError, prefix: str) -> McpError:
    """``error`` with ``prefix`` put before its message, same kind."""
    message = f"{prefix}: {error.message}"
    if isinstance(error, RemoteError):
        return RemoteError(message, error.code, error.detail)
    return type(error)(message)


def refresh_tools(core: _Core, timeout_ms: int | None) -> tuple[Tool, ...]:
    terminal = core.terminal
    if terminal is not None:
        raise terminal._copy()
    if timeout_ms is None:
        timeout_ms, option = core.limits.handshake_timeout_ms, "handshake_timeout_ms"
    else:
        timeout_ms, option = check_limit("timeout_ms", timeout_ms), "timeout_ms"
    inbound = core.inbound
    flag = inbound.changed["tools"]
    with inbound.refresh_lock:
        # Cleared before the walk: a change announced during it sets it again.
        flag.clear()
        walk = CatalogWalk(core.limits)
        try:
            core.walk(walk, seconds(timeout_ms), f"{option}={timeout_ms}")
        except McpError as exc:
            flag.set()
            failure = with_context(
                exc, f"refreshing the catalog of server {core.server!r} failed; the previous catalog is kept"
            )
            inbound.last_refresh_error = failure
            raise failure from None
        core.catalog = Snapshot(walk.tools())
        inbound.last_refresh_error = None
    return core.catalog.tools


class CatalogMixin:
    """``Session`` methods for a catalog that may change."""

    __slots__ = ()

    if TYPE_CHECKING:
        _core: _Core

    @property
    def tools(self) -> tuple[Tool, ...]:
        """The deep-frozen catalog snapshot, in the server's order (replaced
        whole by :meth:`refresh_tools`)."""
        return self._core.catalog.tools

    @property
    def tools_changed(self) -> bool:
        """Whether the server said its tool list changed since the walk that
        made :attr:`tools` began (``notifications/tools/list_changed``)."""
        return self._core.inbound.changed["tools"].is_set()

    @property
    def last_refresh_error(self) -> McpError | None:
        """Why the last refresh (explicit or automatic) failed, or ``None``
        if it succeeded (or none ran)."""
        return self._core.inbound.last_refresh_error

    def refresh_tools(self, *, timeout_ms: int | None = None) -> tuple[Tool, ...]:
        """Walk ``tools/list`` again under every catalog rule and swap the new
        snapshot in at once; return it. On failure raise, keep the old one.
        ``timeout_ms`` bounds each page (default ``handshake_timeout_ms``)."""
        return refresh_tools(self._core, timeout_ms)
