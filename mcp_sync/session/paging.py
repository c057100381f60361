"""The four lists (tools, resources, resource templates, prompts) a page at a
time or whole, and every list request through the session's response cache.

``Session.list_tools()`` and the other ``list_*`` calls walk the whole list
(at most ``max_catalog_pages`` pages, no repeated or empty cursor, one
deadline for the walk) and return a tuple, as they always have. Given
``cursor=`` they ask for one page instead and return a :class:`Page`: its
entries and the ``next_cursor`` to ask for next (``cursor=None`` is the
first page). ``Session.pages()`` walks the pages lazily, one request per
page as the caller iterates, within ``max_catalog_pages``.

Loaded on first use (``import mcp_sync`` does not define :class:`Page`).
Functions over the narrow core protocol (``session.feature_contract.Core``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from ..protocol.catalog import CatalogWalk, PageWalk, Tools
from ..protocol.errors import InvalidOption, InvalidResponse
from ..protocol.limits import Limits, request_budget, seconds
from .listing import WHOLE_LIST
from .resources import PROMPTS, RESOURCE_TEMPLATES, RESOURCES, Listing, with_meta
from .response_cache import WHOLE

if TYPE_CHECKING:
    from .feature_contract import Core

__all__ = ["LISTS", "Page", "listing", "pages"]

_T_co = TypeVar("_T_co", covariant=True)


@dataclass(frozen=True, slots=True)
class Page(Generic[_T_co]):
    """One page of a list: its entries in the server's order, and the cursor
    of the next page (``None`` on the last). Iterating a page iterates its
    entries."""

    items: tuple[_T_co, ...]
    next_cursor: str | None = None

    def __iter__(self) -> Iterator[_T_co]:
        return iter(self.items)

    def __len__(self) -> int:
        return len(self.items)


class _Tools(CatalogWalk):
    @property
    def items(self) -> list[Any]:
        return list(self.tools())


# Each list: how its pages are checked and kept, and the capability it needs.
LISTS: Mapping[str, tuple[Callable[[Limits], PageWalk], str]] = {
    "tools": (_Tools, "tools"),
    "resources": (RESOURCES, "resources"),
    "resource_templates": (RESOURCE_TEMPLATES, "resources"),
    "prompts": (PROMPTS, "prompts"),
}


def _walk_of(core: Core, kind: str) -> PageWalk:
    if kind not in LISTS:
        raise InvalidOption(f"list must be one of {', '.join(map(repr, LISTS))}")
    make, capability = LISTS[kind]
    walk = make(core.limits)
    core.require(capability, walk.method)
    return walk


def _cursor(cursor: object) -> str | None:
    if cursor is not None and (not isinstance(cursor, str) or not cursor):
        raise InvalidOption("cursor must be None (the first page) or a non-empty string from next_cursor")
    return cursor


def listing(core: Core, kind: str, cursor: object, timeout_ms: int | None, meta: Mapping[str, Any] | None) -> Any:
    """``Session.list_<kind>``: the whole list as a tuple (``cursor`` is
    :data:`WHOLE_LIST`), or the page at ``cursor`` as a :class:`Page`;
    answered from the response cache while the server's ``ttlMs`` allows
    (never when ``meta`` is given)."""
    walk = _walk_of(core, kind)
    whole = cursor is WHOLE_LIST
    part = WHOLE if whole else _cursor(cursor)
    params = with_meta(core, {}, meta)
    timeout_ms, option = request_budget(core.limits, timeout_ms)
    method, budget = walk.method, f"{option}={timeout_ms}"
    cache = core.inbound.response_cache() if meta is None else None
    if cache is not None:
        kept = cache.lookup(method, part)
        if kept is not None:
            return kept
        epoch = cache.epoch
    if whole:
        # resources_changed and prompts_changed are cleared as the walk begins
        # (a change during it sets them again); tools_changed belongs to the
        # snapshot in Session.tools, which only refresh_tools replaces.
        changed = core.inbound.changed.get(walk.key) if kind != "tools" else None
        if changed is not None:
            changed.clear()
        core.walk(walk, seconds(timeout_ms), budget, params, deadline=time.monotonic() + seconds(timeout_ms))
        # (tuples that Jupyter shows as tables)
        value: Any = (Tools if kind == "tools" else Listing)(walk.items)  # type: ignore[attr-defined]
    else:
        if part is not None:
            params["cursor"] = part
        server = core.server
        result = core.ask(method, params, seconds(timeout_ms), lambda: f"{method} from server {server!r} ({budget})")
        next_cursor = walk.page(result)
        value = Page(tuple(walk.items), next_cursor)  # type: ignore[attr-defined]
    if cache is not None:
        cache.store(method, part, value, walk.freshness, epoch)
    return value


def pages(
    core: Core, kind: str, cursor: str | None, timeout_ms: int | None, meta: Mapping[str, Any] | None
) -> Iterator[Page[Any]]:
    """``Session.pages``: the pages of a list from ``cursor`` on, each asked
    for as the caller iterates (each within ``timeout_ms``). A cursor seen
    before in the walk, or a page past ``max_catalog_pages`` that the server
    says follows, raises :class:`InvalidResponse` after the pages before it
    were yielded. What is wrong with the arguments is raised at once."""
    method = _walk_of(core, kind).method
    start = _cursor(cursor)
    if meta is not None:
        with_meta(core, {}, meta)
    if timeout_ms is not None:
        request_budget(core.limits, timeout_ms)
    cap = core.limits.max_catalog_pages

    def walk() -> Iterator[Page[Any]]:
        seen = {start}
        at, count = start, 0
        while True:
            page: Page[Any] = listing(core, kind, at, timeout_ms, meta)
            count += 1
            yield page
            at = page.next_cursor
            if at is None:
                return
            if at in seen:
                raise InvalidResponse(f"a {method} page repeats an earlier cursor")
            if count >= cap:
                raise InvalidResponse(f"the {method} listing has more than max_catalog_pages={cap} pages")
            seen.add(at)

    return walk()
