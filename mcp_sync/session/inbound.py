"""What the server sends unasked: notifications and server requests.

The session core hands every inbound notification and server request here,
from whichever thread is reading the server's output. Nothing here runs user
code on that thread: it files progress for the caller that asked for it,
hands log records and server requests to library threads, and sets the
``*_changed`` flags. Once the session is terminal nothing more is dispatched.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import TYPE_CHECKING, Any

from ..protocol.errors import McpError
from ..transports.workers import Workers
from .progress import ProgressRoutes
from .server_logs import ServerLog
from .server_requests import ServerRequests

if TYPE_CHECKING:
    from .eras.contract import EraCore
    from .handlers import Handlers
    from .listen import ListenStream, ResourceUpdates
    from .response_cache import ResponseCache

__all__ = ["AUTO_REFRESH_SPACING", "Inbound"]

AUTO_REFRESH_SPACING = 0.25
"""Seconds between two automatic refreshes, so a list_changed storm costs at
most four catalog walks a second."""
CLOSE_JOIN = 1.0
"""Seconds ``close()`` waits, in all, for the library's handler, log and refresh threads."""
LOG_BACKLOG = 256
"""Server log records waiting for the logging thread; past it they are dropped and counted."""

_log = logging.getLogger("mcp_sync.catalog")

_LIST_CHANGED = {
    "notifications/tools/list_changed": "tools",
    "notifications/resources/list_changed": "resources",
    "notifications/prompts/list_changed": "prompts",
}


class Inbound:
    """One session's receiver of notifications and server requests."""

    def __init__(
        self, core: EraCore, handlers: Handlers | None, *, auto_refresh: bool, cache: str = "off"
    ) -> None:
        self._core = core
        name = f"mcp_sync-{core.server}"
        self.progress = ProgressRoutes()
        self._events = Workers(f"{name}-log", max_workers=1, backlog=LOG_BACKLOG)
        self.log = ServerLog(core.server, self._events)
        self.requests = ServerRequests(core, handlers)
        self._handlers = handlers
        # Set by list_changed notifications, cleared when a walk of that list
        # begins (so a change during the walk sets it again).
        self.changed = {kind: threading.Event() for kind in _LIST_CHANGED.values()}
        self.auto_refresh = auto_refresh
        self._refresher = Workers(f"{name}-refresh", max_workers=1, backlog=1)
        # Best-effort requests nobody waits for (a modern tasks/cancel).
        self.background = Workers(f"{name}-background", max_workers=1, backlog=16)
        # Serialises refreshes of the tool catalog (explicit and automatic).
        self.refresh_lock = threading.Lock()
        self.last_refresh_error: McpError | None = None
        # Resource subscriptions and the 2026-07-28 listen stream (._listen):
        # made on first use, by a subscription or an auto_refresh session.
        # Guards their making and replacing; nobody waits on it for long.
        self._made = threading.Lock()
        self.updates: ResourceUpdates | None = None
        self.stream: ListenStream | None = None
        # The response cache (._response_cache), made by the first request
        # that may use it: "off", "public" (only results the server calls
        # public are kept) or "all".
        self._cache_scopes = cache
        self._cache: ResponseCache | None = None

    def capabilities(self) -> dict[str, Any]:
        return self._handlers.capabilities() if self._handlers is not None else {}

    def wants_server_messages(self) -> bool:
        """Whether anything here serves what a server sends unasked (server
        requests, list_changed, resource updates): then an HTTP session
        opens its GET stream."""
        return bool(self.capabilities()) or self.auto_refresh or self.updates is not None

    def resource_updates(self) -> ResourceUpdates:
        """The session's resource subscriptions (made on first use)."""
        with self._made:
            if self.updates is None:
                from .listen import ResourceUpdates

                self.updates = ResourceUpdates(self._core.server)
            return self.updates

    def response_cache(self) -> ResponseCache | None:
        """The session's response cache (made on first use), or ``None`` when
        the session was opened with ``cache=False``."""
        if self._cache is None and self._cache_scopes != "off":
            with self._made:
                if self._cache is None:
                    from .response_cache import ResponseCache

                    self._cache = ResponseCache(self._core.server, keep_private=self._cache_scopes == "all")
        return self._cache

    def listen_stream(self, lists: tuple[str, ...]) -> ListenStream:
        """The 2026-07-28 listen stream (started on first use), listening
        to the changes of ``lists`` and to the session's subscriptions."""
        with self._made:
            if self.stream is None:
                from .listen import ListenStream

                self.stream = ListenStream(self._core, lists)
            return self.stream

    # ------------------------------------------------------- from the reader

    def notification(self, method: str, params: object) -> None:
        if self._core.terminal is not None:
            return
        if method == "notifications/progress":
            self.progress.notify(params)
        elif method == "notifications/message":
            self.log.notify(params)
        elif method in _LIST_CHANGED:
            kind = _LIST_CHANGED[method]
            if self._cache is not None:  # dropped before the flag is seen set
                self._cache.list_changed(kind)
            self.changed[kind].set()
            if kind == "tools" and self.auto_refresh:
                # A full backlog means a refresh is already waiting: it will
                # see this change too.
                self._refresher.submit(self._auto_refresh)
        elif method == "notifications/cancelled":
            self.requests.cancelled(params)
        elif method == "notifications/resources/updated":
            if self._cache is not None:
                self._cache.updated(params)
            updates = self.updates
            if updates is not None:
                updates.notify(params)
        elif method == "notifications/subscriptions/acknowledged":
            stream = self.stream
            if stream is not None:
                stream.acknowledged(params)
        # Everything else (tasks/status, elicitation/complete...) is received
        # and dropped.

    def request(self, request_id: int | str, method: str, params: object) -> None:
        if self._core.terminal is not None:
            return
        self.requests.receive(request_id, method, params)

    # ------------------------------------------------------- refresh

    def _auto_refresh(self) -> None:
        from .refresh import refresh_tools

        core = self._core
        if core.terminal is not None or not self.changed["tools"].is_set():
            return
        try:
            refresh_tools(core, None)
        except McpError as exc:
            if core.terminal is None:
                _log.warning(
                    "automatic refresh of server %r failed: %s", core.server, exc.message,
                    extra={"mcp_event": "refresh_failed", "mcp_server": core.server, "mcp_kind": exc.kind},
                )  # fmt: skip
        # However many notifications came meanwhile, wait a little before the
        # next walk (a storm must not turn into a busy loop).
        core.ended.wait(AUTO_REFRESH_SPACING)
        if self.changed["tools"].is_set() and core.terminal is None:
            self._refresher.submit(self._auto_refresh)

    # ------------------------------------------------------- ending

    def close(self, wait: bool) -> None:
        """Stop dispatching; with ``wait``, give the library's threads up to
        ``CLOSE_JOIN`` s in all to finish (a handler stuck in user code is
        left to finish on its own: a daemon thread that sends nothing more)."""
        self.progress.wake_all()
        deadline = time.monotonic() + (CLOSE_JOIN if wait else 0.0)
        self.requests.close(deadline)
        # Log records the server sent before the session ended are still
        # emitted (the last lines often say why it ended): drained, not dropped.
        self._events.close(max(0.0, deadline - time.monotonic()), drain=True)
        self._refresher.close(max(0.0, deadline - time.monotonic()))
        self.background.close(max(0.0, deadline - time.monotonic()))
        if self._cache is not None:
            self._cache.clear()
        stream, updates = self.stream, self.updates
        if stream is not None:
            stream.close(max(0.0, deadline - time.monotonic()))
        if updates is not None:
            updates.close(max(0.0, deadline - time.monotonic()))

