"""Paginated lists: the walk of a list to its end (``tools/list`` for the
catalog, and the resource, prompt and skill lists), under the catalog's page
and cursor rules.

Functions over the session core's narrow protocol
(``session.feature_contract.Core``): the core's ``walk`` and
``load_catalog`` come here; none imports the core.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from ..protocol.catalog import CatalogWalk, PageWalk, Tool
from ..protocol.errors import Timeout
from ..protocol.limits import seconds

if TYPE_CHECKING:
    from .feature_contract import Core

__all__ = ["WHOLE_LIST", "catalog_tools", "walk"]


class _WholeList:
    def __repr__(self) -> str:
        return "<the whole list>"


WHOLE_LIST: Any = _WholeList()
"""The default of the ``list_*`` calls' ``cursor=``: walk the whole list."""


def catalog_tools(core: Core, keep: Callable[[Tool], bool] | None = None) -> tuple[Tool, ...]:
    """The server's tools, from a ``tools/list`` walk within
    ``handshake_timeout_ms``; ``keep`` may leave a validated entry out.
    A server that did not declare the tools capability (one offering only
    skills) has none, and is not asked."""
    limits = core.limits
    if not isinstance(core.server_capabilities.get("tools"), Mapping):
        return ()
    pages = CatalogWalk(limits, core.server)
    core.walk(pages, seconds(limits.handshake_timeout_ms), f"handshake_timeout_ms={limits.handshake_timeout_ms}")
    tools = pages.tools()
    if keep is not None:
        tools = tuple(tool for tool in tools if keep(tool))
    return tools


def walk(  # noqa: PLR0913, PLR0917
    core: Core,
    pages: PageWalk,
    timeout: float,
    budget: str,
    params: Mapping[str, Any] | None,
    deadline: float | None,
) -> None:
    """Follow ``pages``' list to its end. Each page's exchange is bounded by
    ``timeout`` s and, when given, the whole walk by ``deadline``; ``budget``
    names the option that set them, for a timeout's message."""
    method = pages.method
    where = f"server {core.server!r}"

    def describe() -> str:
        return f"{method} from {where} ({budget})"

    cursor: str | None = None
    while True:
        page_params = dict(params or {})
        if cursor is not None:
            page_params["cursor"] = cursor
        if deadline is not None:
            timeout = deadline - time.monotonic()
            if timeout <= 0:
                raise Timeout(f"{describe()} missed its deadline")
        cursor = pages.add_page(core.ask(method, page_params, timeout, describe))
        if cursor is None:
            return
