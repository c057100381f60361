"""What a feature may use of the session core: one narrow protocol.

Resources, prompts, completion, log level, roots, catalog refresh and health
are written against :class:`Core`, never against ``session.core._Core`` itself,
so they can be read (and tested) without the core's request table, threads
or transports, and the core can change inside without touching them. The
core (``session.core._Core``) satisfies :class:`Core` structurally: the type
checker proves it wherever ``Session`` hands its core to a feature.

This module sits low in the package: it imports no module of the session,
of a feature or of a transport (only value types), so every feature may
import it and no import cycle can run through it.

How to add a session method: write it as a function of ``core: Core`` in the
feature's module; if it needs something of the core that :class:`Core` does
not list, add that one member here (with what it means); then add a
one-line method to ``Session`` (``session/api.py``) with the docstring.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Protocol, Self, TypeVar

if TYPE_CHECKING:
    from ..protocol.catalog import PageWalk, Snapshot
    from ..protocol.errors import McpError
    from ..protocol.limits import Limits
    from ..protocol.roots import RootsProvider

__all__ = ["CacheHooks", "Core", "EraHooks", "InboundHooks", "RootsHooks"]

_C_contra = TypeVar("_C_contra", contravariant=True)


class RootsHooks(Protocol):
    """The roots the session's handlers expose (``Handlers(roots=...)``)."""

    @property
    def roots_provider(self) -> RootsProvider | None:
        """The roots (or the callable that returns them), ``None`` without any."""

    def set_roots(self, roots: RootsProvider) -> None:
        """Replace the roots; refused when the session was opened without any."""

    def task_capability(self) -> dict[str, Any] | None:
        """The client's ``tasks`` capability (server requests run as tasks), or ``None``."""


class CacheHooks(Protocol):
    """The session's cache of results the server says may be reused
    (``ttlMs``, ``cacheScope``): ``session.response_cache.ResponseCache``."""

    @property
    def epoch(self) -> int:
        """Moves whenever the server announces a change: read it before a
        request, and give it to :meth:`store` with the result."""

    def lookup(self, method: str, part: object) -> Any:
        """The fresh value kept for ``method`` and ``part`` (a read's URI, a
        page's cursor, ``None`` for a first page, ``response_cache.WHOLE``
        for a whole list), or ``None``."""

    def store(self, method: str, part: object, value: Any, results: Iterable[object], epoch: int) -> None:
        """Keep ``value``, made from the raw ``results``, as their
        ``ttlMs``/``cacheScope`` allow, unless the epoch moved."""


class InboundHooks(Protocol):
    """What the server sends unasked, as far as a feature sees it."""

    @property
    def changed(self) -> Mapping[str, threading.Event]:
        """The ``*_changed`` flags by list (``"tools"``, ``"resources"``,
        ``"prompts"``): set by ``notifications/*/list_changed``, cleared when a
        walk of that list begins."""

    @property
    def refresh_lock(self) -> threading.Lock:
        """Serialises refreshes of the tool catalog (explicit and automatic)."""

    last_refresh_error: McpError | None
    """Why the last catalog refresh failed (``None``: it succeeded, or none ran)."""

    @property
    def requests(self) -> RootsHooks:
        """The server-request side: here, only its roots."""

    def response_cache(self) -> CacheHooks | None:
        """The session's cache of results the server says may be reused
        (``ttlMs``), or ``None`` when it is off."""


class EraHooks(Protocol[_C_contra]):
    """What a feature asks of the session's protocol era (the handshake era or
    2026-07-28). ``_C_contra`` is the core type its methods take back."""

    def probe(self, core: _C_contra, deadline: float, budget: str) -> None:
        """The era's cheapest proof of life (``ping``, or ``server/discover``)
        by ``deadline`` (monotonic); ``budget`` names the option for a timeout."""

    def set_log_level(self, core: _C_contra, level: str, timeout_ms: int | None) -> None:
        """Ask for log messages of ``level`` and above, the era's way."""


class Core(Protocol):
    """The session core as a feature sees it.

    Every method may be called from any thread. ``describe`` arguments build
    a timeout's message only when one is needed.
    """

    @property
    def server(self) -> str:
        """The name given in ``connect(server=...)``."""

    @property
    def limits(self) -> Limits:
        """The limits in force."""

    @property
    def server_capabilities(self) -> Mapping[str, Any]:
        """What the server declared (frozen, untrusted)."""

    @property
    def terminal(self) -> McpError | None:
        """Why the session ended, or ``None`` while it is open."""

    @property
    def ended(self) -> threading.Event:
        """Set once the session is terminal (wakes anything waiting on a timer)."""

    catalog: Snapshot
    """The tool catalog: a frozen snapshot, replaced whole (never mutated)."""

    @property
    def inbound(self) -> InboundHooks:
        """The list_changed flags, the refresh state and the roots."""

    @property
    def era(self) -> EraHooks[Self]:
        """The protocol era the session speaks."""

    def require(self, capability: str, what: str) -> None:
        """Raise (nothing sent) unless the session is open and the server
        declared ``capability`` (:class:`NotSupported` naming ``what``)."""

    def request(
        self,
        method: str,
        params: dict[str, Any],
        timeout: float,
        describe: Callable[[], str],
        *,
        cancellable: bool = True,
    ) -> Any:
        """A plain JSON-RPC request (handshake era), its result within
        ``timeout`` s; ``cancellable=False``: no ``notifications/cancelled``
        when it times out."""

    def ask(self, method: str, params: dict[str, Any], timeout: float, describe: Callable[[], str]) -> Any:
        """A request the way the session's era sends it (in the modern era
        with its metadata, ``input_required`` answered by the handlers)."""

    def walk(
        self,
        walk: PageWalk,
        timeout: float,
        budget: str,
        params: Mapping[str, Any] | None = None,
        *,
        deadline: float | None = None,
    ) -> None:
        """Follow a paginated list to its end into ``walk`` (page and cursor
        rules of the catalog); each page within ``timeout`` s, the whole walk
        by ``deadline`` when given. ``budget`` names the option for messages."""

    def notify(self, method: str, timeout: float, params: dict[str, Any] | None = None) -> None:
        """Send a notification (without params unless given), waiting at most ``timeout`` s for room."""
