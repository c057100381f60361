"""Fresh catalogs without giving up the frozen snapshot.

``notifications/tools/list_changed`` only sets ``session.tools_changed``.
``session.refresh_tools()`` walks ``tools/list`` again under every catalog
rule of the first walk and, only if the whole walk passes, swaps the new
snapshot in at once; a failed refresh raises, says why, and leaves the old
snapshot in place. ``connect(auto_refresh=True)`` runs that refresh on a
library thread whenever the flag goes up.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..protocol.catalog import CatalogWalk, Snapshot, Tool
from ..protocol.errors import McpError, RemoteError, UrlElicitationRequired
from ..protocol.limits import check_limit, seconds

if TYPE_CHECKING:
    from .feature_contract import Core

__all__ = ["refresh_tools", "with_context"]


def with_context(error: McpError, prefix: str) -> McpError:
    """``error`` with ``prefix`` put before its message, same kind."""
    message = f"{prefix}: {error.message}"
    if isinstance(error, UrlElicitationRequired):
        return UrlElicitationRequired(message, error.code, error.detail, error.elicitations)
    if isinstance(error, RemoteError):
        return RemoteError(message, error.code, error.detail)
    return type(error)(message)


def refresh_tools(core: Core, timeout_ms: int | None, meta: Mapping[str, Any] | None = None) -> tuple[Tool, ...]:
    """``Session.refresh_tools`` (and ``auto_refresh``'s thread): walk
    ``tools/list`` under every catalog rule; swap the snapshot only if the
    whole walk passed. ``timeout_ms`` bounds each page (``None``:
    ``handshake_timeout_ms``)."""
    terminal = core.terminal
    if terminal is not None:
        raise terminal._copy()
    if timeout_ms is None:
        timeout_ms, option = core.limits.handshake_timeout_ms, "handshake_timeout_ms"
    else:
        timeout_ms, option = check_limit("timeout_ms", timeout_ms), "timeout_ms"
    params: dict[str, Any] = {}
    if meta is not None:  # on every page's request
        from .extensions import check_meta

        params["_meta"] = check_meta(meta, core.limits.max_outbound_frame_bytes)
    inbound = core.inbound
    flag = inbound.changed["tools"]
    with inbound.refresh_lock:
        # Cleared before the walk: a change announced during it sets it again.
        flag.clear()
        walk = CatalogWalk(core.limits, core.server)
        try:
            core.walk(walk, seconds(timeout_ms), f"{option}={timeout_ms}", params)
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
